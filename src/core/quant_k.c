/* The k-quants: 256-element super-blocks split into 16 or 32 element groups, each group
 * with its own small integer scale (and min), scaled again by fp16 super-block factors.
 *
 * Two quantisers per type, matching ggml's byte for byte: without importance weights the
 * reference one (group scales from the extremes or a fixed weighting); with them the
 * weighted one, w = importance * sqrt(sigma2 + x^2) (q6_K: w = importance), and the group
 * scales themselves quantised by a weighted search. Either way the elements are finally
 * requantised against the scales exactly as they are stored. */
#include "core/quant_search.h" /* first: disables FP contraction */

#include "core/quant.h"
#include "core/quant_simd.h"

#define QK_K SDC_QK_K

/* ---- shared layouts ------------------------------------------------------------- */

/* 2-bit planes (q2_K, q3_K): in each 128-element half, byte l holds elements l, l+32,
 * l+64, l+96 in bits 0-1, 2-3, 4-5, 6-7. */
static void pack_2bit_planes(const uint8_t *L, uint8_t *qs) {
    for (int h = 0; h < QK_K; h += 128, qs += 32)
        for (int l = 0; l < 32; l++)
            qs[l] =
                (uint8_t)(L[h + l] | L[h + l + 32] << 2 | L[h + l + 64] << 4 | L[h + l + 96] << 6);
}

/* Group j (16 elements, e = 16j..16j+15) of a 2-bit plane layout: its bytes and shift. */
static inline const uint8_t *group2_bytes(const uint8_t *qs, int j) {
    return qs + 32 * (j / 8) + 16 * (j % 2);
}
static inline int group2_shift(int j) {
    return 2 * ((j % 8) / 2);
}

/* q3_K: sixteen 6-bit scales; low nibbles in bytes 0-7 (scale j and j+8 share byte j%8),
 * the top two bits of scale j in byte 8 + j%4 at bit 2*(j/4). */
static void q3_scales_set(uint8_t *s, int j, int level) {
    if (j < 8)
        s[j] = (uint8_t)(level & 0xF);
    else
        s[j - 8] |= (uint8_t)((level & 0xF) << 4);
    s[8 + j % 4] |= (uint8_t)((level >> 4) << (2 * (j / 4)));
}

