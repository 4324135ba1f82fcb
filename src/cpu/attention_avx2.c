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

static float softmax_update_avx2(float *s, int64_t nk, int64_t valid, const float *mrow, float *m,
                                 float *l) {
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    if (mrow) { /* the driver pads mask rows with -inf past the last key */
        for (int64_t j = 0; j < nk; j += 8) {
            __m256 x = _mm256_add_ps(_mm256_loadu_ps(s + j), _mm256_loadu_ps(mrow + j));
            _mm256_storeu_ps(s + j, x);
            vmax = _mm256_max_ps(vmax, x);
        }
    } else {
        for (int64_t j = valid; j < nk; j++) s[j] = -INFINITY;
        for (int64_t j = 0; j < nk; j += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(s + j));
    }
    const float mx = sdc_hmax256(vmax), mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) {
        memset(s, 0, sizeof(float) * (size_t)nk);
        return 1.0f;
    }
    const __m256 vm = _mm256_set1_ps(mnew);
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t j = 0; j < nk; j += 8) {
        __m256 e = sdc_exp256(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
        _mm256_storeu_ps(s + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    /* the vector exp also maps a first -inf running max to 0; libm expf is slower */
    const float c = _mm256_cvtss_f32(sdc_exp256(_mm256_set1_ps(*m - mnew)));
    *l = *l * c + sdc_hsum256(vsum);
    *m = mnew;
    return c;
}

void sdc_attn_block_avx2(const sdc_attn_block *b) {
    for (int64_t i = 0; i < b->nq; i++) {
        b->m[i] = -INFINITY, b->l[i] = 0;
        memset(b->o + i * b->dvp, 0, sizeof(float) * (size_t)b->dvp);
    }
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        gemm_nn(b->nq, nk, b->d, b->q, b->d, b->kt + kb * b->d, b->d * 16, b->s, SDC_ATTN_BK,
                false);
        for (int64_t i = 0; i < b->nq; i++) {
            const float c =
                softmax_update_avx2(b->s + i * SDC_ATTN_BK, nk, b->lk - kb,
                                    b->mask ? b->mask + i * b->lkp + kb : NULL, &b->m[i], &b->l[i]);
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
