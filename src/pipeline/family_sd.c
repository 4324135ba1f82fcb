/* Stable Diffusion 1.x, 2.x and SDXL in the pipeline's roles: the conditioner is one or
 * two CLIP text encoders (sd.cpp's prompt syntax: emphasis, BREAK, 77-token chunks,
 * textual inversion), the diffusion model is the LDM UNet (eps or v, the checkpoint's own
 * alphas_cumprod), the first stage the AutoencoderKL (tiled on request) or TAESD. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "io/model_loader.h"
#include "models/clip_text.h"
#include "models/lora.h"
#include "models/taesd.h"
#include "models/unet.h"
#include "models/vae_kl.h"
#include "models/vae_tiling.h"
#include "pipeline/clip_tokenizer_source.h"
#include "pipeline/family.h"
#include "pipeline/sd_inpaint.h"
#include "text/clip_prompt.h"
#include "text/clip_tokenizer.h"

#define P_UNET     "model.diffusion_model."
#define CLIP_CHUNK 77

typedef struct sd_clip {
    sdc_clip_text *model;
    sdc_clip_tokenizer *tok;
    int32_t pad_id;   /* what chunks are padded with */
    bool final_ln;    /* hidden states through the final layer norm */
    int default_skip; /* clip skip when --clip-skip is not given */
    bool pooled;      /* this encoder gives the pooled vector (SDXL: clip_g) */
    bool zero_after_eos;
} sd_clip;

typedef struct sd_family {
    sdc_model_family fam;
    sdc_loader *weights;
    sdc_weight_source ws;
    sdc_unet *unet;
    sd_clip clip[2];
    int n_clip;
    int ctx_dim;    /* the encoders' widths together (SDXL: 768 + 1280) */
    int pooled_dim; /* 0: no pooled vector */
    int adm;        /* UNet vector input width (SDXL 2816), 0: none */
    sdc_vae *vae;
    sdc_taesd *taesd;
    bool decode_with_taesd;
    float scale; /* diffusion latent = scale * VAE latent */
    float *alphas;
    int n_alphas;
    const char *embd_dir;
    int n_threads;
    /* LoRA (<lora:name:w> in prompts, from --lora-model-dir); NULL dir: tags stay text */
    sdc_lora_state *lora;
    const char *lora_dir;
    sdc_lora_mode lora_mode;
    /* VAE tiling as sd-cli's flags ask */
    bool tiling_on;
    const char *tile_size, *tile_relative;
    float tile_overlap;
    /* the CFG batch's contexts [2][n_ctx][ctx_dim], and which conds they hold */
    float *batch_ctx, *batch_y;
    size_t batch_n, batch_len[2];
    const float *batch_src[2];
    /* inpainting (9-channel) and InstructPix2Pix (8-channel) UNets: the extra input
     * [n_concat][h][w] of this generation, and the model input x | concat it is joined
     * into; the image-unconditional pass (--img-cfg-scale) zeroes its image latent, the
     * channels from concat_image on (inpainting keeps the mask, channel 0) */
    float *concat, *xcat;
    int n_concat, concat_w, concat_h, concat_image;
    size_t xcat_n;
    bool pix2pix; /* SD 1.x InstructPix2Pix: the VAE's mean, unscaled, as sd.cpp encodes */
    float *ref;   /* pix2pix: the -r image's latent [4][ref_h][ref_w] */
    int ref_w, ref_h;
} sd_family;

static sdc_tensor *find_weight(void *user, const char *name) {
    return sdc_loader_find((sdc_loader *)user, name);
}

static void family_free(void *state) {
    sd_family *f = state;
    if (!f) return;
    for (int i = 0; i < 2; i++) {
        sdc_clip_text_free(f->clip[i].model);
        sdc_clip_tokenizer_free(f->clip[i].tok);
    }
    sdc_unet_free(f->unet);
    sdc_vae_free(f->vae);
    sdc_taesd_free(f->taesd);
    free(f->alphas);
    free(f->batch_ctx);
    free(f->batch_y);
    free(f->concat);
    free(f->xcat);
    free(f->ref);
    sdc_lora_state_free(f->lora); /* after the models: their weight copies point into it */
    free(f);
}

/* ---- conditioner ---- */

/* One chunk of ids through every encoder: hidden [77][ctx_dim] (the encoders' widths
 * side by side), pooled (SDXL: clip_g's, NULL when not wanted). */
