/* Exponential-integrator samplers: RES multistep, RES 2-stage (both with optional
 * ancestral noise) and ER-SDE (extended reverse-time SDE, up to third order). */
#include "sampling/samplers_impl.h"

#include <math.h>
#include <stdlib.h>

static float phi1(float t) {
    if (fabsf(t) < 1e-6f) return 1.0f + t * 0.5f + (t * t) / 6.0f;
    return (expf(t) - 1.0f) / t;
}

static float phi2(float t) {
    if (fabsf(t) < 1e-6f) return 0.5f + t / 6.0f + (t * t) / 24.0f;
    return (phi1(t) - 1.0f) / t;
}

/* Adds ancestral noise after a RES step (flow: rescale x first). */
static sdc_status res_noise(sdc_smp *s, float *noise, float to, float up, float alpha) {
    if (!(to > 0.0f && up > 0.0f)) return SDC_OK;
    if (s->p->flow)
        for (int64_t k = 0; k < s->n; k++) s->x[k] *= alpha;
    SDC_SMP_TRY(sdc_smp_noise(s, noise));
    for (int64_t k = 0; k < s->n; k++) s->x[k] += noise[k] * up;
    return SDC_OK;
}

static sdc_status run_res_multistep(sdc_smp *s) {
    float *x = s->x, *den = sdc_smp_buf(s), *old = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && old && noise);
    bool have_old = false;
    float old_down = 0.0f;
    for (int i = 0; i < s->steps; i++) {
        float from = s->sigmas[i], to = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, from, den, NULL));
        float down, up, alpha;
        sdc_ancestral_step(from, to, s->eta, s->p->flow, &down, &up, &alpha);
        if (down == 0.0f || !have_old) {
            for (int64_t k = 0; k < s->n; k++) x[k] += ((x[k] - den[k]) / from) * (down - from);
        } else {
            float t = -logf(from), t_old = -logf(old_down), t_next = -logf(down);
            float t_prev = -logf(s->sigmas[i - 1]);
            float h = t_next - t, c2 = (t_prev - t_old) / h;
            float p1 = phi1(-h), p2 = phi2(-h);
            float b1 = p1 - p2 / c2, b2 = p2 / c2;
            if (!isfinite(b1)) b1 = 0.0f;
            if (!isfinite(b2)) b2 = 0.0f;
            float e = expf(-h);
            for (int64_t k = 0; k < s->n; k++) x[k] = e * x[k] + h * (b1 * den[k] + b2 * old[k]);
        }
        SDC_SMP_TRY(res_noise(s, noise, to, up, alpha));
        float *tmp = old;
        old = den;
        den = tmp;
        old_down = down;
        have_old = true;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

static sdc_status run_res_2s(sdc_smp *s) {
    const float c2 = 0.5f;
    float *x = s->x, *den = sdc_smp_buf(s), *x2 = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && x2 && noise);
    for (int i = 0; i < s->steps; i++) {
        float from = s->sigmas[i], to = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, from, den, NULL));
        float down, up, alpha;
        sdc_ancestral_step(from, to, s->eta, s->p->flow, &down, &up, &alpha);
        if (down == 0.0f || from == 0.0f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float t = -logf(from), t_next = -logf(down), h = t_next - t;
            float a21 = c2 * phi1(-h * c2);
            float p1 = phi1(-h), p2 = phi2(-h);
            float b2 = p2 / c2, b1 = p1 - b2;
            float sigma_c2 = expf(-(t + h * c2));
            float ha = h * a21;
            for (int64_t k = 0; k < s->n; k++) x2[k] = x[k] + (den[k] - x[k]) * ha;
            /* den keeps eps1 = den - x0 while the second stage is evaluated */
            for (int64_t k = 0; k < s->n; k++) den[k] = den[k] - x[k];
            float *den2 = noise; /* free until the noise is drawn */
            SDC_SMP_TRY(sdc_smp_model(s, x2, sigma_c2, den2, NULL));
            for (int64_t k = 0; k < s->n; k++) {
                float eps2 = den2[k] - x[k];
                x[k] = x[k] + h * (b1 * den[k] + b2 * eps2);
            }
        }
        SDC_SMP_TRY(res_noise(s, noise, to, up, alpha));
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

static float er_flow_sigma(float sigma) {
    return fminf(fmaxf(sigma, 1e-6f), 1.0f - 1e-4f);
}

static float er_lambda(float sigma, bool flow) {
    if (flow) {
        sigma = er_flow_sigma(sigma);
        return sigma / fmaxf(1.0f - sigma, 1e-6f);
    }
    return fmaxf(sigma, 1e-6f);
}