static int q3_scale_get(const uint8_t *s, int j) {
    int lo = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
    return (lo | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
}

/* q4_K/q5_K: eight 6-bit (scale, min) pairs in 12 bytes. Pairs 0-3 sit whole in bytes
 * 0-3 / 4-7; pairs 4-7 keep their low nibbles in bytes 8-11 and their top two bits in
 * the spare top bits of bytes 0-7. Levels above 63 are packed as the reference does. */
static void k4_scales_set(uint8_t *s, int j, uint8_t ls, uint8_t lm) {
    if (j < 4) {
        s[j] = ls;
        s[j + 4] = lm;
    } else {
        s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
        s[j - 4] |= (uint8_t)((ls >> 4) << 6);
        s[j] |= (uint8_t)((lm >> 4) << 6);
    }
}

static void k4_scale_get(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
        *mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Final levels of one group against its stored scale d and offset dm (x ~ d*l - dm).
 * Groups whose stored scale is 0 keep the levels of the search. */
static void requant_affine(const float *x, int n, float d, float dm, int nmax, uint8_t *L) {
    if (!d) return;
    for (int i = 0; i < n; i++) L[i] = (uint8_t)sdc_qclamp(sdc_qround((x[i] + dm) / d), 0, nmax);
}

static void requant_symmetric(const float *x, int n, float d, int nmax, uint8_t *L) {
    if (!d) return;
    for (int i = 0; i < n; i++)
        L[i] = (uint8_t)(sdc_qclamp(sdc_qround(x[i] / d), -nmax, nmax - 1) + nmax);
}

static void copy_levels(const int8_t *src, uint8_t *dst, int n) {
    for (int i = 0; i < n; i++) dst[i] = (uint8_t)src[i];
}

/* sigma^2 for the weighted k-quants: mean square over the super-block, times `mult`. */
static float superblock_sigma2(const float *x, float mult) {
    return mult * sdc_qsum_sq(x, QK_K) / QK_K;
}

/* Group weights and their sums for the weighted k-quant searches. */
static void group_weights(const float *x, const float *imp, float sigma2, int group, float *w,
                          float *sum) {
    sdc_qweights(x, imp, sigma2, group, w);
    float s = 0;
    for (int i = 0; i < group; i++) s += w[i];
    *sum = s;
}

/* ---- q2_K: 16 groups of 16, 2-bit levels, 4-bit scales and mins ----------------- */

static void q2_K_block(const float *x, sdc_block_q2_K *y, const float *imp) {
    uint8_t L[QK_K];
    float scales[16], mins[16], w[16];

    if (imp) {
        const float sigma2 = superblock_sigma2(x, 1.f);
        float sw[16];
        for (int j = 0; j < 16; j++) {
            group_weights(x + 16 * j, imp + 16 * j, sigma2, 16, w, &sw[j]);
            scales[j] = sdc_qsearch_affine(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.9f, 0.05f,
                                           36, false);
        }
        uint8_t Ls[16], Lm[16];
        y->d = sdc_f32_to_fp16(sdc_qsearch_positive(16, 15, scales, sw, Ls));
        y->dmin = sdc_f32_to_fp16(sdc_qsearch_positive(16, 15, mins, sw, Lm));
        for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)(Ls[j] | Lm[j] << 4);
    } else {
        /* Unweighted: |x| as weights, scales and mins linear on 0..15 from their max. */
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < 16; j++) {
            for (int i = 0; i < 16; i++) w[i] = fabsf(x[16 * j + i]);
            scales[j] = sdc_qsearch_affine(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f,
                                           15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        memset(y->scales, 0, sizeof y->scales);
        y->d = sdc_f32_to_fp16(0.f);
        y->dmin = sdc_f32_to_fp16(0.f);
        if (max_scale > 0) {
            const float iscale = 15.f / max_scale;
            for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)sdc_qround(iscale * scales[j]);
            y->d = sdc_f32_to_fp16(max_scale / 15.f);
        }
        if (max_min > 0) {
            const float iscale = 15.f / max_min;
            for (int j = 0; j < 16; j++)
                y->scales[j] |= (uint8_t)((unsigned)sdc_qround(iscale * mins[j]) << 4);
            y->dmin = sdc_f32_to_fp16(max_min / 15.f);
        }
    }

    const float d = sdc_fp16_to_f32(y->d), dmin = sdc_fp16_to_f32(y->dmin);
    for (int j = 0; j < 16; j++) {
        const float dj = d * (float)(y->scales[j] & 0xF);
        if (!dj) continue;
        requant_affine(x + 16 * j, 16, dj, dmin * (float)(y->scales[j] >> 4), 3, L + 16 * j);
    }
    pack_2bit_planes(L, y->qs);
}

void sdc_quant_q2_K(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q2_K *y = dst;
    for (int64_t b = 0; b < n / QK_K; b++)
        q2_K_block(src + b * QK_K, y + b, importance ? importance + b * QK_K : NULL);
}

void sdc_dequant_q2_K(const void *src, float *dst, int64_t n) {
    const sdc_block_q2_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d), dmin = sdc_fp16_to_f32(x[b].dmin);
        for (int j = 0; j < 16; j++, dst += 16) {
            const float dl = d * (float)(x[b].scales[j] & 0xF);
            const float ml = dmin * (float)(x[b].scales[j] >> 4);
            const uint8_t *q = group2_bytes(x[b].qs, j);
            const int shift = group2_shift(j);
            for (int i = 0; i < 16; i++) dst[i] = dl * (float)((q[i] >> shift) & 3) - ml;
        }
    }
}

