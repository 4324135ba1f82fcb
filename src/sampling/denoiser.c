/* Denoiser parameterisations. Every formula keeps sd.cpp's float operation order,
 * because the sigma tables are compared with its output at 1e-5. */
#include "sampling/denoiser.h"

#include <math.h>
#include <string.h>

static const char *const pred_names[SDC_PRED_COUNT] = {
    "eps", "v", "edm_v", "sd3_flow", "flux_flow", "minit2i_flow",
};

const char *sdc_prediction_name(sdc_prediction p) {
    return ((int)p >= 0 && p < SDC_PRED_COUNT) ? pred_names[p] : "unknown";
}

sdc_status sdc_prediction_from_name(const char *name, sdc_prediction *out) {
    for (int i = 0; name && i < SDC_PRED_COUNT; i++) {
        if (strcmp(name, pred_names[i]) == 0) {
            *out = (sdc_prediction)i;
            return SDC_OK;
        }
    }
    return sdc_fail(SDC_ERR_INVALID_ARG,
                    "prediction: unknown type '%s' (valid: eps, v, edm_v, sd3_flow, flux_flow, "
                    "minit2i_flow)",
                    name ? name : "(null)");
}

void sdc_scaled_linear_alphas_cumprod(float *out, int n) {
    float lo = sqrtf(0.00085f), hi = sqrtf(0.0120f);
    float amount = hi - lo, product = 1.0f;
    for (int i = 0; i < n; i++) {
        float beta = lo + amount * ((float)i / (float)(n - 1));
        product *= 1.0f - powf(beta, 2.0f); /* not beta*beta: same rounding as sd.cpp */
        out[i] = product;
    }
}

static void fill_compvis_table(sdc_denoiser *d, const float *ac) {
    for (int i = 0; i < SDC_TIMESTEPS; i++) {
        d->sigmas[i] = sqrtf((1.0f - ac[i]) / ac[i]);
        d->log_sigmas[i] = logf(d->sigmas[i]);
    }
}

sdc_status sdc_denoiser_init(sdc_denoiser *d, sdc_prediction pred) {
    if ((int)pred < 0 || pred >= SDC_PRED_COUNT)
        return sdc_fail(SDC_ERR_INVALID_ARG, "denoiser: unknown prediction type %d", (int)pred);
    memset(d, 0, sizeof(*d));
    d->pred = pred;
    d->flow_shift = pred == SDC_PRED_FLUX_FLOW ? 1.0f : 3.0f;
    d->sigma_data = 1.0f;
    d->edm_sigma_min = 0.002f;
    d->edm_sigma_max = 120.0f;
    float ac[SDC_TIMESTEPS];
    sdc_scaled_linear_alphas_cumprod(ac, SDC_TIMESTEPS);
    fill_compvis_table(d, ac);
    return SDC_OK;
}

sdc_status sdc_denoiser_set_flow_shift(sdc_denoiser *d, float shift) {
    if (!isfinite(shift) || shift <= 0.0f)
        return sdc_fail(SDC_ERR_INVALID_ARG, "denoiser: flow shift must be finite and > 0, got %g",
                        (double)shift);
    d->flow_shift = shift;
    return SDC_OK;
}

sdc_status sdc_denoiser_set_alphas_cumprod(sdc_denoiser *d, const float *ac, int n) {
    if (n != SDC_TIMESTEPS)
        return sdc_fail(SDC_ERR_INVALID_ARG, "denoiser: alphas_cumprod has %d values, need %d", n,
                        SDC_TIMESTEPS);
    for (int i = 0; i < n; i++) {
        if (!(ac[i] > 0.0f && ac[i] < 1.0f))
            return sdc_fail(SDC_ERR_INVALID_ARG, "denoiser: alphas_cumprod[%d] = %g not in (0,1)",
                            i, (double)ac[i]);
    }
    fill_compvis_table(d, ac);
    return SDC_OK;
}

static bool is_compvis(const sdc_denoiser *d) {
    return d->pred == SDC_PRED_EPS || d->pred == SDC_PRED_V;
}

bool sdc_denoiser_is_flow(const sdc_denoiser *d) {
    return d->pred == SDC_PRED_SD3_FLOW || d->pred == SDC_PRED_FLUX_FLOW;
}

/* SD3 shift of a flow time in (0,1]. */
static float time_snr_shift(float alpha, float t) {
    if (alpha == 1.0f) return t;
    return alpha * t / (1 + (alpha - 1) * t);
}

float sdc_flux_time_shift(float mu, float s, float t) {
    return expf(mu) / (expf(mu) + powf((1.0f / t - 1.0f), s));
}

float sdc_denoiser_t_to_sigma(const sdc_denoiser *d, float t) {
    switch (d->pred) {
    case SDC_PRED_EPS:
    case SDC_PRED_V: {
        if (!(t >= 0.0f)) t = 0.0f; /* also catches NaN */
        if (t > SDC_TIMESTEPS - 1) t = SDC_TIMESTEPS - 1;
        int lo = (int)floorf(t), hi = (int)ceilf(t);
        float w = t - (float)lo;
        return expf((1.0f - w) * d->log_sigmas[lo] + w * d->log_sigmas[hi]);
    }
    case SDC_PRED_EDM_V:
        return expf(t * 4 / (float)SDC_TIMESTEPS);
    case SDC_PRED_SD3_FLOW:
        return time_snr_shift(d->flow_shift, (t + 1) / 1000.f);
    case SDC_PRED_FLUX_FLOW:
        return sdc_flux_time_shift(d->flow_shift, 1.0f, (t + 1) / 1000.f);
    case SDC_PRED_MINIT2I_FLOW:
        return 1.0f - t;
    default:
        return 0.0f;
    }
}

