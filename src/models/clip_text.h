/* CLIP text encoders (the conditioners of SD 1.x / 2.x / SDXL): OpenAI ViT-L/14, OpenCLIP
 * ViT-H/14 and ViT-bigG/14, in HF or OpenCLIP tensor layout, configuration from the shapes.
 *
 * How sd.cpp (97d2990, conditioner.hpp FrozenCLIPEmbedderWithCustomWords) drives them, per family
 * (clip_skip <= 0 means the family default; a user clip_skip > 0 is passed as layer_skip to every
 * encoder of the family):
 *   SD 1.x  ViT-L, prefix "cond_stage_model.transformer." (HF layout): layer_skip 1 (last layer),
 *           final_ln true, no pooled. Chunks BOS + 75 + EOS padded with 49407.
 *   SD 2.x  ViT-H, "cond_stage_model.model." (OpenCLIP layout): layer_skip 2 (penultimate),
 *           final_ln true (ln_final applied to the penultimate layer), no pooled. Its tokenizer
 *           pads with 0 (not 49407).
 *   SDXL    clip_l ViT-L "conditioner.embedders.0.transformer." and clip_g bigG
 *           "conditioner.embedders.1.model." (or "text_encoders.clip_l.transformer." /
 *           "text_encoders.clip_g.transformer." for split files): both layer_skip 2, final_ln
 *           false; context = concat(clip_l [77,768], clip_g [77,1280]) along features. clip_g's
 *           ids are clip_l's with every id after the first EOS set to 0. pooled (1280) from
 *           clip_g of chunk 0 only: last layer whatever layer_skip is, final LN, at the first EOS,
 *           times text_projection; y = pooled ++ 6 timestep embeddings (256 each) of
 *           (H, W), (crop 0, 0), (target H, W) = 2816 values.
 * Attention is causal (no padding mask); layer norms use eps 1e-5; heads = hidden / 64. */
#ifndef SDC_MODELS_CLIP_TEXT_H
#define SDC_MODELS_CLIP_TEXT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_clip_text_config {
    int n_layers, hidden, heads, ff, vocab, n_pos; /* ViT-L: 12, 768, 12, 3072, 49408, 77 */
    int proj_dim;                                  /* text_projection width (0 if none) */
    bool quick_gelu; /* ViT-L (OpenAI) uses quick_gelu; OpenCLIP ViT-H / bigG use gelu */
    bool openclip;   /* weights in OpenCLIP layout rather than HF */
} sdc_clip_text_config;

typedef enum sdc_clip_act {
    SDC_CLIP_ACT_AUTO = 0, /* as sd.cpp: gelu for hidden 1024 / 1280, else quick_gelu */
    SDC_CLIP_ACT_QUICK_GELU,
    SDC_CLIP_ACT_GELU
} sdc_clip_act;

/* Settings the weights do not carry. Defaults (set by sdc_clip_text_load) in brackets. */
typedef struct sdc_clip_text_options {
    /* [true] compute as sd.cpp's ggml CPU path does, not as the PyTorch reference:
     *  - a matmul with an F16 (BF16) weight rounds its input to F16 (BF16) first;
     *  - gelu is ggml's tanh approximation through an F16 table (sdc_gelu_f16) instead of the
     *    erf form; quick_gelu is f16(x * sigmoid(1.702 x)) of f16(x), ggml's table;
     *  - an OpenCLIP text_projection (stored [hidden, proj]) is used the way sd.cpp loads it, as
     *    a Linear weight: pooled' = text_projection @ pooled, the transpose of OpenCLIP's
     *    pooled @ text_projection (only when square, as for bigG; sd.cpp cannot run others).
     *    HF-layout text_projection.weight is a Linear in both modes.
     * false: transformers / OpenCLIP semantics (erf gelu, float activations). */
    bool sdcpp_numerics;
    /* [true] multiply pooled by text_projection when the weights have one. sd.cpp applies it
     * only for bigG; its ViT-L (SD3 / Flux clip_l pooled) is "identity projection". */
    bool use_projection;
    int eos_id;       /* [vocab - 1 = 49407] pooled is taken at the first id == eos_id, else n-1 */
    sdc_clip_act act; /* [AUTO] */
} sdc_clip_text_options;

typedef struct sdc_clip_text sdc_clip_text;

/* True if a CLIP text model (either layout) is under prefix. */
bool sdc_clip_text_detect(const sdc_weight_source *ws, const char *prefix);
/* prefix: where the model's own keys start, e.g. "cond_stage_model.transformer." (HF: then
 * "text_model.…"), "cond_stage_model.model." or "conditioner.embedders.1.model." (OpenCLIP:
 * "token_embedding.weight", "positional_embedding", "transformer.resblocks.N.…", "ln_final.…",
 * "text_projection"), "conditioner.embedders.0.transformer.", "text_encoders.clip_l.transformer.".
 * Weights of any type the matmul takes are used in place; norms, biases and the position
 * embedding get F32 copies. */
sdc_status sdc_clip_text_load(const sdc_weight_source *ws, const char *prefix, sdc_clip_text **out);
void sdc_clip_text_free(sdc_clip_text *m);
const sdc_clip_text_config *sdc_clip_text_get_config(const sdc_clip_text *m);
const sdc_clip_text_options *sdc_clip_text_get_options(const sdc_clip_text *m);
/* Replaces the options (act also updates config.quick_gelu). */
sdc_status sdc_clip_text_set_options(sdc_clip_text *m, const sdc_clip_text_options *opt);
/* Width of the pooled output: proj_dim when projecting, else hidden. */
int sdc_clip_text_pooled_dim(const sdc_clip_text *m);

/* One chunk of n (<= n_pos, normally 77) token ids, causal attention. ids >= vocab index
 * extra_embd rows ([n_extra][hidden], textual-inversion vectors; NULL/0 if none).
 * hidden (NULL = not wanted): [n][hidden] = output of layer (n_layers - layer_skip + 1)
 * (layer_skip 1 = last layer, 2 = penultimate, as sd.cpp's clip_skip; 1 <= layer_skip <=
 * n_layers), with the final layer norm applied iff final_ln.
 * pooled (NULL = not wanted): [proj_dim or hidden] = final-layer-norm state of the LAST layer at
 * the first eos_id position (sd.cpp's max_token_idx: std::find of EOS, else n-1; equals HF's
 * argmax for CLIP ids), times text_projection when there is one (see options). */
sdc_status sdc_clip_text_encode(sdc_clip_text *m, sdc_backend *be, const int32_t *ids, int n,
                                int layer_skip, bool final_ln, const float *extra_embd, int n_extra,
                                float *hidden, float *pooled, sdc_eval_fn cb, void *cb_user);

#endif
