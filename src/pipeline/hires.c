/* Hires fix: the upscale between the two passes and the second pass (hires.h). Follows
 * sd.cpp's generate_image: every image's RNGs are re-seeded with its seed; a pixel-space
 * upscale re-encodes through the VAE (which draws its posterior noise first), then the
 * second pass's noise is drawn at the hires size. */
#include "pipeline/hires.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"
#include "sampling/denoiser.h"

static const char *const k_names[SDC_HIRES_KIND_COUNT] = {
    "None",
    "Latent",
    "Latent (nearest)",
    "Latent (nearest-exact)",
    "Latent (antialiased)",
    "Latent (bicubic)",
    "Latent (bicubic antialiased)",
    "Lanczos",
    "Nearest",
    "Model",
};

const char *sdc_hires_upscaler_name(sdc_hires_upscaler_kind k) {
    return k >= 0 && k < SDC_HIRES_KIND_COUNT ? k_names[k] : "?";
}

sdc_hires_upscaler_kind sdc_hires_upscaler_from_name(const char *name) {
    for (int i = 0; i < SDC_HIRES_KIND_COUNT; i++)
        if (name && !strcmp(name, k_names[i])) return (sdc_hires_upscaler_kind)i;
    return SDC_HIRES_KIND_COUNT;
}

/* ---- resampling ---- */

typedef struct taps {
    int *start, *count; /* per output index: first tap in idx/wt, number of taps */
    int *idx;
    double *wt;
} taps;

