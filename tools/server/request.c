#include "request.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <png.h>

#include "base64.h"
#include "cli_shared.h"
#include "request_refs.h"

#define EXTRA_OPEN  "<sd_cpp_extra_args>"
#define EXTRA_CLOSE "</sd_cpp_extra_args>"
#define STREAM_REFUSED                                                                             \
    "'stream' is not supported: sdc-server answers with the finished images only (send "           \
    "stream false or leave it out)"

/* The generation defaults are the library's (sdc_generate_params_init), as for sdc. */
void sdc_srv_defaults_init(sdc_srv_defaults *d) {
    sdc_generate_params g;
    sdc_generate_params_init(&g);
    memset(d, 0, sizeof *d);
    d->prompt = g.prompt;
    d->negative_prompt = g.negative_prompt;
    d->width = g.width;
    d->height = g.height;
    d->steps = g.steps;
    d->batch_count = g.batch_count;
    d->cfg_scale = g.cfg_scale;
    d->strength = g.strength;
    d->eta = g.eta;
    d->seed = g.seed;
    d->sampler = g.sampling_method;
    d->scheduler = g.scheduler;
    d->max_side = 4096;
    d->max_steps = 150;
    d->max_batch = 8;
    d->size_step = 8;
    d->qwen_image_layers = g.qwen_image_layers;
    d->img_cfg = g.img_cfg_scale;
    d->guidance = g.guidance;
    d->flow_shift = g.flow_shift;
}

/* ---- small helpers ---- */

typedef struct parse_ctx {
    char *err;
    size_t err_size;
    int status; /* first failure wins */
} parse_ctx;

static bool reject(parse_ctx *pc, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool reject(parse_ctx *pc, int status, const char *fmt, ...) {
    if (pc->status) return false;
    pc->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pc->err, pc->err_size, fmt, ap);
    va_end(ap);
    return false;
}

static bool set_string(parse_ctx *pc, char **dst, const char *s, size_t n) {
    char *copy = malloc(n + 1);
    if (!copy) return reject(pc, 500, "out of memory");
    memcpy(copy, s, n);
    copy[n] = '\0';
    free(*dst);
    *dst = copy;
    return true;
}

static const cJSON *field(const cJSON *obj, const char *name) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    return (v && !cJSON_IsNull(v)) ? v : NULL;
}

static bool get_string(parse_ctx *pc, const cJSON *obj, const char *name, const char **out) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (!cJSON_IsString(v)) return reject(pc, 400, "'%s' must be a string", name);
    *out = v->valuestring;
    return true;
}

static bool get_owned_string(parse_ctx *pc, const cJSON *obj, const char *name, char **dst) {
    const char *s = NULL;
    if (!get_string(pc, obj, name, &s)) return false;
    return s ? set_string(pc, dst, s, strlen(s)) : true;
}

static bool get_i64(parse_ctx *pc, const cJSON *obj, const char *name, int64_t lo, int64_t hi,
                    int64_t *out, bool *given) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (!cJSON_IsNumber(v)) return reject(pc, 400, "'%s' must be an integer", name);
    double x = v->valuedouble;
    if (!isfinite(x) || x != floor(x)) return reject(pc, 400, "'%s' must be an integer", name);
    if (x < (double)lo || x > (double)hi)
        return reject(pc, 400, "'%s' is out of range [%lld, %lld]", name, (long long)lo,
                      (long long)hi);
    *out = x >= 9.2e18 ? INT64_MAX : (int64_t)x;
    if (given) *given = true;
    return true;
}

static bool get_int(parse_ctx *pc, const cJSON *obj, const char *name, int lo, int hi, int *out,
                    bool *given) {
    int64_t v = *out;
    if (!get_i64(pc, obj, name, lo, hi, &v, given)) return false;
    *out = (int)v;
    return true;
}

static bool get_float(parse_ctx *pc, const cJSON *obj, const char *name, float *out) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || fabs(v->valuedouble) > 1e6)
        return reject(pc, 400, "'%s' must be a finite number", name);
    *out = (float)v->valuedouble;
    return true;
}

static bool get_bool(parse_ctx *pc, const cJSON *obj, const char *name, bool *out) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (cJSON_IsBool(v)) {
        *out = cJSON_IsTrue(v);
    } else if (cJSON_IsNumber(v)) { /* A1111 clients send 0/1 */
        *out = v->valuedouble != 0;
    } else {
        return reject(pc, 400, "'%s' must be a boolean", name);
    }
    return true;
}

static bool get_object(parse_ctx *pc, const cJSON *obj, const char *name, const cJSON **out) {
    const cJSON *v = field(obj, name);
    *out = NULL;
    if (!v) return true;
    if (!cJSON_IsObject(v)) return reject(pc, 400, "'%s' must be an object", name);
    *out = v;
    return true;
}

/* Arrays we cannot honour must be absent or empty. */
static bool reject_nonempty_array(parse_ctx *pc, const cJSON *obj, const char *name) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (!cJSON_IsArray(v)) return reject(pc, 400, "'%s' must be an array", name);
    if (cJSON_GetArraySize(v) > 0) return reject(pc, 400, "'%s' is not supported by sdc", name);
    return true;
}

/* A status and message of request_refs.c into pc (0: nothing to report). */
static bool refs_status(parse_ctx *pc, int rc, const char *msg) {
    return rc ? reject(pc, rc, "%s", msg) : true;
}

static bool get_refs(parse_ctx *pc, const cJSON *obj, const char *name, sdc_srv_request *r) {
    char msg[256];
    if (field(obj, name)) r->refs_from_edit = false; /* named refs replace an edit's images */
    return refs_status(pc, sdc_srv_refs_from_json(r, obj, name, msg, sizeof msg), msg);
}

/* sample_params.custom_sigmas: 2..1000 finite numbers (the library checks their order) */
static bool get_sigmas(parse_ctx *pc, const cJSON *obj, sdc_srv_request *r) {
    const cJSON *v = field(obj, "custom_sigmas");
    if (!v) return true;
    if (!cJSON_IsArray(v)) return reject(pc, 400, "'custom_sigmas' must be an array");
    int n = cJSON_GetArraySize(v);
    if (n == 0) return true;
    if (n < 2 || n > 1000)
        return reject(pc, 400, "'custom_sigmas' needs 2 to 1000 values (got %d)", n);
    r->sigmas = malloc((size_t)n * sizeof(float));
    if (!r->sigmas) return reject(pc, 500, "out of memory");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        if (!cJSON_IsNumber(e) || !isfinite(e->valuedouble))
            return reject(pc, 400, "'custom_sigmas'[%d] is not a finite number", i);
        r->sigmas[i++] = (float)e->valuedouble;
    }
    r->n_sigmas = n;
    r->steps = n - 1; /* the list sets the step count, as in sd.cpp */
    return true;
}

