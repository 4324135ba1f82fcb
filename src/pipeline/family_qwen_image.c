/* Qwen-Image in the pipeline's roles (sd.cpp: stable-diffusion.cpp, conditioner.hpp
 * LLMEmbedder, qwen_image.hpp): the conditioner is the Qwen2.5-VL LLM over the prompt
 * template (its first 34 states dropped; the negative prompt, empty by default, is the
 * unconditional branch of true CFG), the diffusion model the MMDiT (a rectified-flow
 * velocity at t = sigma * 1000), the first stage the Wan2.1 VAE with Qwen-Image's
 * per-channel latent mean/std (latents are (z - mean) / std, 16 channels at /8).
 * Qwen-Image-Layered (sd.cpp's VERSION_QWEN_IMAGE_LAYERED) is the same with a latent of
 * layers + 1 frames, the -r image's latent appended as reference tokens (frame index -1,
 * counting down) and an RGBA VAE that decodes each frame to an image of its own.
 * Qwen-Image-Edit (sd.cpp: the same VERSION_QWEN_IMAGE, Edit mode = an LLM with its vision
 * tower + -r images) shows each -r image to the Qwen2.5-VL vision tower (its tokens spliced
 * into the Edit template, conditioner.hpp QwenImageEditPlusPipeline) and appends its
 * latent as reference tokens (frame index i + 1, counting up). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "io/model_loader.h"
#include "models/qwen25vl_llm.h"
#include "models/qwen25vl_vision.h"
#include "models/qwen_image_dit.h"
#include "models/wan_vae.h"
#include "pipeline/family.h"
#include "pipeline/model_args.h"
#include "pipeline/qwen2_tokenizer_source.h"
#include "text/qwen2_tokenizer.h"

#define PREFIX_DIT "model.diffusion_model."
#define PREFIX_LLM "text_encoders.llm."

typedef struct qwen_family {
    sdc_qwen_dit *dit;
    sdc_qwen25vl_llm *llm;
    sdc_qwen25vl_vision *vision; /* Edit; NULL when the LLM files have no visual.* */
    sdc_qwen2_tokenizer *tok;
    sdc_wan_vae *vae;
    sdc_weight_source ws;
    /* this generation's latent frames and reference latents (set_refs) */
    int frames, n_refs;
    float **refs; /* [n_refs] each [16][ref_h][ref_w] */
    int *ref_w, *ref_h;
    sdc_qwen_ref_index ref_index; /* --ref-image-args ref_index_mode (AUTO: the preset's) */
    /* this generation's vision tokens of the -r images (Edit), kept from the prompt to
     * the negative prompt, freed when conditioning ends */
    int n_vis;
    float **vis; /* [n_vis] each [vis_n[i]][llm hidden] */
    int *vis_n;
} qwen_family;

static sdc_tensor *find_weight(void *user, const char *name) {
    return sdc_loader_find((sdc_loader *)user, name);
}

static void clear_refs(qwen_family *f) {
    for (int i = 0; i < f->n_refs; i++) free(f->refs[i]);
    free(f->refs);
    free(f->ref_w);
    free(f->ref_h);
    f->refs = NULL;
    f->ref_w = f->ref_h = NULL;
    f->n_refs = 0;
}

static void clear_vision_tokens(qwen_family *f) {
    for (int i = 0; i < f->n_vis; i++) free(f->vis[i]);
    free(f->vis);
    free(f->vis_n);
    f->vis = NULL;
    f->vis_n = NULL;
    f->n_vis = 0;
}

static void cond_end_phase(void *self) {
    clear_vision_tokens(self);
}

static void family_free(void *state) {
    qwen_family *f = state;
    if (!f) return;
    clear_refs(f);
    clear_vision_tokens(f);
    sdc_qwen25vl_vision_free(f->vision);
    sdc_qwen_dit_free(f->dit);
    sdc_qwen25vl_llm_free(f->llm);
    sdc_qwen2_tokenizer_free(f->tok);
    sdc_wan_vae_free(f->vae);
    free(f);
}

