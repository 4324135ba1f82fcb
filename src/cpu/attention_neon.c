/* AArch64 ASIMD attention block: both products (scores = q kt, out += p v) run on one
 * 6x16 register-blocked micro-kernel; the online softmax uses a vector exp. Shapes are
 * pre-padded by the driver (rows to 6, columns to 16), so no tails. Mirrors
 * attention_avx2.c. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu/attention_impl.h"
#include "cpu/simd_neon.h"

/* C[6][16] (+)= A[6][k] * B[k][16]: A rows lda apart, B rows ldb apart. */
static inline void micro_6x16(int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb,
                              float *C, int64_t ldc, bool acc) {
    float32x4_t c[6][4];
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) c[i][j] = acc ? vld1q_f32(C + i * ldc + 4 * j) : vdupq_n_f32(0);
    for (int64_t p = 0; p < k; p++) {
        const float *b = B + p * ldb;
        const float32x4_t b0 = vld1q_f32(b), b1 = vld1q_f32(b + 4), b2 = vld1q_f32(b + 8),
                          b3 = vld1q_f32(b + 12);
        for (int i = 0; i < 6; i++) {
            const float a = A[i * lda + p];
            c[i][0] = vfmaq_n_f32(c[i][0], b0, a);
            c[i][1] = vfmaq_n_f32(c[i][1], b1, a);
            c[i][2] = vfmaq_n_f32(c[i][2], b2, a);
            c[i][3] = vfmaq_n_f32(c[i][3], b3, a);
        }
    }
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 4; j++) vst1q_f32(C + i * ldc + 4 * j, c[i][j]);
}

/* C[m][n] (+)= A[m][k] B[k][n], m a multiple of 6, n of 16. Columns j..j+15 of B start
 * at B + (j / 16) * pstride with rows ldb apart (plain rows: pstride 16, ldb the row
 * length; panels of 16: pstride the panel size, ldb 16). */
static void gemm_nn(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                    int64_t pstride, int64_t ldb, float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < n; j += 16)
        for (int64_t i = 0; i < m; i += 6)
            micro_6x16(k, A + i * lda, lda, B + j / 16 * pstride, ldb, C + i * ldc + j, ldc, acc);
}

static float softmax_update_neon(float *s, int64_t nk, int64_t valid, const float *mrow, float *m,
                                 float *l) {
    float32x4_t vmax = vdupq_n_f32(-INFINITY);
    if (mrow) { /* the driver pads mask rows with -inf past the last key */
        for (int64_t j = 0; j < nk; j += 4) {
            float32x4_t x = vaddq_f32(vld1q_f32(s + j), vld1q_f32(mrow + j));
            vst1q_f32(s + j, x);
            vmax = vmaxq_f32(vmax, x);
        }
    } else {
        for (int64_t j = valid; j < nk; j++) s[j] = -INFINITY;
        for (int64_t j = 0; j < nk; j += 4) vmax = vmaxq_f32(vmax, vld1q_f32(s + j));
    }
    const float mx = vmaxvq_f32(vmax), mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) {
        memset(s, 0, sizeof(float) * (size_t)nk);
        return 1.0f;
    }
    const float32x4_t vm = vdupq_n_f32(mnew);
    float32x4_t vsum = vdupq_n_f32(0);
    for (int64_t j = 0; j < nk; j += 4) {
        float32x4_t e = sdc_exp_f32x4(vsubq_f32(vld1q_f32(s + j), vm));
        vst1q_f32(s + j, e);
        vsum = vaddq_f32(vsum, e);
    }
    /* the vector exp also maps a first -inf running max to 0 */
    const float c = vgetq_lane_f32(sdc_exp_f32x4(vdupq_n_f32(*m - mnew)), 0);
    *l = *l * c + vaddvq_f32(vsum);
    *m = mnew;
    return c;
}

static void scale_row(float *o, int64_t n, float c) {
    for (int64_t e = 0; e < n; e += 4) vst1q_f32(o + e, vmulq_n_f32(vld1q_f32(o + e), c));
}

void sdc_attn_block_neon(const sdc_attn_block *b) {
    for (int64_t i = 0; i < b->nq; i++) {
        b->m[i] = -INFINITY, b->l[i] = 0;
        memset(b->o + i * b->dvp, 0, sizeof(float) * (size_t)b->dvp);
    }
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        /* kt: panels of [d][16]; v: panels of [lkp][16] (see attention_impl.h) */
        gemm_nn(b->nq, nk, b->d, b->q, b->d, b->kt + kb * b->d, b->d * 16, 16, b->s, SDC_ATTN_BK,
                false);
        for (int64_t i = 0; i < b->nq; i++) {
            const float c =
                softmax_update_neon(b->s + i * SDC_ATTN_BK, nk, b->lk - kb,
                                    b->mask ? b->mask + i * b->lkp + kb : NULL, &b->m[i], &b->l[i]);
            if (c != 1.0f) scale_row(b->o + i * b->dvp, b->dvp, c);
        }
        gemm_nn(b->nq, b->dvp, nk, b->s, SDC_ATTN_BK, b->v + kb * 16, b->lkp * 16, 16, b->o, b->dvp,
                true);
    }
    for (int64_t i = 0; i < b->nq; i++)
        scale_row(b->o + i * b->dvp, b->dvp, b->l[i] > 0 ? 1.0f / b->l[i] : 0.0f);
}
