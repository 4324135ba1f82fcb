/* Model registry: one entry per model family that sd.cpp supports (implemented here or
 * not), with the components each needs by role, its defaults, and how it is told apart
 * from the others by tensor names and shapes (never by file names).
 *
 * Names are those the loader holds: -m loads a file as it is, --diffusion-model adds
 * "model.diffusion_model.", --t5xxl "text_encoders.t5xxl.transformer.", and so on (each
 * role's prefix below). A rule key matches a tensor whose name ends with the key at a '.'
 * boundary, so a DiT file whose names already carry "model.diffusion_model." matches
 * whether or not the loader added the prefix once more. */
#ifndef SDC_PIPELINE_REGISTRY_H
#define SDC_PIPELINE_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "sampling/defaults.h"
#include "sampling/denoiser.h"

/* Component roles, named as sd.cpp's flags (--diffusion-model, --clip_l, ...). */
typedef enum sdc_role {
    SDC_ROLE_DIFFUSION = 0,         /* --diffusion-model (or inside -m) */
    SDC_ROLE_HIGH_NOISE,            /* --high-noise-diffusion-model (Wan2.2 A14B) */
    SDC_ROLE_UNCOND_DIFFUSION,      /* --uncond-diffusion-model (Ideogram4) */
    SDC_ROLE_CLIP_L,                /* --clip_l */
    SDC_ROLE_CLIP_G,                /* --clip_g */
    SDC_ROLE_T5XXL,                 /* --t5xxl (also umT5 for Wan, ByT5 for HunyuanVideo) */
    SDC_ROLE_LLM,                   /* --llm */
    SDC_ROLE_LLM_VISION,            /* --llm_vision */
    SDC_ROLE_CLIP_VISION,           /* --clip_vision */
    SDC_ROLE_VAE,                   /* --vae */
    SDC_ROLE_TAESD,                 /* --taesd */
    SDC_ROLE_AUDIO_VAE,             /* --audio-vae */
    SDC_ROLE_EMBEDDINGS_CONNECTORS, /* --embeddings-connectors (LTX-2) */
    SDC_ROLE_COUNT
} sdc_role;

/* "diffusion-model", "clip_l", ... (the flag without its dashes). */
const char *sdc_role_name(sdc_role r);

#define SDC_FAMILY_MAX_COMPONENTS 8
#define SDC_FAMILY_MAX_RULES      6
#define SDC_RULE_MAX_KEYS         3

typedef struct sdc_component_desc {
    sdc_role role;
    /* sd.cpp's internal prefix for the role (after its name conversion): what the
     * role's flag should add so that one name map serves split and single files */
    const char *prefix;
    /* where a single-file (-m) checkpoint of the family keeps it, when that differs
     * (sd.cpp converts it to `prefix`); NULL: the same */
    const char *file_prefix;
    bool required;
    const char *what; /* "CLIP ViT-L/14 text encoder", "Qwen2.5-VL 7B", ... */
} sdc_component_desc;

/* One detection condition. Keys are alternatives (any one present satisfies `present`;
 * for `absent`, none may be present). dim >= 0 adds a shape condition on the first key
 * found: ne[dim] (ggml order, innermost first) == value. */
typedef struct sdc_detect_rule {
    const char *keys[SDC_RULE_MAX_KEYS];
    bool absent;
    int dim; /* -1: no shape condition */
    int64_t value;
} sdc_detect_rule;

typedef enum sdc_first_stage_kind {
    SDC_FIRST_STAGE_VAE = 0, /* latent space: needs a VAE (or TAESD) */
    SDC_FIRST_STAGE_NONE,    /* pixel space: the diffusion model outputs pixels */
} sdc_first_stage_kind;

typedef struct sdc_family_desc {
    const char *name; /* display name, "SDXL", "Flux.1", ... */
    const char *id;   /* short id, "sdxl", "flux1", ... */
    sdc_model_family family;
    bool implemented; /* this build can run it */
    bool video;       /* a video model (-M vid_gen in sd.cpp) */
    sdc_first_stage_kind first_stage;
    int latent_channels; /* 0 for pixel space */
    int width, height;   /* the size the model is made for (sd-cli's default is 512x512) */
    const char *notes;   /* variants covered, what cannot be told apart by weights */
    int n_components;
    sdc_component_desc components[SDC_FAMILY_MAX_COMPONENTS];
    int n_rules;
    sdc_detect_rule rules[SDC_FAMILY_MAX_RULES];
} sdc_family_desc;