static sdc_status encode_chunk(sd_family *f, const sdc_stage_env *env, const int32_t *ids,
                               int clip_skip, sdc_clip_embedding *const *embd, const int *n_embd,
                               float *hidden, float *pooled) {
    int off = 0;
    float *tmp = NULL;
    sdc_status s = SDC_OK;
    for (int e = 0; e < f->n_clip && s == SDC_OK; e++) {
        const sd_clip *c = &f->clip[e];
        const sdc_clip_text_config *cc = sdc_clip_text_get_config(c->model);
        int skip = clip_skip > 0 ? clip_skip : c->default_skip;
        if (skip > cc->n_layers) skip = cc->n_layers;
        float *extra = NULL;
        int n_extra = n_embd[e], rows = 0;
        for (int k = 0; k < n_embd[e]; k++) rows += embd[e][k].n_vectors;
        if (rows) {
            extra = malloc((size_t)rows * cc->hidden * sizeof(float));
            if (!extra) return sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
            size_t at = 0;
            for (int k = 0; k < n_embd[e]; k++) {
                size_t m = (size_t)embd[e][k].n_vectors * cc->hidden;
                memcpy(extra + at, embd[e][k].data, m * sizeof(float));
                at += m;
            }
            n_extra = rows;
        }
        tmp = realloc(tmp, (size_t)CLIP_CHUNK * cc->hidden * sizeof(float));
        if (!tmp) {
            free(extra);
            return sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
        }
        int32_t cid[CLIP_CHUNK];
        memcpy(cid, ids, sizeof cid);
        if (c->zero_after_eos) /* SDXL's clip_g reads 0s after the first EOS (sd.cpp) */
            sdc_clip_chunk_zero_after_eos(cid, CLIP_CHUNK, sdc_clip_tokenizer_eos(c->tok), 0);
        s = sdc_clip_text_encode(c->model, env->backend, cid, CLIP_CHUNK, skip, c->final_ln, extra,
                                 n_extra, tmp, c->pooled && pooled ? pooled : NULL, env->eval_cb,
                                 env->eval_user);
        free(extra);
        for (int r = 0; r < CLIP_CHUNK && s == SDC_OK; r++)
            memcpy(hidden + (size_t)r * f->ctx_dim + off, tmp + (size_t)r * cc->hidden,
                   (size_t)cc->hidden * sizeof(float));
        off += cc->hidden;
    }
    free(tmp);
    return s;
}

/* LDM's sinusoidal embedding of one scalar: [cos(t f_i) | sin(t f_i)], dim values. */
static void size_embedding(float t, int dim, float *out) {
    int half = dim / 2;
    for (int i = 0; i < half; i++) {
        float freq = (float)exp(-log(10000.0) * i / half); /* sd.cpp: in double */
        out[i] = cosf(t * freq);
        out[half + i] = sinf(t * freq);
    }
}

/* SDXL's vector input: pooled text, then original size, crop and target size. */
static void sdxl_vector(const float *pooled, int n_pooled, int width, int height, float *y) {
    memcpy(y, pooled, (size_t)n_pooled * sizeof(float));
    float v[6] = {(float)height, (float)width, 0.0f, 0.0f, (float)height, (float)width};
    for (int i = 0; i < 6; i++) size_embedding(v[i], 256, y + n_pooled + 256 * i);
}

static sdc_status load_embeddings(sd_family *f, const char *prompt, sdc_clip_embedding **embd,
                                  int *n_embd) {
    for (int e = 0; e < f->n_clip; e++) {
        embd[e] = NULL;
        n_embd[e] = 0;
    }
    if (!f->embd_dir) return SDC_OK;
    for (int e = 0; e < f->n_clip; e++) {
        const sdc_clip_text_config *cc = sdc_clip_text_get_config(f->clip[e].model);
        const char *key = f->n_clip == 2 ? (e == 0 ? "clip_l" : "clip_g") : NULL;
        sdc_status s =
            sdc_clip_embeddings_load(f->embd_dir, prompt, cc->hidden, key, &embd[e], &n_embd[e]);
        if (s != SDC_OK) return s;
    }
    return SDC_OK;
}

