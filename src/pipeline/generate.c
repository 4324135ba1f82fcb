/* A generation: check the request, then conditioning -> sampling -> decoding for each
 * image of the batch (stages.h). Nothing here knows a model family. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "pipeline/hires.h"
#include "pipeline/registry.h"
#include "pipeline/sd_inpaint.h"
#include "pipeline/stages.h"
#include "sampling/defaults.h"
#include "sampling/denoiser.h"
#include "sampling/guidance.h"
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
    p->flow_shift = NAN;
    p->hires_scale = 2.0f;
    p->hires_denoising_strength = 0.7f;
    p->hires_upscale_tile_size = 128;
    p->qwen_image_layers = 3;
}

void sdc_free_images(sdc_image *images, int count) {
    if (!images) return;
    for (int i = 0; i < count; i++) free(images[i].data);
    free(images);
}

static uint64_t random_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20);
    return s & 0x7fffffff;
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

/* A caller built against an older sdc.h passes a shorter struct. */
static sdc_status copy_params(const sdc_generate_params *in, sdc_generate_params *out) {
    sdc_generate_params_init(out);
    size_t n = in->struct_size;
    if (n < offsetof(sdc_generate_params, latent) || n > sizeof *out)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "generate parameters: struct_size %zu is not one this library knows "
                        "(call sdc_generate_params_init)",
                        in->struct_size);
    memcpy(out, in, n);
    return SDC_OK;
}

static sdc_status check_sigmas(const sdc_generate_params *p) {
    if (p->n_sigmas <= 0) {
        if (p->steps <= 0)
            return sdc_fail(SDC_ERR_INVALID_ARG, "steps must be > 0 (got %d)", p->steps);
        return SDC_OK;
    }
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
    return SDC_OK;
}

/* --img-cfg-scale applies through the -r reference latents (diffusion.ref_img_cfg). */
static bool ref_img_cfg(const sdc_context *ctx, const sdc_generate_params *p) {
    return ctx->m.diffusion.ref_img_cfg && p->ref_images && p->n_ref_images > 0;
}

/* Reference images and latent frames (Qwen-Image-Layered): what the model reads, and
 * the features that assume one frame per image. */
static sdc_status check_layers_refs(const sdc_context *ctx, const sdc_generate_params *p) {
    const sdc_diffusion *dm = &ctx->m.diffusion;
    const char *name =
        ctx->family_desc ? ctx->family_desc->name : sdc_model_family_name(ctx->family);
    if (p->ref_images && p->n_ref_images > 0 && dm->ref_size_multiple <= 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        ctx->family == SDC_FAMILY_QWEN_IMAGE
                            ? "-r/--ref-image: %s reads reference images only as Qwen-Image-Edit, "
                              "which needs the Qwen2.5-VL vision tower: the --llm file has no "
                              "visual.* weights (use the full Qwen2.5-VL file, or add "
                              "--llm_vision)"
                            : "-r/--ref-image: %s does not read reference images here (only "
                              "InstructPix2Pix, Qwen-Image-Edit and Qwen-Image-Layered do so "
                              "far)",
                        name);
    if (p->n_ref_images < 0 || (p->n_ref_images > 0 && !p->ref_images))
        return sdc_fail(SDC_ERR_INVALID_ARG, "reference images: count %d without images",
                        p->n_ref_images);
    if (!dm->latent_frames) return SDC_OK;
    if (p->qwen_image_layers < 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "--qwen-image-layers must be >= 0 (got %d)",
                        p->qwen_image_layers);
    if (p->qwen_image_layers > 64)
        return sdc_fail(SDC_ERR_INVALID_ARG, "--qwen-image-layers %d is too many (at most 64)",
                        p->qwen_image_layers);
    const char *what = p->init_image ? "-i (img2img)" : p->hires ? "--hires" : NULL;
    if (what)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s does not apply to %s (it makes layers of the -r "
                        "image)",
                        what, name);
    return SDC_OK;
}

