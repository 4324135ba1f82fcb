/* Linear multistep samplers that reuse earlier model outputs: DPM-Solver++(2M) and its
 * v2 step-size variant, iPNDM (fixed and variable step Adams-Bashforth) and LMS. */
#include "sampling/samplers_impl.h"

#include <math.h>
#include <stdlib.h>

static float neg_log(float sigma) {
    return (float)-log(sigma);
}

/* v2 takes the mean of the two log steps and their ratio >= 1 for the correction. */
static sdc_status run_dpmpp_2m(sdc_smp *s, bool v2) {
    float *x = s->x, *den = sdc_smp_buf(s), *old = sdc_smp_buf(s);
    SDC_SMP_NEED(den && old);
    for (int i = 0; i < s->steps; i++) {
        float s0 = s->sigmas[i], s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, s0, den, NULL));
        float t = neg_log(s0), t_next = neg_log(s1), h = t_next - t;
        float a = s1 / s0;
        if (i == 0 || s1 == 0) {
            float b = (float)(exp(-h) - 1.f);
            for (int64_t k = 0; k < s->n; k++) x[k] = a * x[k] - b * den[k];
        } else {
            float h_last = t - neg_log(s->sigmas[i - 1]), r, b;
            if (v2) {
                float h_min = fminf(h_last, h), h_max = fmaxf(h_last, h);
                r = h_max / h_min;
                b = (float)(exp(-((h_max + h_min) / 2.f)) - 1.f);
            } else {
                r = h_last / h;
                b = (float)(exp(-h) - 1.f);
            }
            float c1 = 1.f + 1.f / (2.f * r), c0 = 1.f / (2.f * r);
            for (int64_t k = 0; k < s->n; k++) {
                float dd = c1 * den[k] - c0 * old[k];
                x[k] = a * x[k] - b * dd;
            }
        }
        float *tmp = old;
        old = den;
        den = tmp;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* iPNDM: Adams-Bashforth of order up to 4 on the derivative history. The variable-step
 * form (ipndm_v) only adapts the second-order step to the step-size ratio. */
