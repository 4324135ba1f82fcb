/* Family loaders by family id, and the pieces families share. */
#include "pipeline/family.h"

#include <stdlib.h>
#include <string.h>

void sdc_cond_free(sdc_cond *c) {
    if (!c) return;
    free(c->ctx);
    free(c->pooled);
    memset(c, 0, sizeof *c);
}

sdc_family_load_fn sdc_family_loader(sdc_model_family f) {
    switch (f) {
    case SDC_FAMILY_MINIT2I:
        return sdc_family_load_minit2i;
    case SDC_FAMILY_SD1:
        return sdc_family_load_sd1;
    case SDC_FAMILY_SD2:
        return sdc_family_load_sd2;
    case SDC_FAMILY_SDXL:
        return sdc_family_load_sdxl;
    case SDC_FAMILY_QWEN_IMAGE:
        return sdc_family_load_qwen_image;
    default:
        return NULL;
    }
}

static sdc_status identity_copy(const float *src, int width, int height, float *dst) {
    memcpy(dst, src, (size_t)3 * width * height * sizeof(float));
    return SDC_OK;
}

static sdc_status identity_encode(void *self, const sdc_stage_env *env, const float *pixels,
                                  int width, int height, const float *noise, float *latent) {
    (void)self, (void)env, (void)noise;
    return identity_copy(pixels, width, height, latent);
}

static sdc_status identity_decode(void *self, const sdc_stage_env *env, const float *latent,
                                  int width, int height, float *pixels) {
    (void)self, (void)env;
    return identity_copy(latent, width, height, pixels);
}

void sdc_first_stage_identity(sdc_first_stage *fs) {
    memset(fs, 0, sizeof *fs);
    fs->channels = 3;
    fs->downscale = 1;
    fs->encode = identity_encode;
    fs->decode = identity_decode;
}