/* Everything about the request that can be refused before any work. */
static sdc_status check_request(const sdc_context *ctx, const sdc_generate_params *p) {
    sdc_status s = check_sigmas(p);
    if (s != SDC_OK) return s;
    int mult = ctx->m.diffusion.size_multiple > 0 ? ctx->m.diffusion.size_multiple : 1;
    if (p->batch_count < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG, "batch count must be >= 1 (got %d)", p->batch_count);
    if (p->width <= 0 || p->height <= 0 || p->width % mult || p->height % mult)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "image size %dx%d: width and height must be positive multiples of %d "
                        "(the model's patch size)",
                        p->width, p->height, mult);
    if ((int64_t)p->width * p->height > 4096LL * 4096LL)
        return sdc_fail(SDC_ERR_INVALID_ARG, "image size %dx%d is too large", p->width, p->height);
    if (!(p->cfg_scale == p->cfg_scale) || p->cfg_scale < 0.0f || isinf(p->cfg_scale))
        return sdc_fail(SDC_ERR_INVALID_ARG, "cfg scale must be finite and >= 0");
    if ((s = check_image(p->init_image, "init image", p->width, p->height)) != SDC_OK ||
        (s = check_image(p->mask_image, "mask image", p->width, p->height)) != SDC_OK)
        return s;
    if (p->mask_image && !p->init_image)
        return sdc_fail(SDC_ERR_INVALID_ARG, "a mask needs an init image");
    if (p->init_image && !(p->strength > 0.0f && p->strength <= 1.0f))
        return sdc_fail(SDC_ERR_INVALID_ARG, "strength must be in (0, 1] (got %g)",
                        (double)p->strength);
    if (p->clip_skip > 0 && !ctx->m.cond.uses_clip_skip)
        SDC_LOGW("--clip-skip does not apply to %s (it has no CLIP text encoder); ignored",
                 sdc_model_family_name(ctx->family));
    if (isfinite(p->guidance) && !ctx->m.diffusion.set_guidance)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "--guidance: %s is not a guidance-distilled model (use --cfg-scale)",
                        sdc_model_family_name(ctx->family));
    if ((s = check_layers_refs(ctx, p)) != SDC_OK) return s;
    if (isfinite(p->img_cfg_scale) && p->img_cfg_scale != p->cfg_scale &&
        !ctx->m.diffusion.img_cfg && !ref_img_cfg(ctx, p))
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "--img-cfg-scale: %s has no image conditioning here (inpainting and "
                        "InstructPix2Pix UNets have; Qwen-Image Edit and Layered with -r images)",
                        sdc_model_family_name(ctx->family));
    if (isfinite(p->img_cfg_scale) && !(p->img_cfg_scale >= 0.0f && p->img_cfg_scale < INFINITY))
        return sdc_fail(SDC_ERR_INVALID_ARG, "--img-cfg-scale must be finite and >= 0");
    return SDC_OK;
}

/* The denoiser of this request (its flow shift, else the context's). */
static sdc_status make_denoiser(sdc_context *ctx, const sdc_generate_params *p, sdc_denoiser *den) {
    const sdc_diffusion *dm = &ctx->m.diffusion;
    sdc_status s = sdc_denoiser_init(den, dm->prediction);
    if (s == SDC_OK && dm->alphas_cumprod)
        s = sdc_denoiser_set_alphas_cumprod(den, dm->alphas_cumprod, dm->n_alphas);
    float shift = isnan(p->flow_shift) ? ctx->flow_shift : p->flow_shift;
    if (s == SDC_OK && !isnan(shift)) {
        if (!sdc_denoiser_is_flow(den))
            SDC_LOGW("--flow-shift does not apply to %s; ignored",
                     sdc_model_family_name(ctx->family));
        else
            s = sdc_denoiser_set_flow_shift(den, shift);
    }
    return s;
}

/* The scheduler's sigmas for `steps` steps (steps + 1 values, malloc'd). */
typedef struct schedule_req {
    sdc_context *ctx;
    const sdc_generate_params *p;
    sdc_sample_method method;
    const sdc_denoiser *den;
} schedule_req;

static sdc_status full_schedule(void *user, int steps, float **sigmas, int *n_sigmas) {
    const schedule_req *r = user;
    const sdc_diffusion *dm = &r->ctx->m.diffusion;
    int n = steps + 1;
    float *sg = malloc((size_t)n * sizeof(float));
    if (!sg) return sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    sdc_status s = SDC_OK;
    if (dm->fixed_sigmas) {
        if (r->p->scheduler && *r->p->scheduler)
            SDC_LOGW("--scheduler does not apply to %s: its schedule is fixed",
                     sdc_model_family_name(r->ctx->family));
        dm->fixed_sigmas(steps, sg);
    } else {
        sdc_schedule_params sch;
        sdc_schedule_params_init(&sch);
        sch.steps = steps;
        sch.scheduler = sdc_default_scheduler(r->ctx->family, dm->prediction, r->method);
        sch.ays = sdc_family_ays_table(r->ctx->family);
        if (r->p->scheduler && *r->p->scheduler)
            s = sdc_scheduler_from_name(r->p->scheduler, &sch.scheduler);
        if (s == SDC_OK) s = sdc_schedule_sigmas(r->den, &sch, sg, &n);
    }
    if (s != SDC_OK) {
        free(sg);
        return s;
    }
    *sigmas = sg;
    *n_sigmas = n;
    return SDC_OK;
}

