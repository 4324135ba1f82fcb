/* AVX2 rows for rms/layer norm and softmax: four 8-wide float accumulators (sums of
 * rows up to ~10^5 values stay within float rounding of the double result). */
#include <math.h>

#include "cpu/ops_norm_impl.h"
#include "cpu/simd_avx2.h"

double sdc_sum_sq_dev_avx2(const float *x, int64_t n, float mean) {
    const __m256 m = _mm256_set1_ps(mean);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256 v0 = _mm256_sub_ps(_mm256_loadu_ps(x + i), m);
        __m256 v1 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m);
        __m256 v2 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 16), m);
        __m256 v3 = _mm256_sub_ps(_mm256_loadu_ps(x + i + 24), m);
        a0 = _mm256_fmadd_ps(v0, v0, a0), a1 = _mm256_fmadd_ps(v1, v1, a1);
        a2 = _mm256_fmadd_ps(v2, v2, a2), a3 = _mm256_fmadd_ps(v3, v3, a3);
    }
    double s = sdc_hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += ((double)x[i] - mean) * ((double)x[i] - mean);
    return s;
}

double sdc_sum_avx2(const float *x, int64_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
        a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
    }
    double s = sdc_hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    for (; i < n; i++) s += x[i];
    return s;
}

/* d = (x - mean) * k * w + b with optional w, b */
static void affine(float *d, const float *x, int64_t n, float mean, float k, const float *w,
                   const float *b) {
    const __m256 vm = _mm256_set1_ps(mean), vk = _mm256_set1_ps(k);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vk);
        if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        if (b) v = _mm256_add_ps(v, _mm256_loadu_ps(b + i));
        _mm256_storeu_ps(d + i, v);
    }
    for (; i < n; i++) {
        float v = (x[i] - mean) * k;
        if (w) v *= w[i];
        if (b) v += b[i];
        d[i] = v;
    }
}

void sdc_scale_shift_avx2(float *d, const float *x, int64_t n, float mean, float k, float off) {
    const __m256 vm = _mm256_set1_ps(mean), vk = _mm256_set1_ps(k), vo = _mm256_set1_ps(off);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_fmadd_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm), vk, vo));
    for (; i < n; i++) d[i] = (x[i] - mean) * k + off;
}

void sdc_rms_row_avx2(float *d, const float *x, int64_t n, const float *w, float eps) {
    const double ss = sdc_sum_sq_dev_avx2(x, n, 0.0f);
    affine(d, x, n, 0.0f, (float)(1.0 / sqrt(ss / n + eps)), w, NULL);
}

void sdc_layer_row_avx2(float *d, const float *x, int64_t n, const float *w, const float *b,
                        float eps) {
    const float mean = (float)(sdc_sum_avx2(x, n) / n);
    const double ss = sdc_sum_sq_dev_avx2(x, n, mean);
    affine(d, x, n, mean, (float)(1.0 / sqrt(ss / n + eps)), w, b);
}

void sdc_softmax_row_avx2(float *d, int64_t n) {
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_loadu_ps(d + i));
    float mx = sdc_hmax256(vmax);
    for (; i < n; i++) mx = d[i] > mx ? d[i] : mx;
    if (mx == -INFINITY) {
        for (i = 0; i < n; i++) d[i] = 0.0f;
        return;
    }
    const __m256 vm = _mm256_set1_ps(mx);
    __m256 vs = _mm256_setzero_ps();
    for (i = 0; i + 8 <= n; i += 8) {
        __m256 e = sdc_exp256(_mm256_sub_ps(_mm256_loadu_ps(d + i), vm));
        _mm256_storeu_ps(d + i, e);
        vs = _mm256_add_ps(vs, e);
    }
    double s = sdc_hsum256(vs);
    for (; i < n; i++) s += d[i] = expf(d[i] - mx);
    const __m256 inv = _mm256_set1_ps((float)(1.0 / s));
    const float invf = (float)(1.0 / s);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(d + i, _mm256_mul_ps(_mm256_loadu_ps(d + i), inv));
    for (; i < n; i++) d[i] *= invf;
}
