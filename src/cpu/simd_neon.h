/* AArch64 ASIMD helpers shared by the *_neon.c kernels (include only from those files).
 * Baseline ASIMD only: every AArch64 CPU has it, so nothing here needs a HWCAP check. */
#ifndef SDC_CPU_SIMD_NEON_H
#define SDC_CPU_SIMD_NEON_H

#include <arm_neon.h>

#include "cpu/simd_exp_coef.h"

/* e^x, relative error ~2e-7 on [-87, 88]; 0 below -87.3 (incl. -inf); inputs above 88
 * saturate at e^88; NaN propagates. Same range reduction and polynomial as sdc_exp256. */
static inline float32x4_t sdc_exp_f32x4(float32x4_t x) {
    const float32x4_t lo = vdupq_n_f32(SDC_EXP_MIN_ARG);
    uint32x4_t under = vcltq_f32(x, lo);
    /* vmaxq/vminq return NaN when either operand is NaN, so NaN propagates */
    x = vmaxq_f32(lo, vminq_f32(vdupq_n_f32(88.0f), x));
    float32x4_t n = vrndnq_f32(vmulq_f32(x, vdupq_n_f32(SDC_EXP_LOG2E)));
    /* r = x - n*ln2 in two steps so r keeps full precision */
    float32x4_t r = vfmsq_f32(x, n, vdupq_n_f32(SDC_EXP_LN2_HI));
    r = vfmsq_f32(r, n, vdupq_n_f32(SDC_EXP_LN2_LO));
    float32x4_t p = vdupq_n_f32(SDC_EXP_P0);
    p = vfmaq_f32(vdupq_n_f32(SDC_EXP_P1), p, r);
    p = vfmaq_f32(vdupq_n_f32(SDC_EXP_P2), p, r);
    p = vfmaq_f32(vdupq_n_f32(SDC_EXP_P3), p, r);
    p = vfmaq_f32(vdupq_n_f32(SDC_EXP_P4), p, r);
    p = vfmaq_f32(vdupq_n_f32(SDC_EXP_P5), p, r);
    p = vfmaq_f32(vaddq_f32(r, vdupq_n_f32(1.0f)), p, vmulq_f32(r, r));
    int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(n), vdupq_n_s32(127)), 23);
    float32x4_t y = vmulq_f32(p, vreinterpretq_f32_s32(e));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(y), under));
}

#endif