/* A multipart field holding image bytes as they are (PNG or JPEG magic), not base64. */
static bool raw_image(const char *data) {
    return data[0] == '\x89' || data[0] == '\xff';
}

static bool decode_png(parse_ctx *pc, const char *name, const void *data, size_t n, bool is_base64,
                       uint8_t **rgb, int *w, int *h) {
    size_t bytes_n = n;
    uint8_t *bytes = NULL;
    if (is_base64) {
        bytes = sdc_srv_base64_decode(data, n, &bytes_n);
        if (!bytes) return reject(pc, 400, "'%s' is not valid base64 (or a base64 data URL)", name);
        data = bytes;
    }
    sdc_image img = {0};
    sdc_status st = sdc_image_decode(data, bytes_n, name, &img);
    free(bytes);
    if (st != SDC_OK) {
        if (st == SDC_ERR_NO_MEMORY) return reject(pc, 500, "out of memory decoding '%s'", name);
        return reject(pc, 400, "'%s' is not a readable PNG or JPEG image: %s", name,
                      sdc_last_error());
    }
    free(*rgb);
    *rgb = img.data;
    *w = (int)img.width;
    *h = (int)img.height;
    return true;
}

static bool get_image(parse_ctx *pc, const cJSON *obj, const char *name, uint8_t **rgb, int *w,
                      int *h) {
    const cJSON *v = field(obj, name);
    if (!v) return true;
    if (!cJSON_IsString(v)) return reject(pc, 400, "'%s' must be a base64 string", name);
    if (!*v->valuestring) return true; /* "" means none, as null */
    return decode_png(pc, name, v->valuestring, strlen(v->valuestring), true, rgb, w, h);
}

/* OpenAI's mask convention: transparent pixels (alpha 0) are edited. A PNG with some
 * alpha below 255 becomes a mask of 255 - alpha (white regenerates, as the library
 * wants); *made says whether it did. Other images (no alpha, all opaque, JPEG) are left
 * to the caller's RGB reading. */
static bool alpha_mask(parse_ctx *pc, const char *name, const char *data, size_t n, bool is_base64,
                       uint8_t **mask, int *w, int *h, bool *made) {
    *made = false;
    size_t bytes_n = n;
    uint8_t *bytes = NULL;
    if (is_base64) {
        bytes = sdc_srv_base64_decode(data, n, &bytes_n);
        if (!bytes) return true; /* decode_png reports it */
        data = (const char *)bytes;
    }
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    uint8_t *rgba = NULL;
    bool ok = true;
    if (bytes_n >= 8 && !memcmp(data, "\x89PNG", 4) &&
        png_image_begin_read_from_memory(&img, data, bytes_n) &&
        (img.format & PNG_FORMAT_FLAG_ALPHA) && img.width <= 16384 && img.height <= 16384) {
        img.format = PNG_FORMAT_RGBA;
        size_t px = (size_t)img.width * img.height;
        rgba = malloc(px * 4);
        if (!rgba) {
            ok = reject(pc, 500, "out of memory decoding '%s'", name);
        } else if (png_image_finish_read(&img, NULL, rgba, 0, NULL)) {
            bool any_transparent = false;
            for (size_t i = 0; i < px && !any_transparent; i++)
                any_transparent = rgba[i * 4 + 3] < 255;
            if (any_transparent) {
                uint8_t *m = malloc(px * 3);
                if (!m) {
                    ok = reject(pc, 500, "out of memory decoding '%s'", name);
                } else {
                    for (size_t i = 0; i < px; i++)
                        m[i * 3] = m[i * 3 + 1] = m[i * 3 + 2] = (uint8_t)(255 - rgba[i * 4 + 3]);
                    free(*mask);
                    *mask = m;
                    *w = (int)img.width;
                    *h = (int)img.height;
                    *made = true;
                }
            }
        }
    }
    png_image_free(&img);
    free(rgba);
    free(bytes);
    return ok;
}

/* An OpenAI edit's mask: its transparency when it has some, else its RGB (white edits). */
static bool decode_mask(parse_ctx *pc, const char *data, size_t n, bool is_base64,
                        sdc_srv_request *r) {
    bool made = false;
    if (!alpha_mask(pc, "mask", data, n, is_base64, &r->mask_rgb, &r->mask_w, &r->mask_h, &made))
        return false;
    return made || decode_png(pc, "mask", data, n, is_base64, &r->mask_rgb, &r->mask_w, &r->mask_h);
}

/* ---- names ---- */

static void lower_copy(char *dst, size_t n, const char *src) {
    size_t i = 0;
    for (; src[i] && i + 1 < n; i++) dst[i] = (char)tolower((unsigned char)src[i]);
    dst[i] = '\0';
}

static const char *known_sampler(const char *name) {
    for (size_t i = 0; i < sdc_srv_sampler_count(); i++)
        if (!strcmp(name, sdc_srv_sampler_name(i))) return sdc_srv_sampler_name(i);
    return NULL;
}

static const char *known_scheduler(const char *name) {
    if (!strcmp(name, "normal")) return "discrete";
    for (size_t i = 0; i < sdc_srv_scheduler_count(); i++)
        if (!strcmp(name, sdc_srv_scheduler_name(i))) return sdc_srv_scheduler_name(i);
    return NULL;
}

/* A1111 sampler labels (and their k-diffusion "k_" names), as sd.cpp's server maps them
 * (examples/server/routes_sdapi.cpp), plus the A1111 1.x labels that name a scheduler
 * too ("DPM++ 2M Karras"). Labels of samplers sdc lacks (DPM++ SDE, UniPC, PLMS, DPM2 a,
 * DPM fast, DPM adaptive, Restart) are not listed: they get a 400 rather than another
 * sampler's image. Matched case-insensitively, spaces and underscores alike. */
