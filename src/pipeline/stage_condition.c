/* Conditioning stage: prompt and unconditional branch through the family's conditioner. */
#include <math.h>

#include "core/log.h"
#include "pipeline/stages.h"

int64_t sdc_first_non_finite(const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return i;
    return -1;
}

static sdc_status check_cond(const sdc_cond *c, const char *which) {
    int64_t bad = sdc_first_non_finite(c->ctx, (int64_t)c->n_ctx * c->ctx_dim);
    if (bad < 0 && c->pooled) bad = sdc_first_non_finite(c->pooled, c->n_pooled);
    if (bad >= 0)
        return sdc_fail(SDC_ERR_FORMAT,
                        "conditioning: the text encoder's output for the %s has a non-finite "
                        "value (row %lld): the text encoder weights are broken",
                        which, (long long)(bad / (c->ctx_dim > 0 ? c->ctx_dim : 1)));
    return SDC_OK;
}

/* The diffusion model's per-prompt work on one cond (none: nothing to do). */
static sdc_status prepare_one(sdc_context *ctx, sdc_cond *c, const char *which) {
    const sdc_diffusion *dm = &ctx->m.diffusion;
    sdc_status s = dm->prepare_cond(dm->self, &ctx->env_diffusion, c);
    return s == SDC_OK ? check_cond(c, which) : s;
}

sdc_status sdc_stage_condition(sdc_context *ctx, const sdc_generate_params *p,
                               const sdc_ref_image_opts *ref_opts, bool need_uncond, sdc_cond *cond,
                               sdc_cond *uncond, sdc_cond *img_uncond) {
    const sdc_conditioner *c = &ctx->m.cond;
    sdc_cond_args a = {.prompt = p->prompt ? p->prompt : "",
                       .clip_skip = p->clip_skip,
                       .width = p->width,
                       .height = p->height,
                       .ref_images = p->ref_images,
                       .n_ref_images = p->ref_images ? p->n_ref_images : 0,
                       .ref_opts = ref_opts};
    sdc_status s = c->encode(c->self, &ctx->env_cond, &a, cond);
    if (s == SDC_OK && cond->n_dropped > 0)
        SDC_LOGW("the prompt is longer than the model reads: %d tokens dropped (kept %d)",
                 cond->n_dropped, cond->n_tokens);
    if (s == SDC_OK) s = check_cond(cond, "prompt");
    if (s == SDC_OK && need_uncond) {
        a.prompt = p->negative_prompt ? p->negative_prompt : "";
        a.uncond = true;
        s = c->encode(c->self, &ctx->env_cond, &a, uncond);
        if (s == SDC_OK) s = check_cond(uncond, "unconditional branch");
    }
    if (s == SDC_OK && img_uncond) { /* the same negative prompt, no images */
        a.prompt = p->negative_prompt ? p->negative_prompt : "";
        a.uncond = true;
        a.ref_images = NULL;
        a.n_ref_images = 0;
        s = c->encode(c->self, &ctx->env_cond, &a, img_uncond);
        img_uncond->image_uncond = true;
        if (s == SDC_OK) s = check_cond(img_uncond, "image-unconditional branch");
    }
    if (c->end_phase) c->end_phase(c->self);
    sdc_context_end_phase(ctx, SDC_MODULE_TE);
    /* per-prompt work of the diffusion model (on its device), once per prompt */
    const sdc_diffusion *dm = &ctx->m.diffusion;
    if (s == SDC_OK && dm->prepare_cond) {
        s = prepare_one(ctx, cond, "prompt (diffusion model's text stream)");
        if (s == SDC_OK && need_uncond)
            s = prepare_one(ctx, uncond, "unconditional branch (diffusion model's text stream)");
        if (s == SDC_OK && img_uncond)
            s = prepare_one(ctx, img_uncond,
                            "image-unconditional branch (diffusion model's text "
                            "stream)");
    }
    return s;
}