/* -r image i as sd-cli reads it (RGB, floats in [0, 1]; an API image's alpha is dropped,
 * grey is repeated), at the vision tower's size (sd.cpp's AREA rule: 384^2..560^2 pixels,
 * sides multiples of 28, unless --ref-image-args says otherwise), through the tower: *tok
 * malloc'd [*n][llm hidden]. */
static sdc_status vision_tokens(qwen_family *f, const sdc_stage_env *env,
                                const sdc_ref_image_opts *ro, const sdc_image *im, int i,
                                float **tok, int *n) {
    if (!im->data || im->width == 0 || im->height == 0 || im->channels < 1 || im->channels > 4)
        return sdc_fail(SDC_ERR_INVALID_ARG, "reference image %d: no pixel data or %u channels", i,
                        im->channels);
    int w = (int)im->width, h = (int)im->height, C = (int)im->channels, tw, th;
    const sdc_qwen25vl_vision_config *vc = sdc_qwen25vl_vision_get_config(f->vision);
    sdc_qwen25vl_resize mode =
        !ro                                                  ? SDC_QWEN25VL_RESIZE_AREA
        : ro->vlm_resize_mode == SDC_VLM_RESIZE_NONE         ? SDC_QWEN25VL_RESIZE_NONE
        : ro->vlm_resize_mode == SDC_VLM_RESIZE_LONGEST_SIDE ? SDC_QWEN25VL_RESIZE_LONGEST_SIDE
                                                             : SDC_QWEN25VL_RESIZE_AREA;
    sdc_qwen25vl_vision_resize_dims(w, h, vc->patch * vc->merge, ro ? ro->vlm_min_size : 0,
                                    ro ? ro->vlm_max_size : 0, mode, &tw, &th);
    SDC_LOGI("reference image %d: %dx%d for the vision tower", i, tw, th);
    *n = sdc_qwen25vl_vision_tokens(f->vision, tw, th);
    float *rgb = malloc((size_t)w * h * 3 * sizeof(float));
    float *px = malloc((size_t)tw * th * 3 * sizeof(float));
    *tok = malloc((size_t)*n * vc->out_hidden * sizeof(float));
    sdc_status s =
        rgb && px && *tok ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "reference image: out of memory");
    for (size_t k = 0; s == SDC_OK && k < (size_t)w * h; k++)
        for (int c = 0; c < 3; c++) rgb[k * 3 + c] = im->data[k * C + (C >= 3 ? c : 0)] / 255.0f;
    if (s == SDC_OK) s = sdc_qwen25vl_vision_preprocess(rgb, w, h, tw, th, px);
    if (s == SDC_OK)
        s = sdc_qwen25vl_vision_encode(f->vision, env->backend, px, tw, th, *tok, env->eval_cb,
                                       env->eval_user);
    free(rgb);
    free(px);
    if (s != SDC_OK) {
        free(*tok);
        *tok = NULL;
    }
    return s;
}

/* Edit: the prompt in the Edit template with every -r image's vision tokens (computed
 * once per generation: the negative prompt sees the same images, as in sd.cpp). */
static sdc_status edit_encode(qwen_family *f, const sdc_stage_env *env, const sdc_cond_args *a,
                              float **ctx, int *n) {
    if (a->n_ref_images > 64)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "qwen_image edit: %d reference images (at most 64)",
                        a->n_ref_images);
    sdc_status s = SDC_OK;
    if (!f->vis) {
        f->vis = calloc((size_t)a->n_ref_images, sizeof *f->vis);
        f->vis_n = calloc((size_t)a->n_ref_images, sizeof *f->vis_n);
        if (!f->vis || !f->vis_n) {
            clear_vision_tokens(f);
            return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image edit: out of memory");
        }
        f->n_vis = a->n_ref_images;
        for (int i = 0; i < f->n_vis && s == SDC_OK; i++)
            s = vision_tokens(f, env, a->ref_opts, &a->ref_images[i], i, &f->vis[i], &f->vis_n[i]);
        if (s != SDC_OK) {
            clear_vision_tokens(f);
            return s;
        }
    }
    return sdc_qwen_image_edit_encode_prompt(
        f->llm, env->backend, f->tok, a->prompt ? a->prompt : "", f->n_vis,
        (const float *const *)f->vis, f->vis_n, true, ctx, n, env->eval_cb, env->eval_user);
}

