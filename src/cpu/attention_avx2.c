/* AVX2+FMA attention block: both products (scores = q kt, out += p v) run on one
 * 6x16 register-blocked micro-kernel; the online softmax uses a vector exp.
 * Shapes are pre-padded by the driver (rows to 6, columns to 16), so no tails. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu/attention_impl.h"
#include "cpu/simd_avx2.h"

/* C[6][16] (+)= A[6][k] * B[k][16]: A rows lda apart, B rows ldb apart. */
static inline void micro_6x16(int64_t k, const float *A, int64_t lda, const float *B, int64_t ldb,
                              float *C, int64_t ldc, bool acc) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    if (acc) {
        c00 = _mm256_loadu_ps(C), c01 = _mm256_loadu_ps(C + 8);
        c10 = _mm256_loadu_ps(C + ldc), c11 = _mm256_loadu_ps(C + ldc + 8);
        c20 = _mm256_loadu_ps(C + 2 * ldc), c21 = _mm256_loadu_ps(C + 2 * ldc + 8);
        c30 = _mm256_loadu_ps(C + 3 * ldc), c31 = _mm256_loadu_ps(C + 3 * ldc + 8);
        c40 = _mm256_loadu_ps(C + 4 * ldc), c41 = _mm256_loadu_ps(C + 4 * ldc + 8);
        c50 = _mm256_loadu_ps(C + 5 * ldc), c51 = _mm256_loadu_ps(C + 5 * ldc + 8);
    } else {
        c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    }
    const float *a0 = A, *a1 = A + lda, *a2 = A + 2 * lda, *a3 = A + 3 * lda, *a4 = A + 4 * lda,
                *a5 = A + 5 * lda;
    for (int64_t p = 0; p < k; p++) {
        const __m256 b0 = _mm256_loadu_ps(B + p * ldb), b1 = _mm256_loadu_ps(B + p * ldb + 8);
        __m256 a;
        a = _mm256_broadcast_ss(a0 + p);
        c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);
        a = _mm256_broadcast_ss(a1 + p);
        c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);
        a = _mm256_broadcast_ss(a2 + p);
        c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);
        a = _mm256_broadcast_ss(a3 + p);
        c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);
        a = _mm256_broadcast_ss(a4 + p);
        c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);
        a = _mm256_broadcast_ss(a5 + p);
        c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);
    }
    _mm256_storeu_ps(C, c00), _mm256_storeu_ps(C + 8, c01);
    _mm256_storeu_ps(C + ldc, c10), _mm256_storeu_ps(C + ldc + 8, c11);
    _mm256_storeu_ps(C + 2 * ldc, c20), _mm256_storeu_ps(C + 2 * ldc + 8, c21);
    _mm256_storeu_ps(C + 3 * ldc, c30), _mm256_storeu_ps(C + 3 * ldc + 8, c31);
    _mm256_storeu_ps(C + 4 * ldc, c40), _mm256_storeu_ps(C + 4 * ldc + 8, c41);
    _mm256_storeu_ps(C + 5 * ldc, c50), _mm256_storeu_ps(C + 5 * ldc + 8, c51);
}

/* C[m][n] (+)= A[m][k] B[k][n], m a multiple of 6, n of 16; B in panels of [k][16],
 * panel j / 16 at B + (j / 16) * pstride. */
static void gemm_nn(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                    int64_t pstride, float *C, int64_t ldc, bool acc) {
    for (int64_t j = 0; j < n; j += 16)
        for (int64_t i = 0; i < m; i += 6)
            micro_6x16(k, A + i * lda, lda, B + j / 16 * pstride, 16, C + i * ldc + j, ldc, acc);
}

/* One 6x16 tile of scores, S[6][16] = Q[6][d] Kt[d][16] (Q rows d apart, Kt a [d][16]
 * panel), finished in registers: mask added, dead lanes (keys at or past the last real
 * one) set to -inf, stored, and each row's running maximum (8 lanes) updated. */
static inline void scores_6x16(int64_t d, const float *Q, const float *Kt, float *S,
                               const float *mask, int64_t ldm, __m256 dead0, __m256 dead1,
                               __m256 *rmax) {
    __m256 c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) c[r][0] = c[r][1] = _mm256_setzero_ps();
    for (int64_t p = 0; p < d; p++) {
        const __m256 b0 = _mm256_loadu_ps(Kt + p * 16), b1 = _mm256_loadu_ps(Kt + p * 16 + 8);
#pragma GCC unroll 6
        for (int r = 0; r < 6; r++) {
            const __m256 a = _mm256_broadcast_ss(Q + r * d + p);
            c[r][0] = _mm256_fmadd_ps(a, b0, c[r][0]);
            c[r][1] = _mm256_fmadd_ps(a, b1, c[r][1]);
        }
    }
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
#pragma GCC unroll 6
    for (int r = 0; r < 6; r++) {
        __m256 x0 = c[r][0], x1 = c[r][1];
        if (mask) {
            x0 = _mm256_add_ps(x0, _mm256_loadu_ps(mask + r * ldm));
            x1 = _mm256_add_ps(x1, _mm256_loadu_ps(mask + r * ldm + 8));
        }
        x0 = _mm256_blendv_ps(x0, ninf, dead0);
        x1 = _mm256_blendv_ps(x1, ninf, dead1);
        _mm256_storeu_ps(S + r * SDC_ATTN_BK, x0), _mm256_storeu_ps(S + r * SDC_ATTN_BK + 8, x1);
        rmax[r] = _mm256_max_ps(rmax[r], _mm256_max_ps(x0, x1));
    }
}

