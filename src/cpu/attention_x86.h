/* The x86 attention block kernel's body, shared by the AVX2 and AVX-512 files (include only
 * from those; each passes its own exp_row to attn_block_x86): the online softmax of
 * sdc_attn_block_scalar bit for bit (the same sums in the same order, sdc_exp256's values;
 * weights under 2^-126 come out as a tiny number instead of 0, which no sum beside the row
 * maximum's 1 can see). Both products (scores = q kt, out += p v) run on 6x16 register blocks;
 * the scores' block also adds the mask (or hides the padding keys) and keeps each row's running
 * max in registers, so the softmax reads each score row once. Shapes are pre-padded by the
 * driver (rows to 6, columns to 16). */
#ifndef SDC_CPU_ATTENTION_X86_H
#define SDC_CPU_ATTENTION_X86_H

#include <immintrin.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "cpu/attention_impl.h"
#include "cpu/simd_avx2.h"

/* The 6x16 block's product over k, into the caller's accumulators c00..c51:
 * cRH += A[R][p] * B[p][8H .. 8H + 8], A rows lda apart, B rows ldb apart. */
#define FMA_6X16(k, A, lda, B, ldb)                                                                \
    do {                                                                                           \
        const float *a0 = (A), *a1 = a0 + (lda), *a2 = a1 + (lda), *a3 = a2 + (lda),               \
                    *a4 = a3 + (lda), *a5 = a4 + (lda);                                            \
        for (int64_t p = 0; p < (k); p++) {                                                        \
            const __m256 b0 = _mm256_loadu_ps((B) + p * (ldb)),                                    \
                         b1 = _mm256_loadu_ps((B) + p * (ldb) + 8);                                \
            __m256 a;                                                                              \
            a = _mm256_broadcast_ss(a0 + p);                                                       \
            c00 = _mm256_fmadd_ps(a, b0, c00), c01 = _mm256_fmadd_ps(a, b1, c01);                  \
            a = _mm256_broadcast_ss(a1 + p);                                                       \
            c10 = _mm256_fmadd_ps(a, b0, c10), c11 = _mm256_fmadd_ps(a, b1, c11);                  \
            a = _mm256_broadcast_ss(a2 + p);                                                       \
            c20 = _mm256_fmadd_ps(a, b0, c20), c21 = _mm256_fmadd_ps(a, b1, c21);                  \
            a = _mm256_broadcast_ss(a3 + p);                                                       \
            c30 = _mm256_fmadd_ps(a, b0, c30), c31 = _mm256_fmadd_ps(a, b1, c31);                  \
            a = _mm256_broadcast_ss(a4 + p);                                                       \
            c40 = _mm256_fmadd_ps(a, b0, c40), c41 = _mm256_fmadd_ps(a, b1, c41);                  \
            a = _mm256_broadcast_ss(a5 + p);                                                       \
            c50 = _mm256_fmadd_ps(a, b0, c50), c51 = _mm256_fmadd_ps(a, b1, c51);                  \
        }                                                                                          \
    } while (0)

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
    FMA_6X16(k, A, lda, B, ldb);
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

/* One row of a 6x16 score block: + mask, or -inf on padding lanes; store; running max. */
static inline void finish_row(__m256 x0, __m256 x1, float *c, const float *add, const __m256 *pad,
                              __m256 *vmax) {
    if (add) {
        x0 = _mm256_add_ps(x0, _mm256_loadu_ps(add));
        x1 = _mm256_add_ps(x1, _mm256_loadu_ps(add + 8));
    } else if (pad) {
        x0 = _mm256_blendv_ps(x0, _mm256_set1_ps(-INFINITY), pad[0]);
        x1 = _mm256_blendv_ps(x1, _mm256_set1_ps(-INFINITY), pad[1]);
    }
    _mm256_storeu_ps(c, x0);
    _mm256_storeu_ps(c + 8, x1);
    *vmax = _mm256_max_ps(_mm256_max_ps(*vmax, x0), x1);
}

/* Scores of rows [0, 6) x keys [0, 16) of a tile, C = A B over k = d, finished in registers
 * as the separate passes did them: + the mask rows (add, ldadd apart), or the padding keys
 * (lanes set in pad, when add is NULL) -inf; stored; each row's running vector max (vmax[r],
 * in key order) updated. */