/* The first pass's schedule; *sigmas is malloc'd. */
static sdc_status make_schedule(const schedule_req *r, float **sigmas, int *n_sigmas) {
    const sdc_generate_params *p = r->p;
    int n = p->n_sigmas;
    if (n > 0) {
        float *sg = malloc((size_t)n * sizeof(float));
        if (!sg) return sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
        memcpy(sg, p->sigmas, (size_t)n * sizeof(float));
        *sigmas = sg;
    } else {
        sdc_status s = full_schedule((void *)r, p->steps, sigmas, &n);
        if (s != SDC_OK) return s;
    }
    if (p->init_image) n = sdc_sigmas_apply_strength(*sigmas, n, p->strength);
    *n_sigmas = n;
    return SDC_OK;
}

/* Per-request state shared by the images of a batch. */
typedef struct gen_state {
    sdc_cond cond, uncond;
    sdc_cond img_uncond; /* a view of uncond (sdc_cond.image_uncond), owned only when */
    bool img_uncond_own; /* encoded apart (diffusion.ref_img_cfg) */
    sdc_cfg_params cfg;  /* resolved: img_cfg is 1 unless set for a model with image input */
    sdc_ref_image_opts ref_opts; /* --ref-image-args resolved (has_ref_opts) */
    bool has_ref_opts;
    bool need_uncond, need_img_uncond;
    sdc_denoiser den;
    float *sigmas;
    int n_sigmas;
    sdc_latent_shape shape;
    float *x, *noise, *init, *keep; /* shape.n each (keep: one plane) */
    sdc_rng_type rng_type, sampler_rng_type;
    sdc_sample_method method;
    sdc_hires_plan *hires; /* NULL: no hires fix */
} gen_state;

static void gen_state_free(gen_state *g) {
    sdc_cond_free(&g->cond);
    sdc_cond_free(&g->uncond);
    if (g->img_uncond_own) sdc_cond_free(&g->img_uncond);
    free(g->sigmas);
    free(g->x);
    free(g->noise);
    free(g->init);
    free(g->keep);
    sdc_hires_plan_free(g->hires);
}

/* img2img: the init image's latent. A VAE posterior is sampled with the base seed's
 * first draw, the same tensor the first image's initial noise is (sd.cpp re-seeds). */
static sdc_status encode_init(sdc_context *ctx, const sdc_generate_params *p, gen_state *g,
                              uint64_t seed) {
    size_t bytes = (size_t)g->shape.n * sizeof(float);
    if (!(g->init = malloc(bytes))) return sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    sdc_rng *rng = NULL;
    sdc_status s = sdc_rng_create(g->rng_type, seed, &rng);
    if (s == SDC_OK) s = sdc_rng_randn(rng, g->noise, g->shape.n);
    sdc_rng_free(rng);
    double t0 = sdc_now_seconds();
    if (s == SDC_OK) s = sdc_stage_encode_image(ctx, p->init_image, &g->shape, g->noise, g->init);
    if (s == SDC_OK) SDC_LOGI("init image encoded in %.2fs", sdc_now_seconds() - t0);
    if (s != SDC_OK || !p->mask_image) return s;
    if (ctx->m.diffusion.sdcpp_mask)
        return sdc_inpaint_keep(ctx, p->mask_image, &g->shape, &g->keep);
    g->keep = malloc((size_t)g->shape.width * g->shape.height * sizeof(float));
    if (!g->keep) return sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    sdc_stage_mask_to_keep(p->mask_image, ctx->m.first_stage.downscale, &g->shape, g->keep);
    return SDC_OK;
}

/* --ref-image-args from the model's preset (diffusion.ref_preset); models without one
 * take none (a given value is warned about and ignored). */