/* ---- q3_K: 16 groups of 16, 3-bit levels, signed 6-bit scales ------------------- */

/* Unweighted group search of the reference q3_K: levels from -nmax/max, then up to five
 * passes moving single levels while the x^2-weighted fit improves. Writes L + nmax. */
static float q3_group_search(int n, int nmax, const float *x, int8_t *L) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) {
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
    }
    if (amax < SDC_QUANT_TINY) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    const float iscale = (float)-nmax / max;
    float sum_xl = 0, sum_ll = 0;
    for (int i = 0; i < n; i++) {
        int l = sdc_qclamp(sdc_qround(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sum_xl += w * x[i] * (float)l;
        sum_ll += w * (float)l * (float)l;
    }
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float xl = sum_xl - w * x[i] * (float)L[i];
            if (!(xl > 0)) continue;
            float ll = sum_ll - w * (float)L[i] * (float)L[i];
            int l = sdc_qclamp(sdc_qround(x[i] * ll / xl), -nmax, nmax - 1);
            if (l == L[i]) continue;
            xl += w * x[i] * (float)l;
            ll += w * (float)l * (float)l;
            if (ll > 0 && xl * xl * sum_ll > sum_xl * sum_xl * ll) {
                L[i] = (int8_t)l;
                sum_xl = xl;
                sum_ll = ll;
                changed++;
            }
        }
        if (!changed) break;
    }
    for (int i = 0; i < n; i++) L[i] = (int8_t)(L[i] + nmax);
    return sum_ll > 0.0f ? sum_xl / sum_ll : 0.0f;
}

static void q3_K_block(const float *x, sdc_block_q3_K *y, const float *imp) {
    int8_t Li[QK_K];
    uint8_t L[QK_K];
    float scales[16];

    memset(y->scales, 0, sizeof y->scales);
    if (imp) {
        const float sigma2 = superblock_sigma2(x, 2.f);
        float w[16], sw[16];
        int8_t Ls[16];
        for (int j = 0; j < 16; j++) {
            group_weights(x + 16 * j, imp + 16 * j, sigma2, 16, w, &sw[j]);
            scales[j] = sdc_qsearch_symmetric(16, 4, x + 16 * j, w, Li + 16 * j);
        }
        const float d = sdc_qsearch_symmetric(16, 32, scales, sw, Ls);
        for (int j = 0; j < 16; j++) q3_scales_set(y->scales, j, Ls[j]);
        y->d = sdc_f32_to_fp16(d);
    } else {
        float amax = 0, max_scale = 0;
        for (int j = 0; j < 16; j++) {
            scales[j] = q3_group_search(16, 4, x + 16 * j, Li + 16 * j);
            if (fabsf(scales[j]) > amax) amax = fabsf(scales[j]), max_scale = scales[j];
        }
        y->d = sdc_f32_to_fp16(0.f);
        if (max_scale) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; j++) {
                int l = (int8_t)sdc_qround(iscale * scales[j]);
                q3_scales_set(y->scales, j, sdc_qclamp(l, -32, 31) + 32);
            }
            y->d = sdc_f32_to_fp16(1 / iscale);
        }
    }
    copy_levels(Li, L, QK_K);

    const float d = sdc_fp16_to_f32(y->d);
    for (int j = 0; j < 16; j++)
        requant_symmetric(x + 16 * j, 16, d * (float)q3_scale_get(y->scales, j), 4, L + 16 * j);

    /* Third bit of element e: bit e/32 of hmask[e%32]. */
    memset(y->hmask, 0, sizeof y->hmask);
    for (int e = 0; e < QK_K; e++) {
        if (L[e] > 3) {
            y->hmask[e % 32] |= (uint8_t)(1 << (e / 32));
            L[e] -= 4;
        }
    }
    pack_2bit_planes(L, y->qs);
}

