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

/* Version of the parameter structs below. Each struct starts with `struct_size`, which
 * its *_init sets; the library reads only the fields that fit in the caller's size, so a
 * program built against an older header keeps working when fields are added. */
#define SDC_API_VERSION 2

/* ---- devices ----
 * The device registry: "cpu" by default; sdc_set_cpu_devices(n) (--cpu-devices) splits
 * the CPU into cpu0..cpu{n-1}, each with its share of the threads (placement and
 * splitting can then be exercised on any machine). One line per device for
 * --list-devices: "name\tdescription" (the description includes its memory). */
SDC_API int sdc_device_count(void);
SDC_API sdc_status sdc_device_info(int index, char *name, size_t name_size, char *desc,
                                   size_t desc_size);
/* Memory of device `index` in bytes: total, and the budget set by --max-vram (0 = none). */
SDC_API sdc_status sdc_device_memory(int index, uint64_t *total_bytes, uint64_t *budget_bytes);
/* --cpu-devices N (1..64): re-creates the CPU devices. Call before creating contexts. */
SDC_API sdc_status sdc_set_cpu_devices(int n);

/* ---- enumerations (names as sd.cpp spells them) ---- */
/* Model families of the registry, implemented or not. */
SDC_API int sdc_family_count(void);
SDC_API const char *sdc_family_name(int index); /* "MiniT2I", "SDXL", ... */
SDC_API bool sdc_family_implemented(int index);
SDC_API int sdc_sampler_count(void);
SDC_API const char *sdc_sampler_name(int index); /* "euler", "euler_a", ... */
SDC_API int sdc_scheduler_count(void);
SDC_API const char *sdc_scheduler_name(int index); /* "discrete", "karras", ... */
/* Weight types that can be stored and converted to: name and ggml type id. */
SDC_API int sdc_weight_type_count(void);
SDC_API const char *sdc_weight_type_name(int index); /* "f32", "q8_0", ... */
SDC_API int sdc_weight_type_id(int index);
/* ggml type id of a name ("q4_K"; case-insensitive), -1 if unknown. */
SDC_API int sdc_weight_type_from_name(const char *name);

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

typedef struct sdc_image sdc_image;

/* Called after each sampling step: step in 1..steps, seconds spent in that step. */
typedef void (*sdc_progress_fn)(int step, int steps, double step_seconds, void *user);
/* Called with the sampler's state: step 0 is the initial latent (noised init image for
 * img2img) before the first model call, then step 1..steps after each step (after the
 * inpainting blend). x holds n = channels*height*width floats, channel-planar. */
typedef void (*sdc_latent_fn)(int step, int steps, const float *x, int channels, int width,
                              int height, void *user);
/* Preview image of the current state (decoded the cheap way the family allows). */
typedef void (*sdc_preview_fn)(int step, int steps, const sdc_image *preview, void *user);

/* ---- context: loaded models ---- */
typedef struct sdc_context sdc_context;

/* One context holds one loaded model (all its components) and runs one generation at a
 * time; use several contexts for parallel generations. */