static double filter_weight(sdc_resize_filter f, double x) {
    x = fabs(x);
    if (f == SDC_RESIZE_BILINEAR) return x < 1.0 ? 1.0 - x : 0.0;
    if (f == SDC_RESIZE_BICUBIC) {
        const double a = -0.75;
        if (x <= 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
        if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
        return 0.0;
    }
    /* Lanczos-3 */
    if (x >= 3.0) return 0.0;
    if (x < 1e-12) return 1.0;
    double px = 3.14159265358979323846 * x;
    return sin(px) / px * (sin(px / 3.0) / (px / 3.0));
}

static void taps_free(taps *t) {
    free(t->start);
    free(t->count);
    free(t->idx);
    free(t->wt);
}

/* The taps of one axis: nearest modes get one tap, the 2-D filters their support. */
static bool taps_make(taps *t, int in, int out, sdc_resize_filter f, bool aa) {
    double scale = (double)in / out, fs = aa && scale > 1.0 ? scale : 1.0;
    double radius = f == SDC_RESIZE_BILINEAR ? 1.0 : f == SDC_RESIZE_BICUBIC ? 2.0 : 3.0;
    int max_taps = f <= SDC_RESIZE_NEAREST_EXACT ? 1 : (int)ceil(2.0 * radius * fs) + 2;
    t->start = malloc(sizeof(int) * (size_t)out);
    t->count = malloc(sizeof(int) * (size_t)out);
    t->idx = malloc(sizeof(int) * (size_t)out * (size_t)max_taps);
    t->wt = malloc(sizeof(double) * (size_t)out * (size_t)max_taps);
    if (!t->start || !t->count || !t->idx || !t->wt) return false;
    for (int o = 0; o < out; o++) {
        int base = o * max_taps, n = 0;
        t->start[o] = base;
        if (f == SDC_RESIZE_NEAREST || f == SDC_RESIZE_NEAREST_EXACT) {
            int64_t src = f == SDC_RESIZE_NEAREST
                              ? (int64_t)o * in / out
                              : (int64_t)floor(((double)o + 0.5) * scale - 0.5 + 0.5);
            t->idx[base] = (int)(src < 0 ? 0 : src >= in ? in - 1 : src);
            t->wt[base] = 1.0;
            t->count[o] = 1;
            continue;
        }
        double center = ((double)o + 0.5) * scale - 0.5, support = radius * fs, sum = 0.0;
        int64_t lo = (int64_t)ceil(center - support), hi = (int64_t)floor(center + support);
        for (int64_t i = lo; i <= hi && n < max_taps; i++) {
            double w = filter_weight(f, (center - (double)i) / fs);
            if (w == 0.0) continue;
            t->idx[base + n] = (int)(i < 0 ? 0 : i >= in ? in - 1 : i);
            t->wt[base + n] = w;
            sum += w;
            n++;
        }
        if ((aa || f == SDC_RESIZE_LANCZOS) && fabs(sum) > 1e-12)
            for (int k = 0; k < n; k++) t->wt[base + k] /= sum;
        if (n == 0) {
            int64_t c = (int64_t)floor(center + 0.5);
            t->idx[base] = (int)(c < 0 ? 0 : c >= in ? in - 1 : c);
            t->wt[base] = 1.0;
            n = 1;
        }
        t->count[o] = n;
    }
    return true;
}

bool sdc_resize_planes(const float *in, int w, int h, int planes, float *out, int ow, int oh,
                       sdc_resize_filter f, bool antialias) {
    if (f <= SDC_RESIZE_NEAREST_EXACT) antialias = false;
    taps tx = {0}, ty = {0};
    bool ok = taps_make(&tx, w, ow, f, antialias) && taps_make(&ty, h, oh, f, antialias);
    for (int c = 0; ok && c < planes; c++) {
        const float *src = in + (size_t)c * w * h;
        float *dst = out + (size_t)c * ow * oh;
        for (int y = 0; y < oh; y++)
            for (int x = 0; x < ow; x++) {
                double v = 0.0;
                for (int a = 0; a < ty.count[y]; a++) {
                    const float *row = src + (size_t)ty.idx[ty.start[y] + a] * w;
                    double wy = ty.wt[ty.start[y] + a];
                    for (int b = 0; b < tx.count[x]; b++)
                        v += (double)row[tx.idx[tx.start[x] + b]] * tx.wt[tx.start[x] + b] * wy;
                }
                dst[(size_t)y * ow + x] = (float)v;
            }
    }
    taps_free(&tx);
    taps_free(&ty);
    return ok;
}

/* ---- the second pass's schedule ---- */

int sdc_hires_scheduler_steps(int steps, float strength) {
    int n = (int)((float)(steps < 1 ? 1 : steps) / strength);
    return n < 1 ? 1 : n;
}

int sdc_hires_trim_sigmas(float *sigmas, int scheduler_steps, float strength) {
    int t_enc = (int)((float)scheduler_steps * strength);
    if (t_enc >= scheduler_steps) t_enc = scheduler_steps - 1;
    int start = scheduler_steps - t_enc - 1, len = scheduler_steps + 1 - start;
    memmove(sigmas, sigmas + start, sizeof(float) * (size_t)len);
    return len;
}

/* ---- the plan ---- */

struct sdc_hires_plan {
    sdc_hires_upscaler_kind kind;
    int width, height;
    float *sigmas;
    int n_sigmas;
    sdc_upscaler *model;
};

int sdc_hires_plan_width(const sdc_hires_plan *plan) {
    return plan ? plan->width : 0;
}
int sdc_hires_plan_height(const sdc_hires_plan *plan) {
    return plan ? plan->height : 0;
}

void sdc_hires_plan_free(sdc_hires_plan *plan) {
    if (!plan) return;
    free(plan->sigmas);
    sdc_upscaler_free(plan->model);
    free(plan);
}

static sdc_status check_fields(const sdc_generate_params *p) {
    if (p->hires_width < 0 || p->hires_height < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "hires target size %dx%d: must be >= 0",
                        p->hires_width, p->hires_height);
    if (!(p->hires_scale > 0.0f && isfinite(p->hires_scale)) && p->hires_width <= 0 &&
        p->hires_height <= 0)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "hires scale must be positive when no hires width/height is set (got %g)",
                        (double)p->hires_scale);
    if (p->hires_steps < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "hires steps must be >= 0 (got %d)", p->hires_steps);
    if (!(p->hires_denoising_strength > 0.0f && p->hires_denoising_strength <= 1.0f))
        return sdc_fail(SDC_ERR_INVALID_ARG, "hires denoising strength must be in (0, 1] (got %g)",
                        (double)p->hires_denoising_strength);
    if (p->n_hires_sigmas != 0 && (p->n_hires_sigmas < 2 || !p->hires_sigmas))
        return sdc_fail(SDC_ERR_INVALID_ARG, "hires sigmas need at least 2 values (got %d)",
                        p->n_hires_sigmas);
    for (int i = 0; i < p->n_hires_sigmas; i++)
        if (!(p->hires_sigmas[i] >= 0.0f && p->hires_sigmas[i] < INFINITY))
            return sdc_fail(SDC_ERR_INVALID_ARG, "hires sigma %d is %g: must be finite and >= 0", i,
                            (double)p->hires_sigmas[i]);
    if (p->hires_upscale_tile_size < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG, "hires upscale tile size must be positive (got %d)",
                        p->hires_upscale_tile_size);
    if (p->mask_image)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "hires fix with an inpainting mask is not supported yet");
    return SDC_OK;
}

