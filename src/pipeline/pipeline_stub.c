/* Placeholder for the pipeline (written on another branch) so that the CLI links and
 * its error paths can be tested. The lead deletes this file when the pipeline lands. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "pipeline/context_info.h"

struct sdc_context {
    int unused;
};

void sdc_context_params_init(sdc_context_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->n_threads = -1;
    p->weight_type = -1;
}

sdc_status sdc_context_create(const sdc_context_params *p, sdc_context **out) {
    (void)p;
    if (out) *out = NULL;
    return sdc_fail(SDC_ERR_UNSUPPORTED, "no pipeline yet");
}

void sdc_context_free(sdc_context *ctx) {
    free(ctx);
}

void sdc_cancel(sdc_context *ctx) {
    (void)ctx;
}

/* sd-cli's defaults */
void sdc_generate_params_init(sdc_generate_params *p) {
    if (!p) return;
    memset(p, 0, sizeof *p);
    p->prompt = "";
    p->negative_prompt = "";
    p->width = 512;
    p->height = 512;
    p->steps = 20;
    p->cfg_scale = 7.0f;
    p->seed = 42;
    p->rng = "cuda";
    p->eta = INFINITY;
    p->batch_count = 1;
}

sdc_status sdc_generate_image(sdc_context *ctx, const sdc_generate_params *p, sdc_image **images,
                              int *count) {
    (void)ctx;
    (void)p;
    if (images) *images = NULL;
    if (count) *count = 0;
    return sdc_fail(SDC_ERR_UNSUPPORTED, "no pipeline yet");
}

void sdc_free_images(sdc_image *images, int count) {
    if (!images) return;
    for (int i = 0; i < count; i++) free(images[i].data);
    free(images);
}

const char *sdc_context_model_name(const sdc_context *ctx) {
    (void)ctx;
    return "";
}
const char *sdc_context_diffusion_model_name(const sdc_context *ctx) {
    (void)ctx;
    return "";
}
const char *sdc_context_t5xxl_name(const sdc_context *ctx) {
    (void)ctx;
    return "";
}