void sdc_quant_q3_K(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q3_K *y = dst;
    for (int64_t b = 0; b < n / QK_K; b++)
        q3_K_block(src + b * QK_K, y + b, importance ? importance + b * QK_K : NULL);
}

void sdc_dequant_q3_K(const void *src, float *dst, int64_t n) {
    const sdc_block_q3_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int j = 0; j < 16; j++, dst += 16) {
            const float dl = d * (float)q3_scale_get(x[b].scales, j);
            const uint8_t *q = group2_bytes(x[b].qs, j);
            const uint8_t *hm = x[b].hmask + 16 * (j % 2);
            const int shift = group2_shift(j), hbit = j / 2;
            for (int i = 0; i < 16; i++) {
                int low = (q[i] >> shift) & 3;
                dst[i] = dl * (float)(low - ((hm[i] >> hbit) & 1 ? 0 : 4));
            }
        }
    }
}

/* ---- q4_K / q5_K: 8 groups of 32, 6-bit scales and mins ------------------------- */

/* Scale and min levels of the 8 groups of a q4_K/q5_K super-block; `nmax` is 15 or 31.
 * Leaves the search's element levels in L and the super-block factors in *d, *dmin. */
static void k4_group_scales(const float *x, const float *imp, int nmax, uint8_t *L, uint8_t *packed,
                            sdc_fp16 *d, sdc_fp16 *dmin) {
    float scales[8], mins[8], w[32];
    memset(packed, 0, 12);
    if (imp) {
        const float sigma2 = superblock_sigma2(x, 2.f);
        float sw[8];
        uint8_t Ls[8], Lm[8];
        for (int j = 0; j < 8; j++) {
            group_weights(x + 32 * j, imp + 32 * j, sigma2, 32, w, &sw[j]);
            scales[j] = sdc_qsearch_affine(32, nmax, x + 32 * j, w, L + 32 * j, &mins[j], -0.9f,
                                           0.05f, 36, false);
        }
        const float d_block = sdc_qsearch_positive(8, 63, scales, sw, Ls);
        const float m_block = sdc_qsearch_positive(8, 63, mins, sw, Lm);
        for (int j = 0; j < 8; j++) {
            /* ggml caps the levels at 63 for q5_K only (they never exceed it anyway
             * unless a group scale came out negative). */
            uint8_t ls = Ls[j], lm = Lm[j];
            if (nmax == 31) ls = ls < 63 ? ls : 63, lm = lm < 63 ? lm : 63;
            k4_scales_set(packed, j, ls, lm);
        }
        *d = sdc_f32_to_fp16(d_block);
        *dmin = sdc_f32_to_fp16(m_block);
        return;
    }
    /* Unweighted: w = rms(group) + |x|, then scales and mins linear on 0..63. */
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; j++) {
        const float *xg = x + 32 * j;
        const float av_x = sqrtf(sdc_qsum_sq(xg, 32) / 32);
        for (int i = 0; i < 32; i++) w[i] = av_x + fabsf(xg[i]);
        scales[j] =
            nmax == 15
                ? sdc_qsearch_affine(32, 15, xg, w, L + 32 * j, &mins[j], -1.f, 0.1f, 20, false)
                : sdc_qsearch_affine(32, 31, xg, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; j++) {
        uint8_t ls = (uint8_t)sdc_qround(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)sdc_qround(inv_min * mins[j]);
        k4_scales_set(packed, j, ls < 63 ? ls : 63, lm < 63 ? lm : 63);
    }
    *d = sdc_f32_to_fp16(max_scale / 63.f);
    *dmin = sdc_f32_to_fp16(max_min / 63.f);
}

/* Requantises all 8 groups against the stored scales. */
static void k4_requant(const float *x, const uint8_t *packed, sdc_fp16 d16, sdc_fp16 dmin16,
                       int nmax, uint8_t *L) {
    const float d = sdc_fp16_to_f32(d16), dmin = sdc_fp16_to_f32(dmin16);
    for (int j = 0; j < 8; j++) {
        int sc, mn;
        k4_scale_get(packed, j, &sc, &mn);
        const float dj = d * (float)sc;
        if (!dj) continue;
        requant_affine(x + 32 * j, 32, dj, dmin * (float)mn, nmax, L + 32 * j);
    }
}

