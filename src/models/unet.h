/* The LDM UNet of SD 1.x, 2.x and SDXL (openaimodel.UNetModel in its original key layout:
 * input_blocks.*, middle_block.*, output_blocks.*, time_embed.*, label_emb.*, out.*).
 * The whole structure is read from the weights: which blocks exist (so distilled
 * tiny/small UNets and SSD-1B/Vega-style middle blocks load as they are), widths, the
 * depth of every transformer, the projection kind and the context width. */
#ifndef SDC_MODELS_UNET_H
#define SDC_MODELS_UNET_H

#include <stdbool.h>

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_unet_config {
    /* SD1: 4 (9 inpaint, 8 pix2pix), 4, 320 */
    int in_channels, out_channels, model_channels;
    /* SD1/SD2: 4 levels 1,2,4,4, 2 res blocks; SDXL: 3 levels 1,2,4 */
    int n_levels, channel_mult[4], num_res_blocks;
    /* per level (its first input block), 0 = no attention (SDXL: 0,2,10) */
    int transformer_depth[4];
    /* transformer depth of the middle block; 0 = res block(s) only; -1 = no middle block */
    int mid_depth;
    /* SD1: 8 heads (head_dim = channels/8; head_dim 0 here); SD2/SDXL: heads 64 wide
     * (n_heads 0 here: channels/64 per transformer) */
    int n_heads, head_dim;
    int context_dim;     /* 768 SD1, 1024 SD2, 2048 SDXL */
    int adm_in_channels; /* 0 = no label_emb; SDXL 2816 */
    bool linear_proj;    /* proj_in/proj_out Linear (SD2, SDXL) vs 1x1 conv (SD1) */
    int time_embed_dim;  /* 4 * model_channels */
    /* LCM-distilled UNets (LCM-Dreamshaper): width of the w embedding that
     * time_embedding.cond_proj adds to the timestep embedding; 0 = none */
    int time_cond_proj_dim;
    int n_tensors; /* tensors under the prefix that the model uses */
} sdc_unet_config;

/* Load-time choices; zero-initialised = detect everything, sd.cpp's numerics. */
typedef struct sdc_unet_options {
    int n_heads;  /* > 0: this many heads in every transformer (head_dim = channels/n_heads) */
    int head_dim; /* > 0: heads of this width (n_heads = channels/head_dim) */
    /* true: plain float math (activations stay F32, conv weights in their own type, erf
     * GELU). false (default): what sd.cpp's ggml CPU backend computes: conv weights held
     * in F16, the input of every matmul/conv whose weight is F16 rounded to F16 (ggml
     * converts it for its F16 dot products), GEGLU's GELU the tanh form through ggml's F16
     * table. */
    bool exact;
} sdc_unet_options;

typedef struct sdc_unet sdc_unet;

bool sdc_unet_detect(const sdc_weight_source *ws, const char *prefix);
/* prefix "model.diffusion_model." (LDM key layout: input_blocks.*, middle_block.*, output_blocks.*,
 * time_embed.*, label_emb.*, out.*); the whole configuration is detected from the weights, as
 * sd.cpp does (heads: 8 per transformer when context_dim is 768 (SD1), else 64 wide). */
sdc_status sdc_unet_load(const sdc_weight_source *ws, const char *prefix, sdc_unet **out);
/* The same with options (NULL = defaults). */
sdc_status sdc_unet_load_ex(const sdc_weight_source *ws, const char *prefix,
                            const sdc_unet_options *opt, sdc_unet **out);
void sdc_unet_free(sdc_unet *m);
const sdc_unet_config *sdc_unet_get_config(const sdc_unet *m);
/* Whether name (full, with prefix) is one of the tensors the loaded model uses. */
bool sdc_unet_uses(const sdc_unet *m, const char *name);

/* LCM w embedding (diffusers' UNet2DConditionModel timestep_cond): emb [time_cond_proj_dim]
 * is projected by time_embedding.cond_proj and added to the timestep embedding of every
 * batch item in the following forwards; NULL (the default) leaves it out, as sd.cpp does
 * (it ignores the tensor). Copied. Refused when the model has no cond_proj. */
sdc_status sdc_unet_set_time_cond(sdc_unet *m, const float *emb);
/* diffusers' LatentConsistencyModelPipeline.get_guidance_scale_embedding of one w (the
 * pipeline passes guidance_scale - 1) into out[dim], in float32 as it computes it. */
void sdc_unet_guidance_embedding(float w, int dim, float *out);

/* B latents x [B][in_ch][h][w] at model timesteps t[B] (float, 0..999) with contexts ctx
 * [B][n_ctx][context_dim] and (SDXL) y [B][adm_in_channels] (NULL otherwise): out [B][out_ch][h][w]
 * (the raw eps / v output). h, w multiples of 8 (latent cells). */
sdc_status sdc_unet_forward(sdc_unet *m, sdc_backend *be, const float *x, int B, int w, int h,
                            const float *t, const float *ctx, int n_ctx, const float *y, float *out,
                            sdc_eval_fn cb, void *cb_user);

#endif
