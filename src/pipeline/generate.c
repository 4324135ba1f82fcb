/* Text-to-image for MiniT2I: tokenize, encode once, sample with CFG, convert to RGB. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "io/model_loader.h"
#include "pipeline/context.h"
#include "sampling/defaults.h"
#include "sampling/denoiser.h"
#include "sampling/rng.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

void sdc_generate_params_init(sdc_generate_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->prompt = "";
    p->negative_prompt = "";
    p->width = 512;
    p->height = 512;
    p->steps = 20;
    p->cfg_scale = 7.0f;
    p->seed = 42;
    p->rng = "cuda";
    p->eta = NAN; /* the sampler's own default */
    p->batch_count = 1;
    p->strength = 0.75f;
    p->guidance = NAN;
    p->img_cfg_scale = NAN;
}

void sdc_free_images(sdc_image *images, int count) {
    if (!images) return;
    for (int i = 0; i < count; i++) free(images[i].data);
    free(images);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* What the sampler's model callback needs for one image. */
typedef struct denoise_ctx {
    sdc_context *ctx;
    const float *txt; /* [2][prompt_len][hidden]: cond, then uncond */
    int width, height;
    float cfg;
    float *batch_x, *batch_out; /* scratch for the batch of 2 */
    int step, steps;
    double step_start;
    const sdc_generate_params *p;
    /* img2img / inpainting */
    const float *init;   /* the init image in [-1, 1], planar, or NULL */
    const float *keep;   /* per pixel 1 = keep the init image, or NULL */
    const float *noise2; /* 2 * initial noise: the init image's noise at sigma 1 */
    const float *sigmas; /* the schedule run */
    float *x;            /* the sampler's state (updated in place) */
    int64_t n;
} denoise_ctx;

/* MiniT2I predicts x0 directly (c_skip 0, c_out 1, c_in 1) and ignores sigma. */
static sdc_status minit2i_denoise(void *user, const float *x, float sigma, float *denoised,
                                  float *uncond_out, int64_t n) {
    denoise_ctx *d = user;
    sdc_context *ctx = d->ctx;
    (void)sigma;
    if (atomic_load(&ctx->cancel)) return sdc_fail(SDC_ERR_CANCELLED, "generation cancelled");
    bool cfg = d->cfg != 1.0f;
    int B = cfg ? 2 : 1;
    memcpy(d->batch_x, x, (size_t)n * sizeof(float));
    if (cfg) memcpy(d->batch_x + n, x, (size_t)n * sizeof(float));
    sdc_status s = sdc_minit2i_forward(ctx->dit, ctx->backend, d->batch_x, B, d->width, d->height,
                                       d->txt, d->batch_out, ctx->eval_cb, ctx->eval_user);
    if (s != SDC_OK) return s;
    const float *c = d->batch_out, *u = d->batch_out + n;
    if (cfg) {
        for (int64_t i = 0; i < n; i++) denoised[i] = u[i] + d->cfg * (c[i] - u[i]);
        if (uncond_out) memcpy(uncond_out, u, (size_t)n * sizeof(float));
    } else {
        memcpy(denoised, c, (size_t)n * sizeof(float));
        if (uncond_out) memcpy(uncond_out, c, (size_t)n * sizeof(float));
    }
    return SDC_OK;
}

/* Inpainting: pixels to keep are reset to the init image noised to the next sigma,
 * x = (1 - s) * image + s * 2 * noise (MiniT2I's interpolation), after every step. */
static void blend_known(denoise_ctx *d, int step) {
    if (!d->keep) return;
    float s = d->sigmas[step];
    int64_t plane = d->n / 3;
    for (int64_t i = 0; i < d->n; i++) {
        float k = d->keep[i % plane];
        if (k <= 0.0f) continue;
        float known = (1.0f - s) * d->init[i] + s * d->noise2[i];
        d->x[i] = k * known + (1.0f - k) * d->x[i];
    }
}

static int on_step(void *user, int step, int steps, const float *x) {
    denoise_ctx *d = user;
    (void)x;
    blend_known(d, step);
    const sdc_minit2i_config *mc = sdc_minit2i_get_config(d->ctx->dit);
    if (d->p->latent)
        d->p->latent(step, steps, d->x, mc->in_channels, d->width, d->height, d->p->latent_user);
    double t = now_seconds();
    if (d->p->progress) d->p->progress(step, steps, t - d->step_start, d->p->progress_user);
    d->step_start = t;
    return atomic_load(&d->ctx->cancel);
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

/* RGB u8 interleaved -> planar [-1, 1] */
static void from_rgb(const sdc_image *img, float *x) {
    size_t plane = (size_t)img->width * img->height;
    for (size_t i = 0; i < plane; i++)
        for (uint32_t c = 0; c < 3; c++) {
            uint8_t v = img->data[i * img->channels + (img->channels >= 3 ? c : 0)];
            x[c * plane + i] = (float)v / 127.5f - 1.0f;
        }
}

/* mask image -> per pixel "keep" weight: black (0) keeps, white (255) regenerates */
static void mask_to_keep(const sdc_image *m, float *keep) {
    size_t plane = (size_t)m->width * m->height;
    for (size_t i = 0; i < plane; i++) keep[i] = 1.0f - (float)m->data[i * m->channels] / 255.0f;
}

static sdc_status check_image(const sdc_image *img, const char *what, int w, int h) {
    if (!img) return SDC_OK;
    if (!img->data || img->channels < 1 || img->channels > 4)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: no pixel data or %u channels", what,
                        img->channels);
    if ((int)img->width != w || (int)img->height != h)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s is %ux%u, the output is %dx%d: sizes must match",
                        what, img->width, img->height, w, h);
    return SDC_OK;
}

