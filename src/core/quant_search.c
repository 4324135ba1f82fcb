/* Scale searches shared by the block quantisers. They reproduce the results of ggml's
 * make_qx_quants / make_qkx2_quants / make_qkx3_quants / make_qp_quants bit for bit,
 * hence the exact float expression order (see quant_search.h). */
#include <math.h>

#include "core/quant_search.h"
#include "core/quant_simd.h"

#define MAX_GROUP 32 /* largest group any caller searches */

static inline float weight_at(const float *x, const float *w, int i) {
    return w ? w[i] : x[i] * x[i];
}

/* Levels for inverse scale `iscale` on -nmax..nmax-1 (stored + nmax), with the weighted
 * sums sum(w*x*l) and sum(w*l*l) whose ratio is the least-squares scale. */
static void symmetric_fit(int n, int nmax, const float *x, const float *w, float iscale, int8_t *L,
                          float *sum_xl, float *sum_ll) {
    float xl = 0, ll = 0;
    for (int i = 0; i < n; i++) {
        int l = sdc_qclamp(sdc_qround(iscale * x[i]), -nmax, nmax - 1);
        L[i] = (int8_t)(l + nmax);
        float wi = weight_at(x, w, i);
        xl += wi * x[i] * (float)l;
        ll += wi * (float)l * (float)l;
    }
    *sum_xl = xl;
    *sum_ll = ll;
}

float sdc_qsearch_symmetric(int n, int nmax, const float *x, const float *w, int8_t *L) {
    if (n <= MAX_GROUP) {
        const sdc_quant_simd *simd = sdc_quant_simd_active();
        if (simd && simd->search_symmetric) return simd->search_symmetric(n, nmax, x, w, L);
    }
    float amax = 0, max = 0;
    for (int i = 0; i < n; i++) {
        float ax = fabsf(x[i]);
        if (ax > amax) amax = ax, max = x[i];
    }
    if (amax < SDC_QUANT_TINY) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    /* The sign of the largest value picks the asymmetric side: it lands on level -nmax. */
    float sum_xl, sum_ll;
    symmetric_fit(n, nmax, x, w, (float)-nmax / max, L, &sum_xl, &sum_ll);
    float scale = sum_ll ? sum_xl / sum_ll : 0.0f;
    float best = scale * sum_xl; /* the fit's gain: larger means smaller weighted error */

    int8_t cand[MAX_GROUP];
    for (int step = -9; step <= 9; step++) {
        if (step == 0) continue;
        float iscale = -((float)nmax + 0.1f * (float)step) / max;
        symmetric_fit(n, nmax, x, w, iscale, cand, &sum_xl, &sum_ll);
        if (sum_ll > 0 && sum_xl * sum_xl > best * sum_ll) {
            memcpy(L, cand, (size_t)n);
            scale = sum_xl / sum_ll;
            best = scale * sum_xl;
        }
    }
    return scale;
}

static inline float affine_error(float diff, bool use_mad) {
    return use_mad ? fabsf(diff) : diff * diff;
}

float sdc_qsearch_affine(int n, int nmax, const float *x, const float *w, uint8_t *L,
                         float *neg_min, float rmin, float rdelta, int nstep, bool use_mad) {
    if (n <= MAX_GROUP) {
        const sdc_quant_simd *simd = sdc_quant_simd_active();
        if (simd && simd->search_affine)
            return simd->search_affine(n, nmax, x, w, L, neg_min, rmin, rdelta, nstep, use_mad);
    }
    float min = x[0], max = x[0];
    float sum_w = w[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        sum_w += w[i];
        sum_x += w[i] * x[i];
    }
    if (min > 0) min = 0; /* the offset only ever subtracts */
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
        best_err += w[i] * affine_error(scale * (float)L[i] + min - x[i], use_mad);
    }

    uint8_t cand[MAX_GROUP];
    for (int step = 0; step <= nstep; step++) {
        iscale = (rmin + rdelta * (float)step + (float)nmax) / (max - min);
        float sum_l = 0, sum_ll = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = sdc_qclamp(sdc_qround(iscale * (x[i] - min)), 0, nmax);
            cand[i] = (uint8_t)l;
            float fl = (float)l;
            sum_l += w[i] * fl;
            sum_ll += w[i] * fl * fl;
            sum_xl += w[i] * fl * x[i];
        }
        /* Weighted least squares for x ~ s*l + m over the fixed levels. */
        float det = sum_w * sum_ll - sum_l * sum_l;
        if (!(det > 0)) continue;
        float s = (sum_w * sum_xl - sum_x * sum_l) / det;
        float m = (sum_ll * sum_x - sum_l * sum_xl) / det;
        if (m > 0) { /* a positive offset is not representable: refit through 0 */
            m = 0;
            s = sum_xl / sum_ll;
        }
        float err = 0;
        for (int i = 0; i < n; i++)
            err += w[i] * affine_error(s * (float)cand[i] + m - x[i], use_mad);
        if (err < best_err) {
            memcpy(L, cand, (size_t)n);
            best_err = err;
            scale = s;
            min = m;
        }
    }
    *neg_min = -min;
    return scale;
}

float sdc_qsearch_positive(int n, int nmax, const float *x, const float *w, uint8_t *L) {
    float max = 0;
    for (int i = 0; i < n; i++) max = max > x[i] ? max : x[i];
    if (max < SDC_QUANT_TINY) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }

    /* Pick the inverse scale (nmax + 0.1*k)/max, k in -4..4, with the least weighted
     * squared error; k = 0 is unclamped, as in the reference. */
    float iscale = (float)nmax / max;
    float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; i++) {
        float diff = x[i] - scale * (float)(uint8_t)sdc_qround(iscale * x[i]);
        best_mse += w[i] * diff * diff;
    }
    for (int k = -4; k <= 4; k++) {
        if (k == 0) continue;
        float iscale_k = (0.1f * (float)k + (float)nmax) / max;
        float scale_k = 1 / iscale_k;
        float mse = 0;
        for (int i = 0; i < n; i++) {
            int l = sdc_qround(iscale_k * x[i]);
            if (l > nmax) l = nmax;
            float diff = x[i] - scale_k * (float)l;
            mse += w[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_k;
        }
    }

    float sum_xl = 0, sum_ll = 0;
    for (int i = 0; i < n; i++) {
        int l = sdc_qround(iscale * x[i]);
        if (l > nmax) l = nmax;
        L[i] = (uint8_t)l;
        sum_xl += w[i] * x[i] * (float)L[i];
        sum_ll += w[i] * (float)L[i] * (float)L[i];
    }
    /* Coordinate descent: move single levels while the fit's gain grows. */
    for (int pass = 0; pass < 5; pass++) {
        int changed = 0;
        for (int i = 0; i < n; i++) {
            float xl = sum_xl - w[i] * x[i] * (float)L[i];
            float ll = sum_ll - w[i] * (float)L[i] * (float)L[i];
            if (!(xl > 0 && ll > 0)) continue;
            int l = sdc_qround(x[i] * ll / xl);
            if (l > nmax) l = nmax;
            if (l == L[i]) continue;
            xl += w[i] * x[i] * (float)l;
            ll += w[i] * (float)l * (float)l;
            if (xl * xl * sum_ll > sum_xl * sum_xl * ll) {
                L[i] = (uint8_t)l;
                sum_xl = xl;
                sum_ll = ll;
                changed++;
            }
        }
        if (!changed) break;
    }
    return sum_ll > 0.0f ? sum_xl / sum_ll : 0.0f;
}