void sdc_quant_q4_K(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q4_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; b++, y++) {
        const float *x = src + b * QK_K;
        k4_group_scales(x, importance ? importance + b * QK_K : NULL, 15, L, y->scales, &y->d,
                        &y->dmin);
        k4_requant(x, y->scales, y->d, y->dmin, 15, L);
        /* Each 64-element chunk: 32 bytes, element l low nibble, element l+32 high. */
        for (int c = 0; c < 4; c++)
            for (int l = 0; l < 32; l++)
                y->qs[32 * c + l] = (uint8_t)(L[64 * c + l] | L[64 * c + l + 32] << 4);
    }
}

void sdc_dequant_q4_K(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(dequant_q4_K, src, dst, n);
    const sdc_block_q4_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d), dmin = sdc_fp16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++, dst += 32) {
            int sc, mn;
            k4_scale_get(x[b].scales, j, &sc, &mn);
            const float dl = d * (float)sc, ml = dmin * (float)mn;
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int i = 0; i < 32; i++) dst[i] = dl * (float)((q[i] >> shift) & 0xF) - ml;
        }
    }
}

void sdc_quant_q5_K(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q5_K *y = dst;
    uint8_t L[QK_K];
    for (int64_t b = 0; b < n / QK_K; b++, y++) {
        const float *x = src + b * QK_K;
        k4_group_scales(x, importance ? importance + b * QK_K : NULL, 31, L, y->scales, &y->d,
                        &y->dmin);
        k4_requant(x, y->scales, y->d, y->dmin, 31, L);
        /* Low nibbles as q4_K; fifth bit of chunk c's element l (l+32) is bit 2c (2c+1)
         * of qh[l]. */
        memset(y->qh, 0, sizeof y->qh);
        for (int c = 0; c < 4; c++) {
            for (int l = 0; l < 32; l++) {
                int lo = L[64 * c + l], hi = L[64 * c + l + 32];
                y->qh[l] |= (uint8_t)((lo >> 4) << (2 * c) | (hi >> 4) << (2 * c + 1));
                y->qs[32 * c + l] = (uint8_t)((lo & 0xF) | (hi & 0xF) << 4);
            }
        }
    }
}

void sdc_dequant_q5_K(const void *src, float *dst, int64_t n) {
    const sdc_block_q5_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d), dmin = sdc_fp16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++, dst += 32) {
            int sc, mn;
            k4_scale_get(x[b].scales, j, &sc, &mn);
            const float dl = d * (float)sc, ml = dmin * (float)mn;
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            for (int i = 0; i < 32; i++) {
                int v = ((q[i] >> shift) & 0xF) | ((x[b].qh[i] >> j) & 1) << 4;
                dst[i] = dl * (float)v - ml;
            }
        }
    }
}

/* ---- q6_K: 16 groups of 16, 6-bit levels, int8 scales ---------------------------- */

