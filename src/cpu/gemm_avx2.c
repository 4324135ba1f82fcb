/* AVX2 + FMA micro-kernels: 6x16 register block (12 accumulators) and FMA dot product.
 * (Weight rows are dequantised by the type traits, which have their own AVX2 paths.) */
#include <immintrin.h>

#include "cpu/gemm.h"

#define NR SDC_GEMM_NR

static void ukernel_avx2(int64_t kc, const float *a, const float *panel, float *const *c,
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
    c##i##0 = _mm256_fmadd_ps(t, b0, c##i##0);                                                     \
    c##i##1 = _mm256_fmadd_ps(t, b1, c##i##1);
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

static float dot_avx2(const float *a, const float *b, int64_t n) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t k = 0;
    for (; k + 32 <= n; k += 32) {
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
        s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 8), _mm256_loadu_ps(b + k + 8), s1);
        s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 16), _mm256_loadu_ps(b + k + 16), s2);
        s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k + 24), _mm256_loadu_ps(b + k + 24), s3);
    }
    for (; k + 8 <= n; k += 8)
        s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + k), _mm256_loadu_ps(b + k), s0);
    float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
    for (; k < n; k++) s += a[k] * b[k];
    return s;
}

void sdc_gemm_kernels_init_avx2(sdc_gemm_kernels *k) {
    k->ukernel = ukernel_avx2;
    k->dot = dot_avx2;
}