typedef struct sdc_context_params {
    size_t struct_size;               /* sizeof(sdc_context_params), set by _init */
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
    /* further components, by role (NULL = none; sd.cpp's flag in brackets) */
    const char *clip_l_path;        /* --clip_l */
    const char *clip_g_path;        /* --clip_g */
    const char *clip_vision_path;   /* --clip_vision */
    const char *llm_path;           /* --llm (Qwen-Image, Z-Image, ...) */
    const char *llm_vision_path;    /* --llm_vision */
    const char *vae_path;           /* --vae */
    const char *taesd_path;         /* --taesd */
    const char *control_net_path;   /* --control-net */
    const char *upscale_model_path; /* --upscale-model: not used by the context (sdc_upscaler_*) */
    const char *lora_model_dir;     /* --lora-model-dir: <lora:name:w> in prompts */
    const char *embeddings_dir;     /* --embd-dir */
    /* placement (sd.cpp's --backend / --params-backend syntax: "all=cpu", "te=cpu0,
     * diffusion=cpu1", module names and aliases of docs/devices.md); NULL = defaults */
    const char *backend;
    const char *params_backend; /* MODULE=cpu|disk: where weights live between phases */
    const char *max_vram;       /* "DEV=GiB,...": memory budgets */
    bool clip_on_cpu, vae_on_cpu, offload_to_cpu; /* sd.cpp's shorthands */
    /* model options */
    const char *prediction;    /* --prediction: eps, v, edm_v, sd3_flow, flux_flow, ... NULL=auto */
    float flow_shift;          /* --flow-shift, NAN = the family's default */
    bool vae_tiling;           /* --vae-tiling */
    bool diffusion_flash_attn; /* --diffusion-fa (a hint; our attention is always fused) */
    /* --split-mode for modules split across devices (--backend te=a&b): "layer" (default) or
     * "row", or per module "diffusion=row,te=layer"; NULL = layer */
    const char *split_mode;
    /* --model-args: sd.cpp's extra model arguments, "key=value,..." (qwen_image_zero_cond_t:
     * Edit 2511 files without its marker; the chroma_* keys are warned about); NULL = none */
    const char *model_args;
    /* --auto-fit: derive the te/diffusion/vae placement from the weight sizes and the device
     * budgets (--max-vram); --backend, --params-backend and the *-on-cpu shorthands are then
     * ignored with a warning (docs/devices.md) */
    bool auto_fit;
    /* CLIP families (SD1/SD2/SDXL) */
    const char *clip_tokenizer_path;    /* --clip-tokenizer: vocab.json, merges.txt, tokenizer.json
                                         * or bpe_simple_vocab_16e6.txt.gz; NULL = found */
    bool taesd_preview_only;            /* --taesd-preview-only: TAESD for previews, VAE decodes */
    const char *vae_tile_size;          /* --vae-tile-size "X" or "XxY" latent cells, NULL = 32 */
    const char *vae_relative_tile_size; /* --vae-relative-tile-size "0.5x0.5", NULL = none */
    float vae_tile_overlap;             /* --vae-tile-overlap, NAN = 0.5 */
    const char *lora_apply_mode; /* --lora-apply-mode auto|immediately|at_runtime, NULL = auto */
    /* --llm-tokenizer: the Qwen2 tokenizer (tokenizer.json, vocab.json, merges.txt or a folder
     * with one); NULL = embedded in the LLM's GGUF, else found next to the --llm file */
    const char *llm_tokenizer_path;
} sdc_context_params;

SDC_API void sdc_context_params_init(sdc_context_params *p);
SDC_API sdc_status sdc_context_create(const sdc_context_params *p, sdc_context **out);
SDC_API void sdc_context_free(sdc_context *ctx);
/* One line about what was loaded: "MiniT2I: dit.safetensors, t5.safetensors; weights f16 x 64,
 * f32 x 21; te=cpu diffusion=cpu". Valid as long as the context. */
SDC_API const char *sdc_context_describe(const sdc_context *ctx);
/* The model's size step: width and height must be multiples of it (MiniT2I: its patch
 * size in pixels, 16); 1 when the model has no such rule, 0 for a NULL context. */
SDC_API int sdc_context_size_multiple(const sdc_context *ctx);
/* How the loaded model reads reference images (sdc_generate_params.ref_images, -r):
 * NONE: not at all (they are refused); WITH_INIT: beside an optional init image
 * (InstructPix2Pix); ONLY: an init image is refused (Qwen-Image-Layered). Servers use it
 * to route the images of an OpenAI edit, which sd.cpp passes as both. */
typedef enum sdc_ref_use {
    SDC_REFS_NONE = 0,
    SDC_REFS_WITH_INIT = 1,
    SDC_REFS_ONLY = 2,
} sdc_ref_use;
SDC_API sdc_ref_use sdc_context_ref_use(const sdc_context *ctx);
/* Asks a running sdc_generate_image on ctx to stop (from any thread); it returns
 * SDC_ERR_CANCELLED within one sampling step. */
SDC_API void sdc_cancel(sdc_context *ctx);

/* ---- generation ---- */
struct sdc_image {
    uint32_t width, height, channels; /* 3 (RGB); 4 (RGBA) from Qwen-Image-Layered */
    uint8_t *data;                    /* width*height*channels bytes, row-major */
    int64_t seed;                     /* the seed this image was generated with */
};

