/* The Qwen-Image MMDiT (diffusers' QwenImageTransformer2DModel; sd.cpp's qwen_image.hpp):
 * img_in/txt_in (with txt_norm), a sinusoidal timestep embedding, dual-stream blocks (adaLN
 * with 6 modulations per stream, joint attention with q/k RMSNorm and 3-axis RoPE over
 * frame/row/column), norm_out + proj_out over 2x2 patches of 16-channel latents. Also the
 * Layered variant (addition_t_embedding, one frame per layer, the condition latent at frame -1),
 * Edit's reference latents appended to the image tokens, and Edit 2511's zero_cond_t (reference
 * tokens modulated with t = 0). Depth and widths come from the weights; names are diffusers'
 * (ComfyUI/sd.cpp add the prefix "model.diffusion_model."). */
#ifndef SDC_MODELS_QWEN_IMAGE_DIT_H
#define SDC_MODELS_QWEN_IMAGE_DIT_H

#include <stdbool.h>

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_qwen_dit_config {
    int hidden, heads, head_dim; /* 3072 = 24 x 128 */
    int n_layers;                /* 60 */
    int in_channels;             /* 64: 16 latent channels x 2x2 patch */
    int out_channels;            /* 16 (proj_out rows / 4) */
    int latent_channels;         /* in_channels / 4 */
    int patch;                   /* 2 */
    int txt_dim;                 /* joint_attention_dim, 3584 */
    int mlp_hidden;              /* 4 x hidden */
    int axes[3];                 /* RoPE pairs x 2 per axis: 16/56/56 for head_dim 128 */
    bool layered;                /* time_text_embed.addition_t_embedding present */
    bool zero_cond_t;            /* '__index_timestep_zero__' present, or forced */
    int n_tensors;               /* tensors the model uses */
} sdc_qwen_dit_config;

/* Where RoPE puts the tokens. SDCPP (default): sd.cpp's gen_qwen_image_ids. DIFFUSERS: diffusers'
 * QwenEmbedRope / QwenEmbedLayer3DRope. They differ only for an odd token count along an axis (rows
 * start at -(n/2) in sd.cpp, -(n - n/2) in diffusers) and in the text start: max(rows, cols)/2 of
 * the main latent in sd.cpp; the maximum over every latent (Layered: at least the frame count) in
 * diffusers. */
typedef enum sdc_qwen_positions {
    SDC_QWEN_POS_SDCPP = 0,
    SDC_QWEN_POS_DIFFUSERS = 1,
} sdc_qwen_positions;

typedef struct sdc_qwen_dit_options {
    bool zero_cond_t; /* force it on (sd.cpp: --model-args qwen_image_zero_cond_t=true) */
    sdc_qwen_positions positions;
    /* sd.cpp's CPU arithmetic: the input of every F16-weight Linear rounded to F16 (after sd.cpp's
     * input scales: 1/32 for to_out.0/to_add_out, 1/128 for the MLPs' net.2), GELU through ggml's
     * F16 table. false: plain float math. */
    bool ggml_numerics;
} sdc_qwen_dit_options;

typedef struct sdc_qwen_dit sdc_qwen_dit;

/* True if the weights under `prefix` look like a Qwen-Image DiT. */
bool sdc_qwen_dit_detect(const sdc_weight_source *ws, const char *prefix);
/* opt NULL = defaults. */
sdc_status sdc_qwen_dit_load(const sdc_weight_source *ws, const char *prefix,
                             const sdc_qwen_dit_options *opt, sdc_qwen_dit **out);
void sdc_qwen_dit_free(sdc_qwen_dit *m);
const sdc_qwen_dit_config *sdc_qwen_dit_get_config(const sdc_qwen_dit *m);

/* Reference frame index of reference latent j: Edit counts up from 1 (frame 1, 2, ...), Layered
 * down from -1 (as sd.cpp's RefIndexMode INCREASE / DECREASE). AUTO: DECREASE for a Layered model.
 * FIXED (sd.cpp's positions only): every reference at frame 1, not centred, each placed
 * right of or below the ones before (offsets in latent cells, as sd.cpp's gen_refs_ids).
 */
typedef enum sdc_qwen_ref_index {
    SDC_QWEN_REF_AUTO = 0,
    SDC_QWEN_REF_INCREASE = 1,
    SDC_QWEN_REF_DECREASE = 2,
    SDC_QWEN_REF_FIXED = 3,
} sdc_qwen_ref_index;

typedef struct sdc_qwen_dit_ref {
    const float *x; /* [B][latent_channels][h][w] */
    int w, h;
} sdc_qwen_dit_ref;

typedef struct sdc_qwen_dit_input {
    const float *x; /* [B][latent_channels][frames][h][w] (frames 1: plain [B][C][h][w]) */
    int B, frames, w, h;
    const float *t;   /* [B] model timesteps: sigma * 1000 */
    const float *ctx; /* [B][n_ctx][txt_dim] (the text encoder's states, template dropped) */
    int n_ctx;
    const sdc_qwen_dit_ref *refs; /* reference latents (Edit, the Layered condition), or NULL */
    int n_refs;
    const int *addition_t_cond; /* [B] rows of addition_t_embedding (Layered), NULL = row 0 */
    sdc_qwen_ref_index ref_index;
} sdc_qwen_dit_input;

/* One evaluation: out [B][out_channels][frames][h][w], the flow velocity. Odd h/w are zero-padded
 * to the patch size and cropped (as sd.cpp). */
sdc_status sdc_qwen_dit_forward(sdc_qwen_dit *m, sdc_backend *be, const sdc_qwen_dit_input *in,
                                float *out, sdc_eval_fn cb, void *cb_user);

/* RoPE positions (frame, row, col) of every token of `in` (text first, then the image frames, then
 * each reference), n = n_ctx + image tokens (exposed for tests). ids [n][3]. */
sdc_status sdc_qwen_dit_positions(const sdc_qwen_dit *m, const sdc_qwen_dit_input *in, int *ids,
                                  int n);

#endif