static sdc_status run_ipndm(sdc_smp *s, bool variable) {
    float *x = s->x, *den = sdc_smp_buf(s), *h[4];
    SDC_SMP_NEED(den);
    for (int j = 0; j < 4; j++) SDC_SMP_NEED(h[j] = sdc_smp_buf(s));
    int nh = 0; /* h[0] is the newest derivative, h[1] the one before, ... */
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], dt = s->sigmas[i + 1] - sigma;
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, NULL));
        float *d = h[3]; /* oldest slot becomes the current derivative */
        for (int64_t k = 0; k < s->n; k++) d[k] = (x[k] - den[k]) / sigma;
        int order = i + 1 < 4 ? i + 1 : 4;
        float ratio = 0, c2 = 0;
        if (variable && order == 2) {
            float h_prev = sigma - s->sigmas[i - 1];
            ratio = dt / h_prev;
            c2 = 2.f + ratio;
        }
        for (int64_t k = 0; k < s->n; k++) {
            float inc;
            switch (order) {
            case 1:
                inc = d[k];
                break;
            case 2:
                inc = variable ? (c2 * d[k] - ratio * h[0][k]) / 2.f : (3.f * d[k] - h[0][k]) / 2.f;
                break;
            case 3:
                inc = (23.f * d[k] - 16.f * h[0][k] + 5.f * h[1][k]) / 12.f;
                break;
            default:
                inc = (55.f * d[k] - 59.f * h[0][k] + 37.f * h[1][k] - 9.f * h[2][k]) / 24.f;
                break;
            }
            x[k] += inc * dt;
        }
        h[3] = h[2];
        h[2] = h[1];
        h[1] = h[0];
        h[0] = d;
        if (nh < 3) nh++;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* Integral over [sigma_m, sigma_m+1] of the Lagrange basis polynomial for history
 * point m-j, by a float midpoint rule (sd.cpp's integrator, not scipy quad). */
static float lms_coeff(const float *sg, int order, int m, int j, int divisions) {
    if (!divisions) return sg[m + 1] - sg[m];
    const float a = sg[m], dx = (sg[m + 1] - a) / (float)divisions, sj = sg[m - j];
    const float b0 = a + 0.5f * dx;
    float sum = 0.0f;
    for (int h = 0; h < divisions; h++) {
        const float b = (float)h * dx + b0;
        float prod = 1.0f;
        for (int k = 0; k < order; k++) {
            if (k == j) continue;
            const float t = sg[m - k];
            prod *= (b - t) / (sj - t);
        }
        sum += prod;
    }
    return sum * dx;
}

/* LMS. sd.cpp's "history shift" (default 1) picks history entries one step newer than
 * k-diffusion's indexing (shift 0); both are available. */
static sdc_status run_lms(sdc_smp *s) {
    const sdc_sampler_params *p = s->p;
    int max_order = p->lms_max_order < s->steps ? p->lms_max_order : s->steps;
    int shift = p->lms_shift > 0 ? p->lms_shift : 0;
    float *x = s->x, *den = sdc_smp_buf(s);
    SDC_SMP_NEED(den);
    float **hist = calloc((size_t)max_order + 1, sizeof(float *));
    float *coeff = calloc((size_t)max_order, sizeof(float));
    sdc_status st = SDC_OK;
    if (!hist || !coeff) st = sdc_fail(SDC_ERR_NO_MEMORY, "sampler: out of memory");
    for (int j = 0; st == SDC_OK && j < max_order; j++)
        if (!(hist[j] = malloc(sizeof(float) * (size_t)s->n)))
            st = sdc_fail(SDC_ERR_NO_MEMORY, "sampler: out of memory");
    int nh = 0; /* hist[0] oldest .. hist[nh-1] newest */
    for (int i = 0; st == SDC_OK && i < s->steps; i++) {
        float sigma = s->sigmas[i];
        st = sdc_smp_model(s, x, sigma, den, NULL);
        if (st != SDC_OK) break;
        int order = max_order < i + 1 ? max_order : i + 1;
        for (int c = 0; c < order; c++)
            coeff[c] = lms_coeff(s->sigmas, order, i, c, p->lms_divisions);
        float *d = hist[nh]; /* free slot */
        for (int64_t k = 0; k < s->n; k++) {
            d[k] = (x[k] - den[k]) / sigma;
            x[k] += d[k] * coeff[0];
        }
        if (max_order > 1) {
            if (i) {
                int last = nh - 1;
                for (int c = 2; c <= order; c++) {
                    int idx = nh + 1 - c + shift;
                    const float *hc = hist[idx < last ? idx : last];
                    for (int64_t k = 0; k < s->n; k++) x[k] += hc[k] * coeff[c - 1];
                }
            }
            if (nh + 1 == max_order) { /* drop the oldest, keep d as the newest */
                float *old = hist[0];
                for (int j = 0; j < nh; j++) hist[j] = hist[j + 1];
                hist[nh] = old;
                hist[nh - 1] = d;
            } else {
                nh++;
            }
        }
        st = sdc_smp_step_done(s, i);
    }
    for (int j = 0; hist && j < max_order; j++) free(hist[j]);
    free(hist);
    free(coeff);
    return st;
}

sdc_status sdc_sample_multistep(sdc_smp *s) {
    switch (s->p->method) {
    case SDC_SAMPLE_DPMPP2M:
        return run_dpmpp_2m(s, false);
    case SDC_SAMPLE_DPMPP2MV2:
        return run_dpmpp_2m(s, true);
    case SDC_SAMPLE_IPNDM:
        return run_ipndm(s, false);
    case SDC_SAMPLE_IPNDM_V:
        return run_ipndm(s, true);
    default:
        return run_lms(s);
    }
}