/* Scores of key block kb: s[i][j] = q[i] . k[kb + j] (+ mask), keys at or past `valid`
 * set to -inf, each row's maximum kept as it is stored (rmax[i]), so the softmax needs
 * no pass to find it. */
static void scores_tile(const sdc_attn_block *b, int64_t kb, int64_t nk, int64_t valid,
                        __m256 *rmax) {
    for (int64_t i = 0; i < b->nq; i++) rmax[i] = _mm256_set1_ps(-INFINITY);
    const float *kt = b->kt + kb * b->d;
    for (int64_t j = 0; j < nk; j += 16) {
        __m256 dead0 = _mm256_setzero_ps(), dead1 = _mm256_setzero_ps();
        if (j + 16 > valid) { /* only in the last block */
            const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
            const __m256 lim = _mm256_set1_ps((float)(valid - j));
            dead0 = _mm256_cmp_ps(lane, lim, _CMP_GE_OQ);
            dead1 = _mm256_cmp_ps(_mm256_add_ps(lane, _mm256_set1_ps(8.0f)), lim, _CMP_GE_OQ);
        }
        for (int64_t i = 0; i < b->nq; i += 6)
            scores_6x16(b->d, b->q + i * b->d, kt + j / 16 * b->d * 16, b->s + i * SDC_ATTN_BK + j,
                        b->mask ? b->mask + i * b->lkp + kb + j : NULL, b->lkp, dead0, dead1,
                        rmax + i);
    }
}

/* Row i of the score tile to probabilities against the running max; returns the factor
 * that rescales the old output. The exp is sdc_exp256 (relative error ~2e-7): a base-2
 * fit with q pre-scaled by log2 e ran 9% faster but moved the SD inpainting goldens
 * (test_sd_inpaint_sdcpp) past 3/255 of sd.cpp's pictures. */
static float softmax_row(float *s, int64_t nk, __m256 rmax, float *m, float *l) {
    const float mx = sdc_hmax256(rmax), mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) { /* nothing visible yet */
        memset(s, 0, sizeof(float) * (size_t)nk);
        return 1.0f;
    }
    const __m256 vm = _mm256_set1_ps(mnew);
    __m256 sum0 = _mm256_setzero_ps(), sum1 = _mm256_setzero_ps();
    for (int64_t j = 0; j < nk; j += 16) {
        const __m256 e0 = sdc_exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
        const __m256 e1 = sdc_exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j + 8), vm));
        _mm256_storeu_ps(s + j, e0), _mm256_storeu_ps(s + j + 8, e1);
        sum0 = _mm256_add_ps(sum0, e0), sum1 = _mm256_add_ps(sum1, e1);
    }
    /* a first -inf running max gives 2^-125 here, times an output of zeros */
    const float c = _mm256_cvtss_f32(sdc_exp256(_mm256_set1_ps(*m - mnew)));
    *l = *l * c + sdc_hsum256(_mm256_add_ps(sum0, sum1));
    *m = mnew;
    return c;
}

void sdc_attn_block_avx2(const sdc_attn_block *b) {
    __m256 rmax[SDC_ATTN_BQ];
    for (int64_t i = 0; i < b->nq; i++) {
        b->m[i] = -INFINITY, b->l[i] = 0;
        memset(b->o + i * b->dvp, 0, sizeof(float) * (size_t)b->dvp);
    }
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        scores_tile(b, kb, nk, b->lk - kb, rmax);
        for (int64_t i = 0; i < b->nq; i++) {
            const float c = softmax_row(b->s + i * SDC_ATTN_BK, nk, rmax[i], &b->m[i], &b->l[i]);
            if (c != 1.0f) {
                const __m256 vc = _mm256_set1_ps(c);
                float *o = b->o + i * b->dvp;
                for (int64_t e = 0; e < b->dvp; e += 8)
                    _mm256_storeu_ps(o + e, _mm256_mul_ps(_mm256_loadu_ps(o + e), vc));
            }
        }
        gemm_nn(b->nq, b->dvp, nk, b->s, SDC_ATTN_BK, b->v + kb * 16, b->lkp * 16, b->o, b->dvp,
                true);
    }
    for (int64_t i = 0; i < b->nq; i++) {
        const __m256 inv = _mm256_set1_ps(b->l[i] > 0 ? 1.0f / b->l[i] : 0.0f);
        float *o = b->o + i * b->dvp;
        for (int64_t e = 0; e < b->dvp; e += 8)
            _mm256_storeu_ps(o + e, _mm256_mul_ps(_mm256_loadu_ps(o + e), inv));
    }
}
