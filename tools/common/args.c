/* The flag parser: reads argv against the table (flag_table.c), writes the values into the
 * library's parameter structs, validates the combination and answers the flags that do
 * not apply yet. sd-cli's syntax: "-x v" / "--long v" (we also take "--long=v"), bool
 * flags take no value, joining flags concatenate their repeats with ','. */
#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "flag_table.h"

/* Largest width/height accepted (the library may reject smaller ones per model). */
#define CLI_MAX_SIDE 16384

_Static_assert(SDC_CLI_MAX_OPTS >= 180, "room for the table");

/* ---- names, from the library's enumerations ---- */

bool sdc_cli_is_sampler_name(const char *name) {
    for (int i = 0; name && i < sdc_sampler_count(); i++)
        if (!strcmp(name, sdc_sampler_name(i))) return true;
    return false;
}

bool sdc_cli_is_scheduler_name(const char *name) {
    if (name && !strcmp(name, "normal")) return true; /* sd-cli's alias of discrete */
    for (int i = 0; name && i < sdc_scheduler_count(); i++)
        if (!strcmp(name, sdc_scheduler_name(i))) return true;
    return false;
}

static bool in_choices(const char *name, const char *choices) {
    size_t n = strlen(name);
    for (const char *c = choices; c && *c;) {
        const char *comma = strchr(c, ',');
        size_t len = comma ? (size_t)(comma - c) : strlen(c);
        if (len == n && !strncmp(c, name, n)) return true;
        c = comma ? comma + 1 : NULL;
    }
    return false;
}

bool sdc_cli_is_rng_name(const char *name) {
    return name && in_choices(name, "std_default,cuda,cpu");
}

/* ---- errors ---- */

#if defined(__GNUC__)
#define CLI_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define CLI_PRINTF(a, b)
#endif

static bool fail(sdc_cli_args *a, const char *fmt, ...) CLI_PRINTF(2, 3);
static bool fail(sdc_cli_args *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->error, sizeof a->error, fmt, ap);
    va_end(ap);
    for (char *c = a->error; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    return false;
}

/* "a,b,c" -> "a, b or c" */
static void choices_text(const char *choices, char *out, size_t n) {
    out[0] = '\0';
    const char *last = strrchr(choices, ',');
    size_t len = 0;
    for (const char *c = choices; *c && len + 8 < n; c++) {
        if (*c == ',') {
            len += (size_t)snprintf(out + len, n - len, "%s", c == last ? " or " : ", ");
        } else {
            out[len++] = *c;
            out[len] = '\0';
        }
    }
}

/* ---- numbers ---- */

static bool parse_i64(sdc_cli_args *a, const char *opt, const char *s, int64_t lo, int64_t hi,
                      int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || end == s || *end != '\0') return fail(a, "%s: '%s' is not an integer", opt, s);
    if (errno == ERANGE || v < lo || v > hi)
        return fail(a, "%s: %s is out of range [%lld, %lld]", opt, s, (long long)lo, (long long)hi);
    *out = v;
    return true;
}

static bool parse_int(sdc_cli_args *a, const char *opt, const char *s, int *out) {
    int64_t v;
    if (!parse_i64(a, opt, s, INT_MIN, INT_MAX, &v)) return false;
    *out = (int)v;
    return true;
}

static bool parse_float(sdc_cli_args *a, const char *opt, const char *s, float *out) {
    char *end = NULL;
    errno = 0;
    float v = strtof(s, &end);
    if (!*s || end == s || *end != '\0') return fail(a, "%s: '%s' is not a number", opt, s);
    if (errno == ERANGE || !isfinite(v)) return fail(a, "%s: %s is out of range", opt, s);
    *out = v;
    return true;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) s[--n] = '\0';
    return s;
}

/* "1.0, 0.5,0" or "[1,0.5,0]" -> floats, as sd-cli reads --sigmas. out may be NULL. */
static bool parse_sigmas(sdc_cli_args *a, const char *opt, const char *s, float **out, int *n_out) {
    size_t len = strlen(s);
    char *copy = malloc(len + 1);
    float *vals = malloc(sizeof(float) * (len / 2 + 1)); /* at most one value per 2 chars */
    if (!copy || !vals) {
        free(copy);
        free(vals);
        return fail(a, "%s: out of memory", opt);
    }
    memcpy(copy, s, len + 1);
    char *p = copy;
    if (*p == '[') p++;
    size_t plen = strlen(p);
    if (plen && p[plen - 1] == ']') p[plen - 1] = '\0';
    int n = 0;
    bool ok = true;
    for (char *save = NULL, *tok = strtok_r(p, ",", &save); ok && tok;
         tok = strtok_r(NULL, ",", &save)) {
        tok = trim(tok);
        if (*tok) ok = parse_float(a, opt, tok, &vals[n++]);
    }
    free(copy);
    if (ok && n == 0) ok = fail(a, "%s: no sigma values in '%s'", opt, s);
    if (!ok || !out) {
        free(vals);
        return ok;
    }
    free(*out);
    *out = vals;
    *n_out = n;
    return true;
}

