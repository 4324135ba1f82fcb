/* Samplers (sd.cpp's --sampling-method choices): step rules that integrate the
 * probability-flow ODE or an SDE along a sigma schedule, calling back a denoiser for
 * the x0 prediction. The state is a flat float array of n elements. */
#ifndef SDC_SAMPLING_SAMPLERS_H
#define SDC_SAMPLING_SAMPLERS_H

#include "sampling/rng.h"

#include <stdbool.h>

typedef enum sdc_sample_method {
    SDC_SAMPLE_EULER = 0,
    SDC_SAMPLE_EULER_A,
    SDC_SAMPLE_HEUN,
    SDC_SAMPLE_DPM2,
    SDC_SAMPLE_DPMPP2S_A,
    SDC_SAMPLE_DPMPP2M,
    SDC_SAMPLE_DPMPP2MV2,
    SDC_SAMPLE_IPNDM,
    SDC_SAMPLE_IPNDM_V,
    SDC_SAMPLE_LCM,
    SDC_SAMPLE_DDIM_TRAILING,
    SDC_SAMPLE_TCD,
    SDC_SAMPLE_RES_MULTISTEP,
    SDC_SAMPLE_RES_2S,
    SDC_SAMPLE_ER_SDE,
    SDC_SAMPLE_EULER_CFG_PP,
    SDC_SAMPLE_EULER_A_CFG_PP,
    SDC_SAMPLE_EULER_GE,
    SDC_SAMPLE_DPMPP2M_SDE,
    SDC_SAMPLE_DPMPP2M_SDE_BT,
    SDC_SAMPLE_LMS,
    SDC_SAMPLE_COUNT
} sdc_sample_method;

/* The denoised (x0) prediction for state x at noise level sigma. out_uncond is
 * non-NULL only for the CFG++ samplers, which also need the unconditional prediction
 * (taken through the same c_skip/c_out). Return non-SDC_OK to stop sampling. */
typedef sdc_status (*sdc_denoise_fn)(void *user, const float *x, float sigma, float *out_denoised,
                                     float *out_uncond, int64_t n);
/* Called after each step (step in 1..steps) with the new state; non-zero cancels. */
typedef int (*sdc_sampler_step_fn)(void *user, int step, int steps, const float *x);

typedef struct sdc_sampler_params {
    sdc_sample_method method;
    float eta;                /* NAN: the method's default (sdc_sampler_default_eta) */
    bool flow;                /* flow denoiser: flow-style ancestral steps (sdc_denoiser_is_flow) */
    sdc_rng *rng;             /* sampler noise; required by samplers that draw */
    int lms_max_order;        /* LMS history order, >= 1 (default 4, capped at steps) */
    int lms_shift;            /* LMS history shift: 1 = sd.cpp default, 0 = k-diffusion */
    int lms_divisions;        /* LMS coefficient integration points (default 1000) */
    float ge_gamma;           /* euler_ge gradient weight (default 2) */
    float lcm_noise_clip_std; /* 0 = no clipping */
    float lcm_noise_scale_start; /* default 1 */
    float lcm_noise_scale_end;   /* default 1 */
    sdc_sampler_step_fn on_step;
    void *step_user;
} sdc_sampler_params;

void sdc_sampler_params_init(sdc_sampler_params *p);

/* sd.cpp's resolve_eta: 1 for euler_a, dpm++2s_a, er_sde, euler_a_cfg_pp,
 * dpm++2m_sde(_bt); 0 otherwise (ddim_trailing, tcd, res_* and euler_ge included). */
float sdc_sampler_default_eta(sdc_sample_method m);
/* Whether the method draws sampler noise (for the given eta) and so needs an rng. */
bool sdc_sampler_uses_noise(sdc_sample_method m, float eta);
/* Whether the denoise callback must fill out_uncond (euler_cfg_pp, euler_a_cfg_pp). */
bool sdc_sampler_needs_uncond(sdc_sample_method m);

/* Runs the sampler over sigmas[0..n_sigmas) (n_sigmas-1 steps), updating x in place.
 * Sigmas must be finite, non-negative and, except the last, positive. */
sdc_status sdc_sample(const sdc_sampler_params *p, const float *sigmas, int n_sigmas,
                      sdc_denoise_fn denoise, void *user, float *x, int64_t n);

/* sd.cpp spellings (euler, euler_a, heun, dpm2, dpm++2s_a, ...). Unknown names fail
 * with SDC_ERR_INVALID_ARG and a message listing the valid ones. */
const char *sdc_sample_method_name(sdc_sample_method m);
sdc_status sdc_sample_method_from_name(const char *name, sdc_sample_method *out);

#endif