static sdc_status cond_encode(void *self, const sdc_stage_env *env, const sdc_cond_args *a,
                              sdc_cond *out) {
    qwen_family *f = self;
    memset(out, 0, sizeof *out);
    float *ctx = NULL;
    int n = 0;
    sdc_status s =
        f->vision && a->n_ref_images > 0 && (!a->ref_opts || a->ref_opts->pass_to_vlm)
            ? edit_encode(f, env, a, &ctx, &n)
            : sdc_qwen_image_encode_prompt(f->llm, env->backend, f->tok, a->prompt ? a->prompt : "",
                                           &ctx, &n, env->eval_cb, env->eval_user);
    if (s != SDC_OK) return s;
    out->ctx = ctx;
    out->n_ctx = out->n_tokens = n;
    out->ctx_dim = sdc_qwen25vl_llm_get_config(f->llm)->hidden;
    return SDC_OK;
}

/* Layered: layers + 1 latent frames. */
static int latent_frames(void *self, const sdc_generate_params *p) {
    (void)self;
    return p->qwen_image_layers + 1;
}

static sdc_status set_refs(void *self, int frames, const float *const *refs, const int *ref_w,
                           const int *ref_h, int n_refs, const sdc_ref_image_opts *opts) {
    qwen_family *f = self;
    int C = sdc_qwen_dit_get_config(f->dit)->latent_channels;
    clear_refs(f);
    f->frames = frames;
    /* Layered always counts down (sd.cpp forces it); Edit takes the option */
    f->ref_index = !opts                                       ? SDC_QWEN_REF_AUTO
                   : opts->ref_index == SDC_REF_INDEX_FIXED    ? SDC_QWEN_REF_FIXED
                   : opts->ref_index == SDC_REF_INDEX_DECREASE ? SDC_QWEN_REF_DECREASE
                                                               : SDC_QWEN_REF_INCREASE;
    if (sdc_qwen_dit_get_config(f->dit)->layered) f->ref_index = SDC_QWEN_REF_DECREASE;
    if (n_refs <= 0) {
        if (sdc_qwen_dit_get_config(f->dit)->layered)
            SDC_LOGW("Qwen Image Layered without a reference image (-r): the layers are generated "
                     "from the prompt alone, as sd.cpp does");
        return SDC_OK;
    }
    f->refs = calloc((size_t)n_refs, sizeof *f->refs);
    f->ref_w = malloc((size_t)n_refs * sizeof *f->ref_w);
    f->ref_h = malloc((size_t)n_refs * sizeof *f->ref_h);
    if (!f->refs || !f->ref_w || !f->ref_h) {
        clear_refs(f);
        return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
    }
    f->n_refs = n_refs;
    for (int i = 0; i < n_refs; i++) {
        size_t bytes = (size_t)C * ref_w[i] * ref_h[i] * sizeof(float);
        if (!(f->refs[i] = malloc(bytes))) {
            clear_refs(f);
            return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
        }
        memcpy(f->refs[i], refs[i], bytes);
        f->ref_w[i] = ref_w[i];
        f->ref_h[i] = ref_h[i];
    }
    return SDC_OK;
}

/* One DiT evaluation per batch item: cond and uncond have different text lengths (the
 * DiT's text stream is not padded, as in sd.cpp, which runs them apart too). Both read
 * the reference latents (Layered: frame -1; Edit: frames 1, 2, ...), as in sd.cpp; the
 * image-unconditional branch of --img-cfg-scale does not. */
