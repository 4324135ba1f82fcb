/* Qwen2.5-VL vision tower (Qwen-Image-Edit's reference-image encoder; transformers'
 * Qwen2_5_VisionTransformerPretrainedModel semantics, as sd.cpp's llm.hpp runs it for one
 * image): patch embedding (a Conv3d of kernel = stride [2, 14, 14] over the image duplicated to
 * two frames), pre-norm blocks (RMSNorm, attention with a fused qkv and 2-D rotary positions,
 * SwiGLU MLP with biases) where most blocks attend within windows of window_size pixels and the
 * `full_attn` ones over the whole image, then the patch merger (RMSNorm, 2x2 neighbouring
 * patches concatenated, Linear + GELU + Linear to the LLM width). Output: one row per 2x2
 * merged patch in row-major order over the (H/28) x (W/28) grid, which replace the
 * <|image_pad|> embeddings of the LLM input.
 * Configuration from the weights (hidden from the Conv3d, layers by count, MLP width from
 * gate_proj, output width from merger.mlp.2, patch sizes from the Conv3d) except what the
 * weights do not hold: head_dim (80 in every Qwen2.5-VL), window_size (112) and the full
 * attention layers (7, 15, 23, 31), whose defaults the loader takes when given 0.
 * Names under the caller's prefix: ComfyUI / original HF `visual.patch_embed.proj.weight`,
 * `visual.blocks.N.attn.qkv.weight` ..., `visual.merger.mlp.0.weight`; for transformers >=
 * 4.52 checkpoints pass prefix "model.". */
#ifndef SDC_MODELS_QWEN25VL_VISION_H
#define SDC_MODELS_QWEN25VL_VISION_H

#include <stdint.h>

#include "core/backend.h"
#include "models/qwen25vl_llm.h"
#include "models/weights.h"
#include "text/qwen2_tokenizer.h"

typedef struct sdc_qwen25vl_vision_config {
    int n_layers, hidden, n_heads, head_dim, mlp, out_hidden;
    int patch, temporal_patch, merge, window; /* 14, 2, 2, 112 (pixels) */
    uint64_t full_attn;                       /* bit l: layer l attends over the whole image */
    float rope_theta, rms_eps;                /* 1e4, 1e-6 */
} sdc_qwen25vl_vision_config;

typedef struct sdc_qwen25vl_vision sdc_qwen25vl_vision;

/* True if the weights under `prefix` hold a Qwen2.5-VL vision tower (visual.*). */
bool sdc_qwen25vl_vision_detect(const sdc_weight_source *ws, const char *prefix);
/* head_dim, window (pixels), full_attn (layer bit mask): 0 for the real models' 80, 112 and
 * layers 7, 15, 23, 31; reduced test models pass theirs. */
sdc_status sdc_qwen25vl_vision_load(const sdc_weight_source *ws, const char *prefix, int head_dim,
                                    int window, uint64_t full_attn, sdc_qwen25vl_vision **out);
void sdc_qwen25vl_vision_free(sdc_qwen25vl_vision *m);
const sdc_qwen25vl_vision_config *sdc_qwen25vl_vision_get_config(const sdc_qwen25vl_vision *m);
/* sd.cpp's numerics: every matmul input rounded to an F16/BF16 weight's type, as ggml's
 * CPU backend does (the patch embedding's im2col too). Off: plain float math. */
void sdc_qwen25vl_vision_set_sdcpp_numerics(sdc_qwen25vl_vision *m, bool on);

/* Number of merged patches (= image pad tokens) of a w x h image: (w/28) * (h/28). */
int sdc_qwen25vl_vision_tokens(const sdc_qwen25vl_vision *m, int w, int h);

/* Encodes one preprocessed image: img [3][h][w] planar (CLIP-normalised,
 * sdc_qwen25vl_vision_preprocess), w and h multiples of patch * merge (28).
 * out: [tokens][out_hidden], the merged patches in row-major grid order. */
sdc_status sdc_qwen25vl_vision_encode(sdc_qwen25vl_vision *m, sdc_backend *be, const float *img,
                                      int w, int h, float *out, sdc_eval_fn cb, void *cb_user);

