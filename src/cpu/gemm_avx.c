/* AVX (no FMA) micro-kernels, and the 8x8 transpose used by panel packing on every x86
 * SIMD level. */
#include <immintrin.h>

#include "cpu/gemm.h"

#define MR SDC_GEMM_MR
#define NR SDC_GEMM_NR

static void ukernel_avx(int64_t kc, const float *a, const float *panel, float *const *c,
                        int load_c) {
    /* the C tile is read only after the k loop: fetch it now, hidden behind the FMAs */
    for (int i = 0; i < SDC_GEMM_MR; i++) {
        _mm_prefetch((const char *)c[i], _MM_HINT_T0);
        _mm_prefetch((const char *)(c[i] + SDC_GEMM_NR - 1), _MM_HINT_T0);
    }
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    for (int64_t k = 0; k < kc; k++) {
        __m256 b0 = _mm256_load_ps(panel + k * NR), b1 = _mm256_load_ps(panel + k * NR + 8);
        __m256 t;
#define ROW(i)                                                                                     \
    t = _mm256_broadcast_ss(a + k * SDC_GEMM_MR + i);                                              \
    c##i##0 = _mm256_add_ps(c##i##0, _mm256_mul_ps(t, b0));                                        \
    c##i##1 = _mm256_add_ps(c##i##1, _mm256_mul_ps(t, b1));
        ROW(0) ROW(1) ROW(2) ROW(3) ROW(4) ROW(5)
#undef ROW
    }
#define OUT(i)                                                                                     \
    if (load_c) {                                                                                  \
        c##i##0 = _mm256_add_ps(c##i##0, _mm256_loadu_ps(c[i]));                                   \
        c##i##1 = _mm256_add_ps(c##i##1, _mm256_loadu_ps(c[i] + 8));                               \
    }                                                                                              \
    _mm256_storeu_ps(c[i], c##i##0);                                                               \
    _mm256_storeu_ps(c[i] + 8, c##i##1);
    OUT(0) OUT(1) OUT(2) OUT(3) OUT(4) OUT(5)
#undef OUT
}

static float hsum256(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static float dot_avx(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k)));
        s1 = _mm256_add_ps(s1,
                           _mm256_mul_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8)));
        s2 = _mm256_add_ps(s2,
                           _mm256_mul_ps(_mm256_loadu_ps(a + k + 16), _mm256_loadu_ps(b + k + 16)));
        s3 = _mm256_add_ps(s3,
                           _mm256_mul_ps(_mm256_loadu_ps(a + k + 24), _mm256_loadu_ps(b + k + 24)));
    }
    for (; k + 8 <= n; k += 8)
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k)));
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; k < n; k++) s += a[k] * b[k];
    return s;
}

/* 8 rows of 8 floats -> 8 columns, stored at out + i * stride (8 floats each). */
static inline void transpose8(const float *const *r, int64_t k, float *out, int64_t stride) {
    __m256 t0 = _mm256_unpacklo_ps(_mm256_loadu_ps(r[0] + k), _mm256_loadu_ps(r[1] + k));
    __m256 t1 = _mm256_unpackhi_ps(_mm256_loadu_ps(r[0] + k), _mm256_loadu_ps(r[1] + k));
    __m256 t2 = _mm256_unpacklo_ps(_mm256_loadu_ps(r[2] + k), _mm256_loadu_ps(r[3] + k));
    __m256 t3 = _mm256_unpackhi_ps(_mm256_loadu_ps(r[2] + k), _mm256_loadu_ps(r[3] + k));
    __m256 t4 = _mm256_unpacklo_ps(_mm256_loadu_ps(r[4] + k), _mm256_loadu_ps(r[5] + k));
    __m256 t5 = _mm256_unpackhi_ps(_mm256_loadu_ps(r[4] + k), _mm256_loadu_ps(r[5] + k));
    __m256 t6 = _mm256_unpacklo_ps(_mm256_loadu_ps(r[6] + k), _mm256_loadu_ps(r[7] + k));
    __m256 t7 = _mm256_unpackhi_ps(_mm256_loadu_ps(r[6] + k), _mm256_loadu_ps(r[7] + k));
    __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
    __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
    __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
    _mm256_storeu_ps(out + 0 * stride, _mm256_permute2f128_ps(s0, s4, 0x20));
    _mm256_storeu_ps(out + 1 * stride, _mm256_permute2f128_ps(s1, s5, 0x20));
    _mm256_storeu_ps(out + 2 * stride, _mm256_permute2f128_ps(s2, s6, 0x20));
    _mm256_storeu_ps(out + 3 * stride, _mm256_permute2f128_ps(s3, s7, 0x20));
    _mm256_storeu_ps(out + 4 * stride, _mm256_permute2f128_ps(s0, s4, 0x31));
    _mm256_storeu_ps(out + 5 * stride, _mm256_permute2f128_ps(s1, s5, 0x31));
    _mm256_storeu_ps(out + 6 * stride, _mm256_permute2f128_ps(s2, s6, 0x31));
    _mm256_storeu_ps(out + 7 * stride, _mm256_permute2f128_ps(s3, s7, 0x31));
}

static void transpose_avx(const float *const *rows, int64_t kc, float *panel) {
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        transpose8(rows, k, panel + k * NR, NR);
        transpose8(rows + 8, k, panel + k * NR + 8, NR);
    }
    for (; k < kc; k++)
        for (int j = 0; j < NR; j++) panel[k * NR + j] = rows[j][k];
}

/* MR rows -> [k][MR]. Each 8-float column store spills two floats into the next k
 * group, which the next store overwrites; the last spill lands in the caller's slack. */
static void pack_a_avx(const float *const *rows, int64_t kc, float *dst) {
    static const float zero[8];
    int64_t k = 0;
    for (; k + 8 <= kc; k += 8) {
        const float *r[8] = {rows[0] + k, rows[1] + k, rows[2] + k, rows[3] + k,
                             rows[4] + k, rows[5] + k, zero,        zero};
        transpose8(r, 0, dst + k * MR, MR);
    }
    for (; k < kc; k++)
        for (int i = 0; i < MR; i++) dst[k * MR + i] = rows[i][k];
}

void sdc_gemm_kernels_init_avx(sdc_gemm_kernels *k) {
    k->pack_a = pack_a_avx;
    k->ukernel = ukernel_avx;
    k->dot = dot_avx;
    k->transpose = transpose_avx;
}