static sdc_status cond_encode(void *self, const sdc_stage_env *env, const sdc_cond_args *a,
                              sdc_cond *out) {
    sd_family *f = self;
    memset(out, 0, sizeof *out);
    f->batch_src[0] = f->batch_src[1] = NULL; /* a new generation: the batch cache is stale */
    char *clean = NULL;
    sdc_prompt_lora *loras = NULL;
    int n_loras = 0;
    sdc_status s = SDC_OK;
    if (f->lora_dir) /* as sd.cpp: tags are LoRAs only with a LoRA folder */
        s = sdc_prompt_extract_loras(a->prompt, &clean, &loras, &n_loras);
    else if (!(clean = strdup(a->prompt)))
        s = sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
    if (s != SDC_OK) return s;
    if (f->lora_dir && !a->uncond) { /* the prompt's LoRAs, for the text encoder and UNet */
        sdc_lora_request *req = n_loras ? calloc((size_t)n_loras, sizeof *req) : NULL;
        for (int i = 0; req && i < n_loras; i++)
            req[i] = (sdc_lora_request){loras[i].name, loras[i].weight};
        s = n_loras && !req ? sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory")
                            : sdc_lora_set_active(f->lora, f->lora_dir, req, n_loras, f->lora_mode);
        free(req);
    }
    sdc_prompt_loras_free(loras, n_loras);
    if (s != SDC_OK) {
        free(clean);
        return s;
    }
    sdc_clip_embedding *embd[2] = {NULL, NULL};
    int n_embd[2] = {0, 0};
    sdc_clip_tokens tk = {0};
    s = load_embeddings(f, clean, embd, n_embd);
    if (s == SDC_OK)
        s = sdc_clip_prompt_tokens(f->clip[0].tok, clean, f->clip[0].pad_id, embd[0], n_embd[0],
                                   &tk);
    /* sd.cpp: an empty SDXL negative prompt gives zero hidden states, but its pooled vector
     * is still clip_g's output for "" */
    bool zero = f->fam == SDC_FAMILY_SDXL && a->uncond && !*clean;
    float *pooled = NULL;
    if (s == SDC_OK) {
        out->n_ctx = tk.n_chunks * CLIP_CHUNK;
        out->ctx_dim = f->ctx_dim;
        out->n_tokens = tk.n_tokens;
        out->ctx = calloc((size_t)out->n_ctx * f->ctx_dim, sizeof(float));
        if (f->pooled_dim) pooled = calloc((size_t)f->pooled_dim, sizeof(float));
        if (!out->ctx || (f->pooled_dim && !pooled))
            s = sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
    }
    for (int k = 0; k < tk.n_chunks && s == SDC_OK; k++) {
        float *h = out->ctx + (size_t)k * CLIP_CHUNK * f->ctx_dim;
        s = encode_chunk(f, env, tk.ids + k * CLIP_CHUNK, a->clip_skip, embd, n_embd, h,
                         k == 0 ? pooled : NULL);
        if (s == SDC_OK)
            sdc_clip_apply_weights(h, CLIP_CHUNK, f->ctx_dim, tk.weights + k * CLIP_CHUNK);
        if (s == SDC_OK && zero) memset(h, 0, (size_t)CLIP_CHUNK * f->ctx_dim * sizeof(float));
    }
    if (s == SDC_OK && f->adm) {
        out->n_pooled = f->adm;
        out->pooled = malloc((size_t)f->adm * sizeof(float));
        if (!out->pooled)
            s = sdc_fail(SDC_ERR_NO_MEMORY, "conditioning: out of memory");
        else
            sdxl_vector(pooled, f->pooled_dim, a->width, a->height, out->pooled);
    }
    free(pooled);
    for (int e = 0; e < 2; e++) sdc_clip_embeddings_free(embd[e], n_embd[e]);
    sdc_clip_tokens_free(&tk);
    free(clean);
    if (s != SDC_OK) sdc_cond_free(out);
    return s;
}

/* ---- diffusion ---- */

static sdc_status set_concat(void *self, const float *concat, int w, int h) {
    sd_family *f = self;
    size_t n = (size_t)f->n_concat * w * h;
    float *c = malloc(n * sizeof(float));
    if (!c) return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    memcpy(c, concat, n * sizeof(float));
    free(f->concat);
    f->concat = c;
    f->concat_w = w;
    f->concat_h = h;
    return SDC_OK;
}

/* InstructPix2Pix: the first reference image's latent (-r, encoded by stage_refs as sd.cpp
 * does), resized to the output's latent by nearest neighbour as sd::ops::interpolate. */
static sdc_status set_refs(void *self, int frames, const float *const *refs, const int *ref_w,
                           const int *ref_h, int n_refs, const sdc_ref_image_opts *opts) {
    sd_family *f = self;
    (void)frames, (void)opts;
    if (n_refs < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "%s InstructPix2Pix UNet: give the image to edit with -r/--ref-image "
                        "(sd.cpp would edit a black image)",
                        sdc_model_family_name(f->fam));
    if (n_refs > 1) SDC_LOGW("InstructPix2Pix reads the first reference image only");
    size_t n = (size_t)4 * ref_w[0] * ref_h[0];
    float *c = malloc(n * sizeof(float));
    if (!c) return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    memcpy(c, refs[0], n * sizeof(float));
    free(f->ref);
    f->ref = c;
    free(f->concat); /* made at the output's latent size by the first forward */
    f->concat = NULL;
    f->ref_w = ref_w[0];
    f->ref_h = ref_h[0];
    return SDC_OK;
}

/* The reference latent at the output's latent size w x h (once per generation). */
static sdc_status fit_ref(sd_family *f, int w, int h) {
    /* made once; another size later (the hires pass) is refused by join_concat */
    if (!f->pix2pix || !f->ref || f->concat) return SDC_OK;
    size_t plane = (size_t)w * h;
    float *c = malloc(4 * plane * sizeof(float));
    if (!c) return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    for (int ch = 0; ch < 4; ch++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                int sy = (int)((int64_t)y * f->ref_h / h), sx = (int)((int64_t)x * f->ref_w / w);
                c[ch * plane + (size_t)y * w + x] =
                    f->ref[((size_t)ch * f->ref_h + sy) * f->ref_w + sx];
            }
    f->concat = c;
    f->concat_w = w, f->concat_h = h;
    return SDC_OK;
}

/* Inpainting and pix2pix UNets read [x | concat] per batch item (sd.cpp concatenates
 * c_concat after x on the channel axis, the same for the cond and uncond passes; the
 * image-unconditional pass gets its image latent zeroed). */
