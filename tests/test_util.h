/* Minimal test harness: CHECK records a failure with its location and goes on;
 * TEST_MAIN_END prints "N passed, N failed" and returns the exit status. */
#ifndef SDC_TEST_UTIL_H
#define SDC_TEST_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_passed, t_failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (cond) {                                                                                \
            t_passed++;                                                                            \
        } else {                                                                                   \
            t_failed++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define TEST_MAIN_END()                                                                            \
    do {                                                                                           \
        printf("%d passed, %d failed\n", t_passed, t_failed);                                      \
        return t_failed ? 1 : 0;                                                                   \
    } while (0)

/* Deterministic test data (xorshift), uniform in [-1, 1). */
static inline float t_randf(unsigned long long *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static inline double t_max_abs_diff(const float *a, const float *b, long n) {
    double m = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    return m;
}
static inline double t_rel_l2(const float *a, const double *ref, long n) {
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = (double)a[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

/* A whole file in malloc'd memory with a NUL after it (NULL if unreadable). */
static inline unsigned char *t_read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf) buf[n] = 0;
    if (size) *size = buf ? (size_t)n : 0;
    return buf;
}

#define GOLDEN(path) SDC_GOLDEN_DIR "/" path

#endif
