/* Sampler dispatch, validation, names and the helpers every step rule shares. */
#include "sampling/samplers_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const method_names[SDC_SAMPLE_COUNT] = {
    "euler",         "euler_a",        "heun",    "dpm2",         "dpm++2s_a",      "dpm++2m",
    "dpm++2mv2",     "ipndm",          "ipndm_v", "lcm",          "ddim_trailing",  "tcd",
    "res_multistep", "res_2s",         "er_sde",  "euler_cfg_pp", "euler_a_cfg_pp", "euler_ge",
    "dpm++2m_sde",   "dpm++2m_sde_bt", "lms",
};

const char *sdc_sample_method_name(sdc_sample_method m) {
    return ((int)m >= 0 && m < SDC_SAMPLE_COUNT) ? method_names[m] : "unknown";
}

sdc_status sdc_sample_method_from_name(const char *name, sdc_sample_method *out) {
    for (int i = 0; name && i < SDC_SAMPLE_COUNT; i++) {
        if (strcmp(name, method_names[i]) == 0) {
            *out = (sdc_sample_method)i;
            return SDC_OK;
        }
    }
    char list[320] = "";
    for (int i = 0; i < SDC_SAMPLE_COUNT; i++) {
        if (i) strcat(list, ", ");
        strcat(list, method_names[i]);
    }
    return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: unknown method '%s' (valid: %s)",
                    name ? name : "(null)", list);
}

void sdc_sampler_params_init(sdc_sampler_params *p) {
    memset(p, 0, sizeof(*p));
    p->method = SDC_SAMPLE_EULER_A;
    p->eta = NAN;
    p->lms_max_order = 4;
    p->lms_shift = 1;
    p->lms_divisions = 1000;
    p->ge_gamma = 2.0f;
    p->lcm_noise_scale_start = 1.0f;
    p->lcm_noise_scale_end = 1.0f;
}

float sdc_sampler_default_eta(sdc_sample_method m) {
    switch (m) {
    case SDC_SAMPLE_EULER_A:
    case SDC_SAMPLE_DPMPP2S_A:
    case SDC_SAMPLE_ER_SDE:
    case SDC_SAMPLE_EULER_A_CFG_PP:
    case SDC_SAMPLE_DPMPP2M_SDE:
    case SDC_SAMPLE_DPMPP2M_SDE_BT:
        return 1.0f;
    default:
        return 0.0f;
    }
}

bool sdc_sampler_uses_noise(sdc_sample_method m, float eta) {
    switch (m) {
    case SDC_SAMPLE_EULER:
    case SDC_SAMPLE_HEUN:
    case SDC_SAMPLE_DPM2:
    case SDC_SAMPLE_DPMPP2M:
    case SDC_SAMPLE_DPMPP2MV2:
    case SDC_SAMPLE_IPNDM:
    case SDC_SAMPLE_IPNDM_V:
    case SDC_SAMPLE_LMS:
    case SDC_SAMPLE_EULER_CFG_PP:
        return false;
    case SDC_SAMPLE_LCM:
    case SDC_SAMPLE_DPMPP2S_A: /* draws (scaled by 0) even at eta 0 in the VE form */
    case SDC_SAMPLE_EULER_A_CFG_PP:
        return true;
    default:
        return eta > 0.0f;
    }
}

bool sdc_sampler_needs_uncond(sdc_sample_method m) {
    return m == SDC_SAMPLE_EULER_CFG_PP || m == SDC_SAMPLE_EULER_A_CFG_PP;
}

float *sdc_smp_buf(sdc_smp *s) {
    if (s->nbufs >= SDC_SMP_MAX_BUFS) return NULL;
    float *b = calloc((size_t)s->n, sizeof(float));
    if (b) s->bufs[s->nbufs++] = b;
    return b;
}

sdc_status sdc_smp_model(sdc_smp *s, const float *x, float sigma, float *den, float *unc) {
    sdc_status st = s->denoise(s->user, x, sigma, den, unc, s->n);
    if (st != SDC_OK) return st;
    return SDC_OK;
}

sdc_status sdc_smp_noise(sdc_smp *s, float *out) {
    if (!s->p->rng)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: %s needs a noise generator",
                        sdc_sample_method_name(s->p->method));
    return sdc_rng_randn(s->p->rng, out, s->n);
}

sdc_status sdc_smp_noise_n(sdc_smp *s, float *out, int64_t count) {
    if (!s->p->rng)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: %s needs a noise generator",
                        sdc_sample_method_name(s->p->method));
    return sdc_rng_randn(s->p->rng, out, count);
}

sdc_status sdc_smp_step_done(sdc_smp *s, int i) {
    if (s->p->on_step && s->p->on_step(s->p->step_user, i + 1, s->steps, s->x))
        return sdc_fail(SDC_ERR_CANCELLED, "sampler: cancelled after step %d of %d", i + 1,
                        s->steps);
    return SDC_OK;
}