static const struct {
    const char *label, *name, *scheduler;
} k_sampler_labels[] = {
    {"Euler a", "euler_a", NULL},
    {"k_euler_a", "euler_a", NULL},
    {"Euler", "euler", NULL},
    {"k_euler", "euler", NULL},
    {"Heun", "heun", NULL},
    {"k_heun", "heun", NULL},
    {"DPM2", "dpm2", NULL},
    {"k_dpm_2", "dpm2", NULL},
    {"DPM2 Karras", "dpm2", "karras"},
    {"DPM++ 2S a", "dpm++2s_a", NULL},
    {"k_dpmpp_2s_a", "dpm++2s_a", NULL},
    {"DPM++ 2S a Karras", "dpm++2s_a", "karras"},
    {"LCM", "lcm", NULL},
    {"DDIM", "ddim_trailing", NULL},
    {"DPM++ 2M", "dpm++2m", NULL},
    {"k_dpmpp_2m", "dpm++2m", NULL},
    {"DPM++ 2M Karras", "dpm++2m", "karras"},
    {"DPM++ 2M SDE", "dpm++2m_sde", NULL},
    {"k_dpmpp_2m_sde", "dpm++2m_sde", NULL},
    {"DPM++ 2M SDE Karras", "dpm++2m_sde", "karras"},
    {"DPM++ 2M SDE Exponential", "dpm++2m_sde", "exponential"},
    {"DPM++ 2M SDE GPU", "dpm++2m_sde_bt", NULL},
    {"k_dpmpp_2m_sde_gpu", "dpm++2m_sde_bt", NULL},
    {"Res Multistep", "res_multistep", NULL},
    {"k_res_multistep", "res_multistep", NULL},
    {"Res 2s", "res_2s", NULL},
    {"k_res_2s", "res_2s", NULL},
    {"euler_cfg_pp", "euler_cfg_pp", NULL},
    {"k_euler_cfg_pp", "euler_cfg_pp", NULL},
    {"Euler CFG++", "euler_cfg_pp", NULL},
    {"Euler a CFG++", "euler_a_cfg_pp", NULL},
    {"k_euler_a_cfg_pp", "euler_a_cfg_pp", NULL},
    {"LMS", "lms", NULL},
    {"k_lms", "lms", NULL},
    {"LMS Karras", "lms", "karras"},
    {"iPNDM", "ipndm", NULL},
    {"iPNDM_v", "ipndm_v", NULL},
    {"TCD", "tcd", NULL},
    {"ER SDE", "er_sde", NULL},
};

/* A1111's scheduler field (modules/sd_schedulers.py labels and names). "Uniform" and
 * "Normal" are the model's own linear timesteps (sd.cpp "discrete"); "DDIM" (uniform
 * timestep stride) is nearest to "simple". */
static const struct {
    const char *label, *name;
} k_scheduler_labels[] = {
    {"Automatic", ""},
    {"Default", ""},
    {"Uniform", "discrete"},
    {"Normal", "discrete"},
    {"Karras", "karras"},
    {"Exponential", "exponential"},
    {"SGM Uniform", "sgm_uniform"},
    {"Simple", "simple"},
    {"DDIM", "simple"},
    {"Beta", "beta"},
    {"KL Optimal", "kl_optimal"},
    {"Align Your Steps", "ays"},
    {"Align Your Steps GITS", "gits"},
    {"Smoothstep", "smoothstep"},
    {"LCM", "lcm"},
    {"Bong Tangent", "bong_tangent"},
};

bool sdc_srv_sampler_label(size_t i, const char **label, const char **name,
                           const char **scheduler) {
    if (i >= sizeof k_sampler_labels / sizeof k_sampler_labels[0]) return false;
    *label = k_sampler_labels[i].label;
    *name = k_sampler_labels[i].name;
    if (scheduler) *scheduler = k_sampler_labels[i].scheduler;
    return true;
}

bool sdc_srv_scheduler_label(size_t i, const char **label, const char **name) {
    if (i >= sizeof k_scheduler_labels / sizeof k_scheduler_labels[0]) return false;
    *label = k_scheduler_labels[i].label;
    *name = k_scheduler_labels[i].name;
    return true;
}

/* "DPM++  2M_Karras" and "dpm++ 2m karras" are one label: lower case, runs of spaces and
 * underscores as one space (k_ names keep their underscores: they are matched first). */
static void fold_label(char *dst, size_t n, const char *src) {
    size_t o = 0;
    for (const char *c = src; *c && o + 1 < n; c++) {
        char ch = (char)tolower((unsigned char)*c);
        if (ch == '_' || ch == ' ' || ch == '-') {
            if (o > 0 && dst[o - 1] != ' ') dst[o++] = ' ';
            continue;
        }
        dst[o++] = ch;
    }
    while (o > 0 && dst[o - 1] == ' ') o--;
    dst[o] = '\0';
}

const char *sdc_srv_sampler_from_label(const char *label, const char **scheduler) {
    if (!label) return NULL;
    const char *exact = known_sampler(label);
    if (exact) return exact;
    char low[64], folded[64];
    lower_copy(low, sizeof low, label);
    fold_label(folded, sizeof folded, label);
    for (size_t i = 0; i < sizeof k_sampler_labels / sizeof k_sampler_labels[0]; i++) {
        char l_low[64], l_folded[64];
        lower_copy(l_low, sizeof l_low, k_sampler_labels[i].label);
        fold_label(l_folded, sizeof l_folded, k_sampler_labels[i].label);
        if (!strcmp(low, l_low) || !strcmp(folded, l_folded)) {
            if (k_sampler_labels[i].scheduler && scheduler)
                *scheduler = k_sampler_labels[i].scheduler;
            return known_sampler(k_sampler_labels[i].name);
        }
    }
    return known_sampler(low);
}

const char *sdc_srv_scheduler_from_label(const char *label) {
    if (!label) return NULL;
    char low[64], folded[64];
    lower_copy(low, sizeof low, label);
    fold_label(folded, sizeof folded, label);
    if (!*folded) return "";
    for (size_t i = 0; i < sizeof k_scheduler_labels / sizeof k_scheduler_labels[0]; i++) {
        char l_folded[64];
        fold_label(l_folded, sizeof l_folded, k_scheduler_labels[i].label);
        if (!strcmp(folded, l_folded))
            return *k_scheduler_labels[i].name ? known_scheduler(k_scheduler_labels[i].name) : "";
    }
    return known_scheduler(low);
}

/* "unknown sampler_name 'x'; known: euler, euler_a, ...": the library's names. */
static bool reject_name(parse_ctx *pc, const char *field_name, const char *value, bool sampler,
                        bool labels) {
    char list[400];
    size_t o = 0;
    size_t n = sampler ? sdc_srv_sampler_count() : sdc_srv_scheduler_count();
    for (size_t i = 0; i < n && o + 1 < sizeof list; i++) {
        int w = snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "",
                         sampler ? sdc_srv_sampler_name(i) : sdc_srv_scheduler_name(i));
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o >= sizeof list) o = sizeof list - 1;
    list[o] = '\0';
    return reject(pc, 400, "unknown %s '%.60s'; known: %s%s", field_name, value, list,
                  !labels   ? ""
                  : sampler ? " (and A1111 labels: GET /sdapi/v1/samplers)"
                            : " (and A1111 labels: GET /sdapi/v1/schedulers)");
}

static bool set_name(parse_ctx *pc, char *dst, size_t n, const char *value, const char *field_name,
                     const char *raw, bool sampler, bool labels) {
    if (!value) return reject_name(pc, field_name, raw, sampler, labels);
    snprintf(dst, n, "%s", value);
    return true;
}

