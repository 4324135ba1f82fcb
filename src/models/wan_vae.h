/* The Qwen-Image VAE: Wan2.1's causal 3-D convolutional VAE (diffusers' AutoencoderKLQwenImage,
 * sd.cpp's wan_vae.hpp) on single frames, in Wan2.1's original tensor names; RGB (Qwen-Image) and
 * RGBA (Qwen-Image-Layered: 4 image channels). Configuration detected from the weights. */
#ifndef SDC_MODELS_WAN_VAE_H
#define SDC_MODELS_WAN_VAE_H

#include "core/backend.h"
#include "models/weights.h"

#define SDC_WAN_VAE_MAX_LVL 6

typedef struct sdc_wan_vae_config {
    int base_dim;       /* 96 for Qwen-Image */
    int n_levels;       /* 4 (dim_mult {1,2,4,4}) */
    int num_res_blocks; /* 2 (the decoder has one more per level) */
    int z_channels;     /* 16 */
    int image_channels; /* 3 RGB, 4 RGBA (Layered) */
    int scale;          /* pixels per latent cell: 2^(downsamples) = 8 */
    int enc_dims[SDC_WAN_VAE_MAX_LVL], dec_dims[SDC_WAN_VAE_MAX_LVL]; /* level widths */
    bool has_encoder, has_decoder;
} sdc_wan_vae_config;

typedef struct sdc_wan_vae sdc_wan_vae;

/* True if prefix+"decoder.middle.0.residual.0.gamma" or the encoder's is present. */
bool sdc_wan_vae_detect(const sdc_weight_source *ws, const char *prefix);
/* Names (after prefix, e.g. "first_stage_model."): encoder.conv1, encoder.downsamples.N.{residual.
 * {0.gamma,2,3.gamma,6},shortcut | resample.1[,time_conv]}, encoder.middle.{0,2}.residual...,
 * encoder.middle.1.{norm.gamma,to_qkv,proj}, encoder.head.{0.gamma,2}, conv1 (quant), conv2 (post
 * quant), decoder.conv1, decoder.middle..., decoder.upsamples.N..., decoder.head.{0.gamma,2}.
 * Conv3d weights [O,I,T,H,W] are held as ne=[W,H,T,O*I] (the loader folds the fifth dim). One half
 * may be missing. Only the last temporal slice of each causal conv is kept (single frames). */
sdc_status sdc_wan_vae_load(const sdc_weight_source *ws, const char *prefix, sdc_wan_vae **out);
void sdc_wan_vae_free(sdc_wan_vae *m);
const sdc_wan_vae_config *sdc_wan_vae_get_config(const sdc_wan_vae *m);

/* z [16][h][w] in the VAE's own space (see sdc_wan_vae_latents_to_vae) -> img
 * [image_channels][8h][8w], not clamped (diffusers clamps to [-1, 1] afterwards). */
sdc_status sdc_wan_vae_decode(sdc_wan_vae *m, sdc_backend *be, const float *z, int w, int h,
                              float *img, sdc_eval_fn cb, void *cb_user);
/* img [image_channels][H][W] in [-1, 1] (H, W multiples of 8) -> moments [32][H/8][W/8]: mean,
 * then logvar (after the quant conv). sd.cpp uses the mean; sdc_wan_vae_sample draws. */
sdc_status sdc_wan_vae_encode(sdc_wan_vae *m, sdc_backend *be, const float *img, int W, int H,
                              float *moments, sdc_eval_fn cb, void *cb_user);
/* Posterior sample from moments [2c][n]: mean + exp(0.5 * clamp(logvar, -30, 20)) * noise. */
void sdc_wan_vae_sample(const float *moments, const float *noise, int c, int64_t n, float *out);

/* Qwen-Image's per-channel latent statistics (Wan2.1's 16 channels). */
extern const float sdc_wan_vae_latents_mean[16], sdc_wan_vae_latents_std[16];
/* In place on [16][n]: diffusion latents -> VAE space (x * std + mean) and back ((x - mean) /
 * std). */
void sdc_wan_vae_latents_to_vae(float *x, int64_t n);
void sdc_wan_vae_latents_from_vae(float *x, int64_t n);

#endif
