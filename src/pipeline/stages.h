/* The stages of a generation: conditioning -> sampling -> decoding. Each is written
 * against the family role interfaces (family.h) and knows no family. */
#ifndef SDC_PIPELINE_STAGES_H
#define SDC_PIPELINE_STAGES_H

#include "pipeline/context.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"

/* Conditioning: the prompt, and the unconditional branch when CFG needs it; img_uncond
 * (NULL: not wanted) the negative prompt without the -r images, for the image-
 * unconditional branch of diffusion.ref_img_cfg models; ref_opts the resolved
 * --ref-image-args (NULL: none). Warns about dropped tokens; a non-finite value in the
 * text encoder's output is an error. */
sdc_status sdc_stage_condition(sdc_context *ctx, const sdc_generate_params *p,
                               const sdc_ref_image_opts *ref_opts, bool need_uncond, sdc_cond *cond,
                               sdc_cond *uncond, sdc_cond *img_uncond);

/* Latent geometry of a width x height image. */
typedef struct sdc_latent_shape {
    int channels, width, height; /* latent cells */
    int frames;                  /* 1, or Layered's layers + 1 ([channels][frames][h][w]) */
    int64_t n;                   /* channels * frames * width * height */
} sdc_latent_shape;
/* One frame; generate.c sets more for the families that ask (latent_frames). */
void sdc_stage_latent_shape(const sdc_context *ctx, int width, int height, sdc_latent_shape *out);

/* What the sampling stage runs for one image. */
typedef struct sdc_sample_job {
    const sdc_denoiser *den;
    const float *sigmas;
    int n_sigmas;
    const sdc_cond *cond, *uncond;  /* uncond NULL: no CFG */
    const sdc_cond *img_uncond;     /* the image-unconditional pass, or NULL */
    float cfg_scale, img_cfg_scale; /* img_cfg_scale: resolved (sdc_cfg_resolve) */
    int width, height;              /* image pixels (the model's forward takes these) */
    sdc_latent_shape shape;
    sdc_sample_method method;
    float eta;
    sdc_rng *rng;       /* sampler noise */
    const float *init;  /* img2img: the init image's latent, or NULL */
    const float *keep;  /* inpainting: per latent cell 1 = keep init, or NULL */
    const float *noise; /* the initial noise (inpainting re-noises known cells with it) */
    bool keep_x0;       /* sd.cpp's blend: keep cells of each x0 prediction, not of x */
} sdc_sample_job;

/* Samples x (shape.n floats, in: x_T; out: the final latent). Stops with an error
 * naming the step and pass when a model output or the state is not finite. */
sdc_status sdc_stage_sample(sdc_context *ctx, const sdc_generate_params *p,
                            const sdc_sample_job *job, float *x);

/* img2img: the init image through the first stage. latent: shape.n floats; noise
 * (shape.n, or NULL) samples a VAE posterior. */
sdc_status sdc_stage_encode_image(sdc_context *ctx, const sdc_image *img,
                                  const sdc_latent_shape *shape, const float *noise, float *latent);
/* u8 interleaved -> planar [C][H][W] in [-1, 1] for a first stage of C = 3 or 4 image
 * channels (gray spread to RGB, a missing alpha is 1, as sd.cpp). */
void sdc_stage_image_to_planar(const sdc_image *img, int C, float *x);
/* inpainting: mask image -> per latent cell "keep" weights (black keeps, white
 * regenerates), averaged over each cell. */
void sdc_stage_mask_to_keep(const sdc_image *mask, int downscale, const sdc_latent_shape *shape,
                            float *keep);
/* Decoding: the final latent (one frame) through the first stage into an RGB image (RGBA
 * when the first stage has 4 image channels). */
sdc_status sdc_stage_decode(sdc_context *ctx, const float *latent, int width, int height,
                            sdc_image *out);
/* Every frame of a [channels][frames][h][w] latent, one decode each, into out[0..frames). */
sdc_status sdc_stage_decode_frames(sdc_context *ctx, const float *latent,
                                   const sdc_latent_shape *shape, int width, int height,
                                   sdc_image *out);
/* Reference images (-r) through the first stage, handed to the diffusion model with the
 * latent's frame count (diffusion.set_refs); nothing when the model has no set_refs.
 * opts: the resolved --ref-image-args (NULL: sd.cpp's defaults: resized to about the
 * output's area, encoded, read by the model). */
sdc_status sdc_stage_set_refs(sdc_context *ctx, const sdc_generate_params *p,
                              const sdc_latent_shape *shape, const sdc_ref_image_opts *opts);

/* A preview of an x0 prediction, the cheap way the first stage allows (pixel space:
 * the prediction itself; latent families: their preview projection). */
sdc_status sdc_stage_preview(sdc_context *ctx, const float *x0, int width, int height,
                             sdc_image *out);

/* Index of the first non-finite value of x[0..n), -1 if all are finite. */
int64_t sdc_first_non_finite(const float *x, int64_t n);

#endif