/* "[7,8,9]" (sd-cli requires the brackets; separators ',' or ' '). */
static bool parse_layers(sdc_cli_args *a, const char *opt, const char *s) {
    size_t n = strlen(s);
    if (n < 2 || s[0] != '[' || s[n - 1] != ']')
        return fail(a, "%s: expected a list like [7,8,9], got '%s'", opt, s);
    for (size_t i = 1; i + 1 < n; i++)
        if (!strchr("0123456789-, ", s[i]))
            return fail(a, "%s: '%s' is not a list of layer numbers", opt, s);
    return true;
}

/* "32" or "32x48" (numbers, as sd-cli's tile sizes). */
static bool parse_tile_size(sdc_cli_args *a, const char *opt, const char *s) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    char *x = strchr(buf, 'x');
    if (x) *x = '\0';
    float v;
    if (!parse_float(a, opt, buf, &v)) return false;
    return !x || parse_float(a, opt, x + 1, &v);
}

/* ---- values ---- */

static char *read_text_file(sdc_cli_args *a, const char *opt, const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(a, "%s: cannot open '%s': %s", opt, path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len - 1, f);
        if (len + 1 < cap) break;
        char *grown = cap < ((size_t)1 << 24) ? realloc(buf, cap *= 2) : NULL;
        if (!grown) free(buf);
        buf = grown;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        fail(a, "%s: cannot read '%s'", opt, path);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

/* Keeps the value of table entry k: replaced, or joined with ',' for joining flags. */
static bool keep_value(sdc_cli_args *a, int k, const char *opt, const char *v, bool join) {
    char *old = a->value[k];
    size_t n = strlen(v), m = (join && old) ? strlen(old) + 1 : 0;
    char *s = malloc(m + n + 1);
    if (!s) return fail(a, "%s: out of memory", opt);
    if (m) {
        memcpy(s, old, m - 1);
        s[m - 1] = ',';
    }
    memcpy(s + m, v, n + 1);
    free(old);
    a->value[k] = s;
    return true;
}

static void *field(sdc_cli_args *a, const sdc_cli_opt *o) {
    return o->target == SDC_CLI_NO_TARGET ? NULL : (char *)a + o->target;
}

static void weight_type_names(char *out, size_t n) {
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < sdc_weight_type_count() && len + 16 < n; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%s", i ? ", " : "", sdc_weight_type_name(i));
}

static bool apply_mode(sdc_cli_args *a, const char *opt, const char *v) {
    if (!strcmp(v, "img_gen")) {
        a->mode = SDC_CLI_MODE_IMG_GEN;
    } else if (!strcmp(v, "convert")) {
        a->mode = SDC_CLI_MODE_CONVERT;
    } else if (!strcmp(v, "metadata")) {
        a->mode = SDC_CLI_MODE_METADATA;
    } else if (!strcmp(v, "upscale")) {
        a->mode = SDC_CLI_MODE_UPSCALE;
    } else if (!strcmp(v, "vid_gen") || !strcmp(v, "adetailer")) {
        return fail(a,
                    "%s %s: this mode is not supported yet (img_gen, convert, upscale and "
                    "metadata are)",
                    opt, v);
    } else {
        return fail(a, "%s: unknown mode '%s' (expected img_gen, convert, upscale or metadata)",
                    opt, v);
    }
    return true;
}

/* Reads the value of one flag (v: NULL for bool flags). */
static bool apply(sdc_cli_args *a, int k, const char *opt, const char *v) {
    const sdc_cli_opt *o = &sdc_cli_opts[k];
    void *dst = field(a, o);
    a->count[k]++;
    if (o->kind == K_BOOL) {
        if (dst) *(bool *)dst = true;
        if (o->special == O_HELP) a->help = true;
        if (o->special == O_VERSION) a->version = true;
        return true;
    }
    if (!keep_value(a, k, opt, v, o->special == O_JOIN)) return false;
    const char *kept = a->value[k];
    char names[512];
    int64_t i64 = 0;
    int i32 = 0;
    float f32 = 0.0f;
    switch (o->special) {
    case O_CHOICE:
        if (!in_choices(v, o->choices)) {
            char noun[32];
            snprintf(noun, sizeof noun, "%s", o->value_name ? o->value_name : "value");
            if (strcmp(noun, "RNG"))
                for (char *c = noun; *c; c++) *c = (char)(*c | 0x20);
            choices_text(o->choices, names, sizeof names);
            return fail(a, "%s: unknown %s '%s' (expected %s)", opt, noun, v, names);
        }
        break;
    case O_MODE:
        return apply_mode(a, opt, v);
    case O_TYPE:
        a->ctx.weight_type = sdc_weight_type_from_name(v);
        if (a->ctx.weight_type < 0) {
            weight_type_names(names, sizeof names);
            return fail(a, "%s: unknown weight type '%s' (expected %s)", opt, v, names);
        }
        return true;
    case O_SAMPLER:
        if (!sdc_cli_is_sampler_name(v))
            return fail(a, "%s: unknown sampling method '%s' (see --help)", opt, v);
        break;
    case O_SCHEDULER:
        if (!sdc_cli_is_scheduler_name(v))
            return fail(a, "%s: unknown scheduler '%s' (see --help)", opt, v);
        if (!strcmp(v, "normal")) kept = "discrete";
        break;
    case O_SIGMAS:
        if (!strcmp(o->long_name, "--sigmas")) {
            if (!parse_sigmas(a, opt, v, &a->sigmas, &a->n_sigmas)) return false;
            a->gen.sigmas = a->sigmas;
            a->gen.n_sigmas = a->n_sigmas;
            return true;
        }
        if (!strcmp(o->long_name, "--hires-sigmas")) {
            if (!parse_sigmas(a, opt, v, &a->hires_sigmas, &a->n_hires_sigmas)) return false;
            a->gen.hires_sigmas = a->hires_sigmas;
            a->gen.n_hires_sigmas = a->n_hires_sigmas;
            return true;
        }
        return parse_sigmas(a, opt, v, NULL, NULL);
    case O_SKIP_LAYERS:
        return parse_layers(a, opt, v);
    case O_TILE_SIZE:
        if (!parse_tile_size(a, opt, v)) return false;
        break; /* stored as given */
    case O_STRENGTH:
        if (!parse_float(a, opt, v, &f32)) return false;
        if (!(f32 > 0.0f && f32 <= 1.0f)) return fail(a, "%s must be in (0, 1] (got %s)", opt, v);
        a->gen.strength = f32;
        return true;
    case O_PROMPT_FILE:
    case O_NEG_PROMPT_FILE: {
        char *text = read_text_file(a, opt, v);
        if (!text) return false;
        free(a->value[k]);
        a->value[k] = text;
        *(const char **)dst = text;
        return true;
    }
    case O_IMAT_IN: {
        const char **list = realloc(a->imat_in, sizeof(*list) * (size_t)(a->n_imat_in + 1));
        if (!list) return fail(a, "%s: out of memory", opt);
        list[a->n_imat_in++] = v;
        a->imat_in = list;
        return true;
    }
    case O_REF_IMAGE: {
        const char **list = realloc(a->ref_images, sizeof(*list) * (size_t)(a->n_ref_images + 1));
        if (!list) return fail(a, "%s: out of memory", opt);
        list[a->n_ref_images++] = v;
        a->ref_images = list;
        return true;
    }
    case O_CPU_DEVICES:
        if (!parse_i64(a, opt, v, 1, 64, &i64)) return false;
        a->cpu_devices = (int)i64;
        return true;
    case O_WIDTH:
    case O_HEIGHT:
        if (!parse_int(a, opt, v, &i32)) return false;
        *(int *)dst = i32;
        *(o->special == O_WIDTH ? &a->width_set : &a->height_set) = true;
        return true;
    default:
        break;
    }
    /* generic by kind; a value is checked even when no field receives it */
    switch (o->kind) {
    case K_STR:
        if (dst) *(const char **)dst = kept;
        return true;
    case K_INT:
        if (!parse_int(a, opt, v, &i32)) return false;
        if (dst) *(int *)dst = i32;
        return true;
    case K_I64:
        if (!parse_i64(a, opt, v, INT64_MIN, INT64_MAX, &i64)) return false;
        if (dst) *(int64_t *)dst = i64;
        return true;
    case K_FLOAT:
        if (!parse_float(a, opt, v, &f32)) return false;
        if (dst) *(float *)dst = f32;
        return true;
    case K_BOOL:
        break;
    }
    return true;
}

static int find_option(const char *name, size_t len) {
    for (int k = 0; k < sdc_cli_opt_count; k++) {
        const sdc_cli_opt *o = &sdc_cli_opts[k];
        if (o->short_name && strlen(o->short_name) == len && !strncmp(o->short_name, name, len))
            return k;
        if (strlen(o->long_name) == len && !strncmp(o->long_name, name, len)) return k;
    }
    return -1;
}

/* As sd-cli: the two reference flags are appended to --ref-image-args, in this order. */
static bool join_ref_flags(sdc_cli_args *a) {
    int k = find_option("--ref-image-args", strlen("--ref-image-args"));
    if (a->no_auto_resize_ref &&
        !keep_value(a, k, "--disable-auto-resize-ref-image", "resize_before_vae=0", true))
        return false;
    if (a->increase_ref_index &&
        !keep_value(a, k, "--increase-ref-index", "ref_index_mode=increase", true))
        return false;
    if (a->no_auto_resize_ref || a->increase_ref_index) a->gen.ref_image_args = a->value[k];
    return true;
}

bool sdc_cli_is_known_flag(const char *spelling) {
    return spelling && find_option(spelling, strlen(spelling)) >= 0;
}

int sdc_cli_sdcli_flag_count(void) {
    int n = 0;
    for (int k = 0; k < sdc_cli_opt_count; k++) n += sdc_cli_opts[k].group != G_OWN;
    return n;
}

int sdc_cli_flag_count(const sdc_cli_args *a, const char *spelling) {
    int k = spelling ? find_option(spelling, strlen(spelling)) : -1;
    return k < 0 ? 0 : a->count[k];
}

const char *sdc_cli_flag_value(const sdc_cli_args *a, const char *spelling) {
    int k = spelling ? find_option(spelling, strlen(spelling)) : -1;
    return k < 0 ? NULL : a->value[k];
}

/* ---- validation ---- */

/* Lower-case-insensitive extension of the last path component, with the dot ("" if none). */
static const char *path_extension(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return (dot && dot != base) ? dot : "";
}

static bool validate_generation(sdc_cli_args *a) {
    const sdc_generate_params *g = &a->gen;
    if (a->width_set && (g->width <= 0 || g->width % 8 || g->width > CLI_MAX_SIDE))
        return fail(a, "--width must be a positive multiple of 8 up to %d (got %d)", CLI_MAX_SIDE,
                    g->width);
    if (a->height_set && (g->height <= 0 || g->height % 8 || g->height > CLI_MAX_SIDE))
        return fail(a, "--height must be a positive multiple of 8 up to %d (got %d)", CLI_MAX_SIDE,
                    g->height);
    if (g->steps < 1) return fail(a, "--steps must be at least 1 (got %d)", g->steps);
    if (g->batch_count < 1)
        return fail(a, "--batch-count must be at least 1 (got %d)", g->batch_count);
    if (a->output_begin_idx < -1)
        return fail(a, "--output-begin-idx must not be negative (got %d)", a->output_begin_idx);
    if (a->gen.preview_interval < 0)
        return fail(a, "--preview-interval must not be negative (got %d)", g->preview_interval);
    return true;
}

static bool validate(sdc_cli_args *a) {
    bool server = a->program == SDC_CLI_PROGRAM_SERVER;
    const sdc_context_params *c = &a->ctx;
    if (a->mode == SDC_CLI_MODE_METADATA) {
        if (!a->image_path) return fail(a, "metadata mode needs an image (--image PATH)");
        return true;
    }
    if (a->mode == SDC_CLI_MODE_CONVERT) {
        if (!c->model_path && !c->diffusion_model_path && !c->t5xxl_path && !c->clip_l_path &&
            !c->clip_g_path && !c->vae_path)
            return fail(a, "convert mode needs an input model (-m, --diffusion-model, --t5xxl, "
                           "--clip_l, --clip_g or --vae)");
        if (!a->output_path) a->output_path = "output.gguf";
    } else if (a->mode == SDC_CLI_MODE_UPSCALE) { /* as sd-cli: no diffusion model needed */
        if (!c->upscale_model_path)
            return fail(a, "upscale mode needs an upscaler model (--upscale-model)");
        if (!a->init_img_path) return fail(a, "upscale mode needs an input image (-i/--init-img)");
        if (!a->output_path) a->output_path = "output.png";
    } else {
        if (!c->model_path && !c->diffusion_model_path)
            return fail(a, "no model given: use -m/--model or --diffusion-model (see --help)");
        if (!a->output_path) a->output_path = "output.png";
        const char *ext = path_extension(a->output_path);
        if (!strcasecmp(ext, ".webp") || !strcasecmp(ext, ".avi") || !strcasecmp(ext, ".webm"))
            return fail(a, "--output: '%s': %s output is not supported yet (PNG and JPEG are)",
                        a->output_path, ext + 1);
    }
    if (!server && !*a->output_path) return fail(a, "--output: the path is empty");
    return validate_generation(a);
}

/* A numeric or literal value equal to the flag's neutral value needs no answer. */
static bool is_neutral(const sdc_cli_opt *o, const char *v) {
    if (!o->neutral || !v) return false;
    if (o->kind == K_INT || o->kind == K_FLOAT || o->kind == K_I64) {
        char *e1, *e2;
        double x = strtod(v, &e1), y = strtod(o->neutral, &e2);
        return *e1 == '\0' && x == y;
    }
    return !strcmp(v, o->neutral);
}

static void add_note(sdc_cli_args *a, const char *flag, const char *why) {
    if (a->n_notes >= SDC_CLI_MAX_NOTES) return;
    size_t n = strlen(flag) + strlen(why) + 3;
    char *s = malloc(n);
    if (!s) return;
    snprintf(s, n, "%s: %s", flag, why);
    a->notes[a->n_notes++] = s;
}

/* The flags sdc accepts but cannot apply yet: the first that would change the image is an
 * error, every hint becomes a warning line. */
static bool answer_unsupported(sdc_cli_args *a) {
    for (int k = 0; k < sdc_cli_opt_count; k++) {
        const sdc_cli_opt *o = &sdc_cli_opts[k];
        if (!a->count[k] || o->status != ST_ERROR || is_neutral(o, a->value[k])) continue;
        return fail(a, "%s: %s", o->long_name, o->text);
    }
    /* sd-cli applies <lora:name:weight> from the prompt (its --lora-model-dir is "." by
     * default); generating without would be another image */
    const char *prompts[2] = {a->gen.prompt, a->gen.negative_prompt};
    for (int i = 0; i < 2; i++) {
        const char *l = prompts[i] ? strstr(prompts[i], "<lora:") : NULL;
        if (l)
            return fail(a, "%s names a LoRA (%.40s): LoRA is not supported yet",
                        i ? "the negative prompt" : "the prompt", l);
    }
    for (int k = 0; k < sdc_cli_opt_count; k++) {
        const sdc_cli_opt *o = &sdc_cli_opts[k];
        if (a->count[k] && o->status == ST_WARN && !is_neutral(o, a->value[k]))
            add_note(a, o->long_name, o->text);
    }
    return true;
}

/* -m demo: the demo model's files replace -m, and its settings the defaults of the flags
 * not given (docs/demo.md). */
static bool use_demo(sdc_cli_args *a) {
    sdc_context_params *c = &a->ctx;
    if (a->mode == SDC_CLI_MODE_METADATA || a->mode == SDC_CLI_MODE_UPSCALE) return true;
    if (!sdc_is_demo_model_name(c->model_path)) return true;
    if (!(a->demo = malloc(sizeof *a->demo))) return fail(a, "out of memory");
    if (sdc_demo_model_find(c->model_path, a->demo) != SDC_OK)
        return fail(a, "%s", sdc_last_error());
    const sdc_demo_model *d = a->demo;
    bool pair = d->diffusion_model_path[0] != '\0'; /* else its GGUF */
    c->model_path = pair ? NULL : d->model_path;
    if (pair) c->diffusion_model_path = d->diffusion_model_path;
    if (pair && !c->t5xxl_path) c->t5xxl_path = d->t5xxl_path;
    sdc_generate_params *g = &a->gen;
    if (!a->width_set && !a->init_img_path) g->width = d->width;
    if (!a->height_set && !a->init_img_path) g->height = d->height;
    if (!sdc_cli_flag_count(a, "--steps")) g->steps = d->steps;
    if (!sdc_cli_flag_count(a, "--cfg-scale")) g->cfg_scale = d->cfg_scale;
    if (!sdc_cli_flag_count(a, "--sampling-method") && d->sampling_method)
        g->sampling_method = d->sampling_method;
    if (!sdc_cli_flag_count(a, "--scheduler") && d->scheduler) g->scheduler = d->scheduler;
    return true;
}

/* ---- init, parse, free ---- */

void sdc_cli_args_init(sdc_cli_args *a, sdc_cli_program program) {
    memset(a, 0, sizeof *a);
    a->program = program ? program : SDC_CLI_PROGRAM_SDC;
    a->mode = SDC_CLI_MODE_IMG_GEN;
    sdc_context_params_init(&a->ctx);
    sdc_generate_params_init(&a->gen);
    a->output_begin_idx = -1;
    a->metadata_format = "text";
    a->preview_method = "none";
    a->preview_path = "preview.png";
    a->upscale_repeats = 1;
    a->upscale_tile_size = 128;
}

void sdc_cli_args_free(sdc_cli_args *a) {
    if (!a) return;
    for (int k = 0; k < SDC_CLI_MAX_OPTS; k++) free(a->value[k]);
    for (int i = 0; i < a->n_notes; i++) free(a->notes[i]);
    free(a->sigmas);
    free(a->hires_sigmas);
    free(a->imat_in);
    free(a->ref_images);
    free(a->demo);
    sdc_cli_program p = a->program;
    sdc_cli_args_init(a, p);
}

sdc_cli_parse_result sdc_cli_parse(sdc_cli_args *a, sdc_cli_program program, int argc,
                                   char **argv) {
    sdc_cli_args_init(a, program);
    int scope = program == SDC_CLI_PROGRAM_SERVER ? P_SRV : P_CLI;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0') {
            fail(a, "unexpected argument '%s' (options start with '-'; see --help)", arg);
            return SDC_CLI_PARSE_ERROR;
        }
        /* "--name=value" is accepted for long options */
        const char *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        int k = find_option(arg, name_len);
        char opt[64];
        snprintf(opt, sizeof opt, "%.*s", (int)(name_len < 60 ? name_len : 60), arg);
        if (k < 0) {
            fail(a, "unknown option '%s' (see --help)", opt);
            return SDC_CLI_PARSE_ERROR;
        }
        const sdc_cli_opt *o = &sdc_cli_opts[k];
        if (!(o->scope & scope)) {
            fail(a, "option '%s' is not used by sdc-server (see --help)", opt);
            return SDC_CLI_PARSE_ERROR;
        }
        const char *value = NULL;
        if (o->kind != K_BOOL) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                fail(a, "option '%s' needs a value (%s)", opt, o->value_name ? o->value_name : "");
                return SDC_CLI_PARSE_ERROR;
            }
        } else if (eq) {
            fail(a, "option '%s' does not take a value", opt);
            return SDC_CLI_PARSE_ERROR;
        }
        if (!apply(a, k, opt, value)) return SDC_CLI_PARSE_ERROR;
        /* like sd-cli, --help and --version act as soon as they are read */
        if (a->help || a->version) return SDC_CLI_PARSE_EXIT;
    }
    if (a->list_devices) return SDC_CLI_PARSE_RUN; /* needs no model */
    if (!join_ref_flags(a)) return SDC_CLI_PARSE_ERROR;
    if (!use_demo(a) || !validate(a)) return SDC_CLI_PARSE_ERROR;
    if (a->mode == SDC_CLI_MODE_METADATA) { /* only the program's own hints matter here */
        for (int k = 0; k < sdc_cli_opt_count; k++) {
            const sdc_cli_opt *o = &sdc_cli_opts[k];
            if (a->count[k] && o->status == ST_WARN && o->group == G_CLI)
                add_note(a, o->long_name, o->text);
        }
        return SDC_CLI_PARSE_RUN;
    }
    return answer_unsupported(a) ? SDC_CLI_PARSE_RUN : SDC_CLI_PARSE_ERROR;
}

/* ---- to library parameters ---- */

void sdc_cli_to_context_params(const sdc_cli_args *a, sdc_context_params *p) {
    *p = a->ctx;
}

void sdc_cli_to_generate_params(const sdc_cli_args *a, sdc_generate_params *p) {
    *p = a->gen;
    if (a->n_sigmas > 1) p->steps = a->n_sigmas - 1; /* as sd-cli: the list sets the steps */
}
