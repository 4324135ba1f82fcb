/* Command-line flags of `sdc` and `sdc-server`: every flag of sd.cpp's sd-cli with its
 * spellings and value syntax, plus sdc's own. A flag sdc supports fills the library's
 * parameter structs (whose *_init give the defaults); one the library decides per model
 * is passed through; one that does not apply yet is refused (it would change the image)
 * or accepted with a warning (a hint). The table is tools/common/flag_table.c. */
#ifndef SDC_TOOLS_ARGS_H
#define SDC_TOOLS_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sdc.h"

#define SDC_CLI_MAX_OPTS  192 /* size of the per-flag arrays below (>= the table) */
#define SDC_CLI_MAX_NOTES 32  /* warnings kept */

typedef enum sdc_cli_mode {
    SDC_CLI_MODE_IMG_GEN = 0,
    SDC_CLI_MODE_CONVERT = 1,
    SDC_CLI_MODE_METADATA = 2,
    SDC_CLI_MODE_UPSCALE = 3, /* -M upscale: -i through --upscale-model */
} sdc_cli_mode;

typedef enum sdc_cli_program {
    SDC_CLI_PROGRAM_SDC = 1,    /* sdc: every flag */
    SDC_CLI_PROGRAM_SERVER = 2, /* sdc-server: the model flags and generation defaults */
} sdc_cli_program;

/* Free with sdc_cli_args_free. String fields point into argv or into strings owned here. */
typedef struct sdc_cli_args {
    sdc_cli_program program;
    sdc_cli_mode mode; /* -M/--mode */
    /* the library's parameters, defaults from sdc_context_params_init and
     * sdc_generate_params_init; the flags write into them */
    sdc_context_params ctx;
    sdc_generate_params gen;
    bool width_set, height_set; /* -W/-H given (else an -i image sets the size) */
    float *sigmas;              /* --sigmas (owned; also gen.sigmas) */
    int n_sigmas;
    float *hires_sigmas; /* --hires-sigmas (owned; also gen.hires_sigmas) */
    int n_hires_sigmas;

    /* the program's own */
    const char *output_path;     /* -o/--output */
    int output_begin_idx;        /* --output-begin-idx, -1: 0 */
    const char *init_img_path;   /* -i/--init-img */
    const char *mask_path;       /* --mask */
    const char *image_path;      /* --image (-M metadata) */
    const char *metadata_format; /* --metadata-format: text or json */
    const char *preview_method;  /* --preview: none, proj, tae, vae */
    const char *preview_path;    /* --preview-path */
    const char *imat_out;        /* --imat-out */
    const char **imat_in;        /* --imat-in, repeatable (array owned) */
    int n_imat_in;
    const char **ref_images; /* -r/--ref-image, repeatable (array owned) */
    int n_ref_images;
    int cpu_devices;       /* --cpu-devices, 0: not given */
    int upscale_repeats;   /* --upscale-repeats (default 1) */
    int upscale_tile_size; /* --upscale-tile-size (default 128) */
    bool convert_name, verbose, color, no_metadata, list_devices, help, version;
    bool no_auto_resize_ref; /* --disable-auto-resize-ref-image (joins --ref-image-args) */
    bool increase_ref_index; /* --increase-ref-index (joins --ref-image-args after it) */
    /* -m demo (sdc-server: also no model at all): the shipped model's files and settings
     * (owned; NULL otherwise); its paths replace -m in ctx, docs/demo.md */
    sdc_demo_model *demo;

    /* per table entry: how often given, and the value (joined where sd-cli joins) */
    int count[SDC_CLI_MAX_OPTS];
    char *value[SDC_CLI_MAX_OPTS]; /* owned */

    /* warnings for flags that do not apply yet, one line each (owned) */
    char *notes[SDC_CLI_MAX_NOTES];
    int n_notes;
    char error[512]; /* why parsing failed (without "sdc: error: ") */
} sdc_cli_args;

typedef enum sdc_cli_parse_result {
    SDC_CLI_PARSE_RUN,   /* arguments valid: go on (print a->notes as warnings first) */
    SDC_CLI_PARSE_EXIT,  /* --help or --version: print and exit 0 */
    SDC_CLI_PARSE_ERROR, /* a->error says why: exit 1 */
} sdc_cli_parse_result;

/* Sets the defaults: the library's, and sd-cli's for the program's own fields. */
void sdc_cli_args_init(sdc_cli_args *a, sdc_cli_program program);
/* Initialises *a, parses argv[1..argc-1], validates the combination and answers the
 * flags that do not apply yet (error, or a line in a->notes). */
sdc_cli_parse_result sdc_cli_parse(sdc_cli_args *a, sdc_cli_program program, int argc, char **argv);
void sdc_cli_args_free(sdc_cli_args *a);

/* The program's usage text: the flags it uses, then those it only accepts. */
void sdc_cli_print_usage(FILE *f, sdc_cli_program program);

/* Number of sd-cli flags in the table (sdc's own not counted) and a lookup by spelling
 * (NULL if unknown), for tests and help. */
int sdc_cli_sdcli_flag_count(void);
bool sdc_cli_is_known_flag(const char *spelling);
/* Times the flag (any spelling) was given, and its value (joined repeats), for tests. */
int sdc_cli_flag_count(const sdc_cli_args *a, const char *spelling);
const char *sdc_cli_flag_value(const sdc_cli_args *a, const char *spelling);

/* Checks that every input file named on the command line can be read. Returns false
 * and writes one line to err if not. */
bool sdc_cli_check_inputs(const sdc_cli_args *a, char *err, size_t err_size);

/* File name of image `index` of `count`, as sd-cli names them: "out.png" for one image,
 * "out_0.png", "out_1.png", ... for several, printf-style "%d"/"%03d" in the path
 * replaced by the index, ".png" appended when the path has no image extension
 * (.png, .jpg, .jpeg, .jpe). Returns a malloc'd string or NULL (out of memory). */
char *sdc_cli_output_name(const sdc_cli_args *a, int index, int count);

/* The library's parameters (copies of a->ctx / a->gen with the combination rules applied:
 * --sigmas sets the steps). Pointers stay owned by a. */
void sdc_cli_to_context_params(const sdc_cli_args *a, sdc_context_params *p);
void sdc_cli_to_generate_params(const sdc_cli_args *a, sdc_generate_params *p);

/* Names (from the library's enumerations), for tests and the usage text. */
bool sdc_cli_is_sampler_name(const char *name);
bool sdc_cli_is_scheduler_name(const char *name); /* also sd-cli's alias "normal" */
bool sdc_cli_is_rng_name(const char *name);

#endif