/* How min and max bound a reference image for the tower (sd.cpp's vlm_resize_mode). */
typedef enum sdc_qwen25vl_resize {
    SDC_QWEN25VL_RESIZE_NONE = 0,     /* sides rounded to multiples of factor only */
    SDC_QWEN25VL_RESIZE_LONGEST_SIDE, /* min/max bound the longest side */
    SDC_QWEN25VL_RESIZE_AREA,         /* min/max bound the area (Qwen-Image-Edit's) */
} sdc_qwen25vl_resize;

/* sd.cpp's size rule for Qwen-Image-Edit reference images: round w and h to multiples of
 * factor (28); AREA: if the area exceeds max scale down by sqrt(w*h/max) flooring to
 * multiples, or if below min scale up by sqrt(min/(w*h)) with ceiling (min == max: scale
 * to that area, rounding); LONGEST_SIDE: the same with the longest side and max/side,
 * min/side; NONE: the rounding only. Defaults (<= 0): min 384, max 560 (squared in AREA). */
void sdc_qwen25vl_vision_resize_dims(int w, int h, int factor, int min, int max,
                                     sdc_qwen25vl_resize mode, int *w_out, int *h_out);

/* sd.cpp's clip_preprocess: rgb [h][w][3] floats in [0,1] scaled by the larger of tw/w and
 * th/h (nearest: source x = floor(x * w / rw), as sd.cpp's default interpolate), centre-cropped to
 * tw x th, clamped to [0,1] and normalised with CLIP's mean and std. out [3][th][tw] planar. */
sdc_status sdc_qwen25vl_vision_preprocess(const float *rgb, int w, int h, int tw, int th,
                                          float *out);

/* ---- Qwen-Image-Edit conditioning (sd.cpp's QwenImageEditPlusPipeline, as diffusers'
 * QwenImageEditPlusPipeline for Edit 2509 / 2511) ----
 * PREFIX + for each image i "Picture i: <|vision_start|>" + one <|image_pad|> per merged
 * patch + "<|vision_end|>", then the prompt and SUFFIX; the image pads' embeddings are
 * replaced by the vision tower's rows (positions stay sequential, as sd.cpp), and the first
 * 64 states are dropped (sd.cpp and diffusers drop a fixed 64). labels false: the original
 * Qwen-Image-Edit template of diffusers' QwenImageEditPipeline (no "Picture i: "). */
#define SDC_QWEN_IMAGE_EDIT_PROMPT_PREFIX                                                          \
    "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, "       \
    "texture, objects, background), then explain how the user's text instruction should alter "    \
    "or modify the image. Generate a new image that meets the user's requirements while "          \
    "maintaining consistency with the original input where appropriate.<|im_end|>\n"               \
    "<|im_start|>user\n"
#define SDC_QWEN_IMAGE_EDIT_DROP_TOKENS 64

/* Token ids of the Edit template for n_images images of n_pads[i] merged patches each;
 * pad_at[i] (n_images entries) gets the row of image i's first pad. *ids malloc'd. */
sdc_status sdc_qwen_image_edit_prompt_tokens(const sdc_qwen2_tokenizer *tok, const char *prompt,
                                             int n_images, const int *n_pads, bool labels,
                                             int32_t **ids, int *n, int *n_drop, int *pad_at);

/* The Edit conditioning: the template above with image i's embeddings embeds[i]
 * ([n_pads[i]][llm hidden], from sdc_qwen25vl_vision_encode) in place of its pads, the last
 * hidden states without the first 64. *out malloc'd [*n_ctx][hidden]. */
sdc_status sdc_qwen_image_edit_encode_prompt(sdc_qwen25vl_llm *m, sdc_backend *be,
                                             const sdc_qwen2_tokenizer *tok, const char *prompt,
                                             int n_images, const float *const *embeds,
                                             const int *n_pads, bool labels, float **out,
                                             int *n_ctx, sdc_eval_fn cb, void *cb_user);

#endif