static sdc_status join_concat(sd_family *f, const float *x, int B, int w, int h,
                              const sdc_cond *const *conds, const float **xin) {
    if (!f->n_concat) {
        *xin = x;
        return SDC_OK;
    }
    if (!f->concat || f->concat_w != w || f->concat_h != h)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s inpainting UNet: no mask/masked-image input for a %dx%d latent (the "
                        "hires fix is not supported with this model)",
                        sdc_model_family_name(f->fam), w, h);
    size_t plane = (size_t)w * h, nx = (size_t)(4 + f->n_concat) * plane * B;
    if (f->xcat_n < nx) {
        free(f->xcat);
        if (!(f->xcat = malloc(nx * sizeof(float))))
            return f->xcat_n = 0, sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
        f->xcat_n = nx;
    }
    sdc_inpaint_join(x, 4, f->concat, f->n_concat, B, plane, f->xcat);
    for (int b = 0; b < B; b++)
        if (conds[b]->image_uncond)
            memset(f->xcat + ((size_t)b * (4 + f->n_concat) + 4 + f->concat_image) * plane, 0,
                   (size_t)(f->n_concat - f->concat_image) * plane * sizeof(float));
    *xin = f->xcat;
    return SDC_OK;
}

/* LCM-distilled UNets: --guidance G feeds the w embedding of G - 1 (diffusers'
 * LatentConsistencyModelPipeline); without it the term is left out, as sd.cpp does. */
static sdc_status set_guidance(void *self, float guidance) {
    sd_family *f = self;
    if (!isfinite(guidance)) return sdc_unet_set_time_cond(f->unet, NULL);
    int d = sdc_unet_get_config(f->unet)->time_cond_proj_dim;
    float *e = malloc((size_t)d * sizeof(float));
    if (!e) return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    sdc_unet_guidance_embedding(guidance - 1.0f, d, e);
    sdc_status s = sdc_unet_set_time_cond(f->unet, e);
    free(e);
    return s;
}

static sdc_status unet_forward(void *self, const sdc_stage_env *env, const float *x, int B,
                               int width, int height, float timestep, const sdc_cond *const *conds,
                               float *out) {
    sd_family *f = self;
    const sdc_unet_config *uc = sdc_unet_get_config(f->unet);
    int w = width / 8, h = height / 8;
    size_t plane_in = (size_t)uc->in_channels * w * h, plane_out = (size_t)uc->out_channels * w * h;
    sdc_status js = fit_ref(f, w, h);
    if (js == SDC_OK) js = join_concat(f, x, B, w, h, conds, &x);
    if (js != SDC_OK) return js;
    for (int b = 0; b < B; b++)
        if (conds[b]->ctx_dim != uc->context_dim ||
            (uc->adm_in_channels && conds[b]->n_pooled != uc->adm_in_channels))
            return sdc_fail(SDC_ERR_INTERNAL, "sd: conditioning %dx%d does not fit the UNet",
                            conds[b]->n_ctx, conds[b]->ctx_dim);
    float t[2] = {timestep, timestep};
    if (B == 2 && conds[0]->n_ctx == conds[1]->n_ctx) { /* one batch of 2 */
        size_t n = (size_t)conds[0]->n_ctx * uc->context_dim;
        if (f->batch_n < n) {
            free(f->batch_ctx);
            f->batch_src[0] = f->batch_src[1] = NULL;
            if (!(f->batch_ctx = malloc(2 * n * sizeof(float))))
                return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
            f->batch_n = n;
        }
        for (int b = 0; b < 2; b++) {
            if (f->batch_src[b] != conds[b]->ctx || f->batch_len[b] != n) {
                memcpy(f->batch_ctx + b * n, conds[b]->ctx, n * sizeof(float));
                f->batch_src[b] = conds[b]->ctx;
                f->batch_len[b] = n;
            }
            if (uc->adm_in_channels)
                memcpy(f->batch_y + (size_t)b * uc->adm_in_channels, conds[b]->pooled,
                       (size_t)uc->adm_in_channels * sizeof(float));
        }
        return sdc_unet_forward(f->unet, env->backend, x, 2, w, h, t, f->batch_ctx, conds[0]->n_ctx,
                                uc->adm_in_channels ? f->batch_y : NULL, out, env->eval_cb,
                                env->eval_user);
    }
    for (int b = 0; b < B; b++) {
        sdc_status s = sdc_unet_forward(f->unet, env->backend, x + b * plane_in, 1, w, h, t,
                                        conds[b]->ctx, conds[b]->n_ctx, conds[b]->pooled,
                                        out + b * plane_out, env->eval_cb, env->eval_user);
        if (s != SDC_OK) return s;
    }
    return SDC_OK;
}

/* ---- first stage ---- */

typedef struct tile_job {
    sd_family *f;
    const sdc_stage_env *env;
    bool decode;
} tile_job;

static sdc_status tile_run(void *user, const float *in, int tw, int th, float *out) {
    tile_job *j = user;
    if (j->decode)
        return sdc_vae_decode(j->f->vae, j->env->backend, in, tw, th, out, j->env->eval_cb,
                              j->env->eval_user);
    return sdc_vae_encode(j->f->vae, j->env->backend, in, tw, th, out, j->env->eval_cb,
                          j->env->eval_user);
}

