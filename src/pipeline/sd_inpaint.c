/* Inpainting inputs as sd.cpp builds them (see sd_inpaint.h). */
#include "pipeline/sd_inpaint.h"

#include <stdlib.h>
#include <string.h>

/* stb_image's RGB -> gray ((77 r + 150 g + 29 b) >> 8), which sd-cli's 1-channel load uses */
static int gray(const sdc_image *m, size_t px) {
    const uint8_t *p = m->data + px * m->channels;
    if (m->channels < 3) return p[0];
    return (p[0] * 77 + p[1] * 150 + p[2] * 29) >> 8;
}

void sdc_inpaint_latent_mask(const sdc_image *m, int ds, int w, int h, float *out) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float v = m ? 0.0f : 1.0f;
            for (int dy = 0; m && dy < ds && v == 0.0f; dy++)
                for (int dx = 0; dx < ds; dx++)
                    if (gray(m, (size_t)(y * ds + dy) * m->width + (size_t)(x * ds + dx)) >= 128) {
                        v = 1.0f;
                        break;
                    }
            out[(size_t)y * w + x] = v;
        }
}

void sdc_inpaint_dilate(const float *m, int w, int h, float *out) {
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            float v = m[(size_t)y * w + x];
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int yy = y + dy, xx = x + dx;
                    if (yy < 0 || yy >= h || xx < 0 || xx >= w) continue;
                    float u = m[(size_t)yy * w + xx];
                    v = u > v ? u : v;
                }
            out[(size_t)y * w + x] = v;
        }
}

sdc_status sdc_inpaint_keep(const sdc_context *ctx, const sdc_image *mask,
                            const sdc_latent_shape *sh, float **keep) {
    size_t plane = (size_t)sh->width * sh->height;
    float *m = malloc(plane * sizeof(float)), *k = malloc(plane * sizeof(float));
    *keep = NULL;
    if (!m || !k) {
        free(m), free(k);
        return sdc_fail(SDC_ERR_NO_MEMORY, "inpainting mask: out of memory");
    }
    sdc_inpaint_latent_mask(mask, ctx->m.first_stage.downscale, sh->width, sh->height, m);
    if (ctx->m.diffusion.set_concat) /* sd.cpp widens the sampled area for inpainting UNets */
        sdc_inpaint_dilate(m, sh->width, sh->height, k);
    else
        memcpy(k, m, plane * sizeof(float));
    bool any = false;
    for (size_t i = 0; i < plane; i++) {
        k[i] = 1.0f - k[i];
        any |= k[i] > 0.0f;
    }
    free(m);
    if (any)
        *keep = k;
    else
        free(k);
    return SDC_OK;
}

/* The init image with the mask's white pixels set to gray, planar [3][H][W] in [-1, 1]
 * (no mask: every pixel gray). */
static void masked_pixels(const sdc_image *img, const sdc_image *mask, float *x) {
    size_t plane = (size_t)img->width * img->height;
    for (size_t i = 0; i < plane; i++) {
        bool white = !mask || gray(mask, i) >= 128; /* no mask: all white, as sd-cli's default */
        for (uint32_t c = 0; c < 3; c++) {
            uint8_t v = img->data[i * img->channels + (img->channels >= 3 ? c : 0)];
            x[c * plane + i] = white ? 0.0f : (float)v / 127.5f - 1.0f;
        }
    }
}

/* The masked image's latent; noise: the rng's second draw of the latent's size. */
static sdc_status encode_masked(sdc_context *ctx, const sdc_image *init, const sdc_image *mask,
                                const sdc_latent_shape *sh, sdc_rng_type rng_type, uint64_t seed,
                                float *latent) {
    size_t n = (size_t)sh->n, npx = (size_t)3 * init->width * init->height;
    float *noise = malloc(n * sizeof(float)), *px = malloc(npx * sizeof(float));
    sdc_rng *rng = NULL;
    sdc_status s = noise && px ? sdc_rng_create(rng_type, seed, &rng)
                               : sdc_fail(SDC_ERR_NO_MEMORY, "inpainting: out of memory");
    if (s == SDC_OK) s = sdc_rng_randn(rng, noise, sh->n); /* the init image's draw */
    if (s == SDC_OK) s = sdc_rng_randn(rng, noise, sh->n);
    sdc_rng_free(rng);
    if (s == SDC_OK) {
        masked_pixels(init, mask, px);
        const sdc_first_stage *fs = &ctx->m.first_stage;
        s = fs->encode(fs->self, &ctx->env_first_stage, px, (int)init->width, (int)init->height,
                       noise, latent);
    }
    if (s == SDC_OK && sdc_first_non_finite(latent, sh->n) >= 0)
        s = sdc_fail(SDC_ERR_FORMAT, "inpainting: the masked image's encoding is not finite");
    free(noise), free(px);
    return s;
}

sdc_status sdc_inpaint_set_concat(sdc_context *ctx, const sdc_image *init, const sdc_image *mask,
                                  const sdc_latent_shape *sh, sdc_rng_type rng_type,
                                  uint64_t seed) {
    const sdc_diffusion *dm = &ctx->m.diffusion;
    size_t plane = (size_t)sh->width * sh->height;
    if (dm->concat_channels != 1 + sh->channels)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: the model reads %d extra input channels; inpainting gives %d (mask "
                        "+ %d latent channels)",
                        sdc_model_family_name(ctx->family), dm->concat_channels, 1 + sh->channels,
                        sh->channels);
    float *concat = calloc((size_t)dm->concat_channels * plane, sizeof(float));
    if (!concat) return sdc_fail(SDC_ERR_NO_MEMORY, "inpainting: out of memory");
    /* sd.cpp's order: the mask, then the masked image's latent (zero without an init image) */
    sdc_inpaint_latent_mask(init ? mask : NULL, ctx->m.first_stage.downscale, sh->width, sh->height,
                            concat);
    sdc_status s = SDC_OK;
    if (init) s = encode_masked(ctx, init, mask, sh, rng_type, seed, concat + plane);
    if (s == SDC_OK) s = dm->set_concat(dm->self, concat, sh->width, sh->height);
    free(concat);
    return s;
}

void sdc_inpaint_join(const float *x, int x_channels, const float *concat, int n_concat, int B,
                      size_t plane, float *out) {
    for (int b = 0; b < B; b++) {
        float *o = out + (size_t)b * (x_channels + n_concat) * plane;
        memcpy(o, x + (size_t)b * x_channels * plane, (size_t)x_channels * plane * sizeof(float));
        memcpy(o + (size_t)x_channels * plane, concat, (size_t)n_concat * plane * sizeof(float));
    }
}
