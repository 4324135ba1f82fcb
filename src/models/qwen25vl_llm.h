/* Qwen2.5-VL language model, text only (Qwen-Image's text encoder; transformers'
 * Qwen2_5_VLTextModel semantics): token embeddings, pre-norm decoder layers (RMSNorm, causal
 * grouped-query attention with q/k/v biases and rotary positions, SwiGLU MLP), final RMSNorm.
 * For text, Qwen2.5-VL's M-RoPE gives all three sections (temporal, height, width) the same
 * position, so it is plain NeoX rotary embedding (theta 1e6) over the whole head.
 * Configuration from the weights: hidden and vocabulary from the embedding, layers by count,
 * MLP width from gate_proj, heads from the q/k widths with head_dim 128 (every Qwen2.5-VL size;
 * sd.cpp assumes the same). Names accepted under the caller's prefix: ComfyUI / original HF
 * `model.embed_tokens.weight`, `model.layers.N.self_attn.q_proj.weight` ...; transformers >= 4.52
 * `model.language_model.*`; llama.cpp GGUF `token_embd.weight`, `blk.N.attn_q.weight` ...
 * (lm_head / output.weight and the vision tower are not needed). */
#ifndef SDC_MODELS_QWEN25VL_LLM_H
#define SDC_MODELS_QWEN25VL_LLM_H

#include "core/backend.h"
#include "models/weights.h"
#include "text/qwen2_tokenizer.h"

typedef struct sdc_qwen25vl_llm_config {
    int n_layers, hidden, n_heads, n_kv_heads, head_dim, mlp, vocab;
    float rope_theta, rms_eps; /* 1e6, 1e-6 */
    bool qkv_bias;
} sdc_qwen25vl_llm_config;

typedef struct sdc_qwen25vl_llm sdc_qwen25vl_llm;

/* True if the weights under `prefix` hold a Qwen2-style language model in one of the naming
 * schemes above. */
bool sdc_qwen25vl_llm_detect(const sdc_weight_source *ws, const char *prefix);
/* head_dim: 0 for 128 (the real models); reduced test models pass theirs. */
sdc_status sdc_qwen25vl_llm_load(const sdc_weight_source *ws, const char *prefix, int head_dim,
                                 sdc_qwen25vl_llm **out);
void sdc_qwen25vl_llm_free(sdc_qwen25vl_llm *m);
const sdc_qwen25vl_llm_config *sdc_qwen25vl_llm_get_config(const sdc_qwen25vl_llm *m);

/* sd.cpp numerics on (off by default): every matmul input is rounded to the weight's type when
 * that is F16 or BF16, as ggml's CPU matmul converts its F32 activations to the weight's
 * vec_dot type; for reproducing sd.cpp's outputs closely. Set before sharing the model. */
void sdc_qwen25vl_llm_set_sdcpp_numerics(sdc_qwen25vl_llm *m, bool on);

/* Runs n token ids (one sequence, positions 0..n-1, causal). out: rows first..n-1 of
 * [n][hidden] (earlier tokens still act as keys, from the cache below). n_layers 0: all layers and
 * the final norm (the last hidden state, which is transformers' hidden_states[-1] and what sd.cpp
 * and diffusers give Qwen-Image); 0 < n_layers < config.n_layers: the residual stream after that
 * many layers (hidden_states[n_layers]), for tests. */
sdc_status sdc_qwen25vl_llm_encode(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids, int n,
                                   int first, int n_layers, float *out, sdc_eval_fn cb,
                                   void *cb_user);

/* Rows [at, at + n) of the input that take `data` ([n][hidden] F32, e.g. vision embeddings in
 * place of <|image_pad|> tokens) instead of the token embeddings. */
typedef struct sdc_qwen25vl_llm_span {
    int at, n;
    const float *data;
} sdc_qwen25vl_llm_span;

/* sdc_qwen25vl_llm_encode with the input rows of n_spans sorted, disjoint spans replaced
 * (positions stay 0..n-1 for every row: sd.cpp's Qwen2.5-VL for Qwen-Image-Edit gives image
 * tokens sequential positions, not transformers' M-RoPE grid positions). With first > 0 the
 * spans must lie at or after `first` (the cached prefix is plain text). */
sdc_status sdc_qwen25vl_llm_encode_spans(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids,
                                         int n, int first, int n_layers,
                                         const sdc_qwen25vl_llm_span *spans, int n_spans,
                                         float *out, sdc_eval_fn cb, void *cb_user);

/* With first > 0 the rows before `first` only act as keys: their keys and values are
 * computed by a run of their own and cached in the model (the Qwen-Image template is the same
 * for every prompt, so it runs once; a call with other leading ids replaces the cache). The
 * model is therefore not to be shared between threads. This returns the number of cached
 * positions (0: none), for tests. */
int sdc_qwen25vl_llm_cached_prefix(const sdc_qwen25vl_llm *m);

/* Qwen-Image conditioning for one prompt: the template around it (qwen2_tokenizer.h), the
 * last hidden states with the 34 template tokens dropped, ready for the DiT's txt stream.
 * *out malloc'd [*n_ctx][hidden] (caller frees). An empty prompt gives the 5 suffix tokens'
 * states ("<|im_end|>\n<|im_start|>assistant\n"), the unconditional context of sd.cpp. */
sdc_status sdc_qwen_image_encode_prompt(sdc_qwen25vl_llm *m, sdc_backend *be,
                                        const sdc_qwen2_tokenizer *tok, const char *prompt,
                                        float **out, int *n_ctx, sdc_eval_fn cb, void *cb_user);

#endif