static void q6_K_block(const float *x, sdc_block_q6_K *y, const float *imp) {
    int8_t Li[QK_K];
    uint8_t L[QK_K];
    float scales[16];
    float amax = 0, max_scale = 0;
    for (int j = 0; j < 16; j++) {
        /* Weights: the importance itself, or x^2 without it. */
        scales[j] =
            sdc_qsearch_symmetric(16, 32, x + 16 * j, imp ? imp + 16 * j : NULL, Li + 16 * j);
        if (fabsf(scales[j]) > amax) amax = fabsf(scales[j]), max_scale = scales[j];
    }
    if (amax < SDC_QUANT_TINY) {
        memset(y, 0, sizeof *y);
        return;
    }
    copy_levels(Li, L, QK_K);

    const float iscale = -128.f / max_scale;
    y->d = sdc_f32_to_fp16(1 / iscale);
    for (int j = 0; j < 16; j++) {
        int l = sdc_qround(iscale * scales[j]);
        y->scales[j] = (int8_t)(l < 127 ? l : 127);
    }
    const float d = sdc_fp16_to_f32(y->d);
    for (int j = 0; j < 16; j++)
        requant_symmetric(x + 16 * j, 16, d * (float)y->scales[j], 32, L + 16 * j);

    /* Per 128-element half: ql byte l holds elements l (low) and l+64 (high), byte l+32
     * holds l+32 and l+96; qh byte l holds the top two bits of l, l+32, l+64, l+96. */
    for (int h = 0; h < 2; h++) {
        const uint8_t *Lh = L + 128 * h;
        uint8_t *ql = y->ql + 64 * h, *qh = y->qh + 32 * h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((Lh[l] & 0xF) | (Lh[l + 64] & 0xF) << 4);
            ql[l + 32] = (uint8_t)((Lh[l + 32] & 0xF) | (Lh[l + 96] & 0xF) << 4);
            qh[l] = (uint8_t)(Lh[l] >> 4 | (Lh[l + 32] >> 4) << 2 | (Lh[l + 64] >> 4) << 4 |
                              (Lh[l + 96] >> 4) << 6);
        }
    }
}

void sdc_quant_q6_K(const float *src, void *dst, int64_t n, const float *importance) {
    sdc_block_q6_K *y = dst;
    for (int64_t b = 0; b < n / QK_K; b++)
        q6_K_block(src + b * QK_K, y + b, importance ? importance + b * QK_K : NULL);
}

void sdc_dequant_q6_K(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(dequant_q6_K, src, dst, n);
    const sdc_block_q6_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int h = 0; h < 2; h++, dst += 128) {
            const uint8_t *ql = x[b].ql + 64 * h, *qh = x[b].qh + 32 * h;
            const int8_t *sc = x[b].scales + 8 * h;
            /* Part p (32 elements) takes nibble p/2 of ql[32*(p%2) + l], bits 2p of qh[l]. */
            for (int p = 0; p < 4; p++) {
                const uint8_t *qlp = ql + 32 * (p % 2);
                const int shift = 4 * (p / 2);
                for (int l = 0; l < 32; l++) {
                    int q = ((qlp[l] >> shift) & 0xF) | ((qh[l] >> (2 * p)) & 3) << 4;
                    dst[32 * p + l] = d * (float)sc[2 * p + l / 16] * (float)(q - 32);
                }
            }
        }
    }
}

/* ---- q8_K: 256 int8 levels with a float scale (activations for k-quant dots) ---- */

void sdc_quant_q8_K(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_block_q8_K *y = dst;
    for (int64_t b = 0; b < n / QK_K; b++, y++) {
        const float *x = src + b * QK_K;
        float amax = 0, max = 0;
        for (int i = 0; i < QK_K; i++)
            if (fabsf(x[i]) > amax) amax = fabsf(x[i]), max = x[i];
        memset(y, 0, sizeof *y);
        if (!amax) continue;
        /* -127 (not -128) keeps every level symmetric, as ggml's SIMD dots expect. */
        const float iscale = -127.f / max;
        for (int i = 0; i < QK_K; i++) {
            int v = sdc_qround(iscale * x[i]);
            y->qs[i] = (int8_t)(v < 127 ? v : 127);
        }
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int i = 0; i < 16; i++) sum += y->qs[16 * g + i];
            y->bsums[g] = (int16_t)sum;
        }
        y->d = 1 / iscale;
    }
}

void sdc_dequant_q8_K(const void *src, float *dst, int64_t n) {
    const sdc_block_q8_K *x = src;
    for (int64_t b = 0; b < n / QK_K; b++)
        for (int i = 0; i < QK_K; i++) *dst++ = x[b].d * (float)x[b].qs[i];
}