/* A tensor as detection sees it: name and shape in ggml order (innermost first).
 * Tensors of more than 4 dims fold the outer ones into ne[3], as sd.cpp does. */
typedef struct sdc_tensor_desc {
    const char *name;
    int n_dims;
    int64_t ne[4];
} sdc_tensor_desc;

/* Fills *out with tensor i; returns false past the end. `name` needs to stay valid
 * only until the next call. */
typedef bool (*sdc_tensor_iter_fn)(void *user, int i, sdc_tensor_desc *out);

/* Facts beyond the family that the defaults depend on. */
typedef struct sdc_detect_info {
    const sdc_family_desc *family;
    bool has_v_pred;      /* a "v_pred" tensor (SDXL v-prediction checkpoints) */
    bool has_edm_vpred;   /* "edm_vpred.sigma_max" (CosXL) */
    bool has_guidance_in; /* guidance_in (Flux dev; diffusers names: guidance_embedder) */
    int n_tensors;
} sdc_detect_info;

/* The first family (in table order, most specific first) whose rules all hold, or
 * NULL with `why` = "no known model family: looked for ..." (every family's rules).
 * Names are indexed once (every '.'-boundary suffix in a hash), so this is linear in
 * the tensor count. `why` may be NULL. */
const sdc_family_desc *sdc_registry_detect(sdc_tensor_iter_fn it, void *user, char *why,
                                           size_t why_size);
/* The same, also filling *info (may be NULL). On out of memory returns NULL with
 * `why` saying so. */
const sdc_family_desc *sdc_registry_detect_info(sdc_tensor_iter_fn it, void *user,
                                                sdc_detect_info *info, char *why, size_t why_size);

struct sdc_loader;
/* Detection over every tensor of a loader. */
const sdc_family_desc *sdc_registry_detect_loader(const struct sdc_loader *l, sdc_detect_info *info,
                                                  char *why, size_t why_size);

int sdc_registry_count(void);
const sdc_family_desc *sdc_registry_at(int i); /* NULL out of range */
/* The generic entry of a family id (its last in table order: variants come first, e.g.
 * SDXL inpaint before SDXL), NULL if none. */
const sdc_family_desc *sdc_registry_find(sdc_model_family f);
/* By display name or id, case-insensitive; NULL if none. */
const sdc_family_desc *sdc_registry_find_name(const char *name);

/* The component of `role`, NULL when the family has none. */
const sdc_component_desc *sdc_family_component(const sdc_family_desc *d, sdc_role role);

/* Defaults of a detected family (defaults.h), with the facts detection found. */
typedef struct sdc_family_defaults {
    sdc_sample_method sample_method;
    sdc_scheduler scheduler;
    sdc_prediction prediction;
    float flow_shift; /* NAN for non-flow predictions */
    float eta;
    int width, height;
} sdc_family_defaults;
void sdc_registry_defaults(const sdc_family_desc *d, const sdc_detect_info *info,
                           sdc_family_defaults *out);

/* The first required component of `d` with no tensor under its prefix (or its -m file
 * prefix), NULL when all are there. Components with an empty prefix (loaded under their
 * own names) are not checked. */
const sdc_component_desc *sdc_registry_missing(const sdc_family_desc *d, sdc_tensor_iter_fn it,
                                               void *user);
const sdc_component_desc *sdc_registry_missing_loader(const sdc_family_desc *d,
                                                      const struct sdc_loader *l);
/* SDC_ERR_INVALID_ARG with "X needs its <what>: pass --<role>". */
sdc_status sdc_registry_fail_missing(const sdc_family_desc *d, const sdc_component_desc *c);

/* SDC_ERR_UNSUPPORTED with "X checkpoint detected; X is not supported yet"
 * (d NULL: "unknown model: <why>"). */
sdc_status sdc_registry_fail_unsupported(const sdc_family_desc *d, const char *why);

#endif
