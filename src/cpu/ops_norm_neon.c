/* AArch64 ASIMD rows for rms/layer norm and softmax (ops_norm.c), mirroring
 * ops_norm_avx2.c: four 4-wide float accumulators, tails and totals in double. */
#include <math.h>
#include <stddef.h>

#include "cpu/ops_norm_impl.h"
#include "cpu/simd_neon.h"

double sdc_sum_sq_dev_neon(const float *x, int64_t n, float mean) {
    const float32x4_t m = vdupq_n_f32(mean);
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        float32x4_t v0 = vsubq_f32(vld1q_f32(x + i), m), v1 = vsubq_f32(vld1q_f32(x + i + 4), m);
        float32x4_t v2 = vsubq_f32(vld1q_f32(x + i + 8), m),
                    v3 = vsubq_f32(vld1q_f32(x + i + 12), m);
        a0 = vfmaq_f32(a0, v0, v0), a1 = vfmaq_f32(a1, v1, v1);
        a2 = vfmaq_f32(a2, v2, v2), a3 = vfmaq_f32(a3, v3, v3);
    }
    double s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) s += ((double)x[i] - mean) * ((double)x[i] - mean);
    return s;
}

double sdc_sum_neon(const float *x, int64_t n) {
    float32x4_t a0 = vdupq_n_f32(0), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        a0 = vaddq_f32(a0, vld1q_f32(x + i)), a1 = vaddq_f32(a1, vld1q_f32(x + i + 4));
        a2 = vaddq_f32(a2, vld1q_f32(x + i + 8)), a3 = vaddq_f32(a3, vld1q_f32(x + i + 12));
    }
    double s = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

/* d = (x - mean) * k * w + b with optional w, b */
static void affine(float *d, const float *x, int64_t n, float mean, float k, const float *w,
                   const float *b) {
    const float32x4_t vm = vdupq_n_f32(mean);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vmulq_n_f32(vsubq_f32(vld1q_f32(x + i), vm), k);
        if (w) v = vmulq_f32(v, vld1q_f32(w + i));
        if (b) v = vaddq_f32(v, vld1q_f32(b + i));
        vst1q_f32(d + i, v);
    }
    for (; i < n; i++) {
        float v = (x[i] - mean) * k;
        if (w) v *= w[i];
        if (b) v += b[i];
        d[i] = v;
    }
}

void sdc_scale_shift_neon(float *d, const float *x, int64_t n, float mean, float k, float off) {
    const float32x4_t vm = vdupq_n_f32(mean), vk = vdupq_n_f32(k), vo = vdupq_n_f32(off);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(d + i, vfmaq_f32(vo, vsubq_f32(vld1q_f32(x + i), vm), vk));
    for (; i < n; i++) d[i] = (x[i] - mean) * k + off;
}

void sdc_rms_row_neon(float *d, const float *x, int64_t n, const float *w, float eps) {
    const double ss = sdc_sum_sq_dev_neon(x, n, 0.0f);
    affine(d, x, n, 0.0f, (float)(1.0 / sqrt(ss / n + eps)), w, NULL);
}

void sdc_layer_row_neon(float *d, const float *x, int64_t n, const float *w, const float *b,
                        float eps) {
    const float mean = (float)(sdc_sum_neon(x, n) / n);
    const double ss = sdc_sum_sq_dev_neon(x, n, mean);
    affine(d, x, n, mean, (float)(1.0 / sqrt(ss / n + eps)), w, b);
}

void sdc_softmax_row_neon(float *d, int64_t n) {
    float32x4_t vmax = vdupq_n_f32(-INFINITY);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vmax = vmaxq_f32(vmax, vld1q_f32(d + i));
    float mx = vmaxvq_f32(vmax);
    for (; i < n; i++) mx = d[i] > mx ? d[i] : mx;
    if (mx == -INFINITY) {
        for (i = 0; i < n; i++) d[i] = 0.0f;
        return;
    }
    const float32x4_t vm = vdupq_n_f32(mx);
    float32x4_t vs = vdupq_n_f32(0);
    for (i = 0; i + 4 <= n; i += 4) {
        float32x4_t e = sdc_exp_f32x4(vsubq_f32(vld1q_f32(d + i), vm));
        vst1q_f32(d + i, e);
        vs = vaddq_f32(vs, e);
    }
    double s = vaddvq_f32(vs);
    for (; i < n; i++) s += d[i] = expf(d[i] - mx);
    const float invf = (float)(1.0 / s);
    for (i = 0; i + 4 <= n; i += 4) vst1q_f32(d + i, vmulq_n_f32(vld1q_f32(d + i), invf));
    for (; i < n; i++) d[i] *= invf;
}