typedef struct sdc_generate_params {
    size_t struct_size;          /* sizeof(sdc_generate_params), set by _init */
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
    sdc_latent_fn latent; /* NULL = none */
    void *latent_user;
    sdc_preview_fn preview; /* NULL = none */
    void *preview_user;
    int preview_interval; /* call preview every N steps (<= 0: 1) */
    int clip_skip;        /* --clip-skip, <= 0: the family's default */
    float guidance;       /* --guidance: guidance-distilled models, LCM w embedding; NAN = unset */
    float img_cfg_scale;  /* --img-cfg-scale (inpaint/pix2pix UNets), NAN = unset: 1 as sd.cpp */
    float flow_shift;     /* this request's flow shift (sd.cpp's sample_params.flow_shift; the
                           * server's per-request field); NAN = the context's --flow-shift */
    /* hires fix (--hires, sd-cli's): a first pass at width x height, an upscale, then a
     * second img2img-like pass at the hires size; the images come out at the hires size.
     * Every image's RNGs are re-seeded with its seed for the second pass, as sd.cpp does. */
    bool hires;                      /* --hires */
    const char *hires_upscaler;      /* --hires-upscaler: "Latent" (bilinear; NULL = it), "Latent
                                      * (nearest)", "Latent (nearest-exact)", "Latent (antialiased)",
                                      * "Latent (bicubic)", "Latent (bicubic antialiased)", "Lanczos",
                                      * "Nearest" (pixels), "None" (off), or a model name (ESRGAN) in
                                      * hires_upscalers_dir, without extension */
    const char *hires_upscalers_dir; /* --hires-upscalers-dir */
    float hires_scale;               /* --hires-scale (2) when no hires width/height is set */
    int hires_width, hires_height;   /* --hires-width/-height (0: from the other, or scale) */
    int hires_steps;                 /* --hires-steps: the second pass's steps (0: steps) */
    float hires_denoising_strength;  /* --hires-denoising-strength, (0, 1] (0.7) */
    int hires_upscale_tile_size;     /* --hires-upscale-tile-size for model upscalers (128) */
    const float *hires_sigmas;       /* --hires-sigmas: the second pass's sigmas as given */
    int n_hires_sigmas;
    /* -r: reference images (Qwen-Image-Layered reads one: the image to split into layers).
     * Resized (nearest) to about width x height pixels, aspect kept, as sd.cpp does. */
    const sdc_image *ref_images;
    int n_ref_images;
    /* --qwen-image-layers (3): Qwen-Image-Layered makes layers + 1 RGBA images per batch
     * item (one per latent frame, as sd.cpp), so *count = batch_count x (layers + 1) */
    int qwen_image_layers;
    /* --ref-image-args: sd.cpp's reference-image preset and key=value overrides for the
     * models that read -r images as latents and show them to a vision-language encoder
     * ("ref_index_mode=fixed,vlm_size=448", docs/qwen_image.md); NULL or "": the model's
     * preset. An unknown key or bad value is an error. */
    const char *ref_image_args;
} sdc_generate_params;

SDC_API void sdc_generate_params_init(sdc_generate_params *p);
/* Generates batch_count images (Qwen-Image-Layered: batch_count x (qwen_image_layers + 1),
 * RGBA, in batch order). On success *images is an array of *count images that the caller
 * frees with sdc_free_images. */
SDC_API sdc_status sdc_generate_image(sdc_context *ctx, const sdc_generate_params *p,
                                      sdc_image **images, int *count);
SDC_API void sdc_free_images(sdc_image *images, int count);

/* A1111-style "parameters" text for a generated image (caller frees with free()). */
SDC_API char *sdc_generation_parameters_text(const sdc_context *ctx, const sdc_generate_params *p,
                                             int64_t seed);
/* Writes an 8-bit RGB (or RGBA) PNG, with a tEXt "parameters" chunk when parameters != NULL. */
SDC_API sdc_status sdc_save_png(const char *path, const sdc_image *img, const char *parameters);

/* ---- images in memory and on disk (PNG, JPEG) ---- */
typedef enum sdc_image_format {
    SDC_IMAGE_PNG = 0,
    SDC_IMAGE_JPEG = 1,
} sdc_image_format;
/* Decodes a PNG or JPEG (told apart by its first bytes) to 8-bit RGB; `label` names the
 * data in errors. Free the pixels with sdc_image_free. */
SDC_API sdc_status sdc_image_decode(const void *data, size_t size, const char *label,
                                    sdc_image *out);
SDC_API sdc_status sdc_image_load(const char *path, sdc_image *out);
/* Encodes 1, 3 or 4 channels to PNG (with a tEXt "parameters" chunk when parameters !=
 * NULL) or JPEG (quality 1..100, <= 0: 90; parameters in an EXIF UserComment as A1111
 * writes it and a COM segment as sd.cpp does; RGBA loses its alpha, with a warning, as in
 * sd.cpp). *out is malloc'd; free() it. */
SDC_API sdc_status sdc_image_encode(const sdc_image *img, sdc_image_format fmt, int quality,
                                    const char *parameters, void **out, size_t *out_size);
/* Writes PNG or JPEG chosen by the extension (.jpg/.jpeg/.jpe = JPEG, else PNG). */
SDC_API sdc_status sdc_image_save(const char *path, const sdc_image *img, const char *parameters,
                                  int quality);