void sdc_ancestral_step(float sigma_from, float sigma_to, float eta, bool flow, float *down,
                        float *up, float *alpha) {
    *down = sigma_to;
    *up = 0.0f;
    *alpha = 1.0f;
    if (flow) {
        if (eta <= 0.0f || sigma_from <= 0.0f || sigma_to <= 0.0f) return;
        if (eta > 1.0f) eta = 1.0f; /* beyond 1 the flow split has no valid noise level */
        float ratio = sigma_to / sigma_from;
        float sd = sigma_to * (1.0f + (ratio - 1.0f) * eta);
        sd = fmaxf(0.0f, fminf(sigma_to, sd));
        float denom = 1.0f - sd;
        if (denom <= 0.0f) return;
        float a = (1.0f - sigma_to) / denom;
        float term = (sd / sigma_to) * a;
        term = fmaxf(-1.0f, fminf(1.0f, term));
        *down = sd;
        *alpha = a;
        *up = sigma_to * sqrtf(fmaxf(1.0f - term * term, 0.0f));
        return;
    }
    if (eta <= 0.0f) return;
    float f2 = sigma_from * sigma_from, t2 = sigma_to * sigma_to;
    if (f2 > 0.0f) {
        float term = t2 * (f2 - t2) / f2;
        *up = fminf(sigma_to, eta * sqrtf(fmaxf(term, 0.0f)));
    }
    float d2 = t2 - *up * *up;
    *down = d2 > 0.0f ? sqrtf(d2) : 0.0f;
}

sdc_status sdc_sample(const sdc_sampler_params *p, const float *sigmas, int n_sigmas,
                      sdc_denoise_fn denoise, void *user, float *x, int64_t n) {
    if (!p || !sigmas || !denoise || !x || n <= 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: missing argument");
    if ((int)p->method < 0 || p->method >= SDC_SAMPLE_COUNT)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: unknown method %d", (int)p->method);
    if (n_sigmas < 2)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: need at least 2 sigmas (1 step), got %d",
                        n_sigmas);
    for (int i = 0; i < n_sigmas; i++) {
        if (!isfinite(sigmas[i]) || sigmas[i] < 0.0f || (i < n_sigmas - 1 && sigmas[i] == 0.0f))
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "sampler: sigma[%d] = %g (must be finite, > 0 before the last)", i,
                            (double)sigmas[i]);
    }
    if (p->method == SDC_SAMPLE_LMS && (p->lms_max_order < 1 || p->lms_divisions < 0))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "sampler: lms needs max order >= 1 and divisions >= 0 (got %d, %d)",
                        p->lms_max_order, p->lms_divisions);
    sdc_smp s = {
        .p = p,
        .sigmas = sigmas,
        .steps = n_sigmas - 1,
        .denoise = denoise,
        .user = user,
        .x = x,
        .n = n,
        .eta = isnan(p->eta) ? sdc_sampler_default_eta(p->method) : p->eta,
    };
    if (sdc_sampler_uses_noise(p->method, s.eta) && !p->rng)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sampler: %s needs a noise generator",
                        sdc_sample_method_name(p->method));
    sdc_status st;
    switch (p->method) {
    case SDC_SAMPLE_EULER:
    case SDC_SAMPLE_HEUN:
    case SDC_SAMPLE_DPM2:
    case SDC_SAMPLE_EULER_CFG_PP:
        st = sdc_sample_basic(&s);
        break;
    case SDC_SAMPLE_EULER_A:
    case SDC_SAMPLE_DDIM_TRAILING:
    case SDC_SAMPLE_DPMPP2S_A:
    case SDC_SAMPLE_EULER_A_CFG_PP:
    case SDC_SAMPLE_EULER_GE:
        st = sdc_sample_ancestral(&s);
        break;
    case SDC_SAMPLE_LCM:
    case SDC_SAMPLE_TCD:
        st = sdc_sample_consistency(&s);
        break;
    case SDC_SAMPLE_DPMPP2M:
    case SDC_SAMPLE_DPMPP2MV2:
    case SDC_SAMPLE_IPNDM:
    case SDC_SAMPLE_IPNDM_V:
    case SDC_SAMPLE_LMS:
        st = sdc_sample_multistep(&s);
        break;
    case SDC_SAMPLE_RES_MULTISTEP:
    case SDC_SAMPLE_RES_2S:
    case SDC_SAMPLE_ER_SDE:
        st = sdc_sample_exponential(&s);
        break;
    default:
        st = sdc_sample_dpmpp_sde(&s);
        break;
    }
    for (int i = 0; i < s.nbufs; i++) free(s.bufs[i]);
    return st;
}