static float er_alpha(float sigma, bool flow) {
    return flow ? 1.0f - er_flow_sigma(sigma) : 1.0f;
}

static float er_noise_scaler(float x) {
    x = fmaxf(x, 0.0f);
    return x * (expf(powf(x, 0.3f)) + 10.0f);
}

/* ER-SDE: eta only switches the noise on or off (it is not a scale). */
static sdc_status run_er_sde(sdc_smp *s) {
    const bool flow = s->p->flow;
    const int n_sig = s->steps + 1;
    float *sig = malloc(sizeof(float) * (size_t)n_sig),
          *lam = malloc(sizeof(float) * (size_t)n_sig);
    float *x = s->x, *den = sdc_smp_buf(s), *old = sdc_smp_buf(s), *dd = sdc_smp_buf(s);
    float *old_d = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    if (!sig || !lam || !den || !old || !dd || !old_d || !noise) {
        free(sig);
        free(lam);
        return sdc_fail(SDC_ERR_NO_MEMORY, "sampler: out of memory");
    }
    for (int i = 0; i < n_sig; i++) {
        sig[i] = s->sigmas[i];
        if (flow && i + 1 < n_sig && sig[i] > 1.0f) sig[i] = er_flow_sigma(sig[i]);
    }
    for (int i = 0; i < n_sig; i++) lam[i] = er_lambda(sig[i], flow);
    bool have_old = false, have_old_d = false;
    sdc_status st = SDC_OK;
    for (int i = 0; i < s->steps && st == SDC_OK; i++) {
        st = sdc_smp_model(s, x, sig[i], den, NULL);
        if (st != SDC_OK) break;
        int stage = i + 1 < 3 ? i + 1 : 3;
        if (sig[i + 1] == 0.0f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float ls = lam[i], lt = lam[i + 1];
            float as = er_alpha(sig[i], flow), at = er_alpha(sig[i + 1], flow);
            float scs = er_noise_scaler(ls), sct = er_noise_scaler(lt);
            float r_alpha = as > 0.0f ? at / as : 0.0f;
            float r = scs > 0.0f ? sct / scs : 0.0f;
            float cx = r_alpha * r, cd = at * (1.0f - r);
            for (int64_t k = 0; k < s->n; k++) x[k] = cx * x[k] + cd * den[k];
            if (stage >= 2 && have_old) {
                float dt = lt - ls, step = -dt / 200.0f, acc = 0.0f, acc_u = 0.0f;
                bool third = stage >= 3 && have_old_d;
                for (int p = 0; p < 200; p++) {
                    float lp = lt + (float)p * step, sp = er_noise_scaler(lp);
                    if (sp <= 0.0f) continue;
                    acc += 1.0f / sp;
                    if (third) acc_u += (lp - ls) / sp;
                }
                acc *= step;
                float denom_d = ls - lam[i - 1];
                if (fabsf(denom_d) > 1e-12f) {
                    float coeff_d = at * (dt + acc * sct);
                    for (int64_t k = 0; k < s->n; k++) {
                        dd[k] = (den[k] - old[k]) / denom_d;
                        x[k] += coeff_d * dd[k];
                    }
                    if (third) {
                        float denom_u = (ls - lam[i - 2]) * 0.5f;
                        if (fabsf(denom_u) > 1e-12f) {
                            acc_u *= step;
                            float coeff_u = at * (0.5f * dt * dt + acc_u * sct);
                            for (int64_t k = 0; k < s->n; k++)
                                x[k] += coeff_u * ((dd[k] - old_d[k]) / denom_u);
                        }
                    }
                    float *tmp = old_d;
                    old_d = dd;
                    dd = tmp;
                    have_old_d = true;
                }
            }
            float nsq = lt * lt - ls * ls * r * r;
            if (s->eta > 0.0f && nsq > 0.0f) {
                float amp = at * sqrtf(fmaxf(nsq, 0.0f));
                st = sdc_smp_noise(s, noise);
                if (st != SDC_OK) break;
                for (int64_t k = 0; k < s->n; k++) x[k] += noise[k] * amp;
            }
        }
        float *tmp = old;
        old = den;
        den = tmp;
        have_old = true;
        st = sdc_smp_step_done(s, i);
    }
    free(sig);
    free(lam);
    return st;
}

sdc_status sdc_sample_exponential(sdc_smp *s) {
    switch (s->p->method) {
    case SDC_SAMPLE_RES_MULTISTEP:
        return run_res_multistep(s);
    case SDC_SAMPLE_RES_2S:
        return run_res_2s(s);
    default:
        return run_er_sde(s);
    }
}
