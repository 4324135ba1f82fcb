/* Command-line flags of `sdc`, named and defaulted as sd.cpp's sd-cli names them. */
#ifndef SDC_CLI_ARGS_H
#define SDC_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sdc.h"

typedef enum sdc_cli_mode {
    SDC_CLI_MODE_IMG_GEN = 0,
    SDC_CLI_MODE_CONVERT = 1,
} sdc_cli_mode;

/* Strings point into argv unless noted; free the struct with sdc_cli_args_free. */
typedef struct sdc_cli_args {
    sdc_cli_mode mode; /* -M/--mode */

    /* model files and context */
    const char *model_path;           /* -m/--model */
    const char *diffusion_model_path; /* --diffusion-model */
    const char *t5xxl_path;           /* --t5xxl */
    const char *t5_tokenizer_path;    /* --t5-tokenizer */
    const char *clip_l_path;          /* --clip_l (convert mode) */
    const char *clip_g_path;          /* --clip_g (convert mode) */
    const char *vae_path;             /* --vae (convert mode) */
    int n_threads;                    /* -t/--threads, <= 0: all physical cores */
    int weight_type;                  /* --type as a ggml type id, -1: as stored */
    char *tensor_type_rules;          /* --tensor-type-rules, repeats joined by ',' (owned) */
    char *backend;                    /* --backend, repeats joined by ',' (owned) */
    bool list_devices;                /* --list-devices */

    /* generation */
    const char *prompt;          /* -p/--prompt */
    const char *negative_prompt; /* -n/--negative-prompt */
    int width, height;           /* -W/--width, -H/--height */
    int steps;                   /* --steps */
    float cfg_scale;             /* --cfg-scale */
    int64_t seed;                /* -s/--seed, < 0: random */
    const char *sampling_method; /* --sampling-method, NULL: model default */
    const char *scheduler;       /* --scheduler, NULL: model default ("normal" -> "discrete") */
    const char *rng;             /* --rng */
    const char *sampler_rng;     /* --sampler-rng, NULL: same as --rng */
    float eta;                   /* --eta, INFINITY: sampler default */
    const char *init_img_path;   /* -i/--init-img */
    const char *mask_path;       /* --mask */
    float strength;              /* --strength (default 0.75) */
    float flow_shift;            /* --flow-shift, INFINITY: model default */
    float *sigmas;               /* --sigmas (owned), NULL if not given */
    int n_sigmas;
    int batch_count; /* -b/--batch-count */

    /* output and program */
    const char *output_path; /* -o/--output */
    int output_begin_idx;    /* --output-begin-idx, -1: 0 */
    const char *imat_out;    /* --imat-out */
    const char **imat_in;    /* --imat-in, repeatable (array owned) */
    int n_imat_in;
    bool convert_name; /* --convert-name */
    bool verbose;      /* -v/--verbose */
    bool help;         /* -h/--help */
    bool version;      /* --version */

    char error[512]; /* why parsing failed (without "sdc: error: ") */
} sdc_cli_args;

typedef enum sdc_cli_parse_result {
    SDC_CLI_PARSE_RUN,   /* arguments valid: go on */
    SDC_CLI_PARSE_EXIT,  /* --help or --version: print and exit 0 */
    SDC_CLI_PARSE_ERROR, /* args->error says why: exit 1 */
} sdc_cli_parse_result;

/* Sets the defaults (sd-cli's). */
void sdc_cli_args_init(sdc_cli_args *a);
/* Initialises *a, parses argv[1..argc-1] and validates the combination. */
sdc_cli_parse_result sdc_cli_parse(sdc_cli_args *a, int argc, char **argv);
void sdc_cli_args_free(sdc_cli_args *a);

void sdc_cli_print_usage(FILE *f, const char *prog);

/* Checks that every input file named on the command line can be read. Returns false
 * and writes one line to err if not. */
bool sdc_cli_check_inputs(const sdc_cli_args *a, char *err, size_t err_size);

/* File name of image `index` of `count`, as sd-cli names them: "out.png" for one image,
 * "out_0.png", "out_1.png", ... for several, printf-style "%d"/"%03d" in the path
 * replaced by the index, ".png" appended when the path has no image extension.
 * Returns a malloc'd string or NULL (out of memory). */
char *sdc_cli_output_name(const sdc_cli_args *a, int index, int count);

void sdc_cli_to_context_params(const sdc_cli_args *a, sdc_context_params *p);
void sdc_cli_to_generate_params(const sdc_cli_args *a, sdc_generate_params *p);

/* Name tables (exposed for tests and the usage text). */
int sdc_cli_weight_type_from_name(const char *name); /* -1 if unknown */
bool sdc_cli_is_sampler_name(const char *name);
bool sdc_cli_is_scheduler_name(const char *name);
bool sdc_cli_is_rng_name(const char *name);

#endif
