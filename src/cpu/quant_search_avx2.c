/* AVX2 version of sdc_qsearch_affine (the grid search of q4_K, q5_K, q2_K, q4_1/q5_1),
 * giving the same levels and floats as the scalar code: eight grid steps run side by
 * side, one per lane, each accumulating over the elements in the scalar order, with the
 * same single-rounded products (never fused). A step that improves the fit changes the
 * offset the next steps are rounded against, so after the first improving lane the
 * remaining lanes are recomputed from the next step. */
#include "core/quant_search.h" /* first: disables FP contraction */

#include <immintrin.h>

#include "cpu/quant_avx2.h"

#define MAX_GROUP 32

float sdc_qsearch_affine_avx2(int n, int nmax, const float *x, const float *w, uint8_t *L,
                              float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0;
    if (!(max > min)) {
        memset(L, 0, (size_t)n);
        *neg_min = -min;
        return 0.f;
    }
    float iscale = (float)nmax / (max - min);
    float scale = 1 / iscale;
    float best_err = 0;
    for (int i = 0; i < n; i++) {
        L[i] = (uint8_t)sdc_qclamp(sdc_qround(iscale * (x[i] - min)), 0, nmax);
        float diff = scale * (float)L[i] + min - x[i];
        best_err += w[i] * (use_mad ? fabsf(diff) : diff * diff);
    }

    const __m256 magic = _mm256_set1_ps(12582912.f);
    const __m256i mant = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
    const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(nmax);
    const __m256 sign = _mm256_set1_ps(-0.f);
    __m256 cand[MAX_GROUP];
    int step = 0;
    while (step <= nstep) {
        float isc[8];
        for (int k = 0; k < 8; k++)
            isc[k] = (rmin + rdelta * (float)(step + k) + (float)nmax) / (max - min);
        const __m256 vis = _mm256_loadu_ps(isc);
        __m256 sl = _mm256_setzero_ps(), sll = sl, sxl = sl;
        for (int i = 0; i < n; i++) {
            __m256 t = _mm256_add_ps(_mm256_mul_ps(vis, _mm256_set1_ps(x[i] - min)), magic);
            __m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mant), half);
            l = _mm256_min_epi32(_mm256_max_epi32(l, zero), top);
            __m256 fl = _mm256_cvtepi32_ps(l);
            cand[i] = fl;
            __m256 wl = _mm256_mul_ps(_mm256_set1_ps(w[i]), fl);
            sl = _mm256_add_ps(sl, wl);
            sll = _mm256_add_ps(sll, _mm256_mul_ps(wl, fl));
            sxl = _mm256_add_ps(sxl, _mm256_mul_ps(wl, _mm256_set1_ps(x[i])));
        }
        float a_l[8], a_ll[8], a_xl[8], s[8], m[8];
        int ok[8];
        _mm256_storeu_ps(a_l, sl);
        _mm256_storeu_ps(a_ll, sll);
        _mm256_storeu_ps(a_xl, sxl);
        for (int k = 0; k < 8; k++) {
            float det = sum_w * a_ll[k] - a_l[k] * a_l[k];
            ok[k] = det > 0 && step + k <= nstep;
            s[k] = m[k] = 0;
            if (!ok[k]) continue;
            s[k] = (sum_w * a_xl[k] - sum_x * a_l[k]) / det;
            m[k] = (a_ll[k] * sum_x - a_l[k] * a_xl[k]) / det;
            if (m[k] > 0) {
                m[k] = 0;
                s[k] = a_xl[k] / a_ll[k];
            }
        }
        const __m256 vs = _mm256_loadu_ps(s), vm = _mm256_loadu_ps(m);
        __m256 err = _mm256_setzero_ps();
        for (int i = 0; i < n; i++) {
            __m256 d =
                _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(vs, cand[i]), vm), _mm256_set1_ps(x[i]));
            __m256 e = use_mad ? _mm256_andnot_ps(sign, d) : _mm256_mul_ps(d, d);
            err = _mm256_add_ps(err, _mm256_mul_ps(_mm256_set1_ps(w[i]), e));
        }
        float a_err[8];
        _mm256_storeu_ps(a_err, err);
        int improved = -1;
        for (int k = 0; k < 8 && step + k <= nstep; k++) {
            if (ok[k] && a_err[k] < best_err) {
                improved = k;
                break;
            }
        }
        if (improved < 0) {
            step += 8;
            continue;
        }
        float lv[8];
        for (int i = 0; i < n; i++) {
            _mm256_storeu_ps(lv, cand[i]);
            L[i] = (uint8_t)lv[improved];
        }
        best_err = a_err[improved];
        scale = s[improved];
        min = m[improved];
        step += improved + 1; /* later steps round against the new offset */
    }
    *neg_min = -min;
    return scale;
}

