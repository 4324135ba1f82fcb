/* AutoencoderKL (the LDM VAE of SD 1.x / 2.x / SDXL): encoder, decoder, quant convs and the
 * mid attention, configuration detected from the weights. */
#ifndef SDC_MODELS_VAE_KL_H
#define SDC_MODELS_VAE_KL_H

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_vae_config {
    int ch, n_levels, ch_mult[4],
        num_res_blocks;        /* SD: 128, 4, {1,2,4,4}, 2 (decoder uses num_res_blocks+1) */
    int z_channels, embed_dim; /* 4, 4 */
    bool has_encoder, has_decoder, has_quant_conv; /* quant_conv 2z->2z, post_quant_conv z->z */
    bool attn_linear; /* mid attention q/k/v/proj_out stored as Linear [C,C] (diffusers-converted)
                         vs 1x1 conv [C,C,1,1] */
    bool diffusers_names; /* the weights use diffusers' names (down_blocks, mid_block, ...) */
    int scale;            /* pixels per latent cell: 2^(n_levels-1) (8 for SD) */
} sdc_vae_config;

typedef struct sdc_vae sdc_vae;

/* Numerics. SDC_VAE_EXACT (the default) uses the stored weights and F32 activations throughout.
 * SDC_VAE_SDCPP rounds every convolution's (and attention projection's) weights and input to
 * F16 as sd.cpp's ggml im2col path does. Its output has sd-cli's rounding noise, but the noise
 * cascades through the layers, so it is hardly closer to sd-cli's image than exact F32 is
 * (tiny test VAE: 3.6e-3 vs 4.2e-3 max abs from an F16-emulating diffusers run) and costs two
 * extra passes per conv input. */
typedef enum sdc_vae_numerics { SDC_VAE_SDCPP = 0, SDC_VAE_EXACT = 1 } sdc_vae_numerics;

bool sdc_vae_detect(const sdc_weight_source *ws, const char *prefix);
/* prefix: "first_stage_model." or "vae." (LDM layout: encoder.conv_in,
 * encoder.down.N.block.M.{norm1,conv1,norm2, conv2,nin_shortcut}, encoder.down.N.downsample.conv,
 * encoder.mid.{block_1,attn_1,block_2}, encoder.norm_out, encoder.conv_out, quant_conv,
 * post_quant_conv, decoder.conv_in, decoder.mid, decoder.up.N.block.M, decoder.up.N.upsample.conv,
 * decoder.norm_out, decoder.conv_out). Also accepts the diffusers layout
 * (encoder.down_blocks.N.resnets.M..., mid_block.attentions.0.{to_q,to_k,to_v,to_out.0,group_norm},
 * ...) by a name map at load time. Encoder or decoder halves may be missing (the other then errors
 * clearly when used). */
sdc_status sdc_vae_load(const sdc_weight_source *ws, const char *prefix, sdc_vae **out);
void sdc_vae_free(sdc_vae *m);
const sdc_vae_config *sdc_vae_get_config(const sdc_vae *m);
/* Switches the numerics for later calls (SDC_VAE_SDCPP may make F16 copies of F32 weights). */
sdc_status sdc_vae_set_numerics(sdc_vae *m, sdc_vae_numerics mode);

/* z: [z_channels][h][w] in the VAE's own space (the caller has already divided by the family's
 * scale factor, e.g. 1/0.18215 for SD1, 1/0.13025 for SDXL); rgb: [3][8h][8w], not clamped (~[-1,
 * 1]). (8 = config.scale for the SD VAEs.) */
sdc_status sdc_vae_decode(sdc_vae *m, sdc_backend *be, const float *z, int w, int h, float *rgb,
                          sdc_eval_fn cb, void *cb_user);
/* rgb [3][H][W] in [-1,1] (H, W multiples of 8) -> moments [2*z_channels][H/8][W/8] (mean, then
 * logvar), after quant_conv. The caller samples the posterior (sd.cpp: mean +
 * exp(0.5*clamp(logvar,-30,20))*noise). */
sdc_status sdc_vae_encode(sdc_vae *m, sdc_backend *be, const float *rgb, int W, int H,
                          float *moments, sdc_eval_fn cb, void *cb_user);

#endif
