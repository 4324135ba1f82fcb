#include "args.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* Largest width/height accepted (the library may reject smaller ones per model). */
#define CLI_MAX_SIDE 16384

/* ---- name tables (spelled as sd.cpp spells them) ---- */

static const struct {
    const char *name;
    int id; /* ggml type id */
} k_weight_types[] = {
    {"f32", 0},  {"f16", 1},   {"bf16", 30}, {"q8_0", 8},  {"q5_0", 6},  {"q5_1", 7},  {"q4_0", 2},
    {"q4_1", 3}, {"q4_K", 12}, {"q5_K", 13}, {"q6_K", 14}, {"q3_K", 11}, {"q2_K", 10},
};

static const char *const k_samplers[] = {
    "euler",         "euler_a",        "heun",    "dpm2",         "dpm++2s_a",      "dpm++2m",
    "dpm++2mv2",     "ipndm",          "ipndm_v", "lcm",          "ddim_trailing",  "tcd",
    "res_multistep", "res_2s",         "er_sde",  "euler_cfg_pp", "euler_a_cfg_pp", "euler_ge",
    "dpm++2m_sde",   "dpm++2m_sde_bt", "lms",
};

static const char *const k_schedulers[] = {
    "discrete",     "karras",     "exponential", "ays",  "gits",         "sgm_uniform",
    "simple",       "smoothstep", "kl_optimal",  "lcm",  "bong_tangent", "ltx2",
    "logit_normal", "flux2",      "flux",        "beta",
};

static const char *const k_rngs[] = {"std_default", "cuda", "cpu"};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

int sdc_cli_weight_type_from_name(const char *name) {
    if (!name) return -1;
    for (size_t i = 0; i < COUNT_OF(k_weight_types); i++)
        if (!strcasecmp(name, k_weight_types[i].name)) return k_weight_types[i].id;
    return -1;
}

static bool in_list(const char *name, const char *const *list, size_t n) {
    if (!name) return false;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(name, list[i])) return true;
    return false;
}

bool sdc_cli_is_sampler_name(const char *name) {
    return in_list(name, k_samplers, COUNT_OF(k_samplers));
}
bool sdc_cli_is_scheduler_name(const char *name) {
    return (name && !strcmp(name, "normal")) || in_list(name, k_schedulers, COUNT_OF(k_schedulers));
}
bool sdc_cli_is_rng_name(const char *name) {
    return in_list(name, k_rngs, COUNT_OF(k_rngs));
}

/* ---- option table ---- */

typedef enum opt_id {
    O_SECTION, /* not an option: a heading in the usage text */
    O_MODE,
    O_MODEL,
    O_DIFFUSION_MODEL,
    O_T5XXL,
    O_CLIP_L,
    O_CLIP_G,
    O_VAE,
    O_T5_TOKENIZER,
    O_THREADS,
    O_TYPE,
    O_TENSOR_TYPE_RULES,
    O_BACKEND,
    O_LIST_DEVICES,
    O_PROMPT,
    O_NEGATIVE_PROMPT,
    O_WIDTH,
    O_HEIGHT,
    O_STEPS,
    O_CFG_SCALE,
    O_SEED,
    O_SAMPLING_METHOD,
    O_SCHEDULER,
    O_RNG,
    O_SAMPLER_RNG,
    O_ETA,
    O_INIT_IMG,
    O_MASK,
    O_STRENGTH,
    O_FLOW_SHIFT,
    O_SIGMAS,
    O_BATCH_COUNT,
    O_OUTPUT,
    O_OUTPUT_BEGIN_IDX,
    O_IMAT_OUT,
    O_IMAT_IN,
    O_CONVERT_NAME,
    O_VERBOSE,
    O_HELP,
    O_VERSION,
} opt_id;

typedef struct opt_def {
    const char *short_name; /* "-m" or NULL */
    const char *long_name;  /* "--model" */
    opt_id id;
    const char *value_name; /* NULL: a flag without value */
    const char *help;
} opt_def;

