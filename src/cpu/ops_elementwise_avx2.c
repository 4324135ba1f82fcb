/* AVX2 rows for the transcendental activations (the rest fall back to scalar loops,
 * which the compiler vectorises). */
#include "cpu/ops_elementwise_impl.h"
#include "cpu/simd_avx2.h"

/* x / (1 + e^(-k*u)) for u = x (silu, k=1) or the gelu tanh argument (k=2). */
void sdc_unary_row_avx2(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1) {
    const __m256 one = _mm256_set1_ps(1.0f);
    int64_t i = 0;
    switch (op) {
    case SDC_OP_GELU: {
        /* 0.5x(1+tanh(u)) == x * sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3) */
        const __m256 c2 = _mm256_set1_ps(-2.0f * 0.7978845608028654f);
        const __m256 c3 = _mm256_set1_ps(0.044715f);
        for (; i + 8 <= n; i += 8) {
            __m256 x = _mm256_loadu_ps(a + i);
            __m256 u = _mm256_fmadd_ps(_mm256_mul_ps(c3, x), _mm256_mul_ps(x, x), x);
            __m256 e = sdc_exp256(_mm256_mul_ps(c2, u));
            _mm256_storeu_ps(d + i, _mm256_div_ps(x, _mm256_add_ps(one, e)));
        }
        break;
    }
    case SDC_OP_SILU:
        for (; i + 8 <= n; i += 8) {
            __m256 x = _mm256_loadu_ps(a + i);
            __m256 e = sdc_exp256(_mm256_sub_ps(_mm256_setzero_ps(), x));
            _mm256_storeu_ps(d + i, _mm256_div_ps(x, _mm256_add_ps(one, e)));
        }
        break;
    case SDC_OP_SIGMOID:
        for (; i + 8 <= n; i += 8) {
            __m256 x = _mm256_loadu_ps(a + i);
            __m256 e = sdc_exp256(_mm256_sub_ps(_mm256_setzero_ps(), x));
            _mm256_storeu_ps(d + i, _mm256_div_ps(one, _mm256_add_ps(one, e)));
        }
        break;
    case SDC_OP_EXP:
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(d + i, sdc_exp256(_mm256_loadu_ps(a + i)));
        break;
    case SDC_OP_SCALE: {
        const __m256 s = _mm256_set1_ps(f0), b = _mm256_set1_ps(f1);
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(d + i, _mm256_fmadd_ps(_mm256_loadu_ps(a + i), s, b));
        break;
    }
    default:
        break;
    }
    if (i < n) sdc_unary_row_scalar(op, d + i, a + i, n - i, f0, f1);
}
