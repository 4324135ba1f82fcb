/* Inpainting inputs as sd.cpp builds them (stable-diffusion.cpp 97d29908,
 * prepare_image_generation_latents), for the families whose diffusion module asks for
 * them (sdc_diffusion.sdcpp_mask, .set_concat): the mask binarised at 0.5 and reduced to
 * latent cells by their maximum; for inpainting UNets the concat input [mask, latent of
 * the masked image] and a sampling mask dilated by one cell. */
#ifndef SDC_PIPELINE_SD_INPAINT_H
#define SDC_PIPELINE_SD_INPAINT_H

#include "pipeline/stages.h"

/* Per latent cell 1 = regenerate, 0 = keep: a mask pixel is white when its gray value
 * (stb's RGB-to-gray rule for colour masks, as sd-cli loads them) is >= 128; a cell
 * regenerates when any of its ds x ds pixels is white. NULL mask: all 1. */
void sdc_inpaint_latent_mask(const sdc_image *mask, int ds, int w, int h, float *out);

/* out = 3x3 max pool of m (stride 1, padding 1), w x h cells. */
void sdc_inpaint_dilate(const float *m, int w, int h, float *out);

/* The sampler's keep weights (1 - mask, the mask dilated for inpainting UNets), or
 * *keep = NULL when no cell is kept. */
sdc_status sdc_inpaint_keep(const sdc_context *ctx, const sdc_image *mask,
                            const sdc_latent_shape *shape, float **keep);

/* The inpainting UNet's extra input, handed to diffusion.set_concat: the latent mask and
 * the first stage's encoding of the init image with white-masked pixels set to gray (0 in
 * [-1, 1]), its posterior sampled with the draws after the init image's (sd.cpp's rng
 * continues from the init encode); no init image: mask 1 and a zero latent. */
sdc_status sdc_inpaint_set_concat(sdc_context *ctx, const sdc_image *init, const sdc_image *mask,
                                  const sdc_latent_shape *shape, sdc_rng_type rng_type,
                                  uint64_t seed);

/* The inpainting UNet's input for B latents: per batch item x's x_channels planes, then
 * the n_concat planes of concat (the same for every item: sd.cpp gives the cond and uncond
 * passes one c_concat), plane = w * h values each. */
void sdc_inpaint_join(const float *x, int x_channels, const float *concat, int n_concat, int B,
                      size_t plane, float *out);

#endif