static const opt_def k_options[] = {
    {NULL, NULL, O_SECTION, NULL, "Program:"},
    {"-M", "--mode", O_MODE, "MODE", "run mode: img_gen or convert (default: img_gen)"},
    {"-o", "--output", O_OUTPUT, "PATH",
     "output file (default: output.png; output.gguf for convert); printf-style %d is "
     "replaced by the image index"},
    {NULL, "--output-begin-idx", O_OUTPUT_BEGIN_IDX, "N",
     "first index of an image sequence (default: 0)"},
    {NULL, "--imat-out", O_IMAT_OUT, "PATH", "collect an importance matrix and save it here"},
    {NULL, "--imat-in", O_IMAT_IN, "PATH", "load an importance matrix (repeatable)"},
    {NULL, "--convert-name", O_CONVERT_NAME, NULL, "convert tensor names (convert mode)"},
    {"-v", "--verbose", O_VERBOSE, NULL, "print extra information"},
    {"-h", "--help", O_HELP, NULL, "show this help and exit"},
    {NULL, "--version", O_VERSION, NULL, "print the version and exit"},

    {NULL, NULL, O_SECTION, NULL, "Context:"},
    {"-m", "--model", O_MODEL, "PATH", "full model checkpoint"},
    {NULL, "--diffusion-model", O_DIFFUSION_MODEL, "PATH", "standalone diffusion model"},
    {NULL, "--t5xxl", O_T5XXL, "PATH", "T5 text encoder"},
    {NULL, "--clip_l", O_CLIP_L, "PATH", "CLIP-L text encoder (convert mode)"},
    {NULL, "--clip_g", O_CLIP_G, "PATH", "CLIP-G text encoder (convert mode)"},
    {NULL, "--vae", O_VAE, "PATH", "VAE (convert mode)"},
    {NULL, "--t5-tokenizer", O_T5_TOKENIZER, "PATH",
     "T5 tokenizer (tokenizer.json or spiece.model)"},
    {"-t", "--threads", O_THREADS, "N", "threads; <= 0 means all physical cores (default: -1)"},
    {NULL, "--type", O_TYPE, "TYPE",
     "convert weights on load: f32, f16, bf16, q8_0, q5_0, q5_1, q4_0, q4_1, q6_K, q5_K, "
     "q4_K, q3_K, q2_K (default: as stored)"},
    {NULL, "--tensor-type-rules", O_TENSOR_TYPE_RULES, "RULES",
     "weight type per tensor pattern, e.g. \"^vae\\.=f16,model\\.=q8_0\""},
    {NULL, "--backend", O_BACKEND, "SPEC",
     "backend per module, e.g. cpu or diffusion=cuda0,te=cpu"},
    {NULL, "--list-devices", O_LIST_DEVICES, NULL, "list devices (name<TAB>description) and exit"},
    {NULL, "--rng", O_RNG, "RNG", "noise generator: std_default, cuda or cpu (default: cuda)"},
    {NULL, "--sampler-rng", O_SAMPLER_RNG, "RNG", "sampler noise generator (default: as --rng)"},

    {NULL, NULL, O_SECTION, NULL, "Generation:"},
    {"-p", "--prompt", O_PROMPT, "TEXT", "the prompt"},
    {"-n", "--negative-prompt", O_NEGATIVE_PROMPT, "TEXT", "the negative prompt"},
    {"-W", "--width", O_WIDTH, "N", "image width in pixels, a multiple of 8 (default: 512)"},
    {"-H", "--height", O_HEIGHT, "N", "image height in pixels, a multiple of 8 (default: 512)"},
    {NULL, "--steps", O_STEPS, "N", "sampling steps (default: 20)"},
    {NULL, "--cfg-scale", O_CFG_SCALE, "X", "classifier-free guidance scale (default: 7.0)"},
    {"-s", "--seed", O_SEED, "N", "RNG seed; < 0 picks a random one (default: 42)"},
    {NULL, "--sampling-method", O_SAMPLING_METHOD, "NAME",
     "euler, euler_a, heun, dpm2, dpm++2s_a, dpm++2m, dpm++2mv2, ipndm, ipndm_v, lcm, "
     "ddim_trailing, tcd, res_multistep, res_2s, er_sde, euler_cfg_pp, euler_a_cfg_pp, "
     "euler_ge, dpm++2m_sde, dpm++2m_sde_bt, lms (default: model-specific)"},
    {NULL, "--scheduler", O_SCHEDULER, "NAME",
     "discrete (alias normal), karras, exponential, ays, gits, sgm_uniform, simple, "
     "smoothstep, kl_optimal, lcm, bong_tangent, ltx2, logit_normal, flux2, flux, beta "
     "(default: model-specific)"},
    {NULL, "--eta", O_ETA, "X", "eta of ancestral/DDIM-style samplers (default: sampler's)"},
    {NULL, "--flow-shift", O_FLOW_SHIFT, "X", "shift of flow models (default: auto)"},
    {"-i", "--init-img", O_INIT_IMG, "PATH", "img2img: start from this PNG (sets -W/-H)"},
    {NULL, "--mask", O_MASK, "PATH", "inpainting mask PNG: white regenerates, black keeps"},
    {NULL, "--strength", O_STRENGTH, "X",
     "img2img: share of the schedule run, (0,1] (default: 0.75)"},
    {NULL, "--sigmas", O_SIGMAS, "LIST", "custom sigmas, comma-separated, e.g. \"1,0.5,0\""},
    {"-b", "--batch-count", O_BATCH_COUNT, "N",
     "images to generate, seeds seed, seed+1, ... (default: 1)"},
};

