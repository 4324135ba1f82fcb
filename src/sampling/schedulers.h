/* Sigma schedules (sd.cpp's --scheduler choices), custom --sigmas, and img2img
 * truncation. A schedule for n steps has n+1 values, the last being 0 (beta may
 * merge duplicate timesteps and return fewer). */
#ifndef SDC_SAMPLING_SCHEDULERS_H
#define SDC_SAMPLING_SCHEDULERS_H

#include "sampling/denoiser.h"

typedef enum sdc_scheduler {
    SDC_SCHED_DISCRETE = 0,
    SDC_SCHED_KARRAS,
    SDC_SCHED_EXPONENTIAL,
    SDC_SCHED_AYS,
    SDC_SCHED_GITS,
    SDC_SCHED_SGM_UNIFORM,
    SDC_SCHED_SIMPLE,
    SDC_SCHED_SMOOTHSTEP,
    SDC_SCHED_KL_OPTIMAL,
    SDC_SCHED_LCM,
    SDC_SCHED_BONG_TANGENT,
    SDC_SCHED_LTX2,
    SDC_SCHED_LOGIT_NORMAL,
    SDC_SCHED_FLUX2,
    SDC_SCHED_FLUX,
    SDC_SCHED_BETA,
    SDC_SCHED_COUNT
} sdc_scheduler;

/* Which Align-Your-Steps table a model family uses (sd.cpp picks it by version). */
typedef enum sdc_ays_table {
    SDC_AYS_NONE = 0, /* AYS is refused */
    SDC_AYS_SD1,
    SDC_AYS_SDXL,
    SDC_AYS_SVD,
} sdc_ays_table;

typedef struct sdc_schedule_params {
    sdc_scheduler scheduler;
    int steps;
    int image_seq_len;            /* latent H*W (flux, flux2, ltx2, logit_normal); <= 0: 4096 */
    sdc_ays_table ays;            /* for SDC_SCHED_AYS */
    double beta_alpha, beta_beta; /* beta scheduler shape; 0 means sd.cpp's 0.6 */
} sdc_schedule_params;

void sdc_schedule_params_init(sdc_schedule_params *p);

/* Writes the schedule into out (capacity steps+1) and its length into *len.
 * steps <= 0 is rejected. As in sd.cpp, karras and exponential with one step give
 * [NaN, 0]; AYS without a table and GITS with one step (undefined in sd.cpp) fail. */
sdc_status sdc_schedule_sigmas(const sdc_denoiser *d, const sdc_schedule_params *p, float *out,
                               int *len);

/* image_seq_len for the resolution-dependent schedulers, as sd.cpp: the latent
 * H*W = (height/vae_scale)*(width/vae_scale) (vae_scale 8 for Flux.1, 16 for Flux.2),
 * times the latent frame count for video models. */
int sdc_image_seq_len(int width, int height, int vae_scale_factor);

/* Parses --sigmas ("14.61,7.8,3.5,0.0", optionally in brackets) into out (capacity
 * cap). Empty lists, bad numbers and negative or non-finite values are rejected. */
sdc_status sdc_parse_sigmas(const char *text, float *out, int cap, int *count);

/* img2img: keeps the last part of a steps+1 schedule for strength in (0,1) the way
 * sd.cpp does (t_enc = floor(steps*strength), at least one step). Shifts the values to
 * the front of sigmas and returns the new length. strength >= 1 keeps everything. */
int sdc_sigmas_apply_strength(float *sigmas, int len, float strength);

/* sd.cpp spellings; "normal" is accepted as an alias of discrete. */
const char *sdc_sched_name(sdc_scheduler s);
sdc_status sdc_scheduler_from_name(const char *name, sdc_scheduler *out);

#endif