static bool check_output_format(parse_ctx *pc, const cJSON *obj) {
    const char *fmt = NULL;
    if (!get_string(pc, obj, "output_format", &fmt)) return false;
    if (fmt && strcasecmp(fmt, "png"))
        return reject(pc, 400, "output_format '%s' is not supported: sdc-server writes png only",
                      fmt);
    int64_t comp = 0;
    return get_i64(pc, obj, "output_compression", INT32_MIN, INT32_MAX, &comp, NULL);
}

/* ---- the native (sdcpp) schema; also what sd_cpp_extra_args carries ---- */

/* sd.cpp's reference options, which its server turns into --ref-image-args additions. */
static bool get_ref_options(parse_ctx *pc, const cJSON *j, sdc_srv_request *r) {
    bool resize = !r->no_ref_resize;
    if (!get_bool(pc, j, "auto_resize_ref_image", &resize) ||
        !get_bool(pc, j, "increase_ref_index", &r->increase_ref_index))
        return false;
    r->no_ref_resize = !resize;
    return true;
}

/* sample_params.guidance: txt_cfg, img_cfg, distilled_guidance (slg: only its default). */
static bool get_guidance(parse_ctx *pc, const cJSON *g, sdc_srv_request *r) {
    const cJSON *slg = NULL, *layers = NULL;
    float scale = 0.0f;
    if (!get_float(pc, g, "txt_cfg", &r->cfg_scale) || !get_float(pc, g, "img_cfg", &r->img_cfg) ||
        !get_float(pc, g, "distilled_guidance", &r->guidance) || !get_object(pc, g, "slg", &slg) ||
        (slg && !get_float(pc, slg, "scale", &scale)))
        return false;
    if (slg && (layers = field(slg, "layers")) && !cJSON_IsArray(layers))
        return reject(pc, 400, "'slg.layers' must be an array");
    if (scale != 0.0f)
        return reject(pc, 400, "skip-layer guidance (slg.scale %g) is not supported by sdc",
                      (double)scale);
    return true;
}

static bool apply_native(parse_ctx *pc, const cJSON *j, sdc_srv_request *r) {
    if (!cJSON_IsObject(j)) return reject(pc, 400, "the request must be a JSON object");
    int64_t ignored = 0;
    bool b = false;
    if (!get_owned_string(pc, j, "prompt", &r->prompt) ||
        !get_owned_string(pc, j, "negative_prompt", &r->negative_prompt) ||
        !get_int(pc, j, "width", INT32_MIN, INT32_MAX, &r->width, &r->size_given) ||
        !get_int(pc, j, "height", INT32_MIN, INT32_MAX, &r->height, &r->size_given) ||
        !get_float(pc, j, "strength", &r->strength) ||
        !get_i64(pc, j, "seed", INT64_MIN, INT64_MAX, &r->seed, NULL) ||
        !get_int(pc, j, "batch_count", INT32_MIN, INT32_MAX, &r->batch_count, NULL) ||
        !get_int(pc, j, "clip_skip", INT32_MIN, INT32_MAX, &r->clip_skip, NULL) ||
        !get_bool(pc, j, "embed_image_metadata", &b) ||
        !get_image(pc, j, "init_image", &r->init_rgb, &r->init_w, &r->init_h) ||
        !get_image(pc, j, "mask_image", &r->mask_rgb, &r->mask_w, &r->mask_h) ||
        !reject_nonempty_array(pc, j, "lora") || !get_refs(pc, j, "ref_images", r) ||
        !get_int(pc, j, "qwen_image_layers", 0, SDC_SRV_MAX_QWEN_LAYERS, &r->qwen_image_layers,
                 NULL) ||
        !get_ref_options(pc, j, r) || !check_output_format(pc, j))
        return false;
    if (field(j, "control_image"))
        return reject(pc, 400, "'control_image' is not supported by sdc");
    const cJSON *hires = NULL;
    if (!get_object(pc, j, "hires", &hires)) return false;
    if (hires) {
        bool on = false;
        if (!get_bool(pc, hires, "enabled", &on)) return false;
        if (on) return reject(pc, 400, "'hires' is not supported by sdc");
    }
    const cJSON *sp = NULL, *guidance = NULL;
    if (!get_object(pc, j, "sample_params", &sp)) return false;
    if (!sp) return true;
    const char *sched = NULL, *method = NULL;
    if (!get_string(pc, sp, "scheduler", &sched) || !get_string(pc, sp, "sample_method", &method) ||
        !get_int(pc, sp, "sample_steps", INT32_MIN, INT32_MAX, &r->steps, NULL) ||
        !get_float(pc, sp, "eta", &r->eta) ||
        !get_i64(pc, sp, "shifted_timestep", INT32_MIN, INT32_MAX, &ignored, NULL) ||
        !get_float(pc, sp, "flow_shift", &r->flow_shift) || !get_sigmas(pc, sp, r) ||
        !get_object(pc, sp, "guidance", &guidance))
        return false;
    if (sched && !set_name(pc, r->scheduler, sizeof r->scheduler, known_scheduler(sched),
                           "sample_params.scheduler", sched, false, false))
        return false;
    if (method && !set_name(pc, r->sampler, sizeof r->sampler, known_sampler(method),
                            "sample_params.sample_method", method, true, false))
        return false;
    if (guidance && !get_guidance(pc, guidance, r)) return false;
    if (isfinite(r->flow_shift) && r->flow_shift <= 0.0f)
        return reject(pc, 400, "sample_params.flow_shift must be > 0 (got %g)",
                      (double)r->flow_shift);
    if (isfinite(r->img_cfg) && r->img_cfg < 0.0f)
        return reject(pc, 400, "guidance.img_cfg must be >= 0 (got %g)", (double)r->img_cfg);
    return true;
}

/* Cuts "<sd_cpp_extra_args>{...}</sd_cpp_extra_args>" out of r->prompt and applies it. */
static bool apply_extra_args(parse_ctx *pc, sdc_srv_request *r) {
    if (!r->prompt) return true;
    char *open = strstr(r->prompt, EXTRA_OPEN);
    if (!open) return true;
    char *json = open + strlen(EXTRA_OPEN);
    char *close = strstr(json, EXTRA_CLOSE);
    if (!close) return reject(pc, 400, "sd_cpp_extra_args: missing " EXTRA_CLOSE);
    cJSON *extra = cJSON_ParseWithLength(json, (size_t)(close - json));
    if (!extra) return reject(pc, 400, "sd_cpp_extra_args: invalid JSON");
    /* the extra block's own prompt wins; otherwise the prompt is what surrounds the block */
    char *outer = NULL;
    size_t before = (size_t)(open - r->prompt);
    const char *after = close + strlen(EXTRA_CLOSE);
    outer = malloc(before + strlen(after) + 1);
    if (!outer) {
        cJSON_Delete(extra);
        return reject(pc, 500, "out of memory");
    }
    memcpy(outer, r->prompt, before);
    strcpy(outer + before, after);
    free(r->prompt);
    r->prompt = outer;
    bool ok = apply_native(pc, extra, r);
    cJSON_Delete(extra);
    if (ok && r->prompt && strstr(r->prompt, EXTRA_OPEN))
        return reject(pc, 400, "sd_cpp_extra_args: only one block is allowed");
    return ok;
}

