/* The AVX2 softmax exp (sdc_exp256_softmax, attention's) against the general one
 * (sdc_exp256, which the elementwise tests check against libm): bit for bit on every float
 * in [-87.3, 0]; below, a positive number of at most 2^-125 where sdc_exp256 gives 0;
 * -inf likewise, NaN stays NaN. Also each against double-precision exp on a grid. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#include "cpu/simd_avx2.h"

static int g_fail;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            printf("FAIL: " __VA_ARGS__);                                                          \
            printf("\n");                                                                          \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

int main(void) {
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        printf("no AVX2+FMA here: skipped\n");
        return 77;
    }
    /* every float from 0 down to -90, 8 at a time (bit patterns of negative floats grow
     * with magnitude) */
    const uint32_t lo = bits(-0.0f), hi = bits(-90.0f);
    const float cut = -87.3f;
    long differ_above = 0, bad_below = 0, n = 0;
    float largest_below = 0;
    for (uint64_t u = lo; u <= hi; u += 8) {
        float x[8], a[8], b[8];
        for (int i = 0; i < 8; i++) {
            uint32_t v = (uint32_t)(u + (uint64_t)i <= hi ? u + (uint64_t)i : hi);
            memcpy(&x[i], &v, 4);
        }
        _mm256_storeu_ps(a, sdc_exp256(_mm256_loadu_ps(x)));
        _mm256_storeu_ps(b, sdc_exp256_softmax(_mm256_loadu_ps(x)));
        for (int i = 0; i < 8; i++, n++) {
            if (x[i] >= cut) {
                if (bits(a[i]) != bits(b[i])) differ_above++;
            } else {
                if (!(b[i] > 0 && b[i] <= 0x1p-125f) || a[i] != 0) bad_below++;
                if (b[i] > largest_below) largest_below = b[i];
            }
        }
    }
    printf("%ld floats in [-90, 0]: %ld differ at or above -87.3, %ld wrong below (largest %g)\n",
           n, differ_above, bad_below, largest_below);
    CHECK(differ_above == 0, "softmax exp differs from sdc_exp256 above the cut");
    CHECK(bad_below == 0, "softmax exp below the cut is not a tiny positive number");
    float sp[8];
    _mm256_storeu_ps(sp, sdc_exp256_softmax(_mm256_setr_ps(-INFINITY, NAN, 0.0f, -1.0f, -10.0f,
                                                           -50.0f, -87.29f, -87.31f)));
    CHECK(sp[0] > 0 && sp[0] <= 0x1p-125f, "exp(-inf) = %g", sp[0]);
    CHECK(isnan(sp[1]), "exp(NaN) = %g", sp[1]);
    const double ref[5] = {1.0, exp(-1.0), exp(-10.0), exp(-50.0), exp((double)-87.29f)};
    double worst = 0;
    for (int i = 0; i < 5; i++) {
        const double e = fabs(sp[i + 2] - ref[i]) / ref[i];
        if (e > worst) worst = e;
    }
    /* relative error against double exp over [-87.3, 0] on a grid */
    for (int i = 0; i <= 873000; i += 8) {
        float x[8], y[8];
        for (int j = 0; j < 8; j++) x[j] = -(float)(i + j) * 1e-4f;
        _mm256_storeu_ps(y, sdc_exp256_softmax(_mm256_loadu_ps(x)));
        for (int j = 0; j < 8; j++) {
            if (x[j] < cut) continue;
            const double r = exp((double)x[j]), e = fabs(y[j] - r) / r;
            if (e > worst) worst = e;
        }
    }
    printf("max relative error against double exp on [-87.3, 0]: %.3g\n", worst);
    CHECK(worst < 2e-7, "relative error %g", worst);
    printf("%s\n", g_fail ? "FAILED" : "all passed");
    return g_fail ? 1 : 0;
}
#else
int main(void) {
    printf("built without AVX2+FMA (not x86): skipped\n");
    return 77;
}
#endif