/* A model name in --hires-upscalers-dir, as sd-cli resolves it: a bare name, tried with
 * .gguf, .safetensors, .pt, .ckpt. */
static sdc_status find_model(const char *name, const char *dir, char *path, size_t cap) {
    static const char *const ext[] = {".gguf", ".safetensors", ".pt", ".ckpt"};
    if (!dir || !*dir)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "hires upscaler '%s' is not one of None, Latent, Latent (nearest), "
                        "Latent (nearest-exact), Latent (antialiased), Latent (bicubic), Latent "
                        "(bicubic antialiased), Lanczos, Nearest, and no --hires-upscalers-dir is "
                        "set to find a model of that name",
                        name);
    size_t nl = strlen(name);
    bool bad = !nl || strchr(name, '/') || strchr(name, '\\');
    for (int i = 0; i < 4 && !bad; i++) {
        size_t el = strlen(ext[i]);
        bad = nl >= el && !strcasecmp(name + nl - el, ext[i]);
    }
    if (bad)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "hires upscaler must be a model name without path or extension: '%s'",
                        name);
    for (int i = 0; i < 4; i++) {
        struct stat st;
        snprintf(path, cap, "%s/%s%s", dir, name, ext[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) return SDC_OK;
    }
    return sdc_fail(SDC_ERR_IO,
                    "cannot find hires upscaler '%s' in %s (tried .gguf, "
                    ".safetensors, .pt, .ckpt)",
                    name, dir);
}

static void resolve_size(const sdc_context *ctx, const sdc_generate_params *p, int *w, int *h) {
    if (p->hires_width > 0 && p->hires_height > 0) {
        *w = p->hires_width, *h = p->hires_height;
    } else if (p->hires_width > 0 || p->hires_height > 0) {
        *w = *h = p->hires_width > 0 ? p->hires_width : p->hires_height;
    } else {
        *w = (int)lround((double)p->width * p->hires_scale);
        *h = (int)lround((double)p->height * p->hires_scale);
    }
    int m = ctx->m.diffusion.size_multiple > 0 ? ctx->m.diffusion.size_multiple : 1;
    int aw = (*w + m - 1) / m * m, ah = (*h + m - 1) / m * m;
    if (aw != *w || ah != *h)
        SDC_LOGW("align hires target up %dx%d to %dx%d (multiple=%d)", *w, *h, aw, ah, m);
    *w = aw, *h = ah;
}

static sdc_status make_sigmas(const sdc_generate_params *p, sdc_hires_schedule_fn schedule,
                              void *user, sdc_hires_plan *plan) {
    if (p->n_hires_sigmas > 0) {
        plan->sigmas = malloc(sizeof(float) * (size_t)p->n_hires_sigmas);
        if (!plan->sigmas) return sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
        memcpy(plan->sigmas, p->hires_sigmas, sizeof(float) * (size_t)p->n_hires_sigmas);
        plan->n_sigmas = p->n_hires_sigmas;
        return SDC_OK;
    }
    int base_steps = p->n_sigmas > 0 ? p->n_sigmas - 1 : p->steps;
    int steps = p->hires_steps > 0 ? p->hires_steps : base_steps;
    int sched = sdc_hires_scheduler_steps(steps, p->hires_denoising_strength);
    sdc_status s = schedule(user, sched, &plan->sigmas, &plan->n_sigmas);
    if (s != SDC_OK) return s;
    if (plan->n_sigmas != sched + 1)
        return sdc_fail(SDC_ERR_INTERNAL, "hires: schedule of %d steps has %d sigmas", sched,
                        plan->n_sigmas);
    plan->n_sigmas = sdc_hires_trim_sigmas(plan->sigmas, sched, p->hires_denoising_strength);
    SDC_LOGI("hires fix: scheduler_steps=%d, denoising_strength=%.2f, %d sigmas", sched,
             (double)p->hires_denoising_strength, plan->n_sigmas);
    return SDC_OK;
}