void sdc_cli_print_usage(FILE *f, const char *prog) {
    fprintf(f, "sdc %s: Stable Diffusion in C\n", sdc_version());
    fprintf(f, "Usage: %s [options]\n", prog ? prog : "sdc");
    fprintf(f,
            "Example: %s --diffusion-model dit.safetensors --t5xxl t5.safetensors "
            "-p \"a cat\" -W 64 -H 64 --steps 4 -o cat.png\n",
            prog ? prog : "sdc");
    for (size_t i = 0; i < COUNT_OF(k_options); i++) {
        const opt_def *o = &k_options[i];
        if (o->id == O_SECTION) {
            fprintf(f, "\n%s\n", o->help);
            continue;
        }
        char names[64];
        snprintf(names, sizeof names, "%s%s%s%s%s", o->short_name ? o->short_name : "",
                 o->short_name ? ", " : "    ", o->long_name, o->value_name ? " " : "",
                 o->value_name ? o->value_name : "");
        fprintf(f, "  %-30s %s\n", names, o->help);
    }
}

/* ---- parsing helpers ---- */

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
    return false;
}

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

/* "1.0, 0.5,0" or "[1,0.5,0]" -> floats, as sd-cli accepts them. */
static bool parse_sigmas(sdc_cli_args *a, const char *opt, const char *s) {
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
    for (char *save = NULL, *tok = strtok_r(p, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t') tok++;
        char *e = tok + strlen(tok);
        while (e > tok && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
        if (!*tok) continue;
        if (!parse_float(a, opt, tok, &vals[n])) {
            free(copy);
            free(vals);
            return false;
        }
        n++;
    }
    free(copy);
    if (n == 0) {
        free(vals);
        return fail(a, "%s: no sigma values in '%s'", opt, s);
    }
    free(a->sigmas);
    a->sigmas = vals;
    a->n_sigmas = n;
    return true;
}

/* Repeated options are joined with ',' as sd-cli does. */
static bool append_joined(sdc_cli_args *a, const char *opt, char **dst, const char *value) {
    size_t old = *dst ? strlen(*dst) : 0, add = strlen(value);
    char *s = realloc(*dst, old + add + 2);
    if (!s) return fail(a, "%s: out of memory", opt);
    if (old) s[old++] = ',';
    memcpy(s + old, value, add + 1);
    *dst = s;
    return true;
}

static bool choose_name(sdc_cli_args *a, const char *opt, const char *value, const char **dst,
                        bool (*known)(const char *), const char *what, const char *expected) {
    if (!known(value)) return fail(a, "%s: unknown %s '%s' (%s)", opt, what, value, expected);
    *dst = value;
    return true;
}

/* Applies one option; `opt` is the spelling the user typed (for messages). */
static bool apply(sdc_cli_args *a, const opt_def *o, const char *opt, const char *v) {
    int64_t i64;
    switch (o->id) {
    case O_SECTION:
        return false;
    case O_MODE:
        if (!strcmp(v, "img_gen")) {
            a->mode = SDC_CLI_MODE_IMG_GEN;
        } else if (!strcmp(v, "convert")) {
            a->mode = SDC_CLI_MODE_CONVERT;
        } else if (!strcmp(v, "vid_gen") || !strcmp(v, "upscale") || !strcmp(v, "adetailer") ||
                   !strcmp(v, "metadata")) {
            return fail(a, "%s: mode '%s' is not supported by sdc (use img_gen or convert)", opt,
                        v);
        } else {
            return fail(a, "%s: unknown mode '%s' (expected img_gen or convert)", opt, v);
        }
        return true;
    case O_MODEL:
        a->model_path = v;
        return true;
    case O_DIFFUSION_MODEL:
        a->diffusion_model_path = v;
        return true;
    case O_CLIP_L:
        a->clip_l_path = v;
        return true;
    case O_CLIP_G:
        a->clip_g_path = v;
        return true;
    case O_VAE:
        a->vae_path = v;
        return true;
    case O_T5XXL:
        a->t5xxl_path = v;
        return true;
    case O_T5_TOKENIZER:
        a->t5_tokenizer_path = v;
        return true;
    case O_THREADS:
        return parse_int(a, opt, v, &a->n_threads);
    case O_TYPE:
        a->weight_type = sdc_cli_weight_type_from_name(v);
        if (a->weight_type < 0)
            return fail(a,
                        "%s: unknown weight type '%s' (expected f32, f16, bf16, q8_0, q5_0, "
                        "q5_1, q4_0, q4_1, q6_K, q5_K, q4_K, q3_K or q2_K)",
                        opt, v);
        return true;
    case O_TENSOR_TYPE_RULES:
        return append_joined(a, opt, &a->tensor_type_rules, v);
    case O_BACKEND:
        return append_joined(a, opt, &a->backend, v);
    case O_LIST_DEVICES:
        a->list_devices = true;
        return true;
    case O_PROMPT:
        a->prompt = v;
        return true;
    case O_NEGATIVE_PROMPT:
        a->negative_prompt = v;
        return true;
    case O_WIDTH:
        return parse_int(a, opt, v, &a->width);
    case O_HEIGHT:
        return parse_int(a, opt, v, &a->height);
    case O_STEPS:
        return parse_int(a, opt, v, &a->steps);
    case O_CFG_SCALE:
        return parse_float(a, opt, v, &a->cfg_scale);
    case O_SEED:
        if (!parse_i64(a, opt, v, INT64_MIN, INT64_MAX, &i64)) return false;
        a->seed = i64;
        return true;
    case O_SAMPLING_METHOD:
        return choose_name(a, opt, v, &a->sampling_method, sdc_cli_is_sampler_name,
                           "sampling method", "see --help");
    case O_SCHEDULER:
        if (!choose_name(a, opt, v, &a->scheduler, sdc_cli_is_scheduler_name, "scheduler",
                         "see --help"))
            return false;
        if (!strcmp(v, "normal")) a->scheduler = "discrete";
        return true;
    case O_RNG:
        return choose_name(a, opt, v, &a->rng, sdc_cli_is_rng_name, "RNG",
                           "expected std_default, cuda or cpu");
    case O_SAMPLER_RNG:
        return choose_name(a, opt, v, &a->sampler_rng, sdc_cli_is_rng_name, "RNG",
                           "expected std_default, cuda or cpu");
    case O_ETA:
        return parse_float(a, opt, v, &a->eta);
    case O_INIT_IMG:
        a->init_img_path = v;
        return true;
    case O_MASK:
        a->mask_path = v;
        return true;
    case O_STRENGTH:
        if (!parse_float(a, opt, v, &a->strength)) return false;
        if (!(a->strength > 0.0f && a->strength <= 1.0f)) {
            snprintf(a->error, sizeof a->error, "%s must be in (0, 1] (got %s)", opt, v);
            return false;
        }
        return true;
    case O_FLOW_SHIFT:
        return parse_float(a, opt, v, &a->flow_shift);
    case O_SIGMAS:
        return parse_sigmas(a, opt, v);
    case O_BATCH_COUNT:
        return parse_int(a, opt, v, &a->batch_count);
    case O_OUTPUT:
        a->output_path = v;
        return true;
    case O_OUTPUT_BEGIN_IDX:
        return parse_int(a, opt, v, &a->output_begin_idx);
    case O_IMAT_OUT:
        a->imat_out = v;
        return true;
    case O_IMAT_IN: {
        const char **list = realloc(a->imat_in, sizeof(*list) * (size_t)(a->n_imat_in + 1));
        if (!list) return fail(a, "%s: out of memory", opt);
        list[a->n_imat_in++] = v;
        a->imat_in = list;
        return true;
    }
    case O_CONVERT_NAME:
        a->convert_name = true;
        return true;
    case O_VERBOSE:
        a->verbose = true;
        return true;
    case O_HELP:
        a->help = true;
        return true;
    case O_VERSION:
        a->version = true;
        return true;
    }
    return false;
}

static const opt_def *find_option(const char *name, size_t len) {
    for (size_t i = 0; i < COUNT_OF(k_options); i++) {
        const opt_def *o = &k_options[i];
        if (o->id == O_SECTION) continue;
        if (o->short_name && strlen(o->short_name) == len && !strncmp(o->short_name, name, len))
            return o;
        if (strlen(o->long_name) == len && !strncmp(o->long_name, name, len)) return o;
    }
    return NULL;
}

/* Lower-case extension of the last path component, including the dot ("" if none). */
static const char *path_extension(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return (dot && dot != base) ? dot : "";
}

/* Checks the combination of values once all options are read. */
static bool validate(sdc_cli_args *a) {
    if (a->mode == SDC_CLI_MODE_CONVERT) {
        if (!a->model_path && !a->diffusion_model_path && !a->t5xxl_path && !a->clip_l_path &&
            !a->clip_g_path && !a->vae_path)
            return fail(a, "convert mode needs an input model (-m, --diffusion-model, --t5xxl, "
                           "--clip_l, --clip_g or --vae)");
        if (!a->output_path) a->output_path = "output.gguf";
    } else {
        if (!a->model_path && !a->diffusion_model_path)
            return fail(a, "no model given: use -m/--model or --diffusion-model (see --help)");
        if (!a->output_path) a->output_path = "output.png";
        const char *ext = path_extension(a->output_path);
        if (!strcasecmp(ext, ".jpg") || !strcasecmp(ext, ".jpeg") || !strcasecmp(ext, ".jpe") ||
            !strcasecmp(ext, ".webp"))
            return fail(a, "--output: '%s': only PNG output is supported", a->output_path);
    }
    if (!*a->output_path) return fail(a, "--output: the path is empty");
    if (a->width <= 0 || a->width % 8 || a->width > CLI_MAX_SIDE)
        return fail(a, "--width must be a positive multiple of 8 up to %d (got %d)", CLI_MAX_SIDE,
                    a->width);
    if (a->height <= 0 || a->height % 8 || a->height > CLI_MAX_SIDE)
        return fail(a, "--height must be a positive multiple of 8 up to %d (got %d)", CLI_MAX_SIDE,
                    a->height);
    if (a->steps < 1) return fail(a, "--steps must be at least 1 (got %d)", a->steps);
    if (a->batch_count < 1)
        return fail(a, "--batch-count must be at least 1 (got %d)", a->batch_count);
    if (a->output_begin_idx < -1)
        return fail(a, "--output-begin-idx must not be negative (got %d)", a->output_begin_idx);
    return true;
}

void sdc_cli_args_init(sdc_cli_args *a) {
    memset(a, 0, sizeof *a);
    a->mode = SDC_CLI_MODE_IMG_GEN;
    a->n_threads = -1;
    a->weight_type = -1;
    a->prompt = "";
    a->negative_prompt = "";
    a->width = 512;
    a->height = 512;
    a->steps = 20;
    a->cfg_scale = 7.0f;
    a->seed = 42;
    a->rng = "cuda";
    a->eta = INFINITY;
    a->strength = 0.75f;
    a->flow_shift = INFINITY;
    a->batch_count = 1;
    a->output_begin_idx = -1;
}

void sdc_cli_args_free(sdc_cli_args *a) {
    if (!a) return;
    free(a->tensor_type_rules);
    free(a->backend);
    free(a->sigmas);
    free(a->imat_in);
    a->tensor_type_rules = a->backend = NULL;
    a->sigmas = NULL;
    a->imat_in = NULL;
    a->n_sigmas = a->n_imat_in = 0;
}

sdc_cli_parse_result sdc_cli_parse(sdc_cli_args *a, int argc, char **argv) {
    sdc_cli_args_init(a);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == '\0') {
            fail(a, "unexpected argument '%s' (options start with '-'; see --help)", arg);
            return SDC_CLI_PARSE_ERROR;
        }
        /* "--name=value" is accepted for long options */
        const char *eq = !strncmp(arg, "--", 2) ? strchr(arg, '=') : NULL;
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        const opt_def *o = find_option(arg, name_len);
        char opt[64];
        snprintf(opt, sizeof opt, "%.*s", (int)(name_len < 60 ? name_len : 60), arg);
        if (!o) {
            fail(a, "unknown option '%s' (see --help)", opt);
            return SDC_CLI_PARSE_ERROR;
        }
        const char *value = NULL;
        if (o->value_name) {
            if (eq) {
                value = eq + 1;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                fail(a, "option '%s' needs a value (%s)", opt, o->value_name);
                return SDC_CLI_PARSE_ERROR;
            }
        } else if (eq) {
            fail(a, "option '%s' does not take a value", opt);
            return SDC_CLI_PARSE_ERROR;
        }
        if (!apply(a, o, opt, value)) return SDC_CLI_PARSE_ERROR;
        /* like sd-cli, --help and --version act as soon as they are read */
        if (a->help || a->version) return SDC_CLI_PARSE_EXIT;
    }
    if (a->list_devices) return SDC_CLI_PARSE_RUN; /* needs no model */
    return validate(a) ? SDC_CLI_PARSE_RUN : SDC_CLI_PARSE_ERROR;
}

