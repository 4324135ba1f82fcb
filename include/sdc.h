/* sdc: Stable Diffusion in C. The public API; the only header users include. */
#ifndef SDC_H
#define SDC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SDC_BUILDING)
#define SDC_API __attribute__((visibility("default")))
#else
#define SDC_API
#endif

typedef enum sdc_status {
    SDC_OK = 0,
    SDC_ERR_INVALID_ARG = 1, /* a caller passed something impossible */
    SDC_ERR_IO = 2,          /* open/read/write/mmap failed */
    SDC_ERR_FORMAT = 3,      /* a file or request is malformed */
    SDC_ERR_NO_MEMORY = 4,
    SDC_ERR_UNSUPPORTED = 5, /* valid, but not implemented / not on this device */
    SDC_ERR_CANCELLED = 6,
    SDC_ERR_INTERNAL = 7,
} sdc_status;

/* Library version, e.g. "0.1.0". */
SDC_API const char *sdc_version(void);
/* Short name of a status code. */
SDC_API const char *sdc_status_string(sdc_status s);
/* Message of the last failure on the calling thread ("" if none). */
SDC_API const char *sdc_last_error(void);

/* Devices: one line per device, "name\tdescription". */
SDC_API int sdc_device_count(void);
SDC_API sdc_status sdc_device_info(int index, char *name, size_t name_size, char *desc,
                                   size_t desc_size);

/* ---- logging and progress ---- */
typedef enum sdc_log_level {
    SDC_LOG_DEBUG,
    SDC_LOG_INFO,
    SDC_LOG_WARN,
    SDC_LOG_ERROR
} sdc_log_level;
typedef void (*sdc_log_fn)(sdc_log_level level, const char *msg, void *user);
/* Process-wide log sink (default: WARN and ERROR to stderr). */
SDC_API void sdc_set_log_callback(sdc_log_fn fn, void *user);
SDC_API void sdc_set_log_level(sdc_log_level min_level);

/* Called after each sampling step: step in 1..steps, seconds spent in that step. */
typedef void (*sdc_progress_fn)(int step, int steps, double step_seconds, void *user);

/* ---- context: loaded models ---- */
typedef struct sdc_context sdc_context;

typedef struct sdc_context_params {
    const char *model_path;           /* -m: full checkpoint, names used as they are */
    const char *diffusion_model_path; /* --diffusion-model: prefix "model.diffusion_model." */
    const char *t5xxl_path;           /* --t5xxl: prefix "text_encoders.t5xxl.transformer." */
    const char *t5_tokenizer_path;    /* --t5-tokenizer: tokenizer.json or spiece.model */
    int n_threads;                    /* -t: <= 0 means all physical cores */
    int weight_type; /* --type: ggml type id to convert weights to on load, -1 = as stored */
    /* --tensor-type-rules "regex=type,...": per-tensor types on load (NULL = none) */
    const char *tensor_type_rules;
    /* importances used when weights are quantised on load (--imat-in), NULL = none */
    const struct sdc_imatrix *imatrix;
} sdc_context_params;

SDC_API void sdc_context_params_init(sdc_context_params *p);
SDC_API sdc_status sdc_context_create(const sdc_context_params *p, sdc_context **out);
SDC_API void sdc_context_free(sdc_context *ctx);
/* Asks a running sdc_generate_image on ctx to stop (from any thread); it returns
 * SDC_ERR_CANCELLED within one sampling step. */
SDC_API void sdc_cancel(sdc_context *ctx);

/* ---- generation ---- */
typedef struct sdc_image {
    uint32_t width, height, channels; /* channels = 3 (RGB) */
    uint8_t *data;                    /* width*height*channels bytes, row-major */
    int64_t seed;                     /* the seed this image was generated with */
} sdc_image;