/* sdc_qsearch_symmetric: the 18 grid steps do not depend on each other, so their sums are
 * computed 8 at a time (each lane in the scalar element order) and then compared in the
 * scalar step order. */
float sdc_qsearch_symmetric_avx2(int n, int nmax, const float *x, const float *w, int8_t *L) {
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) amax = ax, max = x[i];
    }
    if (amax < SDC_QUANT_TINY) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float wi_s[MAX_GROUP];
    for (int i = 0; i < n; i++) wi_s[i] = w ? w[i] : x[i] * x[i];
    /* lane 0 of chunk 0 is the starting fit (iscale -nmax/max), then steps -9..-1, 1..9 */
    float isc[24];
    isc[0] = (float)-nmax / max;
    int k = 1;
    for (int step = -9; step <= 9; step++)
        if (step) isc[k++] = -((float)nmax + 0.1f * (float)step) / max;
    for (; k < 24; k++) isc[k] = isc[0];
    const __m256 magic = _mm256_set1_ps(12582912.f);
    const __m256i mant = _mm256_set1_epi32(0x007fffff), half = _mm256_set1_epi32(0x00400000);
    const __m256i lo = _mm256_set1_epi32(-nmax), hi = _mm256_set1_epi32(nmax - 1);
    __m256i lv[3][MAX_GROUP];
    float xl[24], ll[24];
    for (int c = 0; c < 3; c++) {
        const __m256 vis = _mm256_loadu_ps(isc + 8 * c);
        __m256 sxl = _mm256_setzero_ps(), sll = sxl;
        for (int i = 0; i < n; i++) {
            __m256 t = _mm256_add_ps(_mm256_mul_ps(vis, _mm256_set1_ps(x[i])), magic);
            __m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mant), half);
            l = _mm256_min_epi32(_mm256_max_epi32(l, lo), hi);
            lv[c][i] = l;
            __m256 fl = _mm256_cvtepi32_ps(l);
            __m256 wi = _mm256_set1_ps(wi_s[i]);
            sxl = _mm256_add_ps(sxl, _mm256_mul_ps(_mm256_mul_ps(wi, _mm256_set1_ps(x[i])), fl));
            sll = _mm256_add_ps(sll, _mm256_mul_ps(_mm256_mul_ps(wi, fl), fl));
        }
        _mm256_storeu_ps(xl + 8 * c, sxl);
        _mm256_storeu_ps(ll + 8 * c, sll);
    }
    int chosen = 0;
    float scale = ll[0] ? xl[0] / ll[0] : 0.0f;
    float best = scale * xl[0];
    for (k = 1; k < 19; k++) {
        if (ll[k] > 0 && xl[k] * xl[k] > best * ll[k]) {
            chosen = k;
            scale = xl[k] / ll[k];
            best = scale * xl[k];
        }
    }
    int32_t tmp[8];
    for (int i = 0; i < n; i++) {
        _mm256_storeu_si256((__m256i *)tmp, lv[chosen / 8][i]);
        L[i] = (int8_t)(tmp[chosen % 8] + nmax);
    }
    return scale;
}
