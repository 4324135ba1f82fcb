/* The AVX-512 softmax exp (sdc_exp512_softmax, the AVX-512 attention kernel's) against the
 * AVX2 one (sdc_exp256_softmax, which test_simd_exp checks against sdc_exp256 and double
 * exp): bit for bit on every float from +1 down to -90 and on -inf, NaN, the cut and the
 * largest floats, in every lane position. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX2__) && defined(__FMA__)
#include "cpu/simd_avx2.h"
#include "cpu/simd_avx512.h"

static uint32_t bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* Number of lanes of x[16] where the two functions' results differ in any bit (NaN: where
 * one is NaN and the other is not). */
static int differ16(const float *x) {
    float a[16], b[16];
    _mm512_storeu_ps(a, sdc_exp512_softmax(_mm512_loadu_ps(x)));
    _mm256_storeu_ps(b, sdc_exp256_softmax(_mm256_loadu_ps(x)));
    _mm256_storeu_ps(b + 8, sdc_exp256_softmax(_mm256_loadu_ps(x + 8)));
    int n = 0;
    for (int i = 0; i < 16; i++)
        n += isnan(a[i]) || isnan(b[i]) ? isnan(a[i]) != isnan(b[i]) : bits(a[i]) != bits(b[i]);
    return n;
}

int main(void) {
    if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512dq") ||
        !__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
        printf("no AVX-512 F/DQ here: skipped\n");
        return 77;
    }
    long differ = 0, n = 0;
    /* every non-negative float up to 1, then every negative one down to -90 */
    const uint32_t ranges[2][2] = {{0, bits(1.0f)}, {bits(-0.0f), bits(-90.0f)}};
    for (int r = 0; r < 2; r++)
        for (uint64_t u = ranges[r][0]; u <= ranges[r][1]; u += 16) {
            float x[16];
            for (int i = 0; i < 16; i++) {
                uint64_t w = u + (uint64_t)i <= ranges[r][1] ? u + (uint64_t)i : ranges[r][1];
                uint32_t v = (uint32_t)w;
                memcpy(&x[i], &v, 4);
            }
            differ += differ16(x);
            n += 16;
        }
    /* the special values, each in every lane */
    const float sp[] = {-INFINITY, NAN, -NAN, -87.3f, -87.29999f, -87.30001f, -1e30f, -FLT_MAX};
    for (size_t k = 0; k < sizeof sp / sizeof sp[0]; k++)
        for (int lane = 0; lane < 16; lane++) {
            float x[16];
            for (int i = 0; i < 16; i++) x[i] = i == lane ? sp[k] : -(float)i;
            differ += differ16(x);
            n += 16;
        }
    printf("%ld lanes (every float in [-90, 1] and the special values): %ld differ from "
           "sdc_exp256_softmax\n",
           n, differ);
    if (differ) {
        printf("FAIL: sdc_exp512_softmax differs from sdc_exp256_softmax\n");
        return 1;
    }
    printf("all passed\n");
    return 0;
}
#else
int main(void) {
    printf("built without AVX-512 (not x86): skipped\n");
    return 77;
}
#endif