static sdc_status dit_forward(void *self, const sdc_stage_env *env, const float *x, int B,
                              int width, int height, float timestep, const sdc_cond *const *conds,
                              float *out) {
    qwen_family *f = self;
    const sdc_qwen_dit_config *c = sdc_qwen_dit_get_config(f->dit);
    int w = width / 8, h = height / 8, frames = c->layered && f->frames > 0 ? f->frames : 1;
    size_t n = (size_t)c->latent_channels * frames * w * h;
    sdc_qwen_dit_ref refs[8];
    if (f->n_refs > 8)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "qwen_image: %d reference images (at most 8)",
                        f->n_refs);
    for (int i = 0; i < f->n_refs; i++)
        refs[i] = (sdc_qwen_dit_ref){.x = f->refs[i], .w = f->ref_w[i], .h = f->ref_h[i]};
    for (int b = 0; b < B; b++) {
        if (conds[b]->ctx_dim != c->txt_dim)
            return sdc_fail(SDC_ERR_INTERNAL, "qwen_image: conditioning width %d, DiT reads %d",
                            conds[b]->ctx_dim, c->txt_dim);
        const int n_refs = conds[b]->image_uncond ? 0 : f->n_refs;
        sdc_qwen_dit_input in = {.x = x + b * n,
                                 .B = 1,
                                 .frames = frames,
                                 .w = w,
                                 .h = h,
                                 .t = &timestep,
                                 .ctx = conds[b]->ctx,
                                 .n_ctx = conds[b]->n_ctx,
                                 .refs = n_refs ? refs : NULL,
                                 .n_refs = n_refs,
                                 .ref_index = f->ref_index};
        sdc_status s = sdc_qwen_dit_forward(f->dit, env->backend, &in, out + b * n, env->eval_cb,
                                            env->eval_user);
        if (s != SDC_OK) return s;
    }
    return SDC_OK;
}

static sdc_status fs_encode(void *self, const sdc_stage_env *env, const float *pixels, int width,
                            int height, const float *noise, float *latent) {
    qwen_family *f = self;
    const sdc_wan_vae_config *vc = sdc_wan_vae_get_config(f->vae);
    if (!vc->has_encoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "qwen_image: the VAE file has no encoder: it cannot encode an image");
    int64_t n = (int64_t)vc->z_channels * (width / 8) * (height / 8);
    float *moments = malloc(2 * (size_t)n * sizeof(float));
    if (!moments) return sdc_fail(SDC_ERR_NO_MEMORY, "vae encode: out of memory");
    sdc_status s = sdc_wan_vae_encode(f->vae, env->backend, pixels, width, height, moments,
                                      env->eval_cb, env->eval_user);
    if (s == SDC_OK) {
        if (noise)
            sdc_wan_vae_sample(moments, noise, vc->z_channels, n / vc->z_channels, latent);
        else
            memcpy(latent, moments, (size_t)n * sizeof(float));
        sdc_wan_vae_latents_from_vae(latent, n / vc->z_channels);
    }
    free(moments);
    return s;
}

static sdc_status fs_decode(void *self, const sdc_stage_env *env, const float *latent, int width,
                            int height, float *pixels) {
    qwen_family *f = self;
    const sdc_wan_vae_config *vc = sdc_wan_vae_get_config(f->vae);
    int w = width / 8, h = height / 8;
    size_t n = (size_t)vc->z_channels * w * h;
    float *z = malloc(n * sizeof(float));
    if (!z) return sdc_fail(SDC_ERR_NO_MEMORY, "vae decode: out of memory");
    memcpy(z, latent, n * sizeof(float));
    sdc_wan_vae_latents_to_vae(z, (int64_t)w * h);
    sdc_status s =
        sdc_wan_vae_decode(f->vae, env->backend, z, w, h, pixels, env->eval_cb, env->eval_user);
    free(z);
    return s;
}

/* A Layered DiT needs the RGBA VAE and the plain DiT the RGB one: the wrong pair loads but
 * makes 3-channel layers or misreads the latents, so it is refused naming both files. */
