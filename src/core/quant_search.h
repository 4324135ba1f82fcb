/* Shared pieces of the block quantisers (private to src/core/quant_*.c and
 * their SIMD variants in src/cpu/quant_*_avx2.c).
 *
 * Our quantised bytes must equal ggml's, so every float expression here keeps ggml's
 * order of operations and float (not double) precision, and must never be fused into
 * FMA: include this header first, it switches contraction off for the rest of the file. */
#ifndef SDC_CORE_QUANT_SEARCH_H
#define SDC_CORE_QUANT_SEARCH_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/fp16.h"

/* Groups whose largest magnitude is below this are stored as all zeros. */
#define SDC_QUANT_TINY 1e-15f

/* Nearest integer, ties to even, for |v| < 2^22: adding 1.5*2^23 pushes the fraction
 * out of the mantissa and the FPU rounds it. ggml rounds this way; lrintf would too,
 * but this also gives ggml's (clamped later) results for out-of-range values. */
static inline int sdc_qround(float v) {
    float t = v + 12582912.f;
    int32_t bits;
    memcpy(&bits, &t, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

static inline int sdc_qclamp(int v, int lo, int hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* Float to int by truncation toward zero, 0 for NaN or values outside the byte range
 * (the casts of the reference quantisers, made defined for odd inputs). */
static inline int sdc_qtrunc(float v) {
    return v > -256.f && v < 256.f ? (int)v : 0;
}

/* fp16 round trip: the quantisers requantise against the scale as it is stored. */
static inline float sdc_fp16_round(float v) {
    return sdc_fp16_to_f32(sdc_f32_to_fp16(v));
}

/* Symmetric scale for n values on levels -nmax..nmax-1: tries 19 candidate scales
 * around -nmax/max and keeps the one with the best weighted least-squares fit
 * (weights w, or x^2 when w is NULL). Writes L[i] = level + nmax; returns the scale. */
float sdc_qsearch_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L);

/* Affine fit x ~ scale * L + min with L in 0..nmax and min <= 0: starts from the
 * min/max grid, then scans nstep+1 grid widths (rmin + rdelta*i levels wider) and solves
 * the weighted least-squares scale and offset for each; keeps the lowest weighted error
 * (absolute if use_mad, else squared). Writes L; *neg_min = -min; returns the scale. */
float sdc_qsearch_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
                         float *neg_min, float rmin, float rdelta, int nstep, bool use_mad);

/* Non-negative values (the sub-block scales and mins of k-quants) on levels 0..nmax:
 * 9 candidate scales, then up to 5 passes of per-element level refinement, all with
 * weights w. Writes L; returns the super-block scale. */
float sdc_qsearch_positive(int n, int nmax, const float *x, const float *w, uint8_t *L);

/* Sum of squares in order (the float sum the reference uses for sigma^2). */
static inline float sdc_qsum_sq(const float *x, int64_t n) {
    float s = 0;
    for (int64_t i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}

/* Importance weights of the imatrix quantisers: imp[i] * sqrt(sigma2 + x[i]^2). */
static inline void sdc_qweights(const float *x, const float *imp, float sigma2, int n, float *w) {
    for (int i = 0; i < n; i++) w[i] = imp[i] * sqrtf(sigma2 + x[i] * x[i]);
}

#endif
