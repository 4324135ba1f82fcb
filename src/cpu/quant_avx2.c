/* AVX2/F16C dequantisers for the formats weights usually come in. Each output is the
 * same single-rounded product (and difference) as in the scalar code, never an FMA, so
 * the floats are identical to it. Compiled with -mavx2 -mfma -mf16c; called only when
 * sdc_cpu_isa() >= SDC_ISA_AVX2. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <immintrin.h>

#include "core/quant.h"

#include "cpu/quant_avx2.h"

/* Eight signed 32-bit lanes to float, times d. */
static inline __m256 scaled(__m256i q, __m256 d) {
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
}

void sdc_dequant_q8_0_avx2(const void *src, float *dst, int64_t n) {
    const sdc_block_q8_0 *x = src;
    for (int64_t b = 0; b < n / 32; b++, dst += 32) {
        const __m256 d = _mm256_set1_ps(sdc_fp16_to_f32(x[b].d));
        for (int k = 0; k < 4; k++) {
            __m128i q8 = _mm_loadl_epi64((const __m128i *)(x[b].qs + 8 * k));
            _mm256_storeu_ps(dst + 8 * k, scaled(_mm256_cvtepi8_epi32(q8), d));
        }
    }
}

void sdc_dequant_q4_0_avx2(const void *src, float *dst, int64_t n) {
    const sdc_block_q4_0 *x = src;
    const __m128i low4 = _mm_set1_epi8(0xF), eight = _mm_set1_epi8(8);
    for (int64_t b = 0; b < n / 32; b++, dst += 32) {
        const __m256 d = _mm256_set1_ps(sdc_fp16_to_f32(x[b].d));
        const __m128i qs = _mm_loadu_si128((const __m128i *)x[b].qs);
        /* Low nibbles are elements 0-15, high nibbles 16-31; both offset by 8. */
        const __m128i lo = _mm_sub_epi8(_mm_and_si128(qs, low4), eight);
        const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), low4), eight);
        _mm256_storeu_ps(dst + 0, scaled(_mm256_cvtepi8_epi32(lo), d));
        _mm256_storeu_ps(dst + 8, scaled(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)), d));
        _mm256_storeu_ps(dst + 16, scaled(_mm256_cvtepi8_epi32(hi), d));
        _mm256_storeu_ps(dst + 24, scaled(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)), d));
    }
}

static void k4_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

void sdc_dequant_q4_K_avx2(const void *src, float *dst, int64_t n) {
    const sdc_block_q4_K *x = src;
    const __m128i low4 = _mm_set1_epi8(0xF);
    for (int64_t b = 0; b < n / SDC_QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d), dmin = sdc_fp16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++, dst += 32) {
            int sc, mn;
            k4_scale_min(x[b].scales, j, &sc, &mn);
            const __m256 dl = _mm256_set1_ps(d * (float)sc), ml = _mm256_set1_ps(dmin * (float)mn);
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            for (int h = 0; h < 2; h++) {
                __m128i v = _mm_loadu_si128((const __m128i *)(q + 16 * h));
                if (j % 2) v = _mm_srli_epi16(v, 4);
                v = _mm_and_si128(v, low4);
                __m256 a = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(v)), dl);
                __m256 c = _mm256_mul_ps(
                    _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8))), dl);
                _mm256_storeu_ps(dst + 16 * h, _mm256_sub_ps(a, ml));
                _mm256_storeu_ps(dst + 16 * h + 8, _mm256_sub_ps(c, ml));
            }
        }
    }
}

void sdc_dequant_q6_K_avx2(const void *src, float *dst, int64_t n) {
    const sdc_block_q6_K *x = src;
    const __m128i low4 = _mm_set1_epi8(0xF), three = _mm_set1_epi8(3), off = _mm_set1_epi8(32);
    for (int64_t b = 0; b < n / SDC_QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int e0 = 0; e0 < SDC_QK_K; e0 += 16, dst += 16) {
            /* 16 elements of one group share ql/qh bytes l..l+15 of their part. */
            const int h = e0 / 128, part = (e0 % 128) / 32, l = e0 % 32;
            __m128i ql = _mm_loadu_si128((const __m128i *)(x[b].ql + 64 * h + 32 * (part & 1) + l));
            __m128i qh = _mm_loadu_si128((const __m128i *)(x[b].qh + 32 * h + l));
            if (part >= 2) ql = _mm_srli_epi16(ql, 4);
            ql = _mm_and_si128(ql, low4);
            qh = _mm_and_si128(_mm_srl_epi16(qh, _mm_cvtsi32_si128(2 * part)), three);
            const __m128i q = _mm_sub_epi8(_mm_or_si128(ql, _mm_slli_epi16(qh, 4)), off);
            const __m256 ds = _mm256_set1_ps(d * (float)x[b].scales[e0 / 16]);
            _mm256_storeu_ps(dst, scaled(_mm256_cvtepi8_epi32(q), ds));
            _mm256_storeu_ps(dst + 8, scaled(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8)), ds));
        }
    }
}

void sdc_f16_to_f32_row_avx2(const void *src, float *dst, int64_t n) {
    const sdc_fp16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(s + i))));
    for (; i < n; i++) dst[i] = sdc_fp16_to_f32(s[i]);
}

void sdc_bf16_to_f32_row_avx2(const void *src, float *dst, int64_t n) {
    const sdc_bf16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(s + i)));
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)));
    }
    for (; i < n; i++) dst[i] = sdc_bf16_to_f32(s[i]);
}
