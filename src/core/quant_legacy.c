/* The 32-element block formats q4_0 q4_1 q5_0 q5_1 q8_0 q8_1.
 *
 * Without importance weights each block takes its scale straight from its extremes
 * (ggml's reference quantisers); with them the scale comes from a weighted search,
 * w = importance * sqrt(sigma2 + x^2), sigma2 = mean of x^2 over the whole row. */
#include "core/quant_search.h" /* first: disables FP contraction */

#include <float.h>

#include "core/quant.h"
#include "core/quant_simd.h"

#define QK 32

/* ---- packing -------------------------------------------------------------------- */

/* Element j goes to the low nibble of byte j, element j+16 to its high nibble. */
static void pack_nibbles(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK / 2; j++) qs[j] = (uint8_t)((L[j] & 0xF) | (L[j + QK / 2] & 0xF) << 4);
}

/* Fifth bits: bit j of the little-endian u32 qh belongs to element j. */
static void pack_fifth_bits(const uint8_t *L, uint8_t *qh) {
    uint32_t bits = 0;
    for (int j = 0; j < QK; j++) bits |= (uint32_t)((L[j] >> 4) & 1) << j;
    for (int b = 0; b < 4; b++) qh[b] = (uint8_t)(bits >> (8 * b));
}

static uint32_t load_fifth_bits(const uint8_t *qh) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

/* ---- block statistics ----------------------------------------------------------- */

/* The value of largest magnitude, sign kept (first one on ties). */
static float signed_absmax(const float *x, int n) {
    float amax = 0, max = 0;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *lo, float *hi) {
    float mn = FLT_MAX, mx = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < mn) mn = x[j];
        if (x[j] > mx) mx = x[j];
    }
    *lo = mn;
    *hi = mx;
}

/* Symmetric formats: the extreme value maps to level 0 exactly (d = max / -half); the
 * others truncate x/d + half + 0.5, which rounds half up. */
static float symmetric_levels(const float *x, int half, uint8_t *L) {
    const float d = signed_absmax(x, QK) / (float)-half;
    const float id = d ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) {
        int q = sdc_qtrunc(x[j] * id + ((float)half + 0.5f));
        L[j] = (uint8_t)(q < 2 * half - 1 ? q : 2 * half - 1);
    }
    return d;
}

/* Affine formats: levels 0..nmax span [min, max]. */
static float affine_levels(const float *x, int nmax, uint8_t *L, float *min_out) {
    float mn, mx;
    min_max(x, QK, &mn, &mx);
    const float d = (mx - mn) / (float)nmax;
    const float id = d ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) {
        int q = sdc_qtrunc((x[j] - mn) * id + 0.5f);
        L[j] = (uint8_t)(q < nmax ? q : nmax);
    }
    *min_out = mn;
    return d;
}

/* sigma^2 of the imatrix weights: mean square over the whole row. */
static float row_sigma2(const float *x, int64_t n) {
    return sdc_qsum_sq(x, n) / (float)n;
}

/* Weighted symmetric search for one block; L gets levels 0..2*half-1. */
static float weighted_symmetric(const float *x, const float *imp, float sigma2, int half,
                                uint8_t *L) {
    float w[QK];
    int8_t levels[QK];
    sdc_qweights(x, imp, sigma2, QK, w);
    float d = sdc_qsearch_symmetric(QK, half, x, w, levels);
    for (int j = 0; j < QK; j++) L[j] = (uint8_t)levels[j];
    return d;
}

static float weighted_affine(const float *x, const float *imp, float sigma2, int nmax, uint8_t *L,
                             float *min_out) {
    float w[QK], neg_min;
    sdc_qweights(x, imp, sigma2, QK, w);
    float d = sdc_qsearch_affine(QK, nmax, x, w, L, &neg_min, -0.9f, 0.05f, 36, false);
    *min_out = -neg_min;
    return d;
}

/* ---- q4_0 ------------------------------------------------------------------------ */

void sdc_quant_q4_0(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q4_0 *y = dst;
    const float sigma2 = importance ? row_sigma2(src, n) : 0;
    uint8_t L[QK];
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        float d = importance ? weighted_symmetric(x, importance + b * QK, sigma2, 8, L)
                             : symmetric_levels(x, 8, L);
        y[b].d = sdc_f32_to_fp16(d);
        pack_nibbles(L, y[b].qs);
    }
}

void sdc_dequant_q4_0(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(dequant_q4_0, src, dst, n);
    const sdc_block_q4_0 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)((x[b].qs[j] & 0xF) - 8) * d;
            dst[j + QK / 2] = (float)((x[b].qs[j] >> 4) - 8) * d;
        }
    }
}

/* ---- q4_1 ------------------------------------------------------------------------ */

