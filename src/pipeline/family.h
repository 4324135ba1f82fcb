/* What a model family plugs into the pipeline: three small role interfaces
 * (conditioner, diffusion model, first stage) and a loader that fills them. The
 * orchestrator (generate.c and the stage_*.c files) only ever calls these; it knows no
 * family. A new family is its model files (src/models/<name>.c) plus a family_<name>.c
 * that implements the roles, plus its registry entry. */
#ifndef SDC_PIPELINE_FAMILY_H
#define SDC_PIPELINE_FAMILY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/backend.h"
#include "pipeline/ref_image_args.h"
#include "sampling/denoiser.h"
#include "sampling/defaults.h"
#include "sdc.h"

/* Where and how a stage runs: the backend of the device its module is placed on, and
 * the eval callback (imatrix collection, debugging; NULL costs nothing). */
typedef struct sdc_stage_env {
    sdc_backend *backend;
    sdc_eval_fn eval_cb;
    void *eval_user;
} sdc_stage_env;

/* The conditioning of one prompt, in the layout the family's diffusion model reads. */
typedef struct sdc_cond {
    float *ctx; /* [n_ctx][ctx_dim] context rows (owned) */
    int n_ctx, ctx_dim;
    float *pooled; /* [n_pooled] pooled vector (SDXL, SD3, Flux), NULL if none (owned) */
    int n_pooled;
    int n_tokens; /* real tokens the text encoder read */
    /* the image-unconditional pass: for models with an image input (diffusion.img_cfg) a
     * view of the unconditional branch whose image latent the model zeroes (never freed);
     * for diffusion.ref_img_cfg a cond of its own that the model runs without its
     * reference latents */
    bool image_uncond;
    int n_dropped; /* tokens beyond what the model reads (warned about) */
} sdc_cond;

void sdc_cond_free(sdc_cond *c);

/* What one encode call is asked for. */
typedef struct sdc_cond_args {
    const char *prompt;
    bool uncond;       /* the unconditional branch for CFG (families decide what it is: the
                        * negative prompt, or a learned null condition) */
    int clip_skip;     /* --clip-skip, <= 0: the family's default */
    int width, height; /* the image (SDXL's size conditioning) */
    /* the -r images as given (Qwen-Image-Edit shows them to its vision-language encoder) */
    const sdc_image *ref_images;
    int n_ref_images;
    const sdc_ref_image_opts *ref_opts; /* --ref-image-args resolved; NULL: the model's own */
} sdc_cond_args;

typedef struct sdc_conditioner {
    void *self;
    bool uses_clip_skip; /* the family has a CLIP text encoder that --clip-skip applies to */
    sdc_status (*encode)(void *self, const sdc_stage_env *env, const sdc_cond_args *a,
                         sdc_cond *out);
    /* Called once the conditioning phase is over (family caches; the context drops
     * the module's weight pages itself). NULL: nothing to do. */
    void (*end_phase)(void *self);
} sdc_conditioner;

typedef struct sdc_diffusion {
    void *self;
    sdc_prediction prediction;
    int size_multiple; /* width/height must be multiples of this (pixels) */
    /* The family's own schedule when it fixes one (MiniT2I: linear 1 -> 0), else NULL
     * and the scheduler flag applies. Fills steps+1 values. */
    void (*fixed_sigmas)(int steps, float *out);
    /* The training schedule stored with the weights (LDM checkpoints' alphas_cumprod),
     * n_alphas values, or NULL: the prediction type's own. */
    const float *alphas_cumprod;
    int n_alphas;
    /* Per-prompt work of the diffusion model, once per prompt before sampling (MiniT2I:
     * its text preamble): rewrites c in place. NULL: none. */
    sdc_status (*prepare_cond)(void *self, const sdc_stage_env *env, sdc_cond *c);
    /* Masks as sd.cpp applies them (SD families, sd_inpaint.h): binarised at 0.5, a latent
     * cell regenerates when any pixel in it is white, and the kept cells of every x0
     * prediction are reset to the init latent. false: MiniT2I's rule (stage_sample.c). */
    bool sdcpp_mask;
    /* Inpainting UNets read concat_channels more input channels (the mask, the masked
     * image's latent: sd_inpaint.c builds them); set once per generation before sampling,
     * [concat_channels][h][w] at latent size. NULL: the model reads only x. */
    int concat_channels;
    sdc_status (*set_concat)(void *self, const float *concat, int w, int h);
    /* The model reads an image latent (inpainting, InstructPix2Pix): --img-cfg-scale adds
     * sd.cpp's image-unconditional pass (sdc_cond.image_uncond: that latent zeroed). */
    bool img_cfg;
    /* Models that read -r images as reference latents and take --img-cfg-scale with them
     * (Qwen-Image Edit / Layered, sd.cpp's ref-latent image CFG): the image-unconditional
     * branch is the negative prompt encoded without the images and a forward without the
     * reference latents (sdc_cond.image_uncond set on a cond of its own). */
    bool ref_img_cfg;
    /* Models with a guidance input (LCM UNets' w embedding): --guidance for the next
     * generation, NAN when not given. NULL: the model has none (--guidance is refused). */
    sdc_status (*set_guidance)(void *self, float guidance);
    /* Latent frames per image (Qwen-Image-Layered: --qwen-image-layers + 1, each decoded
     * to an image of its own); a latent is [C][frames][h][w]. NULL: 1. */
    int (*latent_frames)(void *self, const sdc_generate_params *p);
    /* Reference images (-r) the model reads as extra latents: > 0 when it reads them;
     * each is resized to the output's area with sides multiples of this, encoded by the
     * first stage (its mean) and handed over with set_refs before sampling. */
    int ref_size_multiple;
    /* sd.cpp's reference-image preset of this model ("qwen", "qwen_layered"), which
     * --ref-image-args starts from; NULL: the model takes no --ref-image-args. */
    const char *ref_preset;
    /* This generation's frames and reference latents (refs[i]: [C][ref_h[i]][ref_w[i]],
     * copied), opts the resolved --ref-image-args (NULL: no ref_preset). Called once per
     * generation when not NULL. */
    sdc_status (*set_refs)(void *self, int frames, const float *const *refs, const int *ref_w,
                           const int *ref_h, int n_refs, const sdc_ref_image_opts *opts);
    /* Raw model output for B latents x ([B][C][frames][h][w], C/h/w from the first
     * stage), at model timestep t, each with conds[b]. */
    sdc_status (*forward)(void *self, const sdc_stage_env *env, const float *x, int B, int width,
                          int height, float timestep, const sdc_cond *const *conds, float *out);
} sdc_diffusion;

