/* Reference images (-r) for the models that read them as extra latents (Qwen-Image-Layered):
 * sd.cpp's automatic resize, then the first stage's mean latent of each, handed to the
 * diffusion model with the generation's frame count. */
#include <math.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/log.h"
#include "pipeline/stages.h"

/* sd.cpp's size for a w x h reference: the output's pixel count (at most max_pixels,
 * <= 0: 1024^2) with the reference's aspect, or the output's own size (to_target); sides
 * rounded to multiples of `mult`. The integer division inside the square root is
 * sd.cpp's (it decides 320x240 -> 288x224 at 256x256). */
static void ref_size(int w, int h, int width, int height, int mult, int max_pixels, bool to_target,
                     int *ow, int *oh) {
    int64_t area = (int64_t)width * height, cap = max_pixels > 0 ? max_pixels : 1024 * 1024;
    if (area > cap) area = cap;
    double vw = sqrt((double)(area * w / h));
    double vh = vw * h / w;
    if (to_target) vw = width, vh = height;
    *ow = (int)(round(vw / mult) * mult);
    *oh = (int)(round(vh / mult) * mult);
    if (*ow < mult) *ow = mult;
    if (*oh < mult) *oh = mult;
}

/* Nearest neighbour, source index dst * in / out (sd::ops::interpolate's default). */
static sdc_status resize_nearest(const sdc_image *in, int w, int h, sdc_image *out) {
    uint32_t C = in->channels;
    out->data = malloc((size_t)w * h * C);
    if (!out->data) return sdc_fail(SDC_ERR_NO_MEMORY, "reference image: out of memory");
    out->width = (uint32_t)w;
    out->height = (uint32_t)h;
    out->channels = C;
    for (int y = 0; y < h; y++) {
        size_t sy = (size_t)((int64_t)y * in->height / h);
        for (int x = 0; x < w; x++) {
            size_t sx = (size_t)((int64_t)x * in->width / w);
            const uint8_t *s = in->data + (sy * in->width + sx) * C;
            uint8_t *d = out->data + ((size_t)y * w + (size_t)x) * C;
            for (uint32_t c = 0; c < C; c++) d[c] = s[c];
        }
    }
    return SDC_OK;
}

/* Reference i: resized (unless opts say not), then encoded to *latent (malloc'd,
 * [channels][*lh][*lw]). */
static sdc_status encode_ref(sdc_context *ctx, const sdc_generate_params *p,
                             const sdc_ref_image_opts *opts, int i, float **latent, int *lw,
                             int *lh) {
    const sdc_first_stage *fs = &ctx->m.first_stage;
    const sdc_image *ref = &p->ref_images[i];
    if (!ref->data || ref->width == 0 || ref->height == 0 || ref->channels < 1 || ref->channels > 4)
        return sdc_fail(SDC_ERR_INVALID_ARG, "reference image %d: no pixel data or %u channels", i,
                        ref->channels);
    int w = (int)ref->width, h = (int)ref->height, mult = ctx->m.diffusion.ref_size_multiple;
    sdc_image sized = {0};
    sdc_status s = SDC_OK;
    if (!opts || opts->resize_before_vae) {
        ref_size(w, h, p->width, p->height, mult, opts ? opts->vae_input_max_pixels : 0,
                 opts && opts->resize_vae_to_target, &w, &h);
        SDC_LOGI("reference image %d: resized from %ux%u to %dx%d", i, ref->width, ref->height, w,
                 h);
        s = resize_nearest(ref, w, h, &sized);
    } else if (w % mult || h % mult) { /* the model reads whole latent patches */
        s = sdc_fail(SDC_ERR_INVALID_ARG,
                     "reference image %d: %dx%d with resize_before_vae off: sides must be "
                     "multiples of %d here",
                     i, w, h, mult);
    } else {
        SDC_LOGI("reference image %d: %dx%d, not resized (resize_before_vae off)", i, w, h);
        s = resize_nearest(ref, w, h, &sized);
    }
    if (s != SDC_OK) return s;
    int C = fs->image_channels > 0 ? fs->image_channels : 3;
    float *pixels = malloc((size_t)C * w * h * sizeof(float));
    *lw = w / fs->downscale;
    *lh = h / fs->downscale;
    *latent = malloc((size_t)fs->channels * *lw * *lh * sizeof(float));
    if (!pixels || !*latent) s = sdc_fail(SDC_ERR_NO_MEMORY, "reference image: out of memory");
    if (s == SDC_OK) {
        sdc_stage_image_to_planar(&sized, C, pixels);
        s = fs->encode(fs->self, &ctx->env_first_stage, pixels, w, h, NULL, *latent);
    }
    if (s == SDC_OK && sdc_first_non_finite(*latent, (int64_t)fs->channels * *lw * *lh) >= 0)
        s = sdc_fail(SDC_ERR_FORMAT, "reference image %d: the first stage's encoding is not finite",
                     i);
    free(pixels);
    free(sized.data);
    return s;
}

sdc_status sdc_stage_set_refs(sdc_context *ctx, const sdc_generate_params *p,
                              const sdc_latent_shape *shape, const sdc_ref_image_opts *opts) {
    const sdc_diffusion *dm = &ctx->m.diffusion;
    if (!dm->set_refs) return SDC_OK;
    /* pass_to_dit off: the model reads no reference latent (none is encoded) */
    int n = p->ref_images && (!opts || opts->pass_to_dit) ? p->n_ref_images : 0;
    float **lat = calloc((size_t)(n > 0 ? n : 1), sizeof *lat);
    int *lw = calloc((size_t)(n > 0 ? n : 1), sizeof *lw);
    int *lh = calloc((size_t)(n > 0 ? n : 1), sizeof *lh);
    sdc_status s =
        lat && lw && lh ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    double t0 = sdc_now_seconds();
    for (int i = 0; i < n && s == SDC_OK; i++)
        s = encode_ref(ctx, p, opts, i, &lat[i], &lw[i], &lh[i]);
    if (n > 0) {
        const sdc_first_stage *fs = &ctx->m.first_stage;
        if (fs->end_phase) fs->end_phase(fs->self);
        sdc_context_end_phase(ctx, SDC_MODULE_VAE); /* the encoder is not needed in sampling */
        if (s == SDC_OK)
            SDC_LOGI("%d reference image(s) encoded in %.2fs", n, sdc_now_seconds() - t0);
    }
    if (s == SDC_OK)
        s = dm->set_refs(dm->self, shape->frames, (const float *const *)lat, lw, lh, n, opts);
    for (int i = 0; lat && i < n; i++) free(lat[i]);
    free(lat);
    free(lw);
    free(lh);
    return s;
}
