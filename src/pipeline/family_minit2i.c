/* MiniT2I in the pipeline's roles: the conditioner is T5 + the DiT's text preamble, the
 * diffusion model is the DiT (it predicts x0 and ignores the timestep), and the first
 * stage is the identity (pixel space). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "io/model_loader.h"
#include "models/minit2i.h"
#include "models/t5.h"
#include "pipeline/family.h"
#include "pipeline/tokenizer_source.h"
#include "text/tokenizer.h"

#define PREFIX_DIT "model.diffusion_model."
#define PREFIX_T5  "text_encoders.t5xxl.transformer."

typedef struct minit2i_family {
    sdc_minit2i *dit;
    sdc_t5 *t5;
    sdc_tokenizer *tokenizer;
    sdc_loader *weights;
    int t5_file;
    sdc_weight_source ws;
    float *txt;              /* [2][prompt_len][hidden]: the batch's text streams, contiguous */
    const float *txt_src[2]; /* which conds txt holds now */
} minit2i_family;

static sdc_tensor *find_weight(void *user, const char *name) {
    return sdc_loader_find((sdc_loader *)user, name);
}

static void family_free(void *state) {
    minit2i_family *f = state;
    if (!f) return;
    sdc_minit2i_free(f->dit);
    sdc_t5_free(f->t5);
    sdc_tokenizer_free(f->tokenizer);
    free(f->txt);
    free(f);
}

/* prompt -> T5 states of its real tokens ([n_tokens][d_model]); uncond: no tokens at
 * all (the DiT's text preamble turns both into its text stream, prepare_text). */
static sdc_status cond_encode(void *self, const sdc_stage_env *env, const sdc_cond_args *a,
                              sdc_cond *out) {
    minit2i_family *f = self;
    const char *prompt = a->prompt;
    bool uncond = a->uncond;
    const sdc_minit2i_config *mc = sdc_minit2i_get_config(f->dit);
    const sdc_t5_config *tc = sdc_t5_get_config(f->t5);
    int L = mc->prompt_len;
    f->txt_src[0] = f->txt_src[1] = NULL; /* a new generation: the batch cache is stale */
    memset(out, 0, sizeof *out);
    out->ctx_dim = tc->d_model;
    if (uncond) {
        if (prompt && *prompt)
            SDC_LOGW("MiniT2I ignores the negative prompt: its unconditional branch is the "
                     "model's mask token");
        return SDC_OK;
    }
    int32_t *ids = malloc((size_t)L * sizeof(int32_t));
    out->ctx = malloc((size_t)L * tc->d_model * sizeof(float));
    if (!ids || !out->ctx) {
        free(ids);
        return sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
    }
    int32_t n_real = 0, n_dropped = 0;
    sdc_status s = sdc_tokenizer_encode_t5_ex(f->tokenizer, prompt ? prompt : "", L, ids, NULL,
                                              &n_real, &n_dropped);
    if (s == SDC_OK)
        s = sdc_t5_encode(f->t5, env->backend, ids, n_real, out->ctx, env->eval_cb, env->eval_user);
    out->n_ctx = out->n_tokens = n_real;
    out->n_dropped = n_dropped;
    free(ids);
    return s;
}

/* T5 states -> the DiT's text stream [prompt_len][hidden] (pads become mask_token), once
 * per prompt on the diffusion model's device. */
static sdc_status prepare_text(void *self, const sdc_stage_env *env, sdc_cond *c) {
    minit2i_family *f = self;
    const sdc_minit2i_config *mc = sdc_minit2i_get_config(f->dit);
    float *txt = malloc((size_t)mc->prompt_len * mc->hidden * sizeof(float));
    if (!txt) return sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
    sdc_status s = sdc_minit2i_encode_text(f->dit, env->backend, c->n_ctx ? c->ctx : NULL, c->n_ctx,
                                           txt, env->eval_cb, env->eval_user);
    if (s != SDC_OK) {
        free(txt);
        return s;
    }
    free(c->ctx);
    c->ctx = txt;
    c->n_ctx = mc->prompt_len;
    c->ctx_dim = mc->hidden;
    return SDC_OK;
}

