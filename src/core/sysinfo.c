/* Process facts the programs report (peak memory). */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "sdc.h"

/* VmHWM from /proc/self/status, in bytes; 0 if unavailable. */
static size_t proc_peak_rss(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    size_t kib = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmHWM:", 6)) {
            unsigned long long v = 0;
            if (sscanf(line + 6, "%llu", &v) == 1) kib = (size_t)v;
            break;
        }
    }
    fclose(f);
    return kib * 1024;
}

size_t sdc_peak_rss_bytes(void) {
    size_t proc = proc_peak_rss();
    if (proc) return proc;
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0 || ru.ru_maxrss <= 0) return 0;
#if defined(__APPLE__)
    return (size_t)ru.ru_maxrss; /* bytes on macOS */
#else
    return (size_t)ru.ru_maxrss * 1024; /* KiB on Linux and the BSDs */
#endif
}
