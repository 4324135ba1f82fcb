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

char *sdc_params_text_format_models(const sdc_params_text_models *models,
                                    const sdc_generate_params *p, int64_t seed) {
    if (!p) return NULL;
    sdc_params_text_models none = {NULL, NULL, NULL, NULL, NULL};
    if (!models) models = &none;
    strbuf b = {NULL, 0, 0, false};

    sb_append(&b, "%s\n", p->prompt ? p->prompt : "");
    if (has_text(p->negative_prompt)) sb_append(&b, "Negative prompt: %s\n", p->negative_prompt);
    /* sd-cli prints floats with std::to_string, i.e. "%f" ("6.000000"); an eta that is not
     * set (NaN or infinite: the sampler's default) is "inf" there */
    double eta = isfinite(p->eta) ? (double)p->eta : INFINITY;
    sb_append(&b, "Steps: %d, CFG scale: %f, Eta: %f, ", p->steps, (double)p->cfg_scale, eta);
    sb_append(&b, "Seed: %lld, Size: %dx%d, ", (long long)seed, p->width, p->height);
    sb_append(&b, "Model: %s, ", models->model ? models->model : "");
    /* NULL rng means the default, which is sd-cli's "cuda" */
    sb_append(&b, "RNG: %s, ", has_text(p->rng) ? p->rng : "cuda");
    if (has_text(p->sampler_rng)) sb_append(&b, "Sampler RNG: %s, ", p->sampler_rng);
    /* sd-cli writes the resolved names; without a context a NULL sampler is left out */
    const char *sampler = has_text(models->sampler) ? models->sampler : p->sampling_method;
    const char *scheduler = has_text(models->scheduler) ? models->scheduler : p->scheduler;
    if (has_text(sampler)) {
        sb_append(&b, "Sampler: %s", sampler);
        if (has_text(scheduler)) sb_append(&b, " %s", scheduler);
        sb_append(&b, ", ");
    }
    if (has_text(models->t5xxl)) sb_append(&b, "TE: %s, ", models->t5xxl);
    if (has_text(models->diffusion_model)) sb_append(&b, "Unet: %s, ", models->diffusion_model);
    sb_append(&b, "Version: sdc %s", sdc_version());

    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

char *sdc_params_text_format(const char *model_name, const sdc_generate_params *p, int64_t seed) {
    sdc_params_text_models m = {model_name, NULL, NULL, NULL, NULL};
    return sdc_params_text_format_models(&m, p, seed);
}

char *sdc_generation_parameters_text(const sdc_context *ctx, const sdc_generate_params *p,
                                     int64_t seed) {
    sdc_params_text_models m = {NULL, NULL, NULL, NULL, NULL};
    if (ctx) {
        m.sampler = sdc_context_sampler_name(ctx, p);
        m.scheduler = sdc_context_scheduler_name(ctx, p);
        m.model = sdc_context_model_name(ctx);
        m.t5xxl = sdc_context_t5xxl_name(ctx);
        m.diffusion_model = sdc_context_diffusion_model_name(ctx);
    }
    return sdc_params_text_format_models(&m, p, seed);
}