static inline void qk_6x16(int64_t k, const float *A, int64_t lda, const float *B, float *C,
                           const float *add, int64_t ldadd, const __m256 *pad, __m256 *vmax) {
    __m256 c00, c01, c10, c11, c20, c21, c30, c31, c40, c41, c50, c51;
    c00 = c01 = c10 = c11 = c20 = c21 = c30 = c31 = c40 = c41 = c50 = c51 = _mm256_setzero_ps();
    FMA_6X16(k, A, lda, B, 16);
    finish_row(c00, c01, C, add, pad, &vmax[0]);
    finish_row(c10, c11, C + SDC_ATTN_BK, add ? add + ldadd : NULL, pad, &vmax[1]);
    finish_row(c20, c21, C + 2 * SDC_ATTN_BK, add ? add + 2 * ldadd : NULL, pad, &vmax[2]);
    finish_row(c30, c31, C + 3 * SDC_ATTN_BK, add ? add + 3 * ldadd : NULL, pad, &vmax[3]);
    finish_row(c40, c41, C + 4 * SDC_ATTN_BK, add ? add + 4 * ldadd : NULL, pad, &vmax[4]);
    finish_row(c50, c51, C + 5 * SDC_ATTN_BK, add ? add + 5 * ldadd : NULL, pad, &vmax[5]);
}

/* The score tile s = q kt (+ mask) of keys [kb, kb + nk), with each row's vector max. */
static void scores(const sdc_attn_block *b, int64_t kb, int64_t nk, __m256 *vmax) {
    const int64_t valid = b->lk - kb;
    __m256 pad[2];
    for (int h = 0; h < 2; h++) { /* lanes of the panel holding key `valid` at or past it */
        const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        pad[h] = _mm256_castsi256_ps(
            _mm256_cmpgt_epi32(_mm256_add_epi32(lane, _mm256_set1_epi32(8 * h + 1)),
                               _mm256_set1_epi32((int)(valid % 16))));
    }
    for (int64_t i = 0; i < b->nq; i++) vmax[i] = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < nk; j += 16) {
        const float *kt = b->kt + kb * b->d + j / 16 * b->d * 16;
        const bool tail = !b->mask && j + 16 > valid;
        for (int64_t i = 0; i < b->nq; i += 6)
            qk_6x16(b->d, b->q + i * b->d, b->d, kt, b->s + i * SDC_ATTN_BK + j,
                    b->mask ? b->mask + i * b->lkp + kb + j : NULL, b->lkp, tail ? pad : NULL,
                    vmax + i);
    }
}

/* o[0 .. n) *= c (n a multiple of 8): an output row rescaled or normalised */
static inline void scale_row(float *o, int64_t n, float c) {
    const __m256 vc = _mm256_set1_ps(c);
    for (int64_t e = 0; e < n; e += 8)
        _mm256_storeu_ps(o + e, _mm256_mul_ps(_mm256_loadu_ps(o + e), vc));
}

/* Every output row by 1 / its sum (0 where nothing was visible). */
static inline void normalize_rows(const sdc_attn_block *b) {
    for (int64_t i = 0; i < b->nq; i++)
        scale_row(b->o + i * b->dvp, b->dvp, b->l[i] > 0 ? 1.0f / b->l[i] : 0.0f);
}

/* Row i of the score tile into probabilities, given its vector max; returns the factor
 * that rescales the old output (the sums, max and order of sdc_attn_block_scalar's).
 * exp_row (the including file's) does s[j] = e^(s[j] - mnew) and returns the 8-lane sums
 * taken in key order. */
static inline __attribute__((always_inline)) float
softmax_row(float *s, int64_t nk, __m256 vmax, float *m, float *l,
            __m256 (*exp_row)(float *, int64_t, float)) {
    const float mx = sdc_hmax256(vmax), mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) {
        memset(s, 0, sizeof(float) * (size_t)nk);
        return 1.0f;
    }
    const __m256 vsum = exp_row(s, nk, mnew);
    /* a first -inf running max gives a tiny c: it scales an output and sum that are 0 */
    const float c = _mm256_cvtss_f32(sdc_exp256_softmax(_mm256_set1_ps(*m - mnew)));
    *l = *l * c + sdc_hsum256(vsum);
    *m = mnew;
    return c;
}

/* The tiled online softmax over all key blocks, with the including file's exp_row (inlined). */
static inline __attribute__((always_inline)) void
attn_block_x86(const sdc_attn_block *b, __m256 (*exp_row)(float *, int64_t, float)) {
    __m256 vmax[SDC_ATTN_BQ];
    for (int64_t i = 0; i < b->nq; i++) {
        b->m[i] = -INFINITY, b->l[i] = 0;
        memset(b->o + i * b->dvp, 0, sizeof(float) * (size_t)b->dvp);
    }
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        scores(b, kb, nk, vmax);
        for (int64_t i = 0; i < b->nq; i++) {
            const float c =
                softmax_row(b->s + i * SDC_ATTN_BK, nk, vmax[i], &b->m[i], &b->l[i], exp_row);
            if (c != 1.0f) scale_row(b->o + i * b->dvp, b->dvp, c);
        }
        gemm_nn(b->nq, b->dvp, nk, b->s, SDC_ATTN_BK, b->v + kb * 16, b->lkp * 16, b->o, b->dvp,
                true);
    }
    normalize_rows(b);
}

#endif
