/* AVX-512 (F/DQ/VL) helpers shared by the *_avx512.c kernels (include only from those files). */
#ifndef SDC_CPU_SIMD_AVX512_H
#define SDC_CPU_SIMD_AVX512_H

#include <immintrin.h>

#include "cpu/simd_exp_coef.h"

/* sdc_exp256_softmax on 16 lanes: the same operations in the same order, so each lane is
 * that function's value bit for bit (x <= 0; below -87.3 a tiny positive number; NaN kept).
 * On cores that split 512-bit operations in two (AMD Zen 4) it costs the same FMA-port time
 * per lane as the 8-lane one but half the instructions, which is what that loop was short of. */
static inline __m512 sdc_exp512_softmax(__m512 x) {
    x = _mm512_max_ps(_mm512_set1_ps(SDC_EXP_MIN_ARG), x); /* NaN stays (second operand) */
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(SDC_EXP_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SDC_EXP_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(SDC_EXP_LN2_LO), r);
    __m512 p = _mm512_set1_ps(SDC_EXP_P0);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SDC_EXP_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SDC_EXP_P2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SDC_EXP_P3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SDC_EXP_P4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(SDC_EXP_P5));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    /* p * 2^n by adding n to p's exponent field (exact while the result is normal) */
    const __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
    return _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(p), e));
}

#endif
