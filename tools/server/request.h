/* Request parsing of sdc-server: HTTP bodies of the three API families (sd.cpp's sdcpp
 * native schema, OpenAI images, A1111 sdapi) into one generation request. Pure: no
 * sockets, no model; the fuzz target tests/fuzz/fuzz_server_request.c drives it. */
#ifndef SDC_SERVER_REQUEST_H
#define SDC_SERVER_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Server defaults (from the command line) and limits a request must respect. */
typedef struct sdc_srv_defaults {
    const char *prompt, *negative_prompt;
    int width, height, steps, batch_count;
    float cfg_scale, strength, eta; /* eta NAN: the sampler's default */
    int64_t seed;
    const char *sampler, *scheduler; /* NULL: the model's default */
    int max_side, max_steps, max_batch;
    int size_step;         /* width/height multiples of this (the model's, >= 8); default 8 */
    int clip_skip;         /* --clip-skip; <= 0: the model's default */
    int qwen_image_layers; /* --qwen-image-layers (3) */
    /* --img-cfg-scale, --guidance (sd.cpp's distilled guidance), and the per-request flow
     * shift (NAN: the context's --flow-shift); NAN: unset, the library's default */
    float img_cfg, guidance, flow_shift;
} sdc_srv_defaults;

/* Longest prompt (and negative prompt) accepted, in bytes: a prompt is held by the job,
 * its infotext and the PNG text, and the text encoder reads a few hundred tokens only. */
#define SDC_SRV_MAX_PROMPT_BYTES 65536

/* Reference images (sd.cpp's ref_images / extra_images / OpenAI edit images): at most
 * this many per request, each at most SDC_SRV_MAX_REF_PIXELS once decoded and all of
 * them at most SDC_SRV_MAX_REF_TOTAL_PIXELS (a small PNG can decode to 192 MiB, and a
 * job holds its images while it waits in the queue). */
#define SDC_SRV_MAX_REF_IMAGES       8
#define SDC_SRV_MAX_REF_PIXELS       (4096 * 4096)
#define SDC_SRV_MAX_REF_TOTAL_PIXELS (2 * 4096 * 4096)
/* --qwen-image-layers / qwen_image_layers range (the library's) */
#define SDC_SRV_MAX_QWEN_LAYERS 64

void sdc_srv_defaults_init(sdc_srv_defaults *d);

typedef enum sdc_srv_api {
    SDC_SRV_API_SDCPP,           /* POST /sdcpp/v1/img_gen */
    SDC_SRV_API_OPENAI_GENERATE, /* POST /v1/images/generations */
    SDC_SRV_API_OPENAI_EDIT,     /* POST /v1/images/edits (JSON body) */
    SDC_SRV_API_SDAPI_TXT2IMG,   /* POST /sdapi/v1/txt2img */
    SDC_SRV_API_SDAPI_IMG2IMG,   /* POST /sdapi/v1/img2img */
} sdc_srv_api;

/* An RGB image of a request (owned pixels, w*h*3 bytes). */
typedef struct sdc_srv_image {
    uint8_t *rgb;
    int w, h;
} sdc_srv_image;

typedef struct sdc_srv_request {
    char *prompt, *negative_prompt; /* owned */
    int width, height, steps, batch_count;
    float cfg_scale, strength, eta;
    int64_t seed;
    char sampler[32], scheduler[32]; /* "" : model default */
    uint8_t *init_rgb;               /* owned, init_w*init_h*3, NULL: txt2img */
    int init_w, init_h;
    uint8_t *mask_rgb; /* owned, same size as init after parsing */
    int mask_w, mask_h;
    bool size_given; /* width/height came from the request */
    float *sigmas;   /* owned, sample_params.custom_sigmas; NULL: the model's schedule */
    int n_sigmas;
    int clip_skip;       /* clip_skip / CLIP_stop_at_last_layers; <= 0: the model's default */
    sdc_srv_image *refs; /* owned, n_refs reference images (sdc_generate_params.ref_images) */
    int n_refs;
    /* an OpenAI edit: sd.cpp passes its images as references and the first as the init
     * image too; refs holds the others, and the worker passes [init, refs...] or the init
     * image alone, as its model reads them (sdc_context_ref_use) */
    bool refs_from_edit;
    int qwen_image_layers; /* Qwen-Image-Layered: layers + 1 images per batch item */
    /* sample_params.guidance.img_cfg / .distilled_guidance and sample_params.flow_shift
     * (sdc_generate_params' img_cfg_scale, guidance, flow_shift); NAN: unset */
    float img_cfg, guidance, flow_shift;
    /* auto_resize_ref_image false / increase_ref_index true: appended to the server's
     * --ref-image-args as sd-cli appends them ("resize_before_vae=0",
     * "ref_index_mode=increase") */
    bool no_ref_resize, increase_ref_index;
    /* A1111 override_settings.sd_model_checkpoint as sent ("" : the loaded model); the
     * HTTP layer resolves it to model_slot: 1 + the index among the served models; 0: the
     * loaded one (so a zeroed request switches nothing) */
    char checkpoint[256];
    int model_slot;
} sdc_srv_request;

/* Parses a JSON body. Returns 0 and fills *r, or an HTTP status (400, 500 for out of
 * memory) with a one-line message in err. *r is always safe to sdc_srv_request_free. */
int sdc_srv_parse_json(sdc_srv_api api, const char *body, size_t len, const sdc_srv_defaults *d,
                       sdc_srv_request *r, char *err, size_t err_size);

/* Parses a multipart/form-data body of POST /v1/images/edits; content_type is the
 * request's Content-Type header (it names the boundary). Same results as above. */
int sdc_srv_parse_edit_multipart(const char *content_type, const char *body, size_t len,
                                 const sdc_srv_defaults *d, sdc_srv_request *r, char *err,
                                 size_t err_size);

/* An empty request: zeroed, its unset-by-NAN numbers (eta, img_cfg, guidance, flow_shift)
 * NAN, so that a request built by hand means "defaults" rather than 0. */
void sdc_srv_request_clear(sdc_srv_request *r);

void sdc_srv_request_free(sdc_srv_request *r);

/* The server's --ref-image-args (base, NULL: none) with the request's reference options
 * after it, as sd.cpp's server appends them (later keys win): malloc'd, NULL when there is
 * neither (or out of memory when r has options). */
char *sdc_srv_request_ref_args(const char *base, const sdc_srv_request *r);

/* sd.cpp's sampler spelling for a name ("euler_a") or an A1111 label ("Euler a",
 * "k_euler_a"); NULL if unknown. *scheduler is set when the label names one too
 * ("DPM++ 2M Karras"), else left alone. */
const char *sdc_srv_sampler_from_label(const char *label, const char **scheduler);
/* The same for schedulers ("Karras", "SGM Uniform", "normal"); "" for "Automatic". */
const char *sdc_srv_scheduler_from_label(const char *label);

/* The A1111 labels accepted, for GET /sdapi/v1/samplers and /schedulers: entry i is
 * the label and the name it maps to (the sampler's scheduler in *scheduler, or NULL);
 * false past the end. */
bool sdc_srv_sampler_label(size_t i, const char **label, const char **name, const char **scheduler);
bool sdc_srv_scheduler_label(size_t i, const char **label, const char **name);

#endif
