/* Shared state of one sampling run (internal to src/sampling). */
#ifndef SDC_SAMPLING_SAMPLERS_IMPL_H
#define SDC_SAMPLING_SAMPLERS_IMPL_H

#include "sampling/samplers.h"

#define SDC_SMP_MAX_BUFS 24

typedef struct sdc_smp {
    const sdc_sampler_params *p;
    const float *sigmas;
    int steps;
    sdc_denoise_fn denoise;
    void *user;
    float *x;
    int64_t n;
    float eta;
    float *bufs[SDC_SMP_MAX_BUFS];
    int nbufs;
} sdc_smp;

#define SDC_SMP_TRY(expr)                                                                          \
    do {                                                                                           \
        sdc_status st_ = (expr);                                                                   \
        if (st_ != SDC_OK) return st_;                                                             \
    } while (0)

#define SDC_SMP_NEED(ptr)                                                                          \
    do {                                                                                           \
        if (!(ptr)) return sdc_fail(SDC_ERR_NO_MEMORY, "sampler: out of memory");                  \
    } while (0)

/* A zeroed work array of n floats owned by the run (NULL when out of memory). */
float *sdc_smp_buf(sdc_smp *s);
sdc_status sdc_smp_model(sdc_smp *s, const float *x, float sigma, float *den, float *unc);
/* One randn(n) draw from the sampler rng into out. */
sdc_status sdc_smp_noise(sdc_smp *s, float *out);
sdc_status sdc_smp_noise_n(sdc_smp *s, float *out, int64_t count);
sdc_status sdc_smp_step_done(sdc_smp *s, int i);

/* Ancestral split of a step sigma_from -> sigma_to into a deterministic step to
 * sigma_down and fresh noise of std sigma_up. The flow form also returns the factor
 * alpha by which x is rescaled before the noise is added (1 for the VE form). */
void sdc_ancestral_step(float sigma_from, float sigma_to, float eta, bool flow, float *down,
                        float *up, float *alpha);

sdc_status sdc_sample_basic(sdc_smp *s);     /* euler, heun, dpm2, cfg++ euler */
sdc_status sdc_sample_ancestral(sdc_smp *s); /* euler_a/ddim, dpm++2s_a, euler_a_cfg_pp, euler_ge */
sdc_status sdc_sample_consistency(sdc_smp *s); /* lcm, tcd */
sdc_status sdc_sample_multistep(sdc_smp *s);   /* dpm++2m(v2), ipndm(_v), lms */
sdc_status sdc_sample_exponential(sdc_smp *s); /* res_multistep, res_2s, er_sde */
sdc_status sdc_sample_dpmpp_sde(sdc_smp *s);   /* dpm++2m_sde, dpm++2m_sde_bt */

#endif
