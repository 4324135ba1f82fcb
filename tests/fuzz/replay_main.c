/* Without libFuzzer, a fuzz target runs every file of its corpus folder once (and
 * every file named on the command line), so ctest exercises the target.
 *
 * A replay fails (exit 1) when it replays nothing (empty or wrong corpus path), when a
 * named path cannot be read, and when an input costs too much memory, so that a parser
 * which sizes a buffer from a length field it did not check shows up here too and not
 * only as an OOM report from a long libFuzzer run:
 *  - one allocation over SDC_REPLAY_MALLOC_MB (plain glibc builds: malloc is wrapped
 *    here; ASan builds: ASan's own max_allocation_size_mb, which aborts);
 *  - peak RSS over SDC_REPLAY_RSS_MB after any input (getrusage);
 *  - RLIMIT_AS as a backstop in plain builds (ASan reserves terabytes of address space,
 *    so it is left alone there). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define REPLAY_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define REPLAY_ASAN 1
#endif
#endif

/* Inputs are at most a few kB: nothing a parser does with them needs more than this. */
#ifndef SDC_REPLAY_MALLOC_MB
#define SDC_REPLAY_MALLOC_MB 256 /* keep in step with __asan_default_options */
#endif
#ifndef SDC_REPLAY_RSS_MB
#define SDC_REPLAY_RSS_MB 256 /* measured: 2 MB plain, 15 MB under ASan+UBSan */
#endif
#ifndef SDC_REPLAY_AS_MB
#define SDC_REPLAY_AS_MB 2048
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *g_current = "(before the first input)";

#if defined(REPLAY_ASAN)
const char *__asan_default_options(void);
const char *__asan_default_options(void) {
    return "max_allocation_size_mb=256:allocator_may_return_null=0";
}
#elif defined(__GLIBC__)
/* glibc's real allocator, under its exported internal names. */
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t m);
void *__libc_realloc(void *p, size_t n);
void *__libc_memalign(size_t align, size_t n);

static void too_big(size_t n) {
    /* stdio may allocate: write(2) only */
    char msg[512];
    int len = snprintf(msg, sizeof msg,
                       "FAIL fuzz replay: input %s asked for one allocation of %zu bytes "
                       "(limit %d MB)\n",
                       g_current, n, SDC_REPLAY_MALLOC_MB);
    if (len > 0 && write(2, msg, (size_t)len) < 0) len = 0;
    _exit(1);
}
#define CAP(n)                                                                                     \
    do {                                                                                           \
        if ((n) > (size_t)SDC_REPLAY_MALLOC_MB << 20) too_big(n);                                  \
    } while (0)
void *malloc(size_t n) {
    CAP(n);
    return __libc_malloc(n);
}
void *calloc(size_t n, size_t m) {
    if (m && n > SIZE_MAX / m) return __libc_calloc(n, m); /* glibc reports the overflow */
    CAP(n * m);
    return __libc_calloc(n, m);
}
void *realloc(void *p, size_t n) {
    CAP(n);
    return __libc_realloc(p, n);
}
void *aligned_alloc(size_t align, size_t n) {
    CAP(n);
    return __libc_memalign(align, n);
}
int posix_memalign(void **out, size_t align, size_t n) {
    CAP(n);
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}
#endif

static long peak_rss_mb(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return -1;
    return ru.ru_maxrss / 1024; /* kB on Linux */
}

/* Replays one file; returns the number of failures (unreadable, or too much memory). */
static int run_file(const char *path, long rss_limit) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "FAIL fuzz replay: cannot open %s\n", path);
        return 1;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    size_t got = fread(buf, 1, (size_t)(n > 0 ? n : 0), f);
    fclose(f);
    g_current = path;
    LLVMFuzzerTestOneInput(buf, got);
    free(buf);
    long rss = peak_rss_mb();
    static int reported; /* the peak only grows: name the input that crossed the limit */
    if (rss > rss_limit && !reported++) {
        fprintf(stderr, "FAIL fuzz replay: peak RSS %ld MB after %s (limit %ld MB)\n", rss, path,
                rss_limit);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const long rss_limit = SDC_REPLAY_RSS_MB;
#if !defined(REPLAY_ASAN)
    struct rlimit as = {(rlim_t)SDC_REPLAY_AS_MB << 20, (rlim_t)SDC_REPLAY_AS_MB << 20};
    if (setrlimit(RLIMIT_AS, &as) != 0) perror("setrlimit(RLIMIT_AS)");
#endif
    int count = 0, failed = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "FAIL fuzz replay: no such file or folder: %s\n", argv[i]);
            failed++;
        } else if (!S_ISDIR(st.st_mode)) {
            failed += run_file(argv[i], rss_limit);
            count++;
        } else {
            DIR *d = opendir(argv[i]);
            if (!d) {
                fprintf(stderr, "FAIL fuzz replay: cannot list %s\n", argv[i]);
                failed++;
                continue;
            }
            struct dirent *e;
            while ((e = readdir(d))) {
                if (e->d_name[0] == '.') continue;
                char p[4096];
                snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
                failed += run_file(p, rss_limit);
                count++;
            }
            closedir(d);
        }
    }
    printf("replayed %d inputs, peak RSS %ld MB (limit %ld MB)\n", count, peak_rss_mb(), rss_limit);
    if (count == 0) {
        fprintf(stderr, "FAIL fuzz replay: no input replayed (empty or wrong corpus path?)\n");
        failed++;
    }
    return failed ? 1 : 0;
}