sdc_status sdc_hires_plan_create(sdc_context *ctx, const sdc_generate_params *p,
                                 sdc_hires_schedule_fn schedule, void *schedule_user,
                                 sdc_hires_plan **out) {
    *out = NULL;
    if (!p->hires) return SDC_OK;
    const char *name = p->hires_upscaler && *p->hires_upscaler ? p->hires_upscaler : "Latent";
    sdc_hires_upscaler_kind kind = sdc_hires_upscaler_from_name(name);
    if (kind == SDC_HIRES_NONE) return SDC_OK; /* sd.cpp: "None" turns it off */
    if (kind == SDC_HIRES_MODEL)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "hires upscaler 'Model': name the model file instead (without "
                        "extension, in --hires-upscalers-dir)");
    sdc_status s = check_fields(p);
    if (s != SDC_OK) return s;
    char path[4096];
    if (kind == SDC_HIRES_KIND_COUNT &&
        (s = find_model(name, p->hires_upscalers_dir, path, sizeof path)) != SDC_OK)
        return s;
    sdc_hires_plan *plan = calloc(1, sizeof *plan);
    if (!plan) return sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
    plan->kind = kind == SDC_HIRES_KIND_COUNT ? SDC_HIRES_MODEL : kind;
    resolve_size(ctx, p, &plan->width, &plan->height);
    if ((int64_t)plan->width * plan->height > 4096LL * 4096LL)
        s = sdc_fail(SDC_ERR_INVALID_ARG, "hires target %dx%d is too large", plan->width,
                     plan->height);
    if (s == SDC_OK) s = make_sigmas(p, schedule, schedule_user, plan);
    if (s == SDC_OK && plan->kind == SDC_HIRES_MODEL) {
        SDC_LOGI("hires fix: loading model upscaler from '%s'", path);
        s = sdc_upscaler_create(path, ctx->n_threads, p->hires_upscale_tile_size, &plan->model);
    }
    if (s != SDC_OK) {
        sdc_hires_plan_free(plan);
        return s;
    }
    *out = plan;
    return SDC_OK;
}

/* ---- the upscale and the second pass ---- */

/* Pixel-space upscalers: decode, upscale the picture, re-encode (posterior noise from rng). */
static sdc_status upscale_pixels(sdc_context *ctx, const sdc_hires_plan *plan,
                                 const sdc_hires_job *job, const float *x,
                                 const sdc_latent_shape *hs, sdc_rng *rng, float *latent) {
    sdc_image img = {0}, up = {0};
    int bw = job->shape.width * ctx->m.first_stage.downscale;
    int bh = job->shape.height * ctx->m.first_stage.downscale;
    sdc_status s = sdc_stage_decode(ctx, x, bw, bh, &img);
    if (s == SDC_OK && plan->kind == SDC_HIRES_MODEL) {
        s = sdc_upscale_image(plan->model, &img, &up);
        SDC_LOGI("hires model upscale %dx%d -> %ux%u", bw, bh, up.width, up.height);
        sdc_image_free(&img);
        img = up;
        memset(&up, 0, sizeof up);
    }
    bool resize = (int)img.width != plan->width || (int)img.height != plan->height;
    float *buf = NULL;
    if (s == SDC_OK && resize) {
        /* planar floats in [0, 1], resized, clamped, back to 8 bits */
        size_t n0 = (size_t)img.width * img.height, n1 = (size_t)plan->width * plan->height;
        buf = malloc(sizeof(float) * 3 * (n0 + n1));
        up.data = malloc(3 * n1);
        if (!buf || !up.data) s = sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
        for (size_t i = 0; s == SDC_OK && i < n0; i++)
            for (int c = 0; c < 3; c++) buf[c * n0 + i] = img.data[i * 3 + c] / 255.0f;
        sdc_resize_filter f =
            plan->kind == SDC_HIRES_LANCZOS ? SDC_RESIZE_LANCZOS : SDC_RESIZE_NEAREST;
        if (s == SDC_OK && !sdc_resize_planes(buf, (int)img.width, (int)img.height, 3, buf + 3 * n0,
                                              plan->width, plan->height, f, false))
            s = sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
        for (size_t i = 0; s == SDC_OK && i < n1; i++)
            for (int c = 0; c < 3; c++) {
                float v = buf[3 * n0 + c * n1 + i];
                v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
                up.data[i * 3 + c] = (uint8_t)(v * 255.0f + 0.5f);
            }
        up.width = (uint32_t)plan->width, up.height = (uint32_t)plan->height, up.channels = 3;
        free(buf);
        sdc_image_free(&img);
        img = up;
    }
    float *post = NULL;
    if (s == SDC_OK && ctx->m.first_stage.downscale > 1) {
        if (!(post = malloc(sizeof(float) * (size_t)hs->n)))
            s = sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
        else
            s = sdc_rng_randn(rng, post, hs->n);
    }
    if (s == SDC_OK) s = sdc_stage_encode_image(ctx, &img, hs, post, latent);
    free(post);
    sdc_image_free(&img);
    return s;
}