/* ---- OpenAI ---- */

static bool parse_size(parse_ctx *pc, const char *s, sdc_srv_request *r) {
    if (!strcmp(s, "auto")) return true;
    int w = 0, h = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && w < 1000000; p++) w = w * 10 + (*p - '0');
    if (p == s || (*p != 'x' && *p != 'X'))
        return reject(pc, 400, "'size' must look like 512x512 (got '%.40s')", s);
    const char *q = ++p;
    for (; *p >= '0' && *p <= '9' && h < 1000000; p++) h = h * 10 + (*p - '0');
    if (p == q || *p) return reject(pc, 400, "'size' must look like 512x512 (got '%.40s')", s);
    r->width = w;
    r->height = h;
    r->size_given = true;
    return true;
}

/* An edit's images are also its references, as in sd.cpp: the first is the init image
 * (the worker passes it as references[0] to models that read them), the others go to
 * r->refs. `index` is the image's place among the edit's images. */
static bool edit_ref(parse_ctx *pc, int index, const char *data, size_t n, bool is_base64,
                     sdc_srv_request *r) {
    char label[32], msg[256];
    snprintf(label, sizeof label, "'image'[%d]", index);
    r->refs_from_edit = true;
    if (index == 0 || pc->status) return !pc->status;
    if (index >= SDC_SRV_MAX_REF_IMAGES)
        return reject(pc, 400, "%s: at most %d images are accepted", label, SDC_SRV_MAX_REF_IMAGES);
    return refs_status(pc, sdc_srv_ref_add(r, label, data, n, is_base64, msg, sizeof msg), msg);
}

static bool edit_refs(parse_ctx *pc, const cJSON *imgs, sdc_srv_request *r) {
    int i = 0;
    const cJSON *e;
    if (!cJSON_IsArray(imgs)) return edit_ref(pc, 0, NULL, 0, true, r);
    cJSON_ArrayForEach(e, imgs) {
        if (!cJSON_IsString(e)) return reject(pc, 400, "'image'[%d] must be a base64 string", i);
        if (!edit_ref(pc, i++, e->valuestring, strlen(e->valuestring), true, r)) return false;
    }
    return true;
}

static bool apply_openai(parse_ctx *pc, const cJSON *j, sdc_srv_request *r, bool edit) {
    if (!cJSON_IsObject(j)) return reject(pc, 400, "the request must be a JSON object");
    const cJSON *prompt = field(j, "prompt");
    if (!prompt) return reject(pc, 400, "'prompt' is required");
    const char *size = NULL, *resp_fmt = NULL;
    if (!get_owned_string(pc, j, "prompt", &r->prompt) ||
        !get_int(pc, j, "n", INT32_MIN, INT32_MAX, &r->batch_count, NULL) ||
        !get_string(pc, j, "size", &size) || !get_string(pc, j, "response_format", &resp_fmt) ||
        !check_output_format(pc, j))
        return false;
    if (size && !parse_size(pc, size, r)) return false;
    if (resp_fmt && strcmp(resp_fmt, "b64_json"))
        return reject(pc, 400, "response_format '%s' is not supported (use b64_json)", resp_fmt);
    bool stream = false;
    if (!get_bool(pc, j, "stream", &stream)) return false;
    if (stream) return reject(pc, 400, STREAM_REFUSED);
    if (edit) {
        const cJSON *imgs = field(j, "image");
        if (!imgs) imgs = field(j, "image[]");
        const cJSON *img = cJSON_IsArray(imgs) ? cJSON_GetArrayItem(imgs, 0) : imgs;
        if (!img) return reject(pc, 400, "'image' is required");
        if (!cJSON_IsString(img)) return reject(pc, 400, "'image' must be a base64 string");
        const char *b64 = img->valuestring;
        if (!decode_png(pc, "image", b64, strlen(b64), true, &r->init_rgb, &r->init_w,
                        &r->init_h) ||
            !edit_refs(pc, imgs, r))
            return false;
        const cJSON *mask = field(j, "mask");
        if (mask && !cJSON_IsString(mask)) return reject(pc, 400, "'mask' must be a base64 string");
        bool made = false;
        if (mask && *mask->valuestring)
            return decode_mask(pc, mask->valuestring, strlen(mask->valuestring), true, r);
        /* no mask: the image's own transparency is the mask, as in OpenAI's API */
        return alpha_mask(pc, "image", b64, strlen(b64), true, &r->mask_rgb, &r->mask_w, &r->mask_h,
                          &made);
    }
    return true;
}

/* ---- A1111 ---- */

/* override_settings: the checkpoint (resolved by the HTTP layer against the models it
 * serves) and CLIP_stop_at_last_layers (A1111's clip skip: 1 = the last layer). Other
 * keys (sd_vae, samples_format, ...) are left as they are, as POST /options does. */
static bool apply_override_settings(parse_ctx *pc, const cJSON *j, sdc_srv_request *r) {
    const cJSON *o = NULL;
    if (!get_object(pc, j, "override_settings", &o)) return false;
    if (!o) return true;
    const char *ckpt = NULL;
    if (!get_string(pc, o, "sd_model_checkpoint", &ckpt) ||
        !get_int(pc, o, "CLIP_stop_at_last_layers", -1, 48, &r->clip_skip, NULL))
        return false;
    if (ckpt) {
        if (strlen(ckpt) >= sizeof r->checkpoint)
            return reject(pc, 400, "override_settings.sd_model_checkpoint is too long");
        snprintf(r->checkpoint, sizeof r->checkpoint, "%s", ckpt);
    }
    return true;
}