float sdc_denoiser_sigma_to_t(const sdc_denoiser *d, float sigma) {
    switch (d->pred) {
    case SDC_PRED_EPS:
    case SDC_PRED_V: {
        float ls = logf(sigma);
        int count = 0;
        for (int i = 0; i < SDC_TIMESTEPS; i++) count += (ls - d->log_sigmas[i]) >= 0;
        int lo = count - 1;
        if (lo < 0) lo = 0;
        if (lo > SDC_TIMESTEPS - 2) lo = SDC_TIMESTEPS - 2;
        int hi = lo + 1;
        float l = d->log_sigmas[lo], h = d->log_sigmas[hi];
        float w = (l - ls) / (l - h);
        w = fmaxf(0.f, fminf(1.f, w));
        return (1.0f - w) * (float)lo + w * (float)hi;
    }
    case SDC_PRED_EDM_V:
        return 0.25f * logf(sigma);
    case SDC_PRED_SD3_FLOW:
        return sigma * 1000.f;
    case SDC_PRED_FLUX_FLOW:
        return sigma;
    case SDC_PRED_MINIT2I_FLOW:
        return 1.0f - sigma;
    default:
        return 0.0f;
    }
}

float sdc_denoiser_sigma_min(const sdc_denoiser *d) {
    if (is_compvis(d)) return d->sigmas[0];
    if (d->pred == SDC_PRED_EDM_V) return d->edm_sigma_min;
    if (d->pred == SDC_PRED_MINIT2I_FLOW) return 0.0f;
    return sdc_denoiser_t_to_sigma(d, 0);
}

float sdc_denoiser_sigma_max(const sdc_denoiser *d) {
    if (is_compvis(d)) return d->sigmas[SDC_TIMESTEPS - 1];
    if (d->pred == SDC_PRED_EDM_V) return d->edm_sigma_max;
    if (d->pred == SDC_PRED_MINIT2I_FLOW) return 1.0f;
    return sdc_denoiser_t_to_sigma(d, SDC_TIMESTEPS - 1);
}

void sdc_denoiser_scalings(const sdc_denoiser *d, float sigma, float *c_skip, float *c_out,
                           float *c_in) {
    float sd = d->sigma_data;
    switch (d->pred) {
    case SDC_PRED_EPS:
        *c_skip = 1.0f;
        *c_out = -sigma;
        *c_in = 1.0f / sqrtf(sigma * sigma + sd * sd);
        break;
    case SDC_PRED_V:
    case SDC_PRED_EDM_V:
        *c_skip = sd * sd / (sigma * sigma + sd * sd);
        *c_out = -sigma * sd / sqrtf(sigma * sigma + sd * sd);
        *c_in = 1.0f / sqrtf(sigma * sigma + sd * sd);
        break;
    case SDC_PRED_SD3_FLOW:
    case SDC_PRED_FLUX_FLOW:
        *c_skip = 1.0f;
        *c_out = -sigma;
        *c_in = 1.0f;
        break;
    default: /* MiniT2I: the model output is x0 itself */
        *c_skip = 0.0f;
        *c_out = 1.0f;
        *c_in = 1.0f;
        break;
    }
}

void sdc_denoiser_noise_scaling(const sdc_denoiser *d, float sigma, const float *noise,
                                const float *latent, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float l = latent ? latent[i] : 0.0f;
        if (d->pred == SDC_PRED_MINIT2I_FLOW)
            out[i] = latent ? (1.0f - sigma) * l + sigma * (noise[i] * 2.0f) : noise[i] * 2.0f;
        else if (sdc_denoiser_is_flow(d))
            out[i] = l * (1.0f - sigma) + noise[i] * sigma;
        else
            out[i] = l + noise[i] * sigma;
    }
}

void sdc_denoiser_inverse_noise_scaling(const sdc_denoiser *d, float sigma, float *latent,
                                        int64_t n) {
    if (!sdc_denoiser_is_flow(d)) return;
    float s = 1.0f / (1.0f - sigma);
    for (int64_t i = 0; i < n; i++) latent[i] *= s;
}

float sdc_denoiser_noise_level_to_sigma(const sdc_denoiser *d, float level) {
    if (d->pred == SDC_PRED_MINIT2I_FLOW) return 1.0f;
    if (sdc_denoiser_is_flow(d)) return level;
    return level / (1.0f - level);
}

void sdc_denoiser_model_inputs(const sdc_denoiser *d, float sigma, int shifted_timestep,
                               float *timestep, float *c_skip, float *c_out, float *c_in) {
    sdc_denoiser_scalings(d, sigma, c_skip, c_out, c_in);
    float t = sdc_denoiser_sigma_to_t(d, sigma);
    if (shifted_timestep <= 0) {
        *timestep = t;
        return;
    }
    float st = t * ((float)shifted_timestep / (float)SDC_TIMESTEPS);
    long ti = lroundf(st);
    if (ti < 0) ti = 0;
    if (ti > SDC_TIMESTEPS - 1) ti = SDC_TIMESTEPS - 1;
    *timestep = (float)ti;
    float s_skip, s_out, s_in;
    sdc_denoiser_scalings(d, sdc_denoiser_t_to_sigma(d, (float)ti), &s_skip, &s_out, &s_in);
    *c_skip = s_skip * *c_in / s_in;
    *c_out = s_out;
}

void sdc_denoiser_combine(float c_skip, float c_out, const float *x, const float *model_out,
                          float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = model_out[i] * c_out + x[i] * c_skip;
}