typedef struct sdc_first_stage {
    void *self;
    int channels;       /* latent channels */
    int downscale;      /* pixels per latent cell (1: pixel space) */
    int image_channels; /* 3 (RGB; 0 reads as 3) or 4 (RGBA: Qwen-Image-Layered's VAE) */
    /* pixels: planar [image_channels][H][W] in [-1, 1]; latent: [channels][H/ds][W/ds].
     * noise (same size as latent, or NULL for the mean) samples a VAE's posterior. */
    sdc_status (*encode)(void *self, const sdc_stage_env *env, const float *pixels, int width,
                         int height, const float *noise, float *latent);
    sdc_status (*decode)(void *self, const sdc_stage_env *env, const float *latent, int width,
                         int height, float *pixels);
    void (*end_phase)(void *self);
    /* A cheap picture of latent x0 ([channels][H/ds][W/ds]) for --preview, any size (SD:
     * TAESD when loaded, else sd.cpp's linear latent-to-RGB projection at latent size).
     * NULL: pixel space, the latent is the picture. */
    sdc_status (*preview)(void *self, const sdc_stage_env *env, const float *latent, int width,
                          int height, sdc_image *out);
} sdc_first_stage;

/* The modules a loaded family is made of. */
typedef struct sdc_family_modules {
    sdc_conditioner cond;
    sdc_diffusion diffusion;
    sdc_first_stage first_stage;
    void *state; /* the family's own data (freed by free_state) */
    void (*free_state)(void *state);
    char summary[256]; /* config line for the load log */
} sdc_family_modules;

struct sdc_loader;
struct sdc_tokenizer;

/* What a family loader gets: the weights by sd.cpp's internal names, the component
 * files by role (NULL = not given) and the context parameters. */
typedef struct sdc_family_load_args {
    struct sdc_loader *weights;
    const sdc_context_params *params;
    const struct sdc_model_args *model_args; /* --model-args, parsed */
    int t5_file;                             /* loader index of the --t5xxl file, -1 if none */
} sdc_family_load_args;

typedef sdc_status (*sdc_family_load_fn)(const sdc_family_load_args *a, sdc_family_modules *out);

/* The loader of an implemented family, NULL if the family is detected only. */
sdc_family_load_fn sdc_family_loader(sdc_model_family f);

sdc_status sdc_family_load_minit2i(const sdc_family_load_args *a, sdc_family_modules *out);
sdc_status sdc_family_load_sd1(const sdc_family_load_args *a, sdc_family_modules *out);
sdc_status sdc_family_load_sd2(const sdc_family_load_args *a, sdc_family_modules *out);
sdc_status sdc_family_load_sdxl(const sdc_family_load_args *a, sdc_family_modules *out);
sdc_status sdc_family_load_qwen_image(const sdc_family_load_args *a, sdc_family_modules *out);

/* First stage of pixel-space families: latent = pixels. */
void sdc_first_stage_identity(sdc_first_stage *fs);

#endif