static bool apply_sdapi(parse_ctx *pc, const cJSON *j, sdc_srv_request *r, bool img2img) {
    if (!cJSON_IsObject(j)) return reject(pc, 400, "the request must be a JSON object");
    int batch_size = 1, n_iter = 1;
    float denoise = r->strength;
    const char *sampler = NULL, *sched = NULL;
    bool invert = false;
    if (!get_owned_string(pc, j, "prompt", &r->prompt) ||
        !get_owned_string(pc, j, "negative_prompt", &r->negative_prompt) ||
        !get_int(pc, j, "width", INT32_MIN, INT32_MAX, &r->width, &r->size_given) ||
        !get_int(pc, j, "height", INT32_MIN, INT32_MAX, &r->height, &r->size_given) ||
        !get_int(pc, j, "steps", INT32_MIN, INT32_MAX, &r->steps, NULL) ||
        !get_float(pc, j, "cfg_scale", &r->cfg_scale) ||
        !get_i64(pc, j, "seed", INT64_MIN, INT64_MAX, &r->seed, NULL) ||
        !get_int(pc, j, "batch_size", 1, 1000, &batch_size, NULL) ||
        !get_int(pc, j, "n_iter", 1, 1000, &n_iter, NULL) ||
        !get_string(pc, j, "sampler_name", &sampler) || !get_string(pc, j, "scheduler", &sched) ||
        !get_float(pc, j, "denoising_strength", &denoise) ||
        !get_bool(pc, j, "inpainting_mask_invert", &invert) ||
        !get_int(pc, j, "clip_skip", -1, 48, &r->clip_skip, NULL) ||
        !reject_nonempty_array(pc, j, "lora") || !apply_override_settings(pc, j, r) ||
        !get_refs(pc, j, "extra_images", r))
        return false;
    if (!r->prompt || !*r->prompt) return reject(pc, 400, "'prompt' is required");
    r->batch_count = batch_size * n_iter;
    if (sched && !set_name(pc, r->scheduler, sizeof r->scheduler,
                           sdc_srv_scheduler_from_label(sched), "scheduler", sched, false, true))
        return false;
    if (sampler) {
        const char *from_label = NULL;
        const char *name = sdc_srv_sampler_from_label(sampler, &from_label);
        if (!set_name(pc, r->sampler, sizeof r->sampler, name, "sampler_name", sampler, true, true))
            return false;
        /* "DPM++ 2M Karras": the label's scheduler, unless one is named explicitly */
        if (from_label && (!sched || !r->scheduler[0]))
            snprintf(r->scheduler, sizeof r->scheduler, "%s", from_label);
    }
    bool hr = false;
    if (!get_bool(pc, j, "enable_hr", &hr)) return false;
    if (hr) return reject(pc, 400, "'enable_hr' (highres fix) is not supported by sdc");
    if (!img2img) return true; /* txt2img: denoising_strength belongs to highres fix */
    r->strength = denoise < 0.01f ? 0.01f : denoise > 1.0f ? 1.0f : denoise;
    const cJSON *inits = field(j, "init_images");
    if (!inits) return reject(pc, 400, "'init_images' is required");
    if (!cJSON_IsArray(inits)) return reject(pc, 400, "'init_images' must be an array");
    const cJSON *first = cJSON_GetArrayItem(inits, 0);
    if (!first) return reject(pc, 400, "'init_images' is empty");
    if (!cJSON_IsString(first)) return reject(pc, 400, "'init_images' must hold base64 strings");
    if (!decode_png(pc, "init_images[0]", first->valuestring, strlen(first->valuestring), true,
                    &r->init_rgb, &r->init_w, &r->init_h) ||
        !get_image(pc, j, "mask", &r->mask_rgb, &r->mask_w, &r->mask_h))
        return false;
    if (invert && r->mask_rgb) {
        size_t n = (size_t)r->mask_w * (size_t)r->mask_h * 3;
        for (size_t i = 0; i < n; i++) r->mask_rgb[i] = (uint8_t)(255 - r->mask_rgb[i]);
    }
    return true;
}

/* ---- finishing: sizes and ranges ---- */

/* Bilinear resize of an RGB image (A1111 resizes init images to the requested size). */
static uint8_t *resize_rgb(const uint8_t *src, int sw, int sh, int dw, int dh) {
    uint8_t *dst = malloc((size_t)dw * (size_t)dh * 3);
    if (!dst) return NULL;
    for (int y = 0; y < dh; y++) {
        double fy = ((double)y + 0.5) * sh / dh - 0.5;
        if (fy < 0) fy = 0;
        int y0 = (int)fy, y1 = y0 + 1 < sh ? y0 + 1 : y0;
        double wy = fy - y0;
        for (int x = 0; x < dw; x++) {
            double fx = ((double)x + 0.5) * sw / dw - 0.5;
            if (fx < 0) fx = 0;
            int x0 = (int)fx, x1 = x0 + 1 < sw ? x0 + 1 : x0;
            double wx = fx - x0;
            for (int c = 0; c < 3; c++) {
                double a = src[((size_t)y0 * sw + x0) * 3 + c],
                       b = src[((size_t)y0 * sw + x1) * 3 + c];
                double e = src[((size_t)y1 * sw + x0) * 3 + c],
                       f = src[((size_t)y1 * sw + x1) * 3 + c];
                double v = (a * (1 - wx) + b * wx) * (1 - wy) + (e * (1 - wx) + f * wx) * wy;
                dst[((size_t)y * dw + x) * 3 + c] = (uint8_t)(v + 0.5);
            }
        }
    }
    return dst;
}

static bool fit_image(parse_ctx *pc, uint8_t **rgb, int *w, int *h, int tw, int th) {
    if (*w == tw && *h == th) return true;
    uint8_t *resized = resize_rgb(*rgb, *w, *h, tw, th);
    if (!resized) return reject(pc, 500, "out of memory resizing an image");
    free(*rgb);
    *rgb = resized;
    *w = tw;
    *h = th;
    return true;
}

/* A1111 (sd.cpp's routes_sdapi): without a size or init image the first extra image sets
 * the size, and the extra images are resized to the size once it is known. Elsewhere they
 * are resized only to a size the request gives (sd.cpp's ref_images, OpenAI image[]). */
static bool fit_refs(parse_ctx *pc, sdc_srv_request *r, bool sdapi) {
    if (!r->n_refs || !(r->size_given || sdapi)) return true;
    char msg[256];
    return refs_status(pc, sdc_srv_refs_fit(r, r->width, r->height, msg, sizeof msg), msg);
}

