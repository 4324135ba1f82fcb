/* AArch64 ASIMD dequantisers for the formats weights usually come in. Each output is the
 * same single-rounded product (and difference) as in the scalar code, never an FMA, so
 * the floats are identical to it. F16 uses the baseline vcvt_f32_f16 (exact). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <arm_neon.h>

#include "core/quant.h"

#include "cpu/quant_neon.h"

/* 16 signed bytes, times d, to dst[0..16). */
static inline void store_s8x16(int8x16_t q, float32x4_t d, float *dst) {
    int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_s8(vget_high_s8(q));
    vst1q_f32(dst + 0, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d));
    vst1q_f32(dst + 4, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(lo))), d));
    vst1q_f32(dst + 8, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d));
    vst1q_f32(dst + 12, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_high_s16(hi))), d));
}

void sdc_dequant_q8_0_neon(const void *src, float *dst, int64_t n) {
    const sdc_block_q8_0 *x = src;
    for (int64_t b = 0; b < n / 32; b++, dst += 32) {
        const float32x4_t d = vdupq_n_f32(sdc_fp16_to_f32(x[b].d));
        store_s8x16(vld1q_s8(x[b].qs), d, dst);
        store_s8x16(vld1q_s8(x[b].qs + 16), d, dst + 16);
    }
}

void sdc_dequant_q4_0_neon(const void *src, float *dst, int64_t n) {
    const sdc_block_q4_0 *x = src;
    const uint8x16_t low4 = vdupq_n_u8(0xF);
    const int8x16_t eight = vdupq_n_s8(8);
    for (int64_t b = 0; b < n / 32; b++, dst += 32) {
        const float32x4_t d = vdupq_n_f32(sdc_fp16_to_f32(x[b].d));
        const uint8x16_t qs = vld1q_u8(x[b].qs);
        /* low nibbles are elements 0-15, high nibbles 16-31; both offset by 8 */
        store_s8x16(vsubq_s8(vreinterpretq_s8_u8(vandq_u8(qs, low4)), eight), d, dst);
        store_s8x16(vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(qs, 4)), eight), d, dst + 16);
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

/* 16 unsigned nibbles: dst = q * dl - ml (two roundings, as the scalar code). */
static inline void store_u4x16(uint8x16_t v, float32x4_t dl, float32x4_t ml, float *dst) {
    uint16x8_t lo = vmovl_u8(vget_low_u8(v)), hi = vmovl_u8(vget_high_u8(v));
    float32x4_t f[4] = {
        vcvtq_f32_u32(vmovl_u16(vget_low_u16(lo))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(lo))),
        vcvtq_f32_u32(vmovl_u16(vget_low_u16(hi))), vcvtq_f32_u32(vmovl_u16(vget_high_u16(hi)))};
    for (int i = 0; i < 4; i++) vst1q_f32(dst + 4 * i, vsubq_f32(vmulq_f32(f[i], dl), ml));
}

void sdc_dequant_q4_K_neon(const void *src, float *dst, int64_t n) {
    const sdc_block_q4_K *x = src;
    const uint8x16_t low4 = vdupq_n_u8(0xF);
    for (int64_t b = 0; b < n / SDC_QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d), dmin = sdc_fp16_to_f32(x[b].dmin);
        for (int j = 0; j < 8; j++, dst += 32) {
            int sc, mn;
            k4_scale_min(x[b].scales, j, &sc, &mn);
            const float32x4_t dl = vdupq_n_f32(d * (float)sc), ml = vdupq_n_f32(dmin * (float)mn);
            const uint8_t *q = x[b].qs + 32 * (j / 2);
            for (int h = 0; h < 2; h++) {
                uint8x16_t v = vld1q_u8(q + 16 * h);
                v = j % 2 ? vshrq_n_u8(v, 4) : vandq_u8(v, low4);
                store_u4x16(v, dl, ml, dst + 16 * h);
            }
        }
    }
}

void sdc_dequant_q6_K_neon(const void *src, float *dst, int64_t n) {
    const sdc_block_q6_K *x = src;
    const uint8x16_t low4 = vdupq_n_u8(0xF), three = vdupq_n_u8(3);
    const int8x16_t off = vdupq_n_s8(32);
    for (int64_t b = 0; b < n / SDC_QK_K; b++) {
        const float d = sdc_fp16_to_f32(x[b].d);
        for (int e0 = 0; e0 < SDC_QK_K; e0 += 16, dst += 16) {
            /* 16 elements of one group share ql/qh bytes l..l+15 of their part */
            const int h = e0 / 128, part = (e0 % 128) / 32, l = e0 % 32;
            uint8x16_t ql = vld1q_u8(x[b].ql + 64 * h + 32 * (part & 1) + l);
            uint8x16_t qh = vld1q_u8(x[b].qh + 32 * h + l);
            ql = part >= 2 ? vshrq_n_u8(ql, 4) : vandq_u8(ql, low4);
            qh = vandq_u8(vshlq_u8(qh, vdupq_n_s8((int8_t)(-2 * part))), three);
            const int8x16_t q = vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(ql, vshlq_n_u8(qh, 4))), off);
            store_s8x16(q, vdupq_n_f32(d * (float)x[b].scales[e0 / 16]), dst);
        }
    }
}

void sdc_f16_to_f32_row_neon(const void *src, float *dst, int64_t n) {
    const sdc_fp16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t v = vld1q_u16(s + i);
        vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u16(vget_low_u16(v))));
        vst1q_f32(dst + i + 4, vcvt_f32_f16(vreinterpret_f16_u16(vget_high_u16(v))));
    }
    for (; i < n; i++) dst[i] = sdc_fp16_to_f32(s[i]);
}

void sdc_bf16_to_f32_row_neon(const void *src, float *dst, int64_t n) {
    const sdc_bf16 *s = src;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint16x8_t v = vld1q_u16(s + i);
        vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(v), 16)));
        vst1q_f32(dst + i + 4, vreinterpretq_f32_u32(vshll_n_u16(vget_high_u16(v), 16)));
    }
    for (; i < n; i++) dst[i] = sdc_bf16_to_f32(s[i]);
}