static sdc_status vae_run(sd_family *f, const sdc_stage_env *env, bool decode, const float *in,
                          int w, int h, float *out) {
    const sdc_vae_config *vc = sdc_vae_get_config(f->vae);
    tile_job j = {f, env, decode};
    sdc_tiling t;
    /* tile sizes count latent cells, also when encoding pixels (sd.cpp doubles them there) */
    int lw = decode ? w : w / 8, lh = decode ? h : h / 8;
    sdc_status s = sdc_tiling_from_flags_ex(f->tile_size, f->tile_relative, f->tile_overlap,
                                            decode ? 1.0f : 2.0f, lw, lh, &t);
    if (!f->tiling_on) /* whole, and tiled once more if that runs out of memory */
        return sdc_tiled_retry(in, decode ? vc->z_channels : 3, w, h,
                               decode ? 3 : 2 * vc->z_channels, decode ? 8 : 1, decode ? 1 : 8,
                               s == SDC_OK ? &t : NULL, tile_run, &j, out,
                               decode ? "vae decode" : "vae encode");
    if (s != SDC_OK) return s;
    return sdc_tiled_apply(in, decode ? vc->z_channels : 3, w, h, decode ? 3 : 2 * vc->z_channels,
                           decode ? 8 : 1, decode ? 1 : 8, &t, tile_run, &j, out);
}

static sdc_status fs_encode(void *self, const sdc_stage_env *env, const float *pixels, int width,
                            int height, const float *noise, float *latent) {
    sd_family *f = self;
    int w = width / 8, h = height / 8;
    size_t plane = (size_t)w * h;
    if (!f->vae)
        return sdc_taesd_encode(f->taesd, env->backend, pixels, width, height, latent, env->eval_cb,
                                env->eval_user);
    const sdc_vae_config *vc = sdc_vae_get_config(f->vae);
    float *moments = malloc(2 * (size_t)vc->z_channels * plane * sizeof(float));
    if (!moments) return sdc_fail(SDC_ERR_NO_MEMORY, "vae encode: out of memory");
    sdc_status s = vae_run(f, env, false, pixels, width, height, moments);
    for (size_t i = 0; s == SDC_OK && i < (size_t)vc->z_channels * plane; i++) {
        float mean = moments[i], logvar = moments[(size_t)vc->z_channels * plane + i];
        logvar = logvar < -30.0f ? -30.0f : logvar > 20.0f ? 20.0f : logvar;
        float z = noise && !f->pix2pix ? mean + expf(0.5f * logvar) * noise[i] : mean;
        latent[i] = f->pix2pix ? z : z * f->scale;
    }
    free(moments);
    return s;
}

static sdc_status fs_decode(void *self, const sdc_stage_env *env, const float *latent, int width,
                            int height, float *pixels) {
    sd_family *f = self;
    int w = width / 8, h = height / 8;
    if (f->taesd && (!f->vae || f->decode_with_taesd))
        return sdc_taesd_decode(f->taesd, env->backend, latent, w, h, pixels, env->eval_cb,
                                env->eval_user);
    size_t n = (size_t)sdc_vae_get_config(f->vae)->z_channels * w * h;
    float *z = malloc(n * sizeof(float));
    if (!z) return sdc_fail(SDC_ERR_NO_MEMORY, "vae decode: out of memory");
    for (size_t i = 0; i < n; i++) z[i] = latent[i] / f->scale;
    sdc_status s = vae_run(f, env, true, z, w, h, pixels);
    free(z);
    return s;
}

/* sd.cpp's latent-to-RGB projections (latent-preview.h): rgb = latent . P + b. */
static const float k_sd_proj[4][3] = {{0.337366f, 0.216344f, 0.257386f},
                                      {0.165636f, 0.386828f, 0.046994f},
                                      {-0.267803f, 0.237036f, 0.223517f},
                                      {-0.178022f, -0.200862f, -0.678514f}};
static const float k_sd_bias[3] = {-0.017478f, -0.055834f, -0.105825f};
static const float k_sdxl_proj[4][3] = {{0.258303f, 0.277640f, 0.329699f},
                                        {-0.299701f, 0.105446f, 0.014194f},
                                        {0.050522f, 0.186163f, -0.143257f},
                                        {-0.211938f, -0.149892f, -0.080036f}};
static const float k_sdxl_bias[3] = {0.144381f, -0.033313f, 0.007061f};

static sdc_status fs_preview(void *self, const sdc_stage_env *env, const float *latent, int width,
                             int height, sdc_image *out) {
    sd_family *f = self;
    int w = width / 8, h = height / 8;
    bool tae = f->taesd != NULL;
    int ow = tae ? width : w, oh = tae ? height : h;
    size_t plane = (size_t)ow * oh;
    float *rgb = malloc(3 * plane * sizeof(float));
    out->data = malloc(3 * plane);
    if (!rgb || !out->data) {
        free(rgb);
        return sdc_fail(SDC_ERR_NO_MEMORY, "preview: out of memory");
    }
    sdc_status s = SDC_OK;
    if (tae) {
        s = sdc_taesd_decode(f->taesd, env->backend, latent, w, h, rgb, NULL, NULL);
    } else {
        const float(*P)[3] = f->fam == SDC_FAMILY_SDXL ? k_sdxl_proj : k_sd_proj;
        const float *b = f->fam == SDC_FAMILY_SDXL ? k_sdxl_bias : k_sd_bias;
        for (size_t i = 0; i < plane; i++)
            for (int k = 0; k < 3; k++) {
                float v = b[k];
                for (int c = 0; c < 4; c++) v += latent[c * plane + i] * P[c][k];
                rgb[k * plane + i] = v;
            }
    }
    for (size_t i = 0; s == SDC_OK && i < plane; i++)
        for (int k = 0; k < 3; k++) {
            float v = rgb[k * plane + i] * 0.5f + 0.5f;
            v = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            out->data[i * 3 + k] = (uint8_t)(v * 255.0f);
        }
    out->width = (uint32_t)ow;
    out->height = (uint32_t)oh;
    out->channels = 3;
    free(rgb);
    return s;
}