static bool finish(parse_ctx *pc, const sdc_srv_defaults *d, sdc_srv_request *r, bool sdapi) {
    if (!apply_extra_args(pc, r)) return false;
    size_t plen = r->prompt ? strlen(r->prompt) : 0,
           nlen = r->negative_prompt ? strlen(r->negative_prompt) : 0;
    if (plen > SDC_SRV_MAX_PROMPT_BYTES || nlen > SDC_SRV_MAX_PROMPT_BYTES)
        return reject(pc, 400, "the %s is %zu bytes long; at most %d bytes are accepted",
                      plen > SDC_SRV_MAX_PROMPT_BYTES ? "prompt" : "negative prompt",
                      plen > SDC_SRV_MAX_PROMPT_BYTES ? plen : nlen, SDC_SRV_MAX_PROMPT_BYTES);
    /* the model's size rule is checked here, when the job is accepted, not when it runs */
    int step = d->size_step >= 8 ? d->size_step : 8;
    if (r->init_rgb && !r->size_given) {
        /* sizes snap down to the size step, as sd-cli's -i does */
        r->width = r->init_w / step * step;
        r->height = r->init_h / step * step;
    } else if (sdapi && r->n_refs && !r->size_given) {
        r->width = r->refs[0].w / step * step;
        r->height = r->refs[0].h / step * step;
    }
    if (r->mask_rgb && !r->init_rgb) return reject(pc, 400, "a mask needs an init image");
    if (r->width < step || r->width > d->max_side || r->width % step)
        return reject(pc, 400,
                      "width must be a multiple of %d (the model's size step) in [%d, %d] (got %d)",
                      step, step, d->max_side, r->width);
    if (r->height < step || r->height > d->max_side || r->height % step)
        return reject(
            pc, 400, "height must be a multiple of %d (the model's size step) in [%d, %d] (got %d)",
            step, step, d->max_side, r->height);
    if (r->steps < 1 || r->steps > d->max_steps)
        return reject(pc, 400, "steps must be in [1, %d] (got %d)", d->max_steps, r->steps);
    if (r->batch_count < 1 || r->batch_count > d->max_batch)
        return reject(pc, 400, "the image count must be in [1, %d] (got %d)", d->max_batch,
                      r->batch_count);
    if (!(r->strength > 0.0f && r->strength <= 1.0f))
        return reject(pc, 400, "strength must be in (0, 1] (got %g)", (double)r->strength);
    if (r->init_rgb && !fit_image(pc, &r->init_rgb, &r->init_w, &r->init_h, r->width, r->height))
        return false;
    if (r->mask_rgb && !fit_image(pc, &r->mask_rgb, &r->mask_w, &r->mask_h, r->width, r->height))
        return false;
    if (r->qwen_image_layers < 0 || r->qwen_image_layers > SDC_SRV_MAX_QWEN_LAYERS)
        return reject(pc, 400, "qwen_image_layers must be in [0, %d] (got %d)",
                      SDC_SRV_MAX_QWEN_LAYERS, r->qwen_image_layers);
    return fit_refs(pc, r, sdapi);
}

void sdc_srv_request_clear(sdc_srv_request *r) {
    memset(r, 0, sizeof *r);
    r->eta = r->img_cfg = r->guidance = r->flow_shift = NAN;
}

static bool init_request(parse_ctx *pc, const sdc_srv_defaults *d, sdc_srv_request *r) {
    sdc_srv_request_clear(r);
    r->clip_skip = d->clip_skip;
    r->qwen_image_layers = d->qwen_image_layers;
    r->width = d->width;
    r->height = d->height;
    r->steps = d->steps;
    r->batch_count = d->batch_count;
    r->cfg_scale = d->cfg_scale;
    r->strength = d->strength;
    r->eta = d->eta;
    r->img_cfg = d->img_cfg;
    r->guidance = d->guidance;
    r->flow_shift = d->flow_shift;
    r->seed = d->seed;
    if (d->sampler) snprintf(r->sampler, sizeof r->sampler, "%s", d->sampler);
    if (d->scheduler) snprintf(r->scheduler, sizeof r->scheduler, "%s", d->scheduler);
    return set_string(pc, &r->prompt, d->prompt ? d->prompt : "",
                      strlen(d->prompt ? d->prompt : "")) &&
           set_string(pc, &r->negative_prompt, d->negative_prompt ? d->negative_prompt : "",
                      strlen(d->negative_prompt ? d->negative_prompt : ""));
}

char *sdc_srv_request_ref_args(const char *base, const sdc_srv_request *r) {
    if (!base) base = "";
    if (!r->no_ref_resize && !r->increase_ref_index) return *base ? strdup(base) : NULL;
    size_t n = strlen(base) + 64;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s%s%s%s", base, *base ? "," : "",
                 r->no_ref_resize ? "resize_before_vae=0" : "",
                 r->no_ref_resize && r->increase_ref_index ? "," : "",
                 r->increase_ref_index ? "ref_index_mode=increase" : "");
    return s;
}

void sdc_srv_request_free(sdc_srv_request *r) {
    if (!r) return;
    free(r->prompt);
    free(r->negative_prompt);
    free(r->init_rgb);
    free(r->mask_rgb);
    free(r->sigmas);
    sdc_srv_refs_free(r);
    memset(r, 0, sizeof *r);
}

int sdc_srv_parse_json(sdc_srv_api api, const char *body, size_t len, const sdc_srv_defaults *d,
                       sdc_srv_request *r, char *err, size_t err_size) {
    parse_ctx pc = {err, err_size, 0};
    if (err_size) err[0] = '\0';
    if (!init_request(&pc, d, r)) return pc.status;
    if (!body || len == 0) {
        reject(&pc, 400, "the request body is empty (expected JSON)");
        return pc.status;
    }
    cJSON *j = cJSON_ParseWithLength(body, len);
    if (!j) {
        reject(&pc, 400, "the request body is not valid JSON");
        return pc.status;
    }
    bool ok = false;
    switch (api) {
    case SDC_SRV_API_SDCPP:
        ok = apply_native(&pc, j, r);
        if (ok && r->prompt && strstr(r->prompt, EXTRA_OPEN))
            ok = reject(&pc, 400, "sd_cpp_extra_args is not used with /sdcpp/v1");
        break;
    case SDC_SRV_API_OPENAI_GENERATE:
        ok = apply_openai(&pc, j, r, false);
        break;
    case SDC_SRV_API_OPENAI_EDIT:
        ok = apply_openai(&pc, j, r, true);
        break;
    case SDC_SRV_API_SDAPI_TXT2IMG:
        ok = apply_sdapi(&pc, j, r, false);
        break;
    case SDC_SRV_API_SDAPI_IMG2IMG:
        ok = apply_sdapi(&pc, j, r, true);
        break;
    }
    cJSON_Delete(j);
    if (ok)
        ok =
            finish(&pc, d, r, api == SDC_SRV_API_SDAPI_TXT2IMG || api == SDC_SRV_API_SDAPI_IMG2IMG);
    return ok ? 0 : (pc.status ? pc.status : 400);
}

/* ---- multipart/form-data (RFC 7578), enough for OpenAI image edits ---- */

static const char *memfind(const char *hay, size_t n, const char *needle, size_t m) {
    if (m == 0 || n < m) return NULL;
    for (const char *p = hay; (p = memchr(p, needle[0], (size_t)(hay + n - p) - m + 1));) {
        if (!memcmp(p, needle, m)) return p;
        p++;
        if ((size_t)(hay + n - p) < m) break;
    }
    return NULL;
}