/* ---- input files ---- */

static bool check_file(const char *opt, const char *path, char *err, size_t n) {
    if (!path) return true;
    struct stat st;
    if (!*path) {
        snprintf(err, n, "%s: empty file name", opt);
        return false;
    }
    if (stat(path, &st) != 0) {
        snprintf(err, n, "%s: cannot open '%s': %s", opt, path, strerror(errno));
        return false;
    }
    if (S_ISDIR(st.st_mode)) {
        snprintf(err, n, "%s: '%s' is a directory, not a file", opt, path);
        return false;
    }
    if (access(path, R_OK) != 0) {
        snprintf(err, n, "%s: cannot read '%s': %s", opt, path, strerror(errno));
        return false;
    }
    return true;
}

bool sdc_cli_check_inputs(const sdc_cli_args *a, char *err, size_t err_size) {
    if (!check_file("--model", a->model_path, err, err_size)) return false;
    if (!check_file("--diffusion-model", a->diffusion_model_path, err, err_size)) return false;
    if (!check_file("--t5xxl", a->t5xxl_path, err, err_size)) return false;
    if (!check_file("--clip_l", a->clip_l_path, err, err_size)) return false;
    if (!check_file("--clip_g", a->clip_g_path, err, err_size)) return false;
    if (!check_file("--vae", a->vae_path, err, err_size)) return false;
    if (!check_file("--t5-tokenizer", a->t5_tokenizer_path, err, err_size)) return false;
    if (!check_file("--init-img", a->init_img_path, err, err_size)) return false;
    if (!check_file("--mask", a->mask_path, err, err_size)) return false;
    for (int i = 0; i < a->n_imat_in; i++)
        if (!check_file("--imat-in", a->imat_in[i], err, err_size)) return false;
    return true;
}

