/* AArch64 ASIMD micro-kernels: 6x16 register block (24 of the 32 vector registers hold
 * accumulators), FMA dot product, and 4x4 transposes for panel and activation packing.
 * (Weight rows are dequantised by the type traits, which have their own NEON paths.) */
#include <arm_neon.h>

#include "cpu/gemm.h"

#define MR SDC_GEMM_MR
#define NR SDC_GEMM_NR

static void ukernel_neon(int64_t kc, const float *a, const float *panel, float *const *c,
                         int load_c) {
    float32x4_t acc[MR][4];
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < 4; j++) acc[i][j] = vdupq_n_f32(0.0f);
    for (int64_t k = 0; k < kc; k++) {
        const float *b = panel + k * NR;
        float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8),
                    b3 = vld1q_f32(b + 12);
        /* two broadcasts cover the six rows: lane-indexed FMAs need no dup */
        float32x4_t a03 = vld1q_f32(a + k * MR);
        float32x2_t a45 = vld1_f32(a + k * MR + 4);
#define ROWQ(i, v, l)                                                                              \
    acc[i][0] = vfmaq_laneq_f32(acc[i][0], b0, v, l);                                              \
    acc[i][1] = vfmaq_laneq_f32(acc[i][1], b1, v, l);                                              \
    acc[i][2] = vfmaq_laneq_f32(acc[i][2], b2, v, l);                                              \
    acc[i][3] = vfmaq_laneq_f32(acc[i][3], b3, v, l);
#define ROWD(i, v, l)                                                                              \
    acc[i][0] = vfmaq_lane_f32(acc[i][0], b0, v, l);                                               \
    acc[i][1] = vfmaq_lane_f32(acc[i][1], b1, v, l);                                               \
    acc[i][2] = vfmaq_lane_f32(acc[i][2], b2, v, l);                                               \
    acc[i][3] = vfmaq_lane_f32(acc[i][3], b3, v, l);
        ROWQ(0, a03, 0) ROWQ(1, a03, 1) ROWQ(2, a03, 2) ROWQ(3, a03, 3);
        ROWD(4, a45, 0) ROWD(5, a45, 1);
#undef ROWQ
#undef ROWD
    }
    for (int i = 0; i < MR; i++)
        for (int j = 0; j < 4; j++) {
            float32x4_t v = acc[i][j];
            if (load_c) v = vaddq_f32(v, vld1q_f32(c[i] + 4 * j));
            vst1q_f32(c[i] + 4 * j, v);
        }
}

static float dot_neon(const float *a, const float *b, int64_t n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int64_t k = 0;
    for (; k + 16 <= n; k += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + k), vld1q_f32(b + k));
        s1 = vfmaq_f32(s1, vld1q_f32(a + k + 4), vld1q_f32(b + k + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + k + 8), vld1q_f32(b + k + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + k + 12), vld1q_f32(b + k + 12));
    }
    for (; k + 4 <= n; k += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + k), vld1q_f32(b + k));
    float s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; k < n; k++) s += a[k] * b[k];
    return s;
}

/* 4 rows of 4 floats at r[i] + k -> 4 columns stored at out + i * stride. */
static inline void transpose4(const float *const *r, int64_t k, float *out, int64_t stride) {
    float32x4_t r0 = vld1q_f32(r[0] + k), r1 = vld1q_f32(r[1] + k), r2 = vld1q_f32(r[2] + k),
                r3 = vld1q_f32(r[3] + k);
    float32x4_t t0 = vtrn1q_f32(r0, r1), t1 = vtrn2q_f32(r0, r1);
    float32x4_t t2 = vtrn1q_f32(r2, r3), t3 = vtrn2q_f32(r2, r3);
    float64x2_t u0 = vreinterpretq_f64_f32(t0), u1 = vreinterpretq_f64_f32(t1);
    float64x2_t u2 = vreinterpretq_f64_f32(t2), u3 = vreinterpretq_f64_f32(t3);
    vst1q_f32(out + 0 * stride, vreinterpretq_f32_f64(vtrn1q_f64(u0, u2)));
    vst1q_f32(out + 1 * stride, vreinterpretq_f32_f64(vtrn1q_f64(u1, u3)));
    vst1q_f32(out + 2 * stride, vreinterpretq_f32_f64(vtrn2q_f64(u0, u2)));
    vst1q_f32(out + 3 * stride, vreinterpretq_f32_f64(vtrn2q_f64(u1, u3)));
}

static void transpose_neon(const float *const *rows, int64_t kc, float *panel) {
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4)
        for (int j = 0; j < NR; j += 4) transpose4(rows + j, k, panel + k * NR + j, NR);
    for (; k < kc; k++)
        for (int j = 0; j < NR; j++) panel[k * NR + j] = rows[j][k];
}

/* MR = 6 rows -> [k][MR]: rows 0-3 by a 4x4 transpose, rows 4-5 zipped in pairs. */
static void pack_a_neon(const float *const *rows, int64_t kc, float *dst) {
    int64_t k = 0;
    for (; k + 4 <= kc; k += 4) {
        float tmp[16];
        transpose4(rows, k, tmp, 4);
        float32x4_t r4 = vld1q_f32(rows[4] + k), r5 = vld1q_f32(rows[5] + k);
        float32x4_t z0 = vzip1q_f32(r4, r5), z1 = vzip2q_f32(r4, r5);
        for (int q = 0; q < 4; q++) vst1q_f32(dst + (k + q) * MR, vld1q_f32(tmp + 4 * q));
        vst1_f32(dst + (k + 0) * MR + 4, vget_low_f32(z0));
        vst1_f32(dst + (k + 1) * MR + 4, vget_high_f32(z0));
        vst1_f32(dst + (k + 2) * MR + 4, vget_low_f32(z1));
        vst1_f32(dst + (k + 3) * MR + 4, vget_high_f32(z1));
    }
    for (; k < kc; k++)
        for (int i = 0; i < MR; i++) dst[k * MR + i] = rows[i][k];
}

void sdc_gemm_kernels_init_neon(sdc_gemm_kernels *k) {
    k->pack_a = pack_a_neon;
    k->ukernel = ukernel_neon;
    k->dot = dot_neon;
    k->transpose = transpose_neon;
}