static sdc_status resolve_ref_opts(const sdc_context *ctx, const sdc_generate_params *p,
                                   gen_state *g) {
    const char *preset = ctx->m.diffusion.ref_preset;
    bool given = p->ref_image_args && *p->ref_image_args;
    if (!preset) {
        if (given)
            SDC_LOGW("--ref-image-args: %s does not take reference-image arguments; ignored",
                     sdc_model_family_name(ctx->family));
        return SDC_OK;
    }
    sdc_status s = sdc_ref_image_opts_parse(p->ref_image_args, preset, &g->ref_opts);
    g->has_ref_opts = s == SDC_OK;
    return s;
}

static sdc_status prepare(sdc_context *ctx, const sdc_generate_params *p, gen_state *g,
                          uint64_t seed) {
    sdc_status s = sdc_rng_type_from_name(p->rng ? p->rng : "cuda", &g->rng_type);
    if (s != SDC_OK) return s;
    g->sampler_rng_type = g->rng_type;
    if (p->sampler_rng && *p->sampler_rng &&
        (s = sdc_rng_type_from_name(p->sampler_rng, &g->sampler_rng_type)) != SDC_OK)
        return s;
    g->method = sdc_default_sample_method(ctx->family);
    if (p->sampling_method && *p->sampling_method &&
        (s = sdc_sample_method_from_name(p->sampling_method, &g->method)) != SDC_OK)
        return s;
    schedule_req req = {ctx, p, g->method, &g->den};
    if ((s = make_denoiser(ctx, p, &g->den)) != SDC_OK ||
        (s = make_schedule(&req, &g->sigmas, &g->n_sigmas)) != SDC_OK ||
        (s = sdc_hires_plan_create(ctx, p, full_schedule, &req, &g->hires)) != SDC_OK)
        return s;
    sdc_stage_latent_shape(ctx, p->width, p->height, &g->shape);
    const sdc_diffusion *dm = &ctx->m.diffusion;
    if (dm->latent_frames) {
        g->shape.frames = dm->latent_frames(dm->self, p);
        g->shape.n *= g->shape.frames;
    }
    if ((s = resolve_ref_opts(ctx, p, g)) != SDC_OK ||
        (s = sdc_stage_set_refs(ctx, p, &g->shape, g->has_ref_opts ? &g->ref_opts : NULL)) !=
            SDC_OK)
        return s;
    if (dm->set_guidance && (s = dm->set_guidance(dm->self, p->guidance)) != SDC_OK) return s;
    size_t bytes = (size_t)g->shape.n * sizeof(float);
    g->x = malloc(bytes);
    g->noise = malloc(bytes);
    if (!g->x || !g->noise) return sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    if (p->init_image && (s = encode_init(ctx, p, g, seed)) != SDC_OK) return s;
    if (ctx->m.diffusion.set_concat && /* inpainting UNets: mask + masked image latent */
        (s = sdc_inpaint_set_concat(ctx, p->init_image, p->mask_image, &g->shape, g->rng_type,
                                    seed)) != SDC_OK)
        return s;
    sdc_cfg_params_init(&g->cfg);
    g->cfg.txt_cfg = p->cfg_scale;
    g->cfg.img_cfg = p->img_cfg_scale;
    const bool ref_cfg = ref_img_cfg(ctx, p);
    sdc_cfg_resolve(&g->cfg, dm->img_cfg || ref_cfg, &g->need_uncond, &g->need_img_uncond);
    /* reference-latent models encode the image-unconditional branch apart (no images);
     * image-input UNets read it as the unconditional branch with the image zeroed */
    g->img_uncond_own = ref_cfg && g->need_img_uncond;
    double t0 = sdc_now_seconds();
    if ((s = sdc_stage_condition(ctx, p, g->has_ref_opts ? &g->ref_opts : NULL,
                                 g->need_uncond || (g->need_img_uncond && !ref_cfg), &g->cond,
                                 &g->uncond, g->img_uncond_own ? &g->img_uncond : NULL)) != SDC_OK)
        return s;
    if (!g->img_uncond_own) {
        g->img_uncond = g->uncond;
        g->img_uncond.image_uncond = true;
    }
    SDC_LOGI("text encoded in %.2fs (%d tokens)", sdc_now_seconds() - t0, g->cond.n_tokens);
    return SDC_OK;
}

