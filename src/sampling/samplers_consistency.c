/* Consistency-model samplers: LCM (jump to x0, re-noise to the next sigma) and TCD
 * (strategic stochastic sampling with SD1 alphas). */
#include "sampling/samplers_impl.h"

#include <math.h>
#include <stdlib.h>

static sdc_status run_lcm(sdc_smp *s) {
    const sdc_sampler_params *p = s->p;
    float *x = s->x, *den = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && noise);
    for (int i = 0; i < s->steps; i++) {
        float s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, s->sigmas[i], den, NULL));
        for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        if (s1 > 0) {
            if (p->flow)
                for (int64_t k = 0; k < s->n; k++) x[k] *= (1 - s1);
            SDC_SMP_TRY(sdc_smp_noise(s, noise));
            if (p->lcm_noise_clip_std > 0.0f) {
                double mean = 0.0, var = 0.0;
                for (int64_t k = 0; k < s->n; k++) mean += (double)noise[k];
                mean /= (double)s->n;
                for (int64_t k = 0; k < s->n; k++)
                    var += ((double)noise[k] - mean) * ((double)noise[k] - mean);
                var /= (double)s->n;
                float clip = p->lcm_noise_clip_std * (float)sqrt(var);
                for (int64_t k = 0; k < s->n; k++) noise[k] = fminf(fmaxf(noise[k], -clip), clip);
            }
            float t = s->steps > 1 ? (float)i / (float)(s->steps - 1) : 0.0f;
            float scale =
                p->lcm_noise_scale_start + (p->lcm_noise_scale_end - p->lcm_noise_scale_start) * t;
            float amp = s1 * scale;
            for (int64_t k = 0; k < s->n; k++) x[k] += noise[k] * amp;
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* TCD works on SD1's discrete alphas: the scaled-linear schedule accumulated in double
 * (from float betas), whatever the model; flows get NaN where sigma < SD1's minimum,
 * exactly as sd.cpp. */
static sdc_status run_tcd(sdc_smp *s) {
    enum { T = 1000 };
    double *ac = malloc(sizeof(double) * T), *sig = malloc(sizeof(double) * T);
    float *x = s->x, *den = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    if (!ac || !sig || !den || !noise) {
        free(ac);
        free(sig);
        return sdc_fail(SDC_ERR_NO_MEMORY, "sampler: out of memory");
    }
    const float bs = sqrtf(0.00085f), be = sqrtf(0.0120f);
    for (int i = 0; i < T; i++) {
        float beta_sqrt = bs + (be - bs) * ((float)i / (T - 1));
        double beta = (double)beta_sqrt * (double)beta_sqrt;
        ac[i] = (i == 0 ? 1.0 : ac[i - 1]) * (1.0f - beta);
        sig[i] = sqrt((1 - ac[i]) / ac[i]);
    }
    sdc_status st = SDC_OK;
    const float eta = s->eta;
    for (int i = 0; i < s->steps && st == SDC_OK; i++) {
        float sigma = s->sigmas[i], to = s->sigmas[i + 1];
        /* nearest table timestep to `to` (ties to the lower one), by binary search */
        int lo = 0, hi = T;
        while (lo < hi) {
            int mid = (lo + hi) / 2;
            if (sig[mid] < (double)to)
                lo = mid + 1;
            else
                hi = mid;
        }
        int prev_t;
        if (lo == 0)
            prev_t = 0;
        else if (lo == T)
            prev_t = T - 1;
        else
            prev_t = fabs(sig[lo] - to) < fabs(sig[lo - 1] - to) ? lo : lo - 1;
        int ts = (int)floorf((1 - eta) * (float)prev_t);
        st = sdc_smp_model(s, x, sigma, den, NULL);
        if (st != SDC_OK) break;
        float a_t_prev = 1.0f / (to * to + 1.0f);
        float a_s = (float)ac[ts], b_s = 1.0f - a_s;
        float c_den = sqrtf(a_s / a_t_prev), c_d = sqrtf(b_s / a_t_prev);
        for (int64_t k = 0; k < s->n; k++) {
            float d = (x[k] - den[k]) / sigma;
            x[k] = c_den * den[k] + c_d * d;
        }
        if (eta > 0 && to > 0.0f) {
            st = sdc_smp_noise(s, noise);
            if (st != SDC_OK) break;
            float c_x = sqrtf(a_t_prev / a_s), c_n = sqrtf(1.0f / a_t_prev - 1.0f / a_s);
            for (int64_t k = 0; k < s->n; k++) x[k] = c_x * x[k] + c_n * noise[k];
        }
        st = sdc_smp_step_done(s, i);
    }
    free(ac);
    free(sig);
    return st;
}

sdc_status sdc_sample_consistency(sdc_smp *s) {
    return s->p->method == SDC_SAMPLE_TCD ? run_tcd(s) : run_lcm(s);
}
