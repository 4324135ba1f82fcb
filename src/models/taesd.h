/* TAESD (madebyollin/taesd; diffusers AutoencoderTiny; sd.cpp's --taesd): a small conv-only
 * autoencoder for SD 1.x / 2.x and SDXL (taesdxl, same architecture) latents. */
#ifndef SDC_MODELS_TAESD_H
#define SDC_MODELS_TAESD_H

#include "core/backend.h"
#include "models/vae_kl.h" /* sdc_vae_numerics */
#include "models/weights.h"

typedef struct sdc_taesd sdc_taesd;

typedef struct sdc_taesd_config {
    int channels, z_channels; /* 64, 4 for taesd / taesdxl */
    bool has_encoder, has_decoder;
    bool original_names; /* taesd.py's own Sequential names (taesd_decoder.safetensors) */
} sdc_taesd_config;

/* prefix: "tae." (sd.cpp's prefix for the --taesd file). Names as sd.cpp loads them, diffusers'
 * AutoencoderTiny: decoder.layers.N.weight / .bias (convs), decoder.layers.N.conv.{0,2,4}.weight
 * (blocks), encoder.layers.N...; also taesd.py's single-half files (taesd_decoder.safetensors:
 * "1.weight", "3.conv.0.weight", ...; taesd_encoder.safetensors: "0.weight", "1.conv.0.weight").
 * Either half may be missing. */
bool sdc_taesd_detect(const sdc_weight_source *ws, const char *prefix);
sdc_status sdc_taesd_load(const sdc_weight_source *ws, const char *prefix, sdc_taesd **out);
void sdc_taesd_free(sdc_taesd *m);
const sdc_taesd_config *sdc_taesd_get_config(const sdc_taesd *m);
/* SDC_VAE_EXACT (default) or sd.cpp's F16-rounded conv inputs and weights (see vae_kl.h). */
sdc_status sdc_taesd_set_numerics(sdc_taesd *m, sdc_vae_numerics mode);

/* latent as the diffusion model sees it (TAESD works in the scaled space: sd.cpp passes the
 * latent unchanged), [4][h][w] -> rgb [3][8h][8w] in [-1,1] (diffusers' convention: TAESD's own
 * [0,1] output times 2 minus 1; sd.cpp uses the [0,1] output directly, which is the same image
 * after the usual (x+1)/2). Not clamped. */
sdc_status sdc_taesd_decode(sdc_taesd *m, sdc_backend *be, const float *latent, int w, int h,
                            float *rgb, sdc_eval_fn cb, void *cb_user);
/* rgb [3][H][W] in [-1,1] (H, W multiples of 8) -> latent [4][H/8][W/8] in the diffusion
 * model's space (no sampling: TAESD's encoder is deterministic). */
sdc_status sdc_taesd_encode(sdc_taesd *m, sdc_backend *be, const float *rgb, int W, int H,
                            float *latent, sdc_eval_fn cb, void *cb_user);

#endif