/* One item of the batch: noise from its seed, sampling, decoding into out[0..frames). */
static sdc_status generate_one(sdc_context *ctx, const sdc_generate_params *p, gen_state *g,
                               uint64_t seed, sdc_image *out) {
    sdc_rng *rng = NULL, *srng = NULL;
    sdc_status s = sdc_rng_create(g->rng_type, seed, &rng);
    if (s == SDC_OK) s = sdc_rng_randn(rng, g->noise, g->shape.n);
    if (s == SDC_OK && g->sampler_rng_type != g->rng_type)
        s = sdc_rng_create(g->sampler_rng_type, seed, &srng);
    if (s == SDC_OK) {
        /* x_T: the noise scaled for sigma_0, mixed with the init image for img2img;
         * `noise` keeps the raw draw for the inpainting blend */
        sdc_denoiser_noise_scaling(&g->den, g->sigmas[0], g->noise, g->init, g->x, g->shape.n);
        sdc_sample_job job = {.den = &g->den,
                              .sigmas = g->sigmas,
                              .n_sigmas = g->n_sigmas,
                              .cond = &g->cond,
                              .uncond = g->need_uncond ? &g->uncond : NULL,
                              .img_uncond = g->need_img_uncond ? &g->img_uncond : NULL,
                              .cfg_scale = p->cfg_scale,
                              .img_cfg_scale = g->cfg.img_cfg,
                              .width = p->width,
                              .height = p->height,
                              .shape = g->shape,
                              .method = g->method,
                              .eta = p->eta,
                              .rng = srng ? srng : rng,
                              .init = g->init,
                              .keep = g->keep,
                              .noise = g->noise,
                              .keep_x0 = ctx->m.diffusion.sdcpp_mask};
        s = sdc_stage_sample(ctx, p, &job, g->x);
    }
    float *hx = NULL; /* the hires pass's latent */
    if (s == SDC_OK && g->hires) {
        sdc_hires_job hj = {.den = &g->den,
                            .cond = &g->cond,
                            .uncond = p->cfg_scale != 1.0f ? &g->uncond : NULL,
                            .cfg_scale = p->cfg_scale,
                            .eta = p->eta,
                            .method = g->method,
                            .rng_type = g->rng_type,
                            .sampler_rng_type = g->sampler_rng_type,
                            .seed = seed,
                            .shape = g->shape};
        s = sdc_hires_run(ctx, p, g->hires, &hj, g->x, &hx);
    }
    if (s == SDC_OK) {
        double t0 = sdc_now_seconds();
        s = hx ? sdc_stage_decode(ctx, hx, sdc_hires_plan_width(g->hires),
                                  sdc_hires_plan_height(g->hires), out)
               : sdc_stage_decode_frames(ctx, g->x, &g->shape, p->width, p->height, out);
        if (s == SDC_OK) SDC_LOGI("decoded in %.2fs", sdc_now_seconds() - t0);
    }
    free(hx);
    for (int f = 0; f < g->shape.frames; f++) out[f].seed = (int64_t)seed;
    sdc_rng_free(rng);
    sdc_rng_free(srng);
    return s;
}

sdc_status sdc_generate_image(sdc_context *ctx, const sdc_generate_params *params,
                              sdc_image **images, int *count) {
    if (!images || !count) return sdc_fail(SDC_ERR_INVALID_ARG, "generate: NULL output");
    *images = NULL;
    *count = 0;
    if (!ctx || !params)
        return sdc_fail(SDC_ERR_INVALID_ARG, "generate: NULL context or parameters");
    sdc_generate_params p;
    sdc_status s = copy_params(params, &p);
    if (s != SDC_OK || (s = check_request(ctx, &p)) != SDC_OK) return s;
    atomic_store(&ctx->cancel, 0);
    gen_state g = {0};
    int64_t base_seed = p.seed < 0 ? (int64_t)random_seed() : p.seed;
    s = prepare(ctx, &p, &g, (uint64_t)base_seed);
    int per_item = g.shape.frames > 0 ? g.shape.frames : 1, total = p.batch_count * per_item;
    sdc_image *imgs = s == SDC_OK ? calloc((size_t)total, sizeof(sdc_image)) : NULL;
    if (s == SDC_OK && !imgs) s = sdc_fail(SDC_ERR_NO_MEMORY, "generate: out of memory");
    for (int b = 0; b < p.batch_count && s == SDC_OK; b++) {
        s = generate_one(ctx, &p, &g, (uint64_t)(base_seed + b), &imgs[b * per_item]);
        if (s == SDC_OK) *count = (b + 1) * per_item;
    }
    sdc_context_end_phase(ctx, SDC_MODULE_DIFFUSION); /* until the next generation */
    gen_state_free(&g);
    if (s == SDC_OK) {
        *images = imgs;
    } else {
        sdc_free_images(imgs, total);
        *count = 0;
    }
    return s;
}