/* ---- loading ---- */

/* The first prefix that holds a CLIP text model, NULL if none does. */
static const char *find_clip(const sdc_weight_source *ws, const char *const *prefixes) {
    for (int i = 0; prefixes[i]; i++)
        if (sdc_clip_text_detect(ws, prefixes[i])) return prefixes[i];
    return NULL;
}

static sdc_status load_clip(sd_family *f, const sdc_family_load_args *a, int e,
                            const char *const *prefixes, const char *what) {
    const char *prefix = find_clip(&f->ws, prefixes);
    if (!prefix)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: no %s text encoder in the files (looked under '%s'%s%s...): "
                        "pass it with --%s",
                        sdc_model_family_name(f->fam), what, prefixes[0], prefixes[1] ? ", '" : "",
                        prefixes[1] ? prefixes[1] : "", e == 0 ? "clip_l" : "clip_g");
    sd_clip *c = &f->clip[e];
    sdc_status s = sdc_clip_text_load(&f->ws, prefix, &c->model);
    const sdc_context_params *p = a->params;
    if (s == SDC_OK) {
        const char *near = e == 0 && p->clip_l_path   ? p->clip_l_path
                           : e == 1 && p->clip_g_path ? p->clip_g_path
                                                      : p->model_path;
        s = sdc_load_clip_tokenizer(a->weights, near, p->clip_tokenizer_path, e, &c->tok);
    }
    f->n_clip = e + 1;
    return s;
}

/* sd.cpp's per-family CLIP setup (conditioner.hpp): SD1 reads the last layer through the
 * final norm; SD2 the penultimate layer through it; SDXL the penultimate layer of both
 * encoders without it, and the pooled output of the second. */
static sdc_status load_text(sd_family *f, const sdc_family_load_args *a) {
    static const char *const l_sd1[] = {"text_encoders.clip_l.transformer.",
                                        "cond_stage_model.transformer.", NULL};
    static const char *const l_sd2[] = {"text_encoders.clip_l.transformer.",
                                        "cond_stage_model.model.", "cond_stage_model.transformer.",
                                        NULL};
    static const char *const l_xl[] = {"text_encoders.clip_l.transformer.",
                                       "conditioner.embedders.0.transformer.",
                                       "cond_stage_model.transformer.", NULL};
    static const char *const g_xl[] = {
        "text_encoders.clip_g.transformer.", "conditioner.embedders.1.model.",
        "conditioner.embedders.1.transformer.", "cond_stage_model.1.transformer.", NULL};
    sdc_status s;
    switch (f->fam) {
    case SDC_FAMILY_SD1:
        s = load_clip(f, a, 0, l_sd1, "CLIP ViT-L/14");
        f->clip[0] = (sd_clip){f->clip[0].model, f->clip[0].tok, 49407, true, 1, false, false};
        break;
    case SDC_FAMILY_SD2:
        s = load_clip(f, a, 0, l_sd2, "OpenCLIP ViT-H/14");
        f->clip[0] = (sd_clip){f->clip[0].model, f->clip[0].tok, 0, true, 2, false, false};
        break;
    default:
        s = load_clip(f, a, 0, l_xl, "CLIP ViT-L/14");
        if (s == SDC_OK) s = load_clip(f, a, 1, g_xl, "OpenCLIP ViT-bigG/14");
        f->clip[0] = (sd_clip){f->clip[0].model, f->clip[0].tok, 49407, false, 2, false, false};
        f->clip[1] = (sd_clip){f->clip[1].model, f->clip[1].tok, 49407, false, 2, true, true};
        break;
    }
    if (s != SDC_OK) return s;
    for (int e = 0; e < f->n_clip; e++) {
        const sdc_clip_text_config *cc = sdc_clip_text_get_config(f->clip[e].model);
        f->ctx_dim += cc->hidden;
        if (f->clip[e].pooled) f->pooled_dim = cc->proj_dim ? cc->proj_dim : cc->hidden;
    }
    return SDC_OK;
}