/* ---- output names ---- */

/* Length of a "%d" / "%3d" / "%03d" specifier at s (s[0] == '%'), 0 if there is none. */
static size_t index_spec_len(const char *s) {
    size_t k = 1;
    while (k <= 3 && s[k] >= '0' && s[k] <= '9') k++;
    return s[k] == 'd' ? k + 1 : 0;
}

static bool has_index_spec(const char *s) {
    for (; *s; s++) {
        if (*s != '%') continue;
        if (s[1] == '%') {
            s++;
            continue;
        }
        if (index_spec_len(s)) return true;
    }
    return false;
}

/* Replaces every index specifier by `index` and "%%" by "%", as sd-cli does. */
static char *expand_index(const char *pattern, int index) {
    size_t cap = strlen(pattern) + 64, len = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (const char *s = pattern; *s;) {
        char piece[1024]; /* a width has at most 3 digits: "%999d" fits */
        size_t spec = s[0] == '%' ? index_spec_len(s) : 0;
        size_t n;
        if (s[0] == '%' && s[1] == '%') {
            piece[0] = '%', n = 1, s += 2;
        } else if (spec) {
            int width = 0;
            bool zero = s[1] == '0';
            for (size_t k = 1; k + 1 < spec; k++) width = width * 10 + (s[k] - '0');
            n = (size_t)snprintf(piece, sizeof piece, zero ? "%0*d" : "%*d", width, index);
            s += spec;
        } else {
            piece[0] = *s++, n = 1;
        }
        if (len + n + 1 > cap) {
            while (len + n + 1 > cap) cap *= 2;
            char *grown = realloc(out, cap);
            if (!grown) {
                free(out);
                return NULL;
            }
            out = grown;
        }
        memcpy(out + len, piece, n);
        len += n;
    }
    out[len] = '\0';
    return out;
}