typedef struct sdc_generate_params {
    const char *prompt;          /* -p */
    const char *negative_prompt; /* -n */
    int width, height;           /* -W, -H */
    int steps;                   /* --steps */
    float cfg_scale;             /* --cfg-scale */
    int64_t seed;                /* -s; < 0: random */
    const char *sampling_method; /* --sampling-method, NULL = model default */
    const char *scheduler;       /* --scheduler, NULL = model default */
    const char *rng;         /* --rng: "cpu" (torch CPU randn), "cuda" (Philox), "std_default" */
    const char *sampler_rng; /* --sampler-rng, NULL = same as rng */
    float eta;               /* --eta, for samplers that have one */
    int batch_count;         /* -b: images with seeds seed, seed+1, ... */
    /* img2img: start from this image (same size as width x height) instead of pure noise */
    const sdc_image *init_image;
    float strength;              /* --strength: share of the schedule that is run (0..1] */
    const sdc_image *mask_image; /* inpainting: white regenerates, black keeps init_image */
    /* --sigmas: a custom noise schedule (n_sigmas >= 2 values, usually ending in 0); it
     * replaces the scheduler and sets the step count to n_sigmas - 1, as in sd.cpp */
    const float *sigmas;
    int n_sigmas;
    sdc_progress_fn progress;
    void *progress_user;
} sdc_generate_params;

SDC_API void sdc_generate_params_init(sdc_generate_params *p);
/* Generates batch_count images. On success *images is an array of *count images that
 * the caller frees with sdc_free_images. */
SDC_API sdc_status sdc_generate_image(sdc_context *ctx, const sdc_generate_params *p,
                                      sdc_image **images, int *count);
SDC_API void sdc_free_images(sdc_image *images, int count);

/* A1111-style "parameters" text for a generated image (caller frees with free()). */
SDC_API char *sdc_generation_parameters_text(const sdc_context *ctx, const sdc_generate_params *p,
                                             int64_t seed);
/* Writes an 8-bit RGB PNG, with a tEXt "parameters" chunk when parameters != NULL. */
SDC_API sdc_status sdc_save_png(const char *path, const sdc_image *img, const char *parameters);

/* ---- importance matrices (imatrix.dat, sd.cpp's / llama.cpp's legacy layout) ---- */
typedef struct sdc_imatrix sdc_imatrix;

SDC_API sdc_status sdc_imatrix_create(sdc_imatrix **out);
SDC_API void sdc_imatrix_free(sdc_imatrix *im);
/* Loads a file and merges it into im (--imat-in, repeatable). A malformed file is an
 * error and leaves im unchanged. */
SDC_API sdc_status sdc_imatrix_load(sdc_imatrix *im, const char *path);
/* Writes im (entries with missing columns are left out with a warning). */
SDC_API sdc_status sdc_imatrix_save(const sdc_imatrix *im, const char *path);
SDC_API int sdc_imatrix_entry_count(const sdc_imatrix *im);
/* Collects into im during every later generation on ctx (--imat-out); NULL stops. */
SDC_API sdc_status sdc_context_collect_imatrix(sdc_context *ctx, sdc_imatrix *im);

/* ---- conversion (-M convert) ---- */
typedef struct sdc_convert_params {
    const char *model_path;           /* -m: names as they are */
    const char *diffusion_model_path; /* --diffusion-model: "model.diffusion_model." */
    const char *t5xxl_path;           /* --t5xxl: "text_encoders.t5xxl.transformer." */
    const char *clip_l_path;          /* --clip_l: "text_encoders.clip_l.transformer." */
    const char *clip_g_path;          /* --clip_g: "text_encoders.clip_g.transformer." */
    const char *vae_path;             /* --vae: "vae." */
    const char *t5_tokenizer_path;    /* tokenizer to embed (default: found next to the T5) */
    const char *output_path;          /* -o: .gguf, or .safetensors for f32/f16/bf16 */
    int type;                         /* --type (ggml id), -1 = keep stored types */
    const char *tensor_type_rules;    /* --tensor-type-rules, NULL = none */
    bool convert_name;                /* --convert-name */
    const sdc_imatrix *imatrix;       /* importances for the quantiser, NULL = none */
    int n_threads;                    /* <= 0: all cores */
} sdc_convert_params;

SDC_API void sdc_convert_params_init(sdc_convert_params *p);
SDC_API sdc_status sdc_convert(const sdc_convert_params *p);

/* Peak resident set size of this process in bytes (0 if unknown). */
SDC_API size_t sdc_peak_rss_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