static sdc_status load_first_stage(sd_family *f, const sdc_family_load_args *a) {
    const sdc_context_params *p = a->params;
    const char *vp = sdc_vae_detect(&f->ws, "vae.")                 ? "vae."
                     : sdc_vae_detect(&f->ws, "first_stage_model.") ? "first_stage_model."
                                                                    : NULL;
    sdc_status s = SDC_OK;
    if (vp) s = sdc_vae_load(&f->ws, vp, &f->vae);
    if (s == SDC_OK && p->taesd_path) s = sdc_taesd_load(&f->ws, "tae.", &f->taesd);
    if (s == SDC_OK && !f->vae && !f->taesd)
        s = sdc_fail(SDC_ERR_FORMAT,
                     "%s: no VAE in the files (looked under 'vae.' and 'first_stage_model.'): "
                     "pass it with --vae (or --taesd)",
                     sdc_model_family_name(f->fam));
    f->decode_with_taesd = f->taesd != NULL && !p->taesd_preview_only;
    f->tiling_on = p->vae_tiling;
    f->tile_size = p->vae_tile_size;
    f->tile_relative = p->vae_relative_tile_size;
    f->tile_overlap = isfinite(p->vae_tile_overlap) ? p->vae_tile_overlap : 0.5f;
    return s;
}

/* The training schedule the checkpoint carries (LDM's register_schedule buffers). */
static sdc_status load_alphas(sd_family *f) {
    sdc_tensor *t = sdc_loader_find(f->weights, "alphas_cumprod");
    if (!t) return SDC_OK;
    int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if (n < 2 || n > 100000) return SDC_OK;
    if (!(f->alphas = malloc((size_t)n * sizeof(float))))
        return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    sdc_status s = sdc_weight_to_f32(t, f->alphas);
    for (int64_t i = 0; s == SDC_OK && i < n; i++)
        if (!(f->alphas[i] > 0.0f && f->alphas[i] <= 1.0f)) {
            SDC_LOGW("alphas_cumprod in the checkpoint has value %g at %lld: using the "
                     "standard schedule instead",
                     (double)f->alphas[i], (long long)i);
            free(f->alphas);
            f->alphas = NULL;
            return SDC_OK;
        }
    f->n_alphas = (int)n;
    return s;
}

/* sd.cpp tells SD2's v models (768-v) from eps ones (512-base) by probing the UNet: at
 * t = 999 on a constant latent, a v model's output lies well below its input. */
static sdc_status probe_v(sd_family *f, bool *is_v) {
    const sdc_unet_config *uc = sdc_unet_get_config(f->unet);
    enum { W = 8, H = 8, N_CTX = 2 };
    size_t nx = (size_t)uc->in_channels * W * H, no = (size_t)uc->out_channels * W * H;
    float *x = malloc(nx * sizeof(float)), *o = malloc(no * sizeof(float));
    float *c = malloc((size_t)N_CTX * uc->context_dim * sizeof(float));
    sdc_backend *be = x && o && c ? sdc_backend_cpu_create(f->n_threads) : NULL;
    sdc_status s = be ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    if (s == SDC_OK) {
        for (size_t i = 0; i < nx; i++) x[i] = i < (size_t)4 * W * H ? 0.5f : 0.0f; /* concat 0 */
        for (size_t i = 0; i < (size_t)N_CTX * uc->context_dim; i++) c[i] = 0.5f;
        float t = 999.0f;
        s = sdc_unet_forward(f->unet, be, x, 1, W, H, &t, c, N_CTX, NULL, o, NULL, NULL);
    }
    double sum = 0;
    for (size_t i = 0; s == SDC_OK && i < no; i++) sum += (double)o[i] - (double)x[i % nx];
    *is_v = s == SDC_OK && sum / (double)no < -1.0;
    sdc_backend_free(be);
    free(x), free(o), free(c);
    return s;
}

static sdc_status choose_prediction(sd_family *f, const sdc_context_params *p,
                                    sdc_prediction *pred) {
    if (p->prediction && *p->prediction) return sdc_prediction_from_name(p->prediction, pred);
    *pred = SDC_PRED_EPS;
    if (sdc_loader_find(f->weights, "edm_vpred.sigma_max"))
        *pred = SDC_PRED_EDM_V;
    else if (sdc_loader_find(f->weights, "v_pred"))
        *pred = SDC_PRED_V;
    else if (f->fam == SDC_FAMILY_SD2) {
        bool v = false;
        sdc_status s = probe_v(f, &v);
        if (s != SDC_OK) return s;
        if (v) *pred = SDC_PRED_V;
    }
    return SDC_OK;
}

