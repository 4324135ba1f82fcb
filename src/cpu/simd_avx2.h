/* AVX2+FMA helpers shared by the *_avx2.c kernels (include only from those files). */
#ifndef SDC_CPU_SIMD_AVX2_H
#define SDC_CPU_SIMD_AVX2_H

#include <immintrin.h>

#include "cpu/simd_exp_coef.h"

/* e^r for x = n ln2 + r, |r| <= ln2 / 2: returns e^r and sets *n (integral floats) */
static inline __m256 sdc_exp256_reduced(__m256 x, __m256 *n) {
    *n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(SDC_EXP_LOG2E)),
                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* r = x - n*ln2 in two steps so r keeps full precision */
    __m256 r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(SDC_EXP_LN2_HI), x);
    r = _mm256_fnmadd_ps(*n, _mm256_set1_ps(SDC_EXP_LN2_LO), r);
    __m256 p = _mm256_set1_ps(SDC_EXP_P0);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SDC_EXP_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SDC_EXP_P2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SDC_EXP_P3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SDC_EXP_P4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(SDC_EXP_P5));
    return _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
}

/* exp of x already clamped to [-87.3, 88] (NaN kept); 0 in the lanes set in under. */
static inline __m256 sdc_exp256_clamped(__m256 x, __m256 under) {
    __m256 n;
    const __m256 p = sdc_exp256_reduced(x, &n);
    __m256i e =
        _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
    return _mm256_andnot_ps(under, y);
}

/* e^x, relative error ~2e-7 on [-87, 88]; 0 below -87.3 (incl. -inf); inputs above 88
 * saturate at e^88. */
static inline __m256 sdc_exp256(__m256 x) {
    const __m256 lo = _mm256_set1_ps(SDC_EXP_MIN_ARG);
    __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    /* constant first: min/max return the second operand for NaN, which then propagates */
    return sdc_exp256_clamped(_mm256_max_ps(lo, _mm256_min_ps(_mm256_set1_ps(88.0f), x)), under);
}

/* exp for softmax arguments (x <= 0; -inf or NaN too), cheaper on the FMA ports than
 * sdc_exp256 and the same value for x >= -87.3 (results of at least 2^-126);
 * below, it gives a tiny positive number instead of 0 (at most 2^-125): beside the
 * row's maximum, whose term is 1, such a weight vanishes from every sum. */
static inline __m256 sdc_exp256_softmax(__m256 x) {
    __m256 n; /* NaN stays NaN in max (the second operand) */
    const __m256 p = sdc_exp256_reduced(_mm256_max_ps(_mm256_set1_ps(SDC_EXP_MIN_ARG), x), &n);
    /* p * 2^n by adding n to p's exponent field (exact while the result is normal) */
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

static inline float sdc_hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline float sdc_hmax256(__m256 v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

#endif