/* Value of `name=` in a header line ("...; name=\"image[]\"; ..."), copied into out. */
static bool header_param(const char *line, size_t n, const char *name, char *out, size_t out_size) {
    size_t k = strlen(name);
    for (size_t i = 0; i + k + 1 <= n; i++) {
        if ((i == 0 || line[i - 1] == ' ' || line[i - 1] == ';') &&
            !strncasecmp(line + i, name, k) && line[i + k] == '=') {
            const char *v = line + i + k + 1, *end = line + n;
            size_t len = 0;
            if (v < end && *v == '"') {
                v++;
                while (v + len < end && v[len] != '"') len++;
            } else {
                while (v + len < end && v[len] != ';' && v[len] != ' ') len++;
            }
            if (len >= out_size) return false;
            memcpy(out, v, len);
            out[len] = '\0';
            return true;
        }
    }
    return false;
}

int sdc_srv_parse_edit_multipart(const char *content_type, const char *body, size_t len,
                                 const sdc_srv_defaults *d, sdc_srv_request *r, char *err,
                                 size_t err_size) {
    parse_ctx pc = {err, err_size, 0};
    if (err_size) err[0] = '\0';
    if (!init_request(&pc, d, r)) return pc.status;
    char boundary[80] = "--";
    if (!content_type ||
        !header_param(content_type, strlen(content_type), "boundary", boundary + 2,
                      sizeof boundary - 2) ||
        !boundary[2]) {
        reject(&pc, 400, "multipart body without a boundary");
        return pc.status;
    }
    size_t blen = strlen(boundary);
    const char *p = memfind(body, len, boundary, blen), *end = body + len;
    bool have_prompt = false, have_image = false, have_mask = false;
    const char *image_data = NULL; /* the first image, for its transparency */
    size_t image_n = 0;
    bool image_b64 = false;
    cJSON *fields = cJSON_CreateObject(); /* text fields, then parsed like the JSON edit */
    if (!fields) {
        reject(&pc, 500, "out of memory");
        return pc.status;
    }
    while (p && !pc.status) {
        p += blen;
        if (end - p >= 2 && p[0] == '-' && p[1] == '-') break; /* closing boundary */
        if (end - p < 2 || p[0] != '\r' || p[1] != '\n') {
            reject(&pc, 400, "malformed multipart body");
            break;
        }
        p += 2;
        const char *hdr_end = memfind(p, (size_t)(end - p), "\r\n\r\n", 4);
        if (!hdr_end) {
            reject(&pc, 400, "malformed multipart part headers");
            break;
        }
        char name[64] = "";
        bool is_file = false;
        for (const char *line = p; line < hdr_end;) {
            const char *eol = memfind(line, (size_t)(hdr_end + 2 - line), "\r\n", 2);
            size_t n = (size_t)(eol - line);
            if (n > 20 && !strncasecmp(line, "content-disposition:", 20)) {
                header_param(line, n, "name", name, sizeof name);
                char filename[256]; /* only its presence matters: a file part */
                is_file = header_param(line, n, "filename", filename, sizeof filename) || is_file;
            }
            line = eol + 2;
        }
        const char *data = hdr_end + 4;
        char delim[84];
        snprintf(delim, sizeof delim, "\r\n%s", boundary);
        const char *next = memfind(data, (size_t)(end - data), delim, blen + 2);
        if (!next) {
            reject(&pc, 400, "multipart body is truncated");
            break;
        }
        size_t n = (size_t)(next - data);
        if (!strcmp(name, "image") || !strcmp(name, "image[]")) {
            bool b64 = !is_file && n > 0 && !raw_image(data);
            if (!have_image) { /* several images: the first is the init image */
                image_data = data;
                image_n = n;
                image_b64 = b64;
                decode_png(&pc, "image", data, n, image_b64, &r->init_rgb, &r->init_w, &r->init_h);
            }
            edit_ref(&pc, have_image ? r->n_refs + 1 : 0, data, n, b64, r);
            have_image = true;
        } else if (!strcmp(name, "mask")) {
            decode_mask(&pc, data, n, !is_file && n > 0 && !raw_image(data), r);
            have_mask = true;
        } else if (name[0] && !is_file) {
            char *text = malloc(n + 1);
            if (!text) {
                reject(&pc, 500, "out of memory");
                break;
            }
            memcpy(text, data, n);
            text[n] = '\0';
            cJSON *v = NULL;
            if (!strcmp(name, "n") || !strcmp(name, "output_compression")) {
                char *e = NULL;
                double x = strtod(text, &e);
                if (e == text || *e)
                    reject(&pc, 400, "'%s' must be an integer", name);
                else
                    v = cJSON_CreateNumber(x);
            } else {
                v = cJSON_CreateString(text);
            }
            free(text);
            if (v) {
                cJSON_DeleteItemFromObjectCaseSensitive(fields, name);
                cJSON_AddItemToObject(fields, name, v);
            }
            if (!strcmp(name, "prompt")) have_prompt = true;
        }
        p = next + 2;
    }
    if (!pc.status && !p) reject(&pc, 400, "multipart body without parts");
    if (!pc.status && !have_prompt) reject(&pc, 400, "'prompt' is required");
    if (!pc.status && !have_image) reject(&pc, 400, "'image' is required");
    if (!pc.status && !have_mask) { /* the image's own transparency is the mask */
        bool made = false;
        alpha_mask(&pc, "image", image_data, image_n, image_b64, &r->mask_rgb, &r->mask_w,
                   &r->mask_h, &made);
    }
    if (!pc.status) {
        /* text fields are read with the JSON rules; the images are already decoded */
        const char *size = NULL, *resp_fmt = NULL;
        if (get_owned_string(&pc, fields, "prompt", &r->prompt) &&
            get_int(&pc, fields, "n", INT32_MIN, INT32_MAX, &r->batch_count, NULL) &&
            get_string(&pc, fields, "size", &size) &&
            get_string(&pc, fields, "response_format", &resp_fmt) &&
            check_output_format(&pc, fields) && (!size || parse_size(&pc, size, r))) {
            const char *stream = NULL;
            if (resp_fmt && strcmp(resp_fmt, "b64_json"))
                reject(&pc, 400, "response_format '%s' is not supported (use b64_json)", resp_fmt);
            else if (get_string(&pc, fields, "stream", &stream) && stream &&
                     (!strcasecmp(stream, "true") || !strcmp(stream, "1")))
                reject(&pc, 400, STREAM_REFUSED);
        }
    }
    cJSON_Delete(fields);
    if (!pc.status) finish(&pc, d, r, false);
    return pc.status;
}