static sdc_status load_sd(const sdc_family_load_args *a, sdc_model_family fam,
                          sdc_family_modules *out) {
    sdc_prediction pred = SDC_PRED_EPS;
    memset(out, 0, sizeof *out);
    sd_family *f = calloc(1, sizeof *f);
    if (!f) return sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    f->fam = fam;
    f->weights = a->weights;
    f->ws = (sdc_weight_source){find_weight, a->weights};
    f->scale = fam == SDC_FAMILY_SDXL ? 0.13025f : 0.18215f;
    f->embd_dir = a->params->embeddings_dir;
    f->n_threads = a->params->n_threads > 0 ? a->params->n_threads : 1;
    /* the LoRA state links every weight: it must exist before any model copies one */
    sdc_status s = sdc_lora_state_create(a->weights, &f->lora);
    const sdc_context_params *p = a->params;
    if (s == SDC_OK && p->lora_model_dir && *p->lora_model_dir) {
        f->lora_dir = p->lora_model_dir;
        s = sdc_lora_mode_from_name(
            p->lora_apply_mode && *p->lora_apply_mode ? p->lora_apply_mode : "auto", &f->lora_mode);
        sdc_lora_set_threads(f->lora, f->n_threads);
    }
    if (s == SDC_OK) s = sdc_unet_load(&f->ws, P_UNET, &f->unet);
    if (s == SDC_OK) s = load_text(f, a);
    if (s == SDC_OK) s = load_first_stage(f, a);
    if (s == SDC_OK) s = load_alphas(f);
    const sdc_unet_config *uc = s == SDC_OK ? sdc_unet_get_config(f->unet) : NULL;
    if (s == SDC_OK && uc->context_dim != f->ctx_dim)
        s = sdc_fail(SDC_ERR_FORMAT, "the text encoders give %d-wide states, the UNet reads %d",
                     f->ctx_dim, uc->context_dim);
    if (s == SDC_OK && uc->adm_in_channels) {
        f->adm = uc->adm_in_channels;
        if (f->adm != f->pooled_dim + 6 * 256)
            s = sdc_fail(SDC_ERR_FORMAT, "UNet vector input %d does not fit pooled %d + 1536",
                         f->adm, f->pooled_dim);
        else if (!(f->batch_y = malloc(2 * (size_t)f->adm * sizeof(float))))
            s = sdc_fail(SDC_ERR_NO_MEMORY, "sd: out of memory");
    }
    if (s == SDC_OK && uc->in_channels == 8 && fam != SDC_FAMILY_SD1)
        s = sdc_fail(SDC_ERR_UNSUPPORTED,
                     "%s: an 8-channel UNet (InstructPix2Pix) is supported for SD 1.x only "
                     "(sd.cpp samples SDXL's reference posterior with its generator's state)",
                     sdc_model_family_name(fam));
    else if (s == SDC_OK && uc->in_channels != 4 && uc->in_channels != 9 && uc->in_channels != 8)
        s = sdc_fail(SDC_ERR_FORMAT,
                     "%s UNet: %d input channels (input_blocks.0.0.weight); 4 (plain) or 9 "
                     "(inpainting) or 8 (InstructPix2Pix) expected",
                     sdc_model_family_name(fam), uc->in_channels);
    if (s == SDC_OK) f->n_concat = uc->in_channels - 4;
    f->pix2pix = uc && uc->in_channels == 8;
    f->concat_image = f->pix2pix ? 0 : 1;
    if (s == SDC_OK) s = choose_prediction(f, a->params, &pred);
    if (s != SDC_OK) {
        family_free(f);
        return s;
    }
    out->state = f;
    out->free_state = family_free;
    out->cond = (sdc_conditioner){.self = f, .uses_clip_skip = true, .encode = cond_encode};
    out->diffusion = (sdc_diffusion){.self = f,
                                     .prediction = pred,
                                     .size_multiple = 64,
                                     .alphas_cumprod = f->alphas,
                                     .n_alphas = f->n_alphas,
                                     .sdcpp_mask = true,
                                     .concat_channels = f->n_concat,
                                     .set_concat = f->n_concat == 5 ? set_concat : NULL,
                                     .ref_size_multiple = f->pix2pix ? 16 : 0,
                                     .set_refs = f->pix2pix ? set_refs : NULL,
                                     .img_cfg = f->n_concat > 0,
                                     .set_guidance = uc->time_cond_proj_dim ? set_guidance : NULL,
                                     .forward = unet_forward};
    out->first_stage = (sdc_first_stage){.self = f,
                                         .channels = 4,
                                         .downscale = 8,
                                         .encode = fs_encode,
                                         .decode = fs_decode,
                                         .preview = fs_preview};
    int n = snprintf(out->summary, sizeof out->summary,
                     "unet: %d channels x{%d,%d,%d,%d}, context %d%s; text: ", uc->model_channels,
                     uc->channel_mult[0], uc->channel_mult[1], uc->channel_mult[2],
                     uc->channel_mult[3], uc->context_dim, uc->adm_in_channels ? ", adm" : "");
    for (int e = 0; e < f->n_clip && n < (int)sizeof out->summary; e++) {
        const sdc_clip_text_config *cc = sdc_clip_text_get_config(f->clip[e].model);
        n += snprintf(out->summary + n, sizeof out->summary - n, "%sclip %d layers x %d",
                      e ? " + " : "", cc->n_layers, cc->hidden);
    }
    if (n < (int)sizeof out->summary)
        snprintf(out->summary + n, sizeof out->summary - n, "; %s%s, %s%s", f->vae ? "vae" : "",
                 f->taesd ? " + taesd" : "", sdc_prediction_name(pred),
                 f->pix2pix    ? ", InstructPix2Pix (8 input channels)"
                 : f->n_concat ? ", inpainting (9 input channels)"
                               : "");
    return SDC_OK;
}

sdc_status sdc_family_load_sd1(const sdc_family_load_args *a, sdc_family_modules *out) {
    return load_sd(a, SDC_FAMILY_SD1, out);
}

sdc_status sdc_family_load_sd2(const sdc_family_load_args *a, sdc_family_modules *out) {
    return load_sd(a, SDC_FAMILY_SD2, out);
}

sdc_status sdc_family_load_sdxl(const sdc_family_load_args *a, sdc_family_modules *out) {
    return load_sd(a, SDC_FAMILY_SDXL, out);
}
