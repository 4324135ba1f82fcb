/* Ancestral samplers: each step goes deterministically down to sigma_down and adds
 * fresh noise of std sigma_up (euler_a / ddim_trailing, dpm++2s_a, euler_a_cfg_pp,
 * euler_ge). Flow denoisers use the flow split, which also rescales x. */
#include "sampling/samplers_impl.h"

#include <math.h>

static sdc_status add_noise(sdc_smp *s, float *noise, float scale) {
    SDC_SMP_TRY(sdc_smp_noise(s, noise));
    for (int64_t k = 0; k < s->n; k++) s->x[k] += noise[k] * scale;
    return SDC_OK;
}

static sdc_status run_euler_a(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && noise);
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], to = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, NULL));
        if (to == 0.f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float down = to, up = 0.f, alpha = 1.f;
            if (s->eta != 0.f)
                sdc_ancestral_step(sigma, to, s->eta, s->p->flow, &down, &up, &alpha);
            float r = down / sigma, q = 1.0f - r;
            for (int64_t k = 0; k < s->n; k++) x[k] = r * x[k] + q * den[k];
            if (s->eta != 0.f && up > 0.f) {
                if (s->p->flow)
                    for (int64_t k = 0; k < s->n; k++) x[k] *= alpha;
                SDC_SMP_TRY(add_noise(s, noise, up));
            }
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* DPM-Solver++(2S) ancestral, VE form: midpoint in t = -log sigma. */
static sdc_status run_dpmpp_2s_a(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *x2 = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && x2 && noise);
    for (int i = 0; i < s->steps; i++) {
        float s0 = s->sigmas[i], s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, s0, den, NULL));
        float down, up, alpha;
        sdc_ancestral_step(s0, s1, s->eta, false, &down, &up, &alpha);
        if (down == 0) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float t = (float)-log(s0), t_next = (float)-log(down);
            float h = t_next - t, tm = t + 0.5f * h;
            float sig_t = (float)exp(-t), sig_m = (float)exp(-tm), sig_next = (float)exp(-t_next);
            float a1 = sig_m / sig_t, b1 = (float)(exp(-h * 0.5f) - 1);
            for (int64_t k = 0; k < s->n; k++) x2[k] = a1 * x[k] - b1 * den[k];
            SDC_SMP_TRY(sdc_smp_model(s, x2, sig_m, den, NULL));
            float a2 = sig_next / sig_t, b2 = (float)(exp(-h) - 1);
            for (int64_t k = 0; k < s->n; k++) x[k] = a2 * x[k] - b2 * den[k];
        }
        if (s1 > 0) SDC_SMP_TRY(add_noise(s, noise, up)); /* drawn even when up is 0 */
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* dpm++2s_a for flows: the midpoint is taken in lambda = log((1-sigma)/sigma), written
 * so that sigma = 1 needs no special lambda; at sigma 1 the midpoint is x itself. */
static sdc_status run_dpmpp_2s_a_flow(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *u = sdc_smp_buf(s), *d2 = sdc_smp_buf(s);
    float *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && u && d2 && noise);
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], to = s->sigmas[i + 1];
        bool first = (1.0 - sigma < 1e-6);
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, NULL));
        if (to == 0.0f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float down, up, alpha;
            sdc_ancestral_step(sigma, to, s->eta, true, &down, &up, &alpha);
            const float *di = den;
            if (!first) {
                float exp_s = sqrtf(((1 - sigma) / sigma) * ((1 - down) / down));
                float sig_s = 1.0f / (exp_s + 1.0f);
                float r = sig_s / sigma, q = 1.0f - r;
                for (int64_t k = 0; k < s->n; k++) u[k] = x[k] * r + den[k] * q;
                SDC_SMP_TRY(sdc_smp_model(s, u, sig_s, d2, NULL));
                di = d2;
            }
            float r = down / sigma, q = 1.0f - r;
            for (int64_t k = 0; k < s->n; k++) x[k] = x[k] * r + di[k] * q;
            if (to > 0.0f && s->eta > 0.0f) {
                SDC_SMP_TRY(sdc_smp_noise(s, noise));
                for (int64_t k = 0; k < s->n; k++) x[k] = alpha * x[k] + noise[k] * up;
            }
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* CFG++ ancestral Euler (always the VE split). */
static sdc_status run_euler_a_cfg_pp(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *unc = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && unc && noise);
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], to = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, unc));
        float down, up, alpha;
        sdc_ancestral_step(sigma, to, s->eta, false, &down, &up, &alpha);
        for (int64_t k = 0; k < s->n; k++) x[k] = den[k] + ((x[k] - unc[k]) / sigma) * down;
        if (to > 0) SDC_SMP_TRY(add_noise(s, noise, up));
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

/* Gradient estimation (euler_ge): the step direction extrapolates the previous
 * derivative with weight gamma. */
static sdc_status run_euler_ge(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *d = sdc_smp_buf(s), *old_d = sdc_smp_buf(s);
    float *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && d && old_d && noise);
    const float gamma = s->p->ge_gamma;
    bool has_old = false;
    for (int i = 0; i < s->steps; i++) {
        float sigma = s->sigmas[i], to = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, sigma, den, NULL));
        if (to == 0.f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float down, up, alpha;
            sdc_ancestral_step(sigma, to, s->eta, s->p->flow, &down, &up, &alpha);
            float dt = down - sigma;
            for (int64_t k = 0; k < s->n; k++) {
                float dk = (x[k] - den[k]) / sigma;
                float step = has_old ? dk * gamma + old_d[k] * (1.0f - gamma) : dk;
                x[k] += step * dt;
                d[k] = dk;
            }
            float *tmp = old_d;
            old_d = d;
            d = tmp;
            has_old = true;
            if (up > 0.f) {
                if (s->p->flow)
                    for (int64_t k = 0; k < s->n; k++) x[k] *= alpha;
                SDC_SMP_TRY(add_noise(s, noise, up));
            }
        }
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

sdc_status sdc_sample_ancestral(sdc_smp *s) {
    switch (s->p->method) {
    case SDC_SAMPLE_DPMPP2S_A:
        return s->p->flow ? run_dpmpp_2s_a_flow(s) : run_dpmpp_2s_a(s);
    case SDC_SAMPLE_EULER_A_CFG_PP:
        return run_euler_a_cfg_pp(s);
    case SDC_SAMPLE_EULER_GE:
        return run_euler_ge(s);
    default:
        return run_euler_a(s); /* euler_a and ddim_trailing */
    }
}
