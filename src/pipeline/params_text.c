#include "pipeline/params_text.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "pipeline/context_info.h"

/* Growing string; `failed` sticks after the first allocation failure. */
typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} strbuf;

static void sb_append(strbuf *b, const char *fmt, ...) SDC_PRINTF(2, 3);
static void sb_append(strbuf *b, const char *fmt, ...) {
    if (b->failed) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = true;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        char *s = realloc(b->s, cap);
        if (!s) {
            b->failed = true;
            return;
        }
        b->s = s;
        b->cap = cap;
        va_start(ap, fmt);
        vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

static bool has_text(const char *s) {
    return s && *s;
}

/* "Sampler: x" with the scheduler, or sd-cli's "Custom Sigmas: [...]" instead of it. */
static void append_sampler(strbuf *b, const sdc_params_text_models *m,
                           const sdc_generate_params *p) {
    /* sd-cli writes the resolved names; without a context a NULL sampler is left out */
    const char *sampler = has_text(m->sampler) ? m->sampler : p->sampling_method;
    const char *scheduler = has_text(m->scheduler) ? m->scheduler : p->scheduler;
    if (!has_text(sampler)) return;
    sb_append(b, "Sampler: %s", sampler);
    if (p->sigmas && p->n_sigmas > 0) {
        sb_append(b, ", Custom Sigmas: [");
        for (int i = 0; i < p->n_sigmas; i++)
            sb_append(b, "%.4f%s", (double)p->sigmas[i], i + 1 < p->n_sigmas ? ", " : "");
        sb_append(b, "]");
    } else if (has_text(scheduler)) {
        sb_append(b, " %s", scheduler);
    }
    sb_append(b, ", ");
}

char *sdc_params_text_format_models(const sdc_params_text_models *models,
                                    const sdc_generate_params *p, int64_t seed) {
    if (!p) return NULL;
    sdc_params_text_models none;
    memset(&none, 0, sizeof none);
    const sdc_params_text_models *m = models ? models : &none;
    strbuf b = {NULL, 0, 0, false};

    sb_append(&b, "%s\n", p->prompt ? p->prompt : "");
    if (has_text(p->negative_prompt)) sb_append(&b, "Negative prompt: %s\n", p->negative_prompt);
    /* sd-cli prints floats with std::to_string, i.e. "%f" ("6.000000"); an eta that is not
     * set (NaN or infinite: the sampler's default) is "inf" there */
    sb_append(&b, "Steps: %d, CFG scale: %f, ", p->steps, (double)p->cfg_scale);
    /* sd-cli always writes it, its default 3.5 when not set */
    sb_append(&b, "Guidance: %f, ", isfinite(p->guidance) ? (double)p->guidance : 3.5);
    double eta = isfinite(p->eta) ? (double)p->eta : INFINITY;
    sb_append(&b, "Eta: %f, ", eta);
    sb_append(&b, "Seed: %lld, Size: %dx%d, ", (long long)seed, p->width, p->height);
    sb_append(&b, "Model: %s, ", m->model ? m->model : "");
    /* NULL rng means the default, which is sd-cli's "cuda" */
    sb_append(&b, "RNG: %s, ", has_text(p->rng) ? p->rng : "cuda");
    if (has_text(p->sampler_rng)) sb_append(&b, "Sampler RNG: %s, ", p->sampler_rng);
    append_sampler(&b, m, p);
    const char *te[5] = {m->clip_l, m->clip_g, m->t5xxl, m->llm, m->llm_vision};
    for (int i = 0; i < 5; i++)
        if (has_text(te[i])) sb_append(&b, "TE: %s, ", te[i]);
    if (has_text(m->diffusion_model)) sb_append(&b, "Unet: %s, ", m->diffusion_model);
    if (has_text(m->vae)) sb_append(&b, "VAE: %s, ", m->vae);
    if (p->clip_skip > 0) sb_append(&b, "Clip skip: %d, ", p->clip_skip);
    /* img2img: the share of the schedule run (A1111's name); inpainting: that a mask was used */
    if (p->init_image) sb_append(&b, "Denoising strength: %f, ", (double)p->strength);
    if (p->mask_image) sb_append(&b, "Mask: yes, ");
    if (has_text(m->weight_type)) sb_append(&b, "Weight type: %s, ", m->weight_type);
    if (m->has_flow_shift && isfinite(m->flow_shift))
        sb_append(&b, "Flow shift: %f, ", (double)m->flow_shift);
    sb_append(&b, "Version: sdc %s", sdc_version());

    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

char *sdc_params_text_format(const char *model_name, const sdc_generate_params *p, int64_t seed) {
    sdc_params_text_models m;
    memset(&m, 0, sizeof m);
    m.model = model_name;
    return sdc_params_text_format_models(&m, p, seed);
}

char *sdc_generation_parameters_text(const sdc_context *ctx, const sdc_generate_params *p,
                                     int64_t seed) {
    sdc_params_text_models m;
    memset(&m, 0, sizeof m);
    if (ctx) {
        m.sampler = sdc_context_sampler_name(ctx, p);
        m.scheduler = sdc_context_scheduler_name(ctx, p);
        m.model = sdc_context_model_name(ctx);
        m.t5xxl = sdc_context_t5xxl_name(ctx);
        m.diffusion_model = sdc_context_diffusion_model_name(ctx);
        int type = sdc_context_weight_type(ctx);
        for (int i = 0; type >= 0 && i < sdc_weight_type_count(); i++)
            if (sdc_weight_type_id(i) == type) m.weight_type = sdc_weight_type_name(i);
        m.flow_shift = isnan(p->flow_shift) ? sdc_context_flow_shift(ctx) : p->flow_shift;
        m.has_flow_shift = isfinite(m.flow_shift);
    }
    return sdc_params_text_format_models(&m, p, seed);
}
