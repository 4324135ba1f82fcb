/* First-stage work: init images in (img2img, inpainting masks) and the final latent out. */
#include <stdlib.h>
#include <string.h>

#include "pipeline/stages.h"

void sdc_stage_latent_shape(const sdc_context *ctx, int width, int height, sdc_latent_shape *out) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    out->channels = fs->channels;
    out->width = width / fs->downscale;
    out->height = height / fs->downscale;
    out->frames = 1;
    out->n = (int64_t)out->channels * out->width * out->height;
}

static int image_channels(const sdc_first_stage *fs) {
    return fs->image_channels > 0 ? fs->image_channels : 3;
}

/* u8 interleaved -> planar [C][H][W] in [-1, 1], C = 3 or 4. Gray is spread to RGB; a 4th
 * channel the image lacks is alpha 1 (sd.cpp's ensure_image_tensor_channels). */
void sdc_stage_image_to_planar(const sdc_image *img, int C, float *x) {
    size_t plane = (size_t)img->width * img->height;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < C; c++) {
            int src = c == 3 ? (img->channels == 4 ? 3 : -1) : (img->channels >= 3 ? c : 0);
            uint8_t v = src < 0 ? 255 : img->data[i * img->channels + (size_t)src];
            x[(size_t)c * plane + i] = (float)v / 127.5f - 1.0f;
        }
}

/* v = clamp((x + 1) / 2, 0, 1) -> u8, channel-planar [C][H][W] to interleaved */
static void to_u8(const float *x, int w, int h, int C, uint8_t *out) {
    size_t plane = (size_t)w * h;
    for (size_t i = 0; i < plane; i++)
        for (int c = 0; c < C; c++) {
            float v = (x[(size_t)c * plane + i] + 1.0f) * 0.5f;
            out[i * (size_t)C + (size_t)c] = v <= 0.0f   ? 0
                                             : v >= 1.0f ? 255
                                                         : (uint8_t)(v * 255.0f + 0.5f);
        }
}

sdc_status sdc_stage_encode_image(sdc_context *ctx, const sdc_image *img,
                                  const sdc_latent_shape *shape, const float *noise,
                                  float *latent) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    int C = image_channels(fs);
    float *pixels = malloc((size_t)C * img->width * img->height * sizeof(float));
    if (!pixels) return sdc_fail(SDC_ERR_NO_MEMORY, "init image: out of memory");
    sdc_stage_image_to_planar(img, C, pixels);
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
    int C = image_channels(fs);
    size_t n = (size_t)C * width * height;
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
        out->channels = (uint32_t)C;
        to_u8(pixels, width, height, C, out->data);
    }
    if (fs->end_phase) fs->end_phase(fs->self);
    sdc_context_end_phase(ctx, SDC_MODULE_VAE);
    free(pixels);
    return s;
}

sdc_status sdc_stage_decode_frames(sdc_context *ctx, const float *latent,
                                   const sdc_latent_shape *shape, int width, int height,
                                   sdc_image *out) {
    if (shape->frames <= 1) return sdc_stage_decode(ctx, latent, width, height, out);
    int64_t plane = (int64_t)shape->width * shape->height;
    float *z = malloc((size_t)(shape->channels * plane) * sizeof(float));
    if (!z) return sdc_fail(SDC_ERR_NO_MEMORY, "decode: out of memory");
    sdc_status s = SDC_OK;
    for (int f = 0; f < shape->frames && s == SDC_OK; f++) {
        if (atomic_load(&ctx->cancel)) {
            s = sdc_fail(SDC_ERR_CANCELLED, "generation cancelled");
            break;
        }
        for (int c = 0; c < shape->channels; c++) /* [C][F][h][w] -> frame f's [C][h][w] */
            memcpy(z + c * plane, latent + ((int64_t)c * shape->frames + f) * plane,
                   (size_t)plane * sizeof(float));
        s = sdc_stage_decode(ctx, z, width, height, &out[f]);
    }
    free(z);
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
    to_u8(x0, width, height, 3, out->data);
    return SDC_OK;
}
