/* First-stage work: init images in (img2img, inpainting masks) and the final latent out. */
#include <stdlib.h>

#include "pipeline/stages.h"

void sdc_stage_latent_shape(const sdc_context *ctx, int width, int height, sdc_latent_shape *out) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    out->channels = fs->channels;
    out->width = width / fs->downscale;
    out->height = height / fs->downscale;
    out->n = (int64_t)out->channels * out->width * out->height;
}

/* RGB u8 interleaved -> planar [-1, 1] */
static void from_rgb(const sdc_image *img, float *x) {
    size_t plane = (size_t)img->width * img->height;
    for (size_t i = 0; i < plane; i++)
        for (uint32_t c = 0; c < 3; c++) {
            uint8_t v = img->data[i * img->channels + (img->channels >= 3 ? c : 0)];
            x[c * plane + i] = (float)v / 127.5f - 1.0f;
        }
}

/* v = clamp((x + 1) / 2, 0, 1) -> u8, channel-planar [3][H][W] to interleaved RGB */
static void to_rgb(const float *x, int w, int h, uint8_t *rgb) {
    size_t plane = (size_t)w * h;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < 3; c++) {
            float v = (x[c * plane + i] + 1.0f) * 0.5f;
            rgb[i * 3 + c] = v <= 0.0f ? 0 : v >= 1.0f ? 255 : (uint8_t)(v * 255.0f + 0.5f);
        }
}

sdc_status sdc_stage_encode_image(sdc_context *ctx, const sdc_image *img,
                                  const sdc_latent_shape *shape, const float *noise,
                                  float *latent) {
    float *pixels = malloc((size_t)3 * img->width * img->height * sizeof(float));
    if (!pixels) return sdc_fail(SDC_ERR_NO_MEMORY, "init image: out of memory");
    from_rgb(img, pixels);
    const sdc_first_stage *fs = &ctx->m.first_stage;
    sdc_status s = fs->encode(fs->self, &ctx->env_first_stage, pixels, (int)img->width,
                              (int)img->height, noise, latent);
    free(pixels);
    if (fs->end_phase) fs->end_phase(fs->self);
    sdc_context_end_phase(ctx, SDC_MODULE_VAE); /* the encoder's pages are not needed in sampling */
    if (s == SDC_OK && sdc_first_non_finite(latent, shape->n) >= 0)
        s = sdc_fail(SDC_ERR_FORMAT, "init image: the first stage's encoding is not finite");
    return s;
}

void sdc_stage_mask_to_keep(const sdc_image *m, int ds, const sdc_latent_shape *shape,
                            float *keep) {
    for (int y = 0; y < shape->height; y++)
        for (int x = 0; x < shape->width; x++) {
            float sum = 0.0f;
            for (int dy = 0; dy < ds; dy++)
                for (int dx = 0; dx < ds; dx++) {
                    size_t px = ((size_t)(y * ds + dy) * m->width + (size_t)(x * ds + dx));
                    sum += (float)m->data[px * m->channels] / 255.0f;
                }
            keep[(size_t)y * shape->width + x] = 1.0f - sum / (float)(ds * ds);
        }
}

sdc_status sdc_stage_decode(sdc_context *ctx, const float *latent, int width, int height,
                            sdc_image *out) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    size_t n = (size_t)3 * width * height;
    float *pixels = malloc(n * sizeof(float));
    out->data = malloc(n);
    if (!pixels || !out->data) {
        free(pixels);
        return sdc_fail(SDC_ERR_NO_MEMORY, "decode: out of memory");
    }
    /* the diffusion model's pages make way for the decoder's activations (the next
     * sampling phase reads them back from the page cache) */
    sdc_context_end_phase(ctx, SDC_MODULE_DIFFUSION);
    sdc_status s = fs->decode(fs->self, &ctx->env_first_stage, latent, width, height, pixels);
    int64_t bad = s == SDC_OK ? sdc_first_non_finite(pixels, (int64_t)n) : -1;
    if (bad >= 0)
        s = sdc_fail(SDC_ERR_FORMAT,
                     "decode: the decoded image has a non-finite value at pixel (%lld, %lld)",
                     (long long)(bad % ((int64_t)width * height) % width),
                     (long long)(bad % ((int64_t)width * height) / width));
    if (s == SDC_OK) {
        out->width = (uint32_t)width;
        out->height = (uint32_t)height;
        out->channels = 3;
        to_rgb(pixels, width, height, out->data);
    }
    if (fs->end_phase) fs->end_phase(fs->self);
    sdc_context_end_phase(ctx, SDC_MODULE_VAE);
    free(pixels);
    return s;
}

sdc_status sdc_stage_preview(sdc_context *ctx, const float *x0, int width, int height,
                             sdc_image *out) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    if (fs->preview) return fs->preview(fs->self, &ctx->env_first_stage, x0, width, height, out);
    if (fs->downscale != 1 || fs->channels != 3)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "preview: no preview projection for this model");
    out->data = malloc((size_t)3 * width * height);
    if (!out->data) return sdc_fail(SDC_ERR_NO_MEMORY, "preview: out of memory");
    out->width = (uint32_t)width;
    out->height = (uint32_t)height;
    out->channels = 3;
    to_rgb(x0, width, height, out->data);
    return SDC_OK;
}