static sdc_status dit_forward(void *self, const sdc_stage_env *env, const float *x, int B,
                              int width, int height, float timestep, const sdc_cond *const *conds,
                              float *out) {
    minit2i_family *f = self;
    (void)timestep; /* MiniT2I ignores it */
    const sdc_minit2i_config *mc = sdc_minit2i_get_config(f->dit);
    size_t rows = (size_t)mc->prompt_len * mc->hidden;
    if (B < 1 || B > 2) return sdc_fail(SDC_ERR_INTERNAL, "minit2i: batch of %d", B);
    for (int b = 0; b < B; b++) {
        if (conds[b]->n_ctx != mc->prompt_len || conds[b]->ctx_dim != mc->hidden)
            return sdc_fail(SDC_ERR_INTERNAL, "minit2i: conditioning is %dx%d, expected %dx%d",
                            conds[b]->n_ctx, conds[b]->ctx_dim, mc->prompt_len, mc->hidden);
        if (f->txt_src[b] != conds[b]->ctx) {
            memcpy(f->txt + b * rows, conds[b]->ctx, rows * sizeof(float));
            f->txt_src[b] = conds[b]->ctx;
        }
    }
    return sdc_minit2i_forward(f->dit, env->backend, x, B, width, height, f->txt, out, env->eval_cb,
                               env->eval_user);
}

sdc_status sdc_family_load_minit2i(const sdc_family_load_args *a, sdc_family_modules *out) {
    const sdc_context_params *p = a->params;
    memset(out, 0, sizeof *out);
    minit2i_family *f = calloc(1, sizeof *f);
    if (!f) return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    f->weights = a->weights;
    f->t5_file = a->t5_file;
    f->ws.find = find_weight;
    f->ws.user = a->weights;
    sdc_status s = sdc_minit2i_load(&f->ws, PREFIX_DIT, &f->dit);
    if (s == SDC_OK && !p->t5xxl_path && !p->model_path)
        s = sdc_fail(SDC_ERR_INVALID_ARG, "MiniT2I needs its T5 text encoder: pass --t5xxl");
    if (s == SDC_OK) s = sdc_t5_load(&f->ws, PREFIX_T5, &f->t5);
    if (s == SDC_OK) {
        const char *near = p->t5xxl_path ? p->t5xxl_path : p->model_path;
        s = sdc_load_t5_tokenizer(a->weights, near, p->t5_tokenizer_path, &f->tokenizer);
    }
    const sdc_minit2i_config *c = s == SDC_OK ? sdc_minit2i_get_config(f->dit) : NULL;
    const sdc_t5_config *tc = s == SDC_OK ? sdc_t5_get_config(f->t5) : NULL;
    if (s == SDC_OK && tc->d_model != c->txt_input)
        s = sdc_fail(SDC_ERR_FORMAT, "text encoder width %d does not match the DiT's input %d",
                     tc->d_model, c->txt_input);
    if (s == SDC_OK) {
        f->txt = malloc((size_t)2 * c->prompt_len * c->hidden * sizeof(float));
        if (!f->txt) s = sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    }
    if (s != SDC_OK) {
        family_free(f);
        return s;
    }
    out->state = f;
    out->free_state = family_free;
    out->cond = (sdc_conditioner){.self = f, .encode = cond_encode};
    out->diffusion = (sdc_diffusion){.self = f,
                                     .prediction = SDC_PRED_MINIT2I_FLOW,
                                     .size_multiple = c->patch,
                                     .fixed_sigmas = sdc_minit2i_sigmas,
                                     .prepare_cond = prepare_text,
                                     .forward = dit_forward};
    sdc_first_stage_identity(&out->first_stage);
    snprintf(out->summary, sizeof out->summary,
             "minit2i: hidden %d, heads %d x %d, %d double blocks, %d text blocks, patch %d; "
             "t5: %d layers, d_model %d",
             c->hidden, c->heads, c->head_dim, c->n_double, c->n_preamble, c->patch, tc->n_layers,
             tc->d_model);
    return SDC_OK;
}