char *sdc_cli_output_name(const sdc_cli_args *a, int index, int count) {
    const char *path = a->output_path ? a->output_path : "output.png";
    int first = a->output_begin_idx < 0 ? 0 : a->output_begin_idx;
    const char *ext = path_extension(path);
    bool is_png = !strcasecmp(ext, ".png");
    /* base = path without a known image extension; unknown ones get ".png" appended */
    size_t base_len = strlen(path) - (is_png ? strlen(ext) : 0);
    const char *suffix = is_png ? ext : ".png";

    char *joined = malloc(base_len + 32 + strlen(suffix));
    if (!joined) return NULL;
    memcpy(joined, path, base_len);
    size_t len = base_len;
    bool pattern = has_index_spec(path);
    if (!pattern && count > 1) len += (size_t)sprintf(joined + len, "_%d", first + index);
    strcpy(joined + len, suffix);
    if (!pattern) return joined;
    char *expanded = expand_index(joined, first + index);
    free(joined);
    return expanded;
}

/* ---- to library parameters ---- */

void sdc_cli_to_context_params(const sdc_cli_args *a, sdc_context_params *p) {
    sdc_context_params_init(p);
    p->model_path = a->model_path;
    p->diffusion_model_path = a->diffusion_model_path;
    p->t5xxl_path = a->t5xxl_path;
    p->t5_tokenizer_path = a->t5_tokenizer_path;
    p->n_threads = a->n_threads;
    p->weight_type = a->weight_type;
    p->tensor_type_rules = a->tensor_type_rules;
}

void sdc_cli_to_generate_params(const sdc_cli_args *a, sdc_generate_params *p) {
    sdc_generate_params_init(p);
    p->prompt = a->prompt;
    p->negative_prompt = a->negative_prompt;
    p->width = a->width;
    p->height = a->height;
    p->steps = a->steps;
    p->cfg_scale = a->cfg_scale;
    p->seed = a->seed;
    p->sampling_method = a->sampling_method;
    p->scheduler = a->scheduler;
    p->rng = a->rng;
    p->sampler_rng = a->sampler_rng;
    if (isfinite(a->eta)) p->eta = a->eta; /* else the library's sampler default */
    p->batch_count = a->batch_count;
    p->strength = a->strength;
    p->sigmas = a->sigmas;
    p->n_sigmas = a->n_sigmas;
    if (a->n_sigmas > 1) p->steps = a->n_sigmas - 1; /* as sd-cli: the list sets the steps */
}