static sdc_status check_layered_pair(const sdc_context_params *p, const sdc_qwen_dit_config *c,
                                     const sdc_wan_vae_config *vc) {
    if (c->layered == (vc->image_channels == 4)) return SDC_OK;
    const char *dit = p->diffusion_model_path ? p->diffusion_model_path : p->model_path;
    const char *vae = p->vae_path ? p->vae_path : p->model_path;
    if (c->layered)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "Qwen Image Layered: the DiT %s is Qwen-Image-Layered but the VAE %s has "
                        "%d image channels (the RGB Qwen-Image VAE); Layered needs its RGBA VAE "
                        "(Qwen-Image-Layered's vae)",
                        dit ? dit : "?", vae ? vae : "?", vc->image_channels);
    return sdc_fail(SDC_ERR_INVALID_ARG,
                    "Qwen Image: the VAE %s has %d image channels (Qwen-Image-Layered's RGBA VAE) "
                    "but the DiT %s is plain Qwen-Image; use the RGB Qwen-Image VAE, or the "
                    "Layered DiT",
                    vae ? vae : "?", vc->image_channels, dit ? dit : "?");
}

/* Edit's vision tower, where the files have one: in the --llm file (ComfyUI: visual.*;
 * transformers >= 4.52: model.visual.*) or --llm_vision (loaded under
 * text_encoders.llm.visual.). sd.cpp never builds it for Layered. */
static sdc_status load_vision(qwen_family *f) {
    if (sdc_qwen_dit_get_config(f->dit)->layered) return SDC_OK;
    const char *prefixes[] = {PREFIX_LLM, PREFIX_LLM "model.", PREFIX_LLM "visual."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        if (!sdc_qwen25vl_vision_detect(&f->ws, prefixes[i])) continue;
        sdc_status s = sdc_qwen25vl_vision_load(&f->ws, prefixes[i], 0, 0, 0, &f->vision);
        if (s != SDC_OK) return s;
        sdc_qwen25vl_vision_set_sdcpp_numerics(f->vision, true);
        const sdc_qwen25vl_vision_config *vc = sdc_qwen25vl_vision_get_config(f->vision);
        int hidden = sdc_qwen25vl_llm_get_config(f->llm)->hidden;
        if (vc->out_hidden != hidden)
            return sdc_fail(SDC_ERR_FORMAT,
                            "Qwen Image Edit: the vision tower gives %d-wide tokens, the LLM "
                            "reads %d",
                            vc->out_hidden, hidden);
        SDC_LOGI("qwen2.5-vl vision: %d blocks, hidden %d (Edit: -r images are shown to it)",
                 vc->n_layers, vc->hidden);
        return SDC_OK;
    }
    SDC_LOGI("qwen2.5-vl: no vision weights (visual.*): Qwen-Image-Edit's -r images cannot be "
             "used");
    return SDC_OK;
}

