/* Hires fix (sd-cli's --hires*): after the first pass at the base size, the latent is
 * upscaled (in latent space, or decoded, upscaled as pixels and re-encoded) and a second,
 * img2img-like pass runs at the hires size with its own steps and strength. */
#ifndef SDC_PIPELINE_HIRES_H
#define SDC_PIPELINE_HIRES_H

#include <stdbool.h>

#include "pipeline/stages.h"
#include "sdc.h"

/* sd.cpp's upscaler names, in its order ("Latent" is bilinear). */
typedef enum sdc_hires_upscaler_kind {
    SDC_HIRES_NONE,
    SDC_HIRES_LATENT,
    SDC_HIRES_LATENT_NEAREST,
    SDC_HIRES_LATENT_NEAREST_EXACT,
    SDC_HIRES_LATENT_ANTIALIASED,
    SDC_HIRES_LATENT_BICUBIC,
    SDC_HIRES_LATENT_BICUBIC_ANTIALIASED,
    SDC_HIRES_LANCZOS, /* pixel space */
    SDC_HIRES_NEAREST, /* pixel space */
    SDC_HIRES_MODEL,   /* pixel space, an ESRGAN model from --hires-upscalers-dir */
    SDC_HIRES_KIND_COUNT
} sdc_hires_upscaler_kind;

/* sd.cpp's name of a kind ("Latent (bicubic antialiased)", ...). */
const char *sdc_hires_upscaler_name(sdc_hires_upscaler_kind k);
/* The kind of a name; SDC_HIRES_KIND_COUNT when it is not one of them (then it names a
 * model file). */
sdc_hires_upscaler_kind sdc_hires_upscaler_from_name(const char *name);

/* Resampling filters of sd.cpp's tensor interpolate (align_corners false). */
typedef enum sdc_resize_filter {
    SDC_RESIZE_NEAREST,       /* src = floor(dst * in / out) */
    SDC_RESIZE_NEAREST_EXACT, /* src = floor((dst + 0.5) * in / out) */
    SDC_RESIZE_BILINEAR,
    SDC_RESIZE_BICUBIC, /* a = -0.75 */
    SDC_RESIZE_LANCZOS, /* radius 3, weights normalised */
} sdc_resize_filter;

/* Resizes `planes` planes of w x h floats to ow x oh. The 2-D filters are separable,
 * sampled at (dst + 0.5) * in / out - 0.5, out-of-range taps clamped to the edge;
 * antialias widens the filter by in/out when downscaling and normalises the weights
 * (sd.cpp's rule, equal to torch's F.interpolate except for bicubic antialias at the
 * edges). Computed in double. Returns false when out of memory. */
bool sdc_resize_planes(const float *in, int w, int h, int planes, float *out, int ow, int oh,
                       sdc_resize_filter f, bool antialias);

/* The second pass's schedule (sd.cpp, after sd-webui): the scheduler runs
 * scheduler_steps = max(1, (int)(steps / strength)) steps, and the pass keeps the last
 * t_enc + 2 sigmas, t_enc = (int)(scheduler_steps * strength) capped at
 * scheduler_steps - 1. */
int sdc_hires_scheduler_steps(int steps, float strength);
/* sigmas: scheduler_steps + 1 values; moves the kept tail to the front, returns its length. */
int sdc_hires_trim_sigmas(float *sigmas, int scheduler_steps, float strength);

/* The resolved request: NULL from sdc_hires_plan_create when hires is off. */
typedef struct sdc_hires_plan sdc_hires_plan;

/* Full schedule of `steps` steps of this request's scheduler (generate.c's). */
typedef sdc_status (*sdc_hires_schedule_fn)(void *user, int steps, float **sigmas, int *n);

/* Checks p's hires fields, resolves the target size (aligned up to the model's size
 * multiple), the upscaler (loading a model), and the second pass's sigmas. */
sdc_status sdc_hires_plan_create(sdc_context *ctx, const sdc_generate_params *p,
                                 sdc_hires_schedule_fn schedule, void *schedule_user,
                                 sdc_hires_plan **out);
void sdc_hires_plan_free(sdc_hires_plan *plan);
int sdc_hires_plan_width(const sdc_hires_plan *plan);
int sdc_hires_plan_height(const sdc_hires_plan *plan);

/* What the second pass shares with the first. */
typedef struct sdc_hires_job {
    const sdc_denoiser *den;
    const sdc_cond *cond, *uncond;
    float cfg_scale, eta;
    sdc_sample_method method;
    sdc_rng_type rng_type, sampler_rng_type;
    uint64_t seed;          /* this image's seed: both RNGs are re-seeded with it, as sd.cpp does */
    sdc_latent_shape shape; /* the first pass's latent */
} sdc_hires_job;

/* x: the first pass's final latent. *out: the second pass's (malloc'd, the plan's size). */
sdc_status sdc_hires_run(sdc_context *ctx, const sdc_generate_params *p, const sdc_hires_plan *plan,
                         const sdc_hires_job *job, const float *x, float **out);

#endif
