/* MiniT2I: a pixel-space DiT (text preamble blocks, double-stream joint-attention blocks,
 * SwiGLU MLPs, bottleneck patch embedding; no VAE). Config detected from tensor shapes. */
#ifndef SDC_MODELS_MINIT2I_H
#define SDC_MODELS_MINIT2I_H

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_minit2i_config {
    int hidden, heads, head_dim;
    int n_double, n_preamble;
    int patch, in_channels, pca, mlp_hidden, txt_input;
    int prompt_len; /* text positions the DiT sees (256): pads are mask_token rows */
} sdc_minit2i_config;

typedef struct sdc_minit2i sdc_minit2i;

/* True if the weights under `prefix` look like a MiniT2I DiT. */
bool sdc_minit2i_detect(const sdc_weight_source *ws, const char *prefix);
sdc_status sdc_minit2i_load(const sdc_weight_source *ws, const char *prefix, sdc_minit2i **out);
void sdc_minit2i_free(sdc_minit2i *m);
const sdc_minit2i_config *sdc_minit2i_get_config(const sdc_minit2i *m);

/* Text side, computed once per prompt: ctx = T5 states for n_tokens real tokens
 * ([n_tokens][txt_input]); rows n_tokens..prompt_len-1 become mask_token. n_tokens = 0
 * gives the unconditional stream. out: [prompt_len][hidden]. */
sdc_status sdc_minit2i_encode_text(sdc_minit2i *m, sdc_backend *be, const float *ctx, int n_tokens,
                                   float *out, sdc_eval_fn cb, void *cb_user);

/* One denoiser evaluation for a batch of B states x ([B][C][H][W]) with the text
 * streams txt ([B][prompt_len][hidden], from encode_text): out = x0 prediction. The model
 * caches the position tables of the last grid, so one model serves one call at a time. */
sdc_status sdc_minit2i_forward(sdc_minit2i *m, sdc_backend *be, const float *x, int B, int width,
                               int height, const float *txt, float *out, sdc_eval_fn cb,
                               void *cb_user);

/* MiniT2I's schedule: sigma_i = 1 - i/steps (float), then 0; steps+1 values. The
 * scheduler flag does not apply (as in sd.cpp). */
void sdc_minit2i_sigmas(int steps, float *out);

/* Host tables (exposed for tests). pos: [n_tok][hidden] for a gw x gh grid.
 * rope: cos/sin [len][head_dim/2] (pairs (j, j + head_dim/2)). */
void sdc_minit2i_pos_embed(int gw, int gh, int hidden, float *out);
void sdc_minit2i_rope_text(int len, int head_dim, float *cos_out, float *sin_out);
void sdc_minit2i_rope_image(int gw, int gh, int head_dim, float *cos_out, float *sin_out);

#endif
