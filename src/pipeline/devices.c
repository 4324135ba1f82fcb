/* The device list (--list-devices): the CPU for now; CUDA devices join here as backend
 * instances when that backend lands. */
#include <stdio.h>
#include <string.h>

#include "core/status.h"
#include "core/threadpool.h"
#include "cpu/cpu_features.h"

/* "model name" from /proc/cpuinfo, or a generic label */
static void cpu_model(char *out, size_t size) {
    snprintf(out, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, size, "%s", v);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

int sdc_device_count(void) {
    return 1;
}

sdc_status sdc_device_info(int index, char *name, size_t name_size, char *desc, size_t desc_size) {
    if (index != 0) return sdc_fail(SDC_ERR_INVALID_ARG, "no device %d (there is 1)", index);
    if (name && name_size) snprintf(name, name_size, "cpu");
    if (desc && desc_size) {
        char model[256];
        cpu_model(model, sizeof model);
        snprintf(desc, desc_size, "%s (%d threads, %s)", model, sdc_cpu_count(),
                 sdc_isa_name(sdc_cpu_isa()));
    }
    return SDC_OK;
}
