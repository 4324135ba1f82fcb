/* Deterministic single-history samplers: euler, heun, dpm2 and CFG++ euler. */
#include "sampling/samplers_impl.h"

#include <math.h>

static sdc_status run_euler(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s);
    SDC_SMP_NEED(den);
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], dt = s->sigmas[i + 1] - sigma;
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, NULL));
        for (int64_t k = 0; k < s->n; k++) x[k] += ((x[k] - den[k]) / sigma) * dt;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* Heun: Euler predictor, trapezoidal corrector (skipped on the step to sigma 0). */
static sdc_status run_heun(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *d = sdc_smp_buf(s), *x2 = sdc_smp_buf(s);
    SDC_SMP_NEED(den && d && x2);
    for (int i = 0; i < s->steps; i++) {
        float s0 = s->sigmas[i], s1 = s->sigmas[i + 1], dt = s1 - s0;
        SDC_SMP_TRY(sdc_smp_model(s, x, s0, den, NULL));
        for (int64_t k = 0; k < s->n; k++) d[k] = (x[k] - den[k]) / s0;
        if (s1 == 0) {
            for (int64_t k = 0; k < s->n; k++) x[k] += d[k] * dt;
        } else {
            for (int64_t k = 0; k < s->n; k++) x2[k] = x[k] + d[k] * dt;
            SDC_SMP_TRY(sdc_smp_model(s, x2, s1, den, NULL));
            for (int64_t k = 0; k < s->n; k++) {
                float dk = (d[k] + (x2[k] - den[k]) / s1) / 2.0f;
                x[k] += dk * dt;
            }
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* DPM-2: the derivative is re-evaluated at the log-midpoint sigma. */
static sdc_status run_dpm2(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *x2 = sdc_smp_buf(s);
    SDC_SMP_NEED(den && x2);
    for (int i = 0; i < s->steps; i++) {
        float s0 = s->sigmas[i], s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, s0, den, NULL));
        if (s1 == 0) {
            for (int64_t k = 0; k < s->n; k++) x[k] += ((x[k] - den[k]) / s0) * (s1 - s0);
        } else {
            float mid = (float)exp(0.5f * (log(s0) + log(s1)));
            float dt1 = mid - s0, dt2 = s1 - s0;
            for (int64_t k = 0; k < s->n; k++) x2[k] = x[k] + ((x[k] - den[k]) / s0) * dt1;
            SDC_SMP_TRY(sdc_smp_model(s, x2, mid, den, NULL));
            for (int64_t k = 0; k < s->n; k++) x[k] += ((x2[k] - den[k]) / mid) * dt2;
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* CFG++ Euler: the step direction comes from the unconditional prediction. */
static sdc_status run_euler_cfg_pp(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *unc = sdc_smp_buf(s);
    SDC_SMP_NEED(den && unc);
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, unc));
        for (int64_t k = 0; k < s->n; k++) x[k] = den[k] + ((x[k] - unc[k]) / sigma) * s1;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

sdc_status sdc_sample_basic(sdc_smp *s) {
    switch (s->p->method) {
    case SDC_SAMPLE_HEUN:
        return run_heun(s);
    case SDC_SAMPLE_DPM2:
        return run_dpm2(s);
    case SDC_SAMPLE_EULER_CFG_PP:
        return run_euler_cfg_pp(s);
    default:
        return run_euler(s);
    }
}