static sdc_status upscale(sdc_context *ctx, const sdc_hires_plan *plan, const sdc_hires_job *job,
                          const float *x, const sdc_latent_shape *hs, sdc_rng *rng, float *latent) {
    static const sdc_resize_filter filt[] = {
        [SDC_HIRES_LATENT] = SDC_RESIZE_BILINEAR,
        [SDC_HIRES_LATENT_NEAREST] = SDC_RESIZE_NEAREST,
        [SDC_HIRES_LATENT_NEAREST_EXACT] = SDC_RESIZE_NEAREST_EXACT,
        [SDC_HIRES_LATENT_ANTIALIASED] = SDC_RESIZE_BILINEAR,
        [SDC_HIRES_LATENT_BICUBIC] = SDC_RESIZE_BICUBIC,
        [SDC_HIRES_LATENT_BICUBIC_ANTIALIASED] = SDC_RESIZE_BICUBIC,
    };
    if (plan->kind >= SDC_HIRES_LANCZOS) return upscale_pixels(ctx, plan, job, x, hs, rng, latent);
    bool aa = plan->kind == SDC_HIRES_LATENT_ANTIALIASED ||
              plan->kind == SDC_HIRES_LATENT_BICUBIC_ANTIALIASED;
    SDC_LOGI("hires %s upscale %dx%d -> %dx%d", sdc_hires_upscaler_name(plan->kind),
             job->shape.width, job->shape.height, hs->width, hs->height);
    if (!sdc_resize_planes(x, job->shape.width, job->shape.height, job->shape.channels, latent,
                           hs->width, hs->height, filt[plan->kind], aa))
        return sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
    return SDC_OK;
}

sdc_status sdc_hires_run(sdc_context *ctx, const sdc_generate_params *p, const sdc_hires_plan *plan,
                         const sdc_hires_job *job, const float *x, float **out) {
    *out = NULL;
    double t0 = sdc_now_seconds();
    sdc_latent_shape hs;
    sdc_stage_latent_shape(ctx, plan->width, plan->height, &hs);
    size_t bytes = sizeof(float) * (size_t)hs.n;
    float *init = malloc(bytes), *noise = malloc(bytes), *hx = malloc(bytes);
    sdc_rng *rng = NULL, *srng = NULL;
    sdc_status s =
        init && noise && hx ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "hires: out of memory");
    if (s == SDC_OK) s = sdc_rng_create(job->rng_type, job->seed, &rng);
    if (s == SDC_OK && job->sampler_rng_type != job->rng_type)
        s = sdc_rng_create(job->sampler_rng_type, job->seed, &srng);
    if (s == SDC_OK) s = upscale(ctx, plan, job, x, &hs, rng, init);
    if (s == SDC_OK) s = sdc_rng_randn(rng, noise, hs.n);
    if (s == SDC_OK) {
        sdc_denoiser_noise_scaling(job->den, plan->sigmas[0], noise, init, hx, hs.n);
        sdc_sample_job sj = {.den = job->den,
                             .sigmas = plan->sigmas,
                             .n_sigmas = plan->n_sigmas,
                             .cond = job->cond,
                             .uncond = job->uncond,
                             .cfg_scale = job->cfg_scale,
                             .width = plan->width,
                             .height = plan->height,
                             .shape = hs,
                             .method = job->method,
                             .eta = job->eta,
                             .rng = srng ? srng : rng,
                             .init = init,
                             .keep = NULL,
                             .noise = noise};
        s = sdc_stage_sample(ctx, p, &sj, hx);
    }
    sdc_rng_free(rng);
    sdc_rng_free(srng);
    free(init);
    free(noise);
    if (s != SDC_OK) {
        free(hx);
        return s;
    }
    SDC_LOGI("hires fix %dx%d done in %.2fs", plan->width, plan->height, sdc_now_seconds() - t0);
    *out = hx;
    return SDC_OK;
}
