/* Denoiser parameterisations (sd.cpp's Denoiser classes): how sigma maps to the model's
 * timestep, the c_skip/c_out/c_in scalings that turn a raw model output into the x0
 * prediction, how noise is mixed into a latent, and each one's sigma range. */
#ifndef SDC_SAMPLING_DENOISER_H
#define SDC_SAMPLING_DENOISER_H

#include "core/status.h"

#include <stdbool.h>
#include <stdint.h>

#define SDC_TIMESTEPS 1000

typedef enum sdc_prediction {
    SDC_PRED_EPS = 0,      /* CompVis eps (SD1/SD2/SDXL), scaled-linear betas */
    SDC_PRED_V,            /* CompVis v-prediction */
    SDC_PRED_EDM_V,        /* EDM v-prediction (CosXL), sigma 0.002..120 */
    SDC_PRED_SD3_FLOW,     /* rectified flow with SD3-style time shift */
    SDC_PRED_FLUX_FLOW,    /* rectified flow with Flux's exponential (mu) shift */
    SDC_PRED_MINIT2I_FLOW, /* MiniT2I: the model predicts x0 directly */
    SDC_PRED_COUNT
} sdc_prediction;

typedef struct sdc_denoiser {
    sdc_prediction pred;
    float flow_shift; /* SD3/Flux flows */
    float sigma_data;
    float edm_sigma_min, edm_sigma_max;
    float sigmas[SDC_TIMESTEPS]; /* CompVis table, sigma(t) for t = 0..999 */
    float log_sigmas[SDC_TIMESTEPS];
} sdc_denoiser;

/* Defaults: flow shift 3 (SD3 flow) or 1 (Flux flow), the SD1 scaled-linear table. */
sdc_status sdc_denoiser_init(sdc_denoiser *d, sdc_prediction pred);
/* --flow-shift; rejected unless finite and > 0. Ignored by non-flow denoisers. */
sdc_status sdc_denoiser_set_flow_shift(sdc_denoiser *d, float shift);
/* A model's own alphas_cumprod (1000 values in (0,1)) for the CompVis table. */
sdc_status sdc_denoiser_set_alphas_cumprod(sdc_denoiser *d, const float *alphas_cumprod, int n);
/* The SD scaled-linear schedule (betas 0.00085..0.012), computed in float like sd.cpp. */
void sdc_scaled_linear_alphas_cumprod(float *out, int n);

/* Flow denoisers take the flow-style ancestral step (true for SD3/Flux flow, false for
 * MiniT2I, exactly as sd.cpp's is_flow_denoiser). */
bool sdc_denoiser_is_flow(const sdc_denoiser *d);
float sdc_denoiser_sigma_min(const sdc_denoiser *d);
float sdc_denoiser_sigma_max(const sdc_denoiser *d);
float sdc_denoiser_sigma_to_t(const sdc_denoiser *d, float sigma);
float sdc_denoiser_t_to_sigma(const sdc_denoiser *d, float t);
void sdc_denoiser_scalings(const sdc_denoiser *d, float sigma, float *c_skip, float *c_out,
                           float *c_in);
/* x_T for sampling: out = latent + sigma*noise (CompVis), (1-sigma)*latent + sigma*noise
 * (flows), 2*noise (MiniT2I; with a latent (1-sigma)*latent + sigma*2*noise, our img2img:
 * sd.cpp ignores the init image there). latent may be NULL (zeros). out may alias either
 * input. */
void sdc_denoiser_noise_scaling(const sdc_denoiser *d, float sigma, const float *noise,
                                const float *latent, float *out, int64_t n);
/* Undoes the flow scaling of the final latent (latent / (1-sigma)); identity otherwise. */
void sdc_denoiser_inverse_noise_scaling(const sdc_denoiser *d, float sigma, float *latent,
                                        int64_t n);
/* img2img "strength as noise level": sigma for a relative noise level. */
float sdc_denoiser_noise_level_to_sigma(const sdc_denoiser *d, float noise_level);

/* Model input timestep and scalings for one evaluation. shifted_timestep > 0 (SDXL
 * "timestep shifting") rescales t by shifted_timestep/1000, rounds it to an integer
 * timestep and takes c_skip/c_out from that timestep's sigma, as sd.cpp does. */
void sdc_denoiser_model_inputs(const sdc_denoiser *d, float sigma, int shifted_timestep,
                               float *timestep, float *c_skip, float *c_out, float *c_in);

/* denoised = c_out*model_out + c_skip*x (elementwise; out may alias model_out). */
void sdc_denoiser_combine(float c_skip, float c_out, const float *x, const float *model_out,
                          float *out, int64_t n);

/* Flux's time shift e^mu / (e^mu + (1/t - 1)^s), shared with the flux schedulers. */
float sdc_flux_time_shift(float mu, float s, float t);

/* sd.cpp spellings: eps, v, edm_v, sd3_flow, flux_flow, minit2i_flow. */
const char *sdc_prediction_name(sdc_prediction p);
sdc_status sdc_prediction_from_name(const char *name, sdc_prediction *out);

#endif