void sdc_quant_q4_1(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q4_1 *y = dst;
    const float sigma2 = importance ? row_sigma2(src, n) : 0;
    uint8_t L[QK];
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        float m;
        float d = importance ? weighted_affine(x, importance + b * QK, sigma2, 15, L, &m)
                             : affine_levels(x, 15, L, &m);
        y[b].d = sdc_f32_to_fp16(d);
        y[b].m = sdc_f32_to_fp16(m);
        pack_nibbles(L, y[b].qs);
    }
}

void sdc_dequant_q4_1(const void *src, float *dst, int64_t n) {
    const sdc_block_q4_1 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d), m = sdc_fp16_to_f32(x[b].m);
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)(x[b].qs[j] & 0xF) * d + m;
            dst[j + QK / 2] = (float)(x[b].qs[j] >> 4) * d + m;
        }
    }
}

/* ---- q5_0 ------------------------------------------------------------------------ */

void sdc_quant_q5_0(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q5_0 *y = dst;
    const float sigma2 = importance ? row_sigma2(src, n) : 0;
    uint8_t L[QK];
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        float d = importance ? weighted_symmetric(x, importance + b * QK, sigma2, 16, L)
                             : symmetric_levels(x, 16, L);
        y[b].d = sdc_f32_to_fp16(d);
        pack_nibbles(L, y[b].qs);
        pack_fifth_bits(L, y[b].qh);
    }
}

void sdc_dequant_q5_0(const void *src, float *dst, int64_t n) {
    const sdc_block_q5_0 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d);
        const uint32_t qh = load_fifth_bits(x[b].qh);
        for (int j = 0; j < QK / 2; j++) {
            int lo = (x[b].qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
            int hi = (x[b].qs[j] >> 4) | (int)((qh >> (j + QK / 2)) & 1) << 4;
            dst[j] = (float)(lo - 16) * d;
            dst[j + QK / 2] = (float)(hi - 16) * d;
        }
    }
}

/* ---- q5_1 ------------------------------------------------------------------------ */

void sdc_quant_q5_1(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q5_1 *y = dst;
    const float sigma2 = importance ? row_sigma2(src, n) : 0;
    uint8_t L[QK];
    for (int64_t b = 0; b < n / QK; b++) {
        const float *x = src + b * QK;
        float m;
        float d = importance ? weighted_affine(x, importance + b * QK, sigma2, 31, L, &m)
                             : affine_levels(x, 31, L, &m);
        y[b].d = sdc_f32_to_fp16(d);
        y[b].m = sdc_f32_to_fp16(m);
        pack_nibbles(L, y[b].qs);
        pack_fifth_bits(L, y[b].qh);
    }
}

void sdc_dequant_q5_1(const void *src, float *dst, int64_t n) {
    const sdc_block_q5_1 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d), m = sdc_fp16_to_f32(x[b].m);
        const uint32_t qh = load_fifth_bits(x[b].qh);
        for (int j = 0; j < QK / 2; j++) {
            int lo = (x[b].qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
            int hi = (x[b].qs[j] >> 4) | (int)((qh >> (j + QK / 2)) & 1) << 4;
            dst[j] = (float)lo * d + m;
            dst[j + QK / 2] = (float)hi * d + m;
        }
    }
}

/* ---- q8_0 / q8_1 ------------------------------------------------------------------ */

/* Levels -127..127 with d = absmax/127, rounding half away from zero. */
static float int8_levels(const float *x, int8_t *q) {
    float amax = 0;
    for (int j = 0; j < QK; j++) amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    const float d = amax / 127;
    const float id = d ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) {
        float r = roundf(x[j] * id);
        q[j] = (int8_t)(r >= -128.f && r <= 127.f ? (int)r : 0);
    }
    return d;
}

/* The importance weights cannot improve on round-to-nearest at this precision (ggml
 * ignores them too). */
void sdc_quant_q8_0(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_block_q8_0 *y = dst;
    for (int64_t b = 0; b < n / QK; b++)
        y[b].d = sdc_f32_to_fp16(int8_levels(src + b * QK, y[b].qs));
}

void sdc_dequant_q8_0(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(dequant_q8_0, src, dst, n);
    const sdc_block_q8_0 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK; j++) dst[j] = (float)x[b].qs[j] * d;
    }
}

void sdc_quant_q8_1(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_block_q8_1 *y = dst;
    for (int64_t b = 0; b < n / QK; b++) {
        float d = int8_levels(src + b * QK, y[b].qs);
        int sum = 0;
        for (int j = 0; j < QK; j++) sum += y[b].qs[j];
        y[b].d = sdc_f32_to_fp16(d);
        y[b].s = sdc_f32_to_fp16((float)sum * d);
    }
}

/* ggml has no to_float for q8_1 (it only feeds dot products); this is the natural one. */
void sdc_dequant_q8_1(const void *src, float *dst, int64_t n) {
    const sdc_block_q8_1 *x = src;
    for (int64_t b = 0; b < n / QK; b++, dst += QK) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int j = 0; j < QK; j++) dst[j] = (float)x[b].qs[j] * d;
    }
}