/* Resizes to w x h as sd-cli resizes -i images of another size: a centred crop to the
 * w:h aspect ratio, then a box (area-average) filter in linear light. */
SDC_API sdc_status sdc_image_resize(const sdc_image *in, int w, int h, sdc_image *out);
SDC_API void sdc_image_free(sdc_image *img); /* frees img->data, zeroes img */
/* The generation parameters stored in a PNG (tEXt/iTXt "parameters") or JPEG (EXIF
 * UserComment / COM) file: *text malloc'd, NULL with SDC_OK when the file has none. */
SDC_API sdc_status sdc_image_read_parameters(const char *path, char **text);

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
    const char *clip_tokenizer_path;  /* CLIP tokenizer to embed (default: found as
                                       * generation finds it); SD families only */
    const char *llm_path;             /* --llm: "text_encoders.llm." */
    const char *llm_tokenizer_path;   /* Qwen2 tokenizer to embed with a Qwen2.5-VL LLM
                                       * (default: found as generation finds it) */
} sdc_convert_params;

SDC_API void sdc_convert_params_init(sdc_convert_params *p);
SDC_API sdc_status sdc_convert(const sdc_convert_params *p);

/* ---- upscaling (ESRGAN: --upscale-model, -M upscale) ----
 * sd.cpp's upscaler: RRDBNet models (RealESRGAN_x4plus, RealESRGAN_x4plus_anime_6B, x2 and
 * x1 models; the Real-ESRGAN, old ESRGAN and BSRGAN key layouts; Real-ESRGAN x2plus's
 * pixel-unshuffle input too), configuration detected from the weights, run on the CPU in
 * sd.cpp's arithmetic (conv weights and conv inputs rounded to F16, as its F16 im2col does),
 * with its u8 <-> float conversions (v/255; clamp, v*255 + 0.5 truncated). */
typedef struct sdc_upscaler sdc_upscaler;
/* Loads the model in `path` (safetensors, GGUF, or whatever else the loader reads; tensors
 * may sit under a wrapper prefix such as "params_ema."). n_threads <= 0: all physical
 * cores. tile_size (--upscale-tile-size, sd.cpp's default 128): images larger than that
 * are upscaled in overlapping tiles of tile_size x tile_size input pixels, blended as sd.cpp
 * blends them; <= 0: the whole image at once. */
SDC_API sdc_status sdc_upscaler_create(const char *path, int n_threads, int tile_size,
                                       sdc_upscaler **out);
SDC_API void sdc_upscaler_free(sdc_upscaler *u);
/* The model's factor: 4 (x4plus, anime 6B), 2, or 1; 0 for NULL. */
SDC_API int sdc_upscaler_scale(const sdc_upscaler *u);
/* One pass: *out = the RGB image `in` upscaled by the model's factor (seed copied); the
 * caller frees out->data (sdc_image_free). --upscale-repeats N is N calls, each on the
 * previous result. */
SDC_API sdc_status sdc_upscale_image(sdc_upscaler *u, const sdc_image *in, sdc_image *out);

/* ---- the shipped demo model (docs/demo.md) ----
 * `-m demo` (model_path "demo" when no file of that name exists) loads the small MiniT2I the
 * repository ships in models/demo/. It is looked for in: a folder named by the path itself;
 * $SDC_DEMO_DIR; models/demo/ and share/sdc/demo/ above the running executable; the source
 * tree's models/demo/ and the install prefix's share/sdc/demo/ (both fixed at build time). */
typedef struct sdc_demo_model {
    char dir[1024];                  /* the folder it was found in */
    char diffusion_model_path[1280]; /* its MiniT2I safetensors ("" if none) */
    char t5xxl_path[1280];           /* its T5 safetensors, tokenizer.json next to it */
    char model_path[1280];           /* its GGUF holding both ("" if none); loaded only when
                                      * the folder has no safetensors pair */
    /* the generation settings it was trained for (used unless the caller sets them) */
    int width, height, steps;
    float cfg_scale;
    const char *sampling_method, *scheduler;
} sdc_demo_model;

/* True when path names the demo model: "demo", unless a regular file of that name exists. */
SDC_API bool sdc_is_demo_model_name(const char *path);
/* Finds the demo model (name: "demo", NULL, or a folder holding it). SDC_ERR_IO with every
 * place searched in the message when it is nowhere. */
SDC_API sdc_status sdc_demo_model_find(const char *name, sdc_demo_model *out);

/* Peak resident set size of this process in bytes (0 if unknown). */
SDC_API size_t sdc_peak_rss_bytes(void);

#ifdef __cplusplus
}
#endif
#endif