static uint64_t random_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    return s & 0x7fffffff;
}

sdc_status sdc_generate_image(sdc_context *ctx, const sdc_generate_params *p, sdc_image **images,
                              int *count) {
    *images = NULL;
    *count = 0;
    if (!ctx || !p) return sdc_fail(SDC_ERR_INVALID_ARG, "generate: NULL context or parameters");
    if (!ctx->dit) return sdc_fail(SDC_ERR_INVALID_ARG, "generate: no diffusion model loaded");
    const sdc_minit2i_config *mc = sdc_minit2i_get_config(ctx->dit);
    if (p->n_sigmas > 0) {
        if (p->n_sigmas < 2 || !p->sigmas)
            return sdc_fail(SDC_ERR_INVALID_ARG, "custom sigmas need at least 2 values (got %d)",
                            p->n_sigmas);
        for (int i = 0; i < p->n_sigmas; i++)
            if (!(p->sigmas[i] >= 0.0f && p->sigmas[i] < INFINITY) ||
                (i < p->n_sigmas - 1 && p->sigmas[i] == 0.0f))
                return sdc_fail(SDC_ERR_INVALID_ARG,
                                "custom sigma %d is %g: sigmas must be finite, >= 0, and only the "
                                "last may be 0",
                                i, (double)p->sigmas[i]);
    } else if (p->steps <= 0) {
        return sdc_fail(SDC_ERR_INVALID_ARG, "steps must be > 0 (got %d)", p->steps);
    }
    if (p->batch_count < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG, "batch count must be >= 1 (got %d)", p->batch_count);
    if (p->width <= 0 || p->height <= 0 || p->width % mc->patch || p->height % mc->patch)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "image size %dx%d: width and height must be positive multiples of %d "
                        "(the model's patch size)",
                        p->width, p->height, mc->patch);
    if ((int64_t)p->width * p->height > 4096LL * 4096LL)
        return sdc_fail(SDC_ERR_INVALID_ARG, "image size %dx%d is too large", p->width, p->height);
    if (!(p->cfg_scale == p->cfg_scale) || p->cfg_scale < 0.0f)
        return sdc_fail(SDC_ERR_INVALID_ARG, "cfg scale must be >= 0");
    sdc_rng_type rng_type, sampler_rng_type;
    sdc_status s = sdc_rng_type_from_name(p->rng ? p->rng : "cuda", &rng_type);
    if (s != SDC_OK) return s;
    sampler_rng_type = rng_type;
    if (p->sampler_rng && *p->sampler_rng &&
        (s = sdc_rng_type_from_name(p->sampler_rng, &sampler_rng_type)) != SDC_OK)
        return s;
    sdc_sample_method method = sdc_default_sample_method(SDC_FAMILY_MINIT2I);
    if (p->sampling_method && *p->sampling_method &&
        (s = sdc_sample_method_from_name(p->sampling_method, &method)) != SDC_OK)
        return s;
    if ((s = check_image(p->init_image, "init image", p->width, p->height)) != SDC_OK ||
        (s = check_image(p->mask_image, "mask image", p->width, p->height)) != SDC_OK)
        return s;
    if (p->mask_image && !p->init_image)
        return sdc_fail(SDC_ERR_INVALID_ARG, "a mask needs an init image");
    if (p->init_image && !(p->strength > 0.0f && p->strength <= 1.0f))
        return sdc_fail(SDC_ERR_INVALID_ARG, "strength must be in (0, 1] (got %g)",
                        (double)p->strength);
    atomic_store(&ctx->cancel, 0);

    int L = mc->prompt_len, H = mc->hidden, W = p->width, Hh = p->height;
    int64_t n = (int64_t)mc->in_channels * W * Hh;
    /* 1. text: one T5 encode of the prompt's real tokens; uncond = all mask tokens */
    int32_t *ids = malloc((size_t)L * sizeof(int32_t));
    float *t5_out = NULL, *txt = malloc((size_t)2 * L * H * sizeof(float));
    /* x, noise, batch of 2 (2n), init image, keep mask (n/3) */
    float *xbuf = malloc((size_t)n * 6 * sizeof(float));
    sdc_image *imgs = calloc((size_t)p->batch_count, sizeof(sdc_image));
    sdc_rng *rng = NULL, *srng = NULL;
    int32_t n_real = 0;
    if (!ids || !txt || !xbuf || !imgs) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
        goto done;
    }
    double t0 = now_seconds();
    if ((s = sdc_tokenizer_encode_t5(ctx->tokenizer, p->prompt ? p->prompt : "", L, ids, NULL,
                                     &n_real)) != SDC_OK)
        goto done;
    const sdc_t5_config *tc = sdc_t5_get_config(ctx->t5);
    if (tc->d_model != mc->txt_input) {
        s = sdc_fail(SDC_ERR_FORMAT, "text encoder width %d does not match the DiT's input %d",
                     tc->d_model, mc->txt_input);
        goto done;
    }
    t5_out = malloc((size_t)(n_real > 0 ? n_real : 1) * tc->d_model * sizeof(float));
    if (!t5_out) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
        goto done;
    }
    if ((s = sdc_t5_encode(ctx->t5, ctx->backend, ids, n_real, t5_out, ctx->eval_cb,
                           ctx->eval_user)) != SDC_OK)
        goto done;
    /* the text encoder's weights are not needed while sampling: let the OS drop them */
    sdc_loader_release_pages(ctx->weights, ctx->t5_file);
    if ((s = sdc_minit2i_encode_text(ctx->dit, ctx->backend, t5_out, n_real, txt, ctx->eval_cb,
                                     ctx->eval_user)) != SDC_OK)
        goto done;
    if (p->cfg_scale != 1.0f &&
        (s = sdc_minit2i_encode_text(ctx->dit, ctx->backend, NULL, 0, txt + (size_t)L * H,
                                     ctx->eval_cb, ctx->eval_user)) != SDC_OK)
        goto done;
    SDC_LOGI("text encoded in %.2fs (%d tokens)", now_seconds() - t0, n_real);

    /* 2. sigmas: MiniT2I's schedule is linear 1 -> 0 whatever the scheduler flag says */
    sdc_denoiser den;
    sdc_denoiser_init(&den, SDC_PRED_MINIT2I_FLOW);
    int n_sigmas = p->n_sigmas > 0 ? p->n_sigmas : p->steps + 1;
    float *sigmas = malloc((size_t)n_sigmas * sizeof(float));
    if (!sigmas) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
        goto done;
    }
    if (p->n_sigmas > 0)
        memcpy(sigmas, p->sigmas, (size_t)n_sigmas * sizeof(float));
    else
        sdc_minit2i_sigmas(p->steps, sigmas);
    float *init = NULL, *keep = NULL;
    if (p->init_image) {
        /* img2img: run the tail of the schedule from the image noised to its first sigma */
        n_sigmas = sdc_sigmas_apply_strength(sigmas, n_sigmas, p->strength);
        init = xbuf + 4 * n;
        from_rgb(p->init_image, init);
        if (p->mask_image) {
            keep = xbuf + 5 * n;
            mask_to_keep(p->mask_image, keep);
        }
    }

    int64_t base_seed = p->seed < 0 ? (int64_t)random_seed() : p->seed;
    float *x = xbuf, *noise = xbuf + n, *batch_x = xbuf + 2 * n;
    float *batch_out = malloc((size_t)n * 2 * sizeof(float));
    if (!batch_out) {
        free(sigmas);
        s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
        goto done;
    }
    for (int b = 0; b < p->batch_count && s == SDC_OK; b++) {
        uint64_t seed = (uint64_t)(base_seed + b);
        if ((s = sdc_rng_create(rng_type, seed, &rng)) != SDC_OK) break;
        if ((s = sdc_rng_randn(rng, noise, n)) != SDC_OK) break;
        sdc_denoiser_noise_scaling(&den, sigmas[0], noise, NULL, x, n); /* 2 * noise */
        if (init) {
            /* MiniT2I's interpolation x_s = (1 - s) * image + s * 2 * noise (sd.cpp ignores the
             * init image for MiniT2I; we use it) */
            for (int64_t i = 0; i < n; i++) {
                noise[i] = x[i];
                x[i] = (1.0f - sigmas[0]) * init[i] + sigmas[0] * noise[i];
            }
        }
        sdc_rng *sampler_noise = rng;
        if (sampler_rng_type != rng_type) {
            if ((s = sdc_rng_create(sampler_rng_type, seed, &srng)) != SDC_OK) break;
            sampler_noise = srng;
        }
        denoise_ctx d = {.ctx = ctx,
                         .txt = txt,
                         .width = W,
                         .height = Hh,
                         .cfg = p->cfg_scale,
                         .batch_x = batch_x,
                         .batch_out = batch_out,
                         .steps = n_sigmas - 1,
                         .p = p,
                         .step_start = now_seconds(),
                         .init = init,
                         .keep = keep,
                         .noise2 = noise,
                         .sigmas = sigmas,
                         .x = x,
                         .n = n};
        sdc_sampler_params sp;
        sdc_sampler_params_init(&sp);
        sp.method = method;
        sp.eta = p->eta;
        sp.flow = sdc_denoiser_is_flow(&den);
        sp.on_step = on_step;
        sp.step_user = &d;
        sp.rng = sampler_noise;
        if (p->latent) p->latent(0, n_sigmas - 1, x, mc->in_channels, W, Hh, p->latent_user);
        s = sdc_sample(&sp, sigmas, n_sigmas, minit2i_denoise, &d, x, n);
        if (s == SDC_OK && atomic_load(&ctx->cancel))
            s = sdc_fail(SDC_ERR_CANCELLED, "generation cancelled");
        if (s != SDC_OK) break;
        imgs[b].width = (uint32_t)W;
        imgs[b].height = (uint32_t)Hh;
        imgs[b].channels = 3;
        imgs[b].seed = (int64_t)seed;
        imgs[b].data = malloc((size_t)W * Hh * 3);
        if (!imgs[b].data) {
            s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
            break;
        }
        to_rgb(x, W, Hh, imgs[b].data);
        *count = b + 1;
        sdc_rng_free(rng);
        sdc_rng_free(srng);
        rng = srng = NULL;
    }
    free(batch_out);
    free(sigmas);
done:
    sdc_rng_free(rng);
    sdc_rng_free(srng);
    free(ids);
    free(t5_out);
    free(txt);
    free(xbuf);
    if (s == SDC_OK) {
        *images = imgs;
    } else {
        sdc_free_images(imgs, p->batch_count);
        *count = 0;
    }
    return s;
}