static sdc_status load_parts(qwen_family *f, const sdc_family_load_args *a) {
    const sdc_context_params *p = a->params;
    sdc_qwen_dit_options opt = {.positions = SDC_QWEN_POS_SDCPP, .ggml_numerics = true};
    opt.zero_cond_t = a->model_args && a->model_args->qwen_image_zero_cond_t;
    sdc_status s = sdc_qwen_dit_load(&f->ws, PREFIX_DIT, &opt, &f->dit);
    if (s == SDC_OK) s = sdc_qwen25vl_llm_load(&f->ws, PREFIX_LLM, 0, &f->llm);
    if (s == SDC_OK) sdc_qwen25vl_llm_set_sdcpp_numerics(f->llm, true);
    const char *vp = sdc_wan_vae_detect(&f->ws, "vae.")                 ? "vae."
                     : sdc_wan_vae_detect(&f->ws, "first_stage_model.") ? "first_stage_model."
                                                                        : NULL;
    if (s == SDC_OK && !vp)
        s = sdc_fail(SDC_ERR_INVALID_ARG,
                     "Qwen Image: no Wan VAE in the files (looked under 'vae.' and "
                     "'first_stage_model.'): pass it with --vae");
    if (s == SDC_OK) s = sdc_wan_vae_load(&f->ws, vp, &f->vae);
    if (s == SDC_OK)
        s = sdc_load_qwen2_tokenizer(a->weights, p->llm_path ? p->llm_path : p->model_path,
                                     p->llm_tokenizer_path, &f->tok);
    if (s == SDC_OK) s = load_vision(f);
    if (s != SDC_OK) return s;
    const sdc_qwen_dit_config *c = sdc_qwen_dit_get_config(f->dit);
    const sdc_qwen25vl_llm_config *lc = sdc_qwen25vl_llm_get_config(f->llm);
    const sdc_wan_vae_config *vc = sdc_wan_vae_get_config(f->vae);
    if (lc->hidden != c->txt_dim)
        return sdc_fail(SDC_ERR_FORMAT, "Qwen Image: LLM width %d does not match the DiT's %d",
                        lc->hidden, c->txt_dim);
    if (vc->z_channels != c->latent_channels || vc->z_channels != 16 || vc->scale != 8 ||
        !vc->has_decoder)
        return sdc_fail(SDC_ERR_FORMAT,
                        "Qwen Image: the VAE (%d latent channels, /%d%s) does not fit the DiT "
                        "(%d channels)",
                        vc->z_channels, vc->scale, vc->has_decoder ? "" : ", no decoder",
                        c->latent_channels);
    return check_layered_pair(p, c, vc);
}

sdc_status sdc_family_load_qwen_image(const sdc_family_load_args *a, sdc_family_modules *out) {
    memset(out, 0, sizeof *out);
    qwen_family *f = calloc(1, sizeof *f);
    if (!f) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
    f->ws.find = find_weight;
    f->ws.user = a->weights;
    sdc_status s = load_parts(f, a);
    if (s != SDC_OK) {
        family_free(f);
        return s;
    }
    const sdc_qwen_dit_config *c = sdc_qwen_dit_get_config(f->dit);
    const sdc_qwen25vl_llm_config *lc = sdc_qwen25vl_llm_get_config(f->llm);
    const sdc_wan_vae_config *vc = sdc_wan_vae_get_config(f->vae);
    out->state = f;
    out->free_state = family_free;
    out->cond = (sdc_conditioner){.self = f, .encode = cond_encode, .end_phase = cond_end_phase};
    out->diffusion = (sdc_diffusion){.self = f,
                                     .prediction = SDC_PRED_SD3_FLOW,
                                     .size_multiple = 8 * c->patch,
                                     .latent_frames = c->layered ? latent_frames : NULL,
                                     .ref_size_multiple = c->layered || f->vision ? 32 : 0,
                                     .set_refs = c->layered || f->vision ? set_refs : NULL,
                                     .ref_img_cfg = c->layered || f->vision,
                                     .ref_preset = c->layered ? "qwen_layered" : "qwen",
                                     .forward = dit_forward};
    out->first_stage = (sdc_first_stage){.self = f,
                                         .channels = vc->z_channels,
                                         .downscale = vc->scale,
                                         .image_channels = vc->image_channels,
                                         .encode = fs_encode,
                                         .decode = fs_decode};
    snprintf(out->summary, sizeof out->summary,
             "qwen_image%s%s: %d layers, hidden %d (%d x %d), patch %d; llm: %d layers, hidden "
             "%d%s; wan vae: base %d, %d image channels",
             c->layered ? " (Layered: RGBA layers of the -r image)" : "",
             c->zero_cond_t ? " (zero_cond_t: Edit 2511)" : "", c->n_layers, c->hidden, c->heads,
             c->head_dim, c->patch, lc->n_layers, lc->hidden,
             f->vision ? " + vision (Edit: -r images)" : "", vc->base_dim, vc->image_channels);
    return SDC_OK;
}
