/* AArch64 ASIMD rows for the transcendental activations (the rest fall back to scalar
 * loops, which the compiler vectorises). Mirrors ops_elementwise_avx2.c. */
#include "cpu/ops_elementwise_impl.h"
#include "cpu/simd_neon.h"

/* x / (1 + e^(-k*u)) for u = x (silu, k=1) or the gelu tanh argument (k=2). */
void sdc_unary_row_neon(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1) {
    const float32x4_t one = vdupq_n_f32(1.0f);
    int64_t i = 0;
    switch (op) {
    case SDC_OP_GELU: {
        /* 0.5x(1+tanh(u)) == x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3) */
        const float32x4_t c2 = vdupq_n_f32(-2.0f * 0.7978845608028654f);
        const float32x4_t c3 = vdupq_n_f32(0.044715f);
        for (; i + 4 <= n; i += 4) {
            float32x4_t x = vld1q_f32(a + i);
            float32x4_t u = vfmaq_f32(x, vmulq_f32(c3, x), vmulq_f32(x, x));
            float32x4_t e = sdc_exp_f32x4(vmulq_f32(c2, u));
            vst1q_f32(d + i, vdivq_f32(x, vaddq_f32(one, e)));
        }
        break;
    }
    case SDC_OP_SILU:
        for (; i + 4 <= n; i += 4) {
            float32x4_t x = vld1q_f32(a + i);
            float32x4_t e = sdc_exp_f32x4(vnegq_f32(x));
            vst1q_f32(d + i, vdivq_f32(x, vaddq_f32(one, e)));
        }
        break;
    case SDC_OP_SIGMOID:
        for (; i + 4 <= n; i += 4) {
            float32x4_t e = sdc_exp_f32x4(vnegq_f32(vld1q_f32(a + i)));
            vst1q_f32(d + i, vdivq_f32(one, vaddq_f32(one, e)));
        }
        break;
    case SDC_OP_EXP:
        for (; i + 4 <= n; i += 4) vst1q_f32(d + i, sdc_exp_f32x4(vld1q_f32(a + i)));
        break;
    case SDC_OP_SCALE: {
        const float32x4_t s = vdupq_n_f32(f0), b = vdupq_n_f32(f1);
        for (; i + 4 <= n; i += 4) vst1q_f32(d + i, vfmaq_f32(b, vld1q_f32(a + i), s));
        break;
    }
    default:
        break;
    }
    if (i < n) sdc_unary_row_scalar(op, d + i, a + i, n - i, f0, f1);
}
