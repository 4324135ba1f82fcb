/* sdc: command-line image generation, flag-compatible with sd.cpp's sd-cli.
 * parse flags -> load models -> generate (progress bar) -> save images -> summary line.
 * Also -M convert (weights to GGUF/safetensors), -M upscale (ESRGAN on -i) and -M metadata
 * (an image's parameters). */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "progress.h"
#include "sdc.h"

static bool g_color; /* --color: coloured log tags */

/* Prints "sdc: error: <message>" as exactly one line and returns the exit status 1. */
static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    for (char *c = msg; *c; c++)
        if (*c == '\n' || *c == '\r') *c = ' ';
    fprintf(stderr, "sdc: %serror:%s %s\n", g_color ? "\033[31m" : "", g_color ? "\033[0m" : "",
            msg);
    return 1;
}

static void warn(const char *msg) {
    fprintf(stderr, "sdc: %swarning:%s %s\n", g_color ? "\033[33m" : "", g_color ? "\033[0m" : "",
            msg);
}

static const char *library_error(sdc_status st) {
    const char *msg = sdc_last_error();
    return (msg && *msg) ? msg : sdc_status_string(st);
}

static void log_to_stderr(sdc_log_level level, const char *msg, void *user) {
    (void)user;
    static const char *const prefix[] = {"debug: ", "", "warning: ", "error: "};
    static const char *const color[] = {"\033[36m", "", "\033[33m", "\033[31m"};
    bool known = level >= SDC_LOG_DEBUG && level <= SDC_LOG_ERROR;
    const char *p = known ? prefix[level] : "";
    bool c = g_color && known && *p;
    size_t n = strlen(msg);
    fprintf(stderr, "sdc: %s%s%s%s%s", c ? color[level] : "", p, c ? "\033[0m" : "", msg,
            (n && msg[n - 1] == '\n') ? "" : "\n");
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Ctrl-C asks the running generation to stop: the handler only sets a flag, and the
 * progress callback (on the generating thread) calls sdc_cancel. A second Ctrl-C kills. */
static volatile sig_atomic_t g_interrupted;
static void on_sigint(int sig) {
    (void)sig;
    g_interrupted = 1;
}

typedef struct run_state {
    sdc_context *ctx;
    sdc_cli_progress bar;
    const char *preview_path;
    bool preview_failed;
} run_state;

static void on_progress(int step, int steps, double step_seconds, void *user) {
    run_state *rs = user;
    sdc_cli_progress_step(step, steps, step_seconds, &rs->bar);
    if (g_interrupted) sdc_cancel(rs->ctx);
}

/* --preview: the library hands over a cheap decode of the current state */
static void on_preview(int step, int steps, const sdc_image *img, void *user) {
    (void)step, (void)steps;
    run_state *rs = user;
    if (sdc_image_save(rs->preview_path, img, NULL, 0) != SDC_OK && !rs->preview_failed) {
        rs->preview_failed = true; /* say it once, not every step */
        fprintf(stderr, "sdc: warning: --preview-path: %s\n", sdc_last_error());
    }
}

/* mkdir -p of the folder that will hold `path`. */
static bool make_parent_dirs(const char *path, char *err, size_t err_size) {
    char *dir = strdup(path);
    if (!dir) return false;
    char *slash = strrchr(dir, '/');
    bool ok = true;
    if (slash && slash != dir) {
        *slash = '\0';
        for (char *p = dir + 1; ok; p++) {
            if (*p != '/' && *p != '\0') continue;
            char c = *p;
            *p = '\0';
            struct stat st;
            if (stat(dir, &st) != 0) {
                if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
                    snprintf(err, err_size, "--output: cannot create folder '%s': %s", dir,
                             strerror(errno));
                    ok = false;
                }
            } else if (!S_ISDIR(st.st_mode)) {
                snprintf(err, err_size, "--output: '%s' is not a folder", dir);
                ok = false;
            }
            *p = c;
            if (c == '\0') break;
        }
    }
    free(dir);
    return ok;
}

static int64_t random_seed(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t x =
        (uint64_t)ts.tv_sec * 1000000007u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (int64_t)(x & 0x7fffffff); /* non-negative, like sd-cli's rand() */
}

/* --imat-in files merged into one imatrix (also made, empty, for --imat-out). */
static int load_imatrices(const sdc_cli_args *a, bool for_output, sdc_imatrix **out) {
    *out = NULL;
    if (!a->n_imat_in && !for_output) return 0;
    sdc_status st = sdc_imatrix_create(out);
    for (int i = 0; st == SDC_OK && i < a->n_imat_in; i++)
        st = sdc_imatrix_load(*out, a->imat_in[i]);
    if (st != SDC_OK) {
        sdc_imatrix_free(*out);
        *out = NULL;
        return fail("%s", library_error(st));
    }
    return 0;
}

/* JSON string literal of s on f. */
static void print_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* -M metadata --image PATH: the generation parameters stored in a PNG or JPEG. */
static int print_metadata(const sdc_cli_args *a) {
    char *text = NULL;
    sdc_status st = sdc_image_read_parameters(a->image_path, &text);
    if (st != SDC_OK) return fail("--image: %s", library_error(st));
    if (!strcmp(a->metadata_format, "json")) {
        printf("{\"file\": ");
        print_json_string(stdout, a->image_path);
        printf(", \"parameters\": ");
        if (text)
            print_json_string(stdout, text);
        else
            printf("null");
        printf("}\n");
    } else if (text) {
        printf("%s\n", text);
    } else {
        printf("%s: no generation parameters stored\n", a->image_path);
    }
    free(text);
    return 0;
}

static int convert(sdc_cli_args *a) {
    char err[1024];
    if (!sdc_cli_check_inputs(a, err, sizeof err)) return fail("%s", err);
    if (!make_parent_dirs(a->output_path, err, sizeof err)) return fail("%s", err);
    sdc_imatrix *im;
    if (load_imatrices(a, false, &im)) return 1;
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.model_path = a->ctx.model_path;
    p.diffusion_model_path = a->ctx.diffusion_model_path;
    p.t5xxl_path = a->ctx.t5xxl_path;
    p.clip_l_path = a->ctx.clip_l_path;
    p.clip_g_path = a->ctx.clip_g_path;
    p.vae_path = a->ctx.vae_path;
    p.t5_tokenizer_path = a->ctx.t5_tokenizer_path;
    p.clip_tokenizer_path = a->ctx.clip_tokenizer_path;
    p.llm_path = a->ctx.llm_path;
    p.llm_tokenizer_path = a->ctx.llm_tokenizer_path;
    p.output_path = a->output_path;
    p.type = a->ctx.weight_type;
    p.tensor_type_rules = a->ctx.tensor_type_rules;
    p.convert_name = a->convert_name;
    p.imatrix = im;
    p.n_threads = a->ctx.n_threads;
    double t0 = now_seconds();
    sdc_status st = sdc_convert(&p);
    sdc_imatrix_free(im);
    if (st != SDC_OK) return fail("%s", library_error(st));
    printf("converted to %s in %.2fs, peak memory %.0f MiB\n", a->output_path, now_seconds() - t0,
           (double)sdc_peak_rss_bytes() / (1024.0 * 1024.0));
    return 0;
}

/* Loads -i / --mask as sd-cli does: an image of another size than -W/-H (when given) is
 * resized to it; without -W/-H the init image sets the size. */
static int load_input(const char *opt, const char *path, int w, int h, sdc_image *out) {
    sdc_image img = {0};
    sdc_status st = sdc_image_load(path, &img);
    if (st != SDC_OK) return fail("%s: %s", opt, library_error(st));
    if (w > 0 && h > 0 && ((int)img.width != w || (int)img.height != h)) {
        sdc_image resized = {0};
        st = sdc_image_resize(&img, w, h, &resized);
        sdc_image_free(&img);
        if (st != SDC_OK) return fail("%s: %s", opt, library_error(st));
        img = resized;
    }
    *out = img;
    return 0;
}

static void free_inputs(sdc_image *init, sdc_image *mask, sdc_generate_params *gp) {
    sdc_image_free(init);
    sdc_image_free(mask);
    sdc_image *refs = (sdc_image *)gp->ref_images; /* allocated by load_inputs */
    for (int i = 0; i < gp->n_ref_images; i++) sdc_image_free(&refs[i]);
    free(refs);
    gp->ref_images = NULL;
    gp->n_ref_images = 0;
}

/* -r images as sd-cli reads them: RGB (alpha dropped), their own size (the library
 * resizes them as the model needs). */
static int load_refs(const sdc_cli_args *a, sdc_generate_params *gp) {
    if (a->n_ref_images <= 0) return 0;
    sdc_image *refs = calloc((size_t)a->n_ref_images, sizeof *refs);
    if (!refs) return fail("-r: out of memory");
    gp->ref_images = refs;
    for (int i = 0; i < a->n_ref_images; i++) {
        if (load_input("--ref-image", a->ref_images[i], 0, 0, &refs[i])) return 1;
        gp->n_ref_images = i + 1;
    }
    return 0;
}

static int load_inputs(const sdc_cli_args *a, sdc_generate_params *gp, sdc_image *init,
                       sdc_image *mask) {
    if (load_refs(a, gp)) return 1;
    if (a->init_img_path) {
        int w = a->width_set ? gp->width : 0, h = a->height_set ? gp->height : 0;
        if (w <= 0 || h <= 0) w = h = 0; /* both, or the image's own size */
        if (load_input("--init-img", a->init_img_path, w, h, init)) return 1;
        gp->width = (int)init->width;
        gp->height = (int)init->height;
        gp->init_image = init;
    }
    if (a->mask_path) {
        if (load_input("--mask", a->mask_path, gp->width, gp->height, mask)) return 1;
        gp->mask_image = mask;
    }
    return 0;
}

static int save_images(const sdc_cli_args *a, run_state *rs, const sdc_generate_params *gp,
                       const sdc_image *images, int count) {
    int saved = 0;
    for (int i = 0; i < count; i++) {
        char *name = sdc_cli_output_name(a, i, count);
        char *text =
            a->no_metadata ? NULL : sdc_generation_parameters_text(rs->ctx, gp, images[i].seed);
        sdc_status st;
        if (!name) {
            fail("out of memory");
        } else if ((st = sdc_image_save(name, &images[i], text, 0)) != SDC_OK) {
            fail("%s", library_error(st));
        } else {
            printf("saved %s\n", name);
            saved++;
        }
        free(text);
        free(name);
    }
    return saved;
}

/* --upscale-model: loaded before generating, so that a bad file fails before sampling. */
static int create_upscaler(const sdc_cli_args *a, sdc_upscaler **u) {
    *u = NULL;
    if (!a->ctx.upscale_model_path || a->upscale_repeats <= 0) return 0;
    sdc_status st =
        sdc_upscaler_create(a->ctx.upscale_model_path, a->ctx.n_threads, a->upscale_tile_size, u);
    return st == SDC_OK ? 0 : fail("--upscale-model: %s", library_error(st));
}

/* As sd-cli: each image replaced by itself upscaled --upscale-repeats times. */
static int upscale_images(sdc_upscaler *u, int repeats, sdc_image *images, int count) {
    for (int i = 0; i < count; i++)
        for (int r = 0; r < repeats; r++) {
            sdc_image big;
            double t0 = now_seconds();
            sdc_status st = sdc_upscale_image(u, &images[i], &big);
            if (st != SDC_OK) return fail("upscaling: %s", library_error(st));
            fprintf(stderr, "sdc: upscaled %ux%u to %ux%u in %.2fs\n", images[i].width,
                    images[i].height, big.width, big.height, now_seconds() - t0);
            free(images[i].data);
            images[i] = big;
        }
    return 0;
}

/* -M upscale: -i (resized to -W x -H when both are given) through the upscaler to -o. */
static int upscale_mode(sdc_cli_args *a) {
    char err[1024];
    if (!sdc_cli_check_inputs(a, err, sizeof err)) return fail("%s", err);
    if (!make_parent_dirs(a->output_path, err, sizeof err)) return fail("%s", err);
    int w = a->width_set ? a->gen.width : 0, h = a->height_set ? a->gen.height : 0;
    if (w <= 0 || h <= 0) w = h = 0;
    sdc_image img = {0};
    if (load_input("--init-img", a->init_img_path, w, h, &img)) return 1;
    sdc_upscaler *u = NULL;
    int rc = create_upscaler(a, &u);
    if (!rc && u) rc = upscale_images(u, a->upscale_repeats, &img, 1);
    sdc_upscaler_free(u);
    char *name = rc ? NULL : sdc_cli_output_name(a, 0, 1);
    if (!rc) {
        sdc_status st;
        if (!name)
            rc = fail("out of memory");
        else if ((st = sdc_image_save(name, &img, NULL, 0)) != SDC_OK)
            rc = fail("%s", library_error(st));
        else
            printf("saved %s (%ux%u)\n", name, img.width, img.height);
    }
    free(name);
    sdc_image_free(&img);
    return rc;
}

static int generate(sdc_cli_args *a) {
    char err[1024];
    if (!sdc_cli_check_inputs(a, err, sizeof err)) return fail("%s", err);
    if (!make_parent_dirs(a->output_path, err, sizeof err)) return fail("%s", err);
    if (a->gen.seed < 0) {
        a->gen.seed = random_seed();
        fprintf(stderr, "sdc: using random seed %lld\n", (long long)a->gen.seed);
    }

    /* as sd-cli: say so up front when --imat-out will replace a file not being read */
    if (a->imat_out && access(a->imat_out, F_OK) == 0) {
        bool read_too = false;
        for (int i = 0; i < a->n_imat_in; i++) read_too |= !strcmp(a->imat_in[i], a->imat_out);
        if (!read_too)
            fprintf(stderr,
                    "sdc: warning: imatrix file '%s' already exists and will be "
                    "overwritten\n",
                    a->imat_out);
    }
    sdc_generate_params gp;
    sdc_cli_to_generate_params(a, &gp);
    sdc_image init = {0}, mask = {0};
    if (load_inputs(a, &gp, &init, &mask)) {
        free_inputs(&init, &mask, &gp);
        return 1;
    }
    sdc_imatrix *im;
    if (load_imatrices(a, a->imat_out != NULL, &im)) return 1;
    sdc_upscaler *up = NULL;
    if (create_upscaler(a, &up)) {
        sdc_imatrix_free(im);
        free_inputs(&init, &mask, &gp);
        return 1;
    }
    sdc_context_params cp;
    sdc_cli_to_context_params(a, &cp);
    cp.imatrix = im;
    run_state rs = {NULL, {0}, a->preview_path, false};
    double t0 = now_seconds();
    sdc_status st = sdc_context_create(&cp, &rs.ctx);
    if (st == SDC_OK && a->imat_out) st = sdc_context_collect_imatrix(rs.ctx, im);
    if (st != SDC_OK) {
        sdc_upscaler_free(up);
        sdc_context_free(rs.ctx);
        sdc_imatrix_free(im);
        free_inputs(&init, &mask, &gp);
        return fail("%s", library_error(st));
    }
    fprintf(stderr, "sdc: loaded in %.2fs: %s\n", now_seconds() - t0, sdc_context_describe(rs.ctx));

    sdc_cli_progress_init(&rs.bar, stderr);
    gp.progress = on_progress;
    gp.progress_user = &rs;
    if (strcmp(a->preview_method, "none") != 0) {
        gp.preview = on_preview;
        gp.preview_user = &rs;
    }

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);

    sdc_image *images = NULL;
    int count = 0;
    double t1 = now_seconds();
    st = sdc_generate_image(rs.ctx, &gp, &images, &count);
    double gen_seconds = now_seconds() - t1;
    signal(SIGINT, SIG_DFL);
    if (st != SDC_OK) {
        int rc = fail("%s", st == SDC_ERR_CANCELLED ? "interrupted" : library_error(st));
        sdc_upscaler_free(up);
        sdc_context_free(rs.ctx);
        sdc_imatrix_free(im);
        free_inputs(&init, &mask, &gp);
        return rc;
    }
    int imat_rc = 0;
    if (a->imat_out) {
        st = sdc_imatrix_save(im, a->imat_out);
        if (st != SDC_OK)
            imat_rc = fail("%s", library_error(st));
        else if (a->verbose)
            fprintf(stderr, "sdc: saved imatrix %s (%d entries)\n", a->imat_out,
                    sdc_imatrix_entry_count(im));
    }
    sdc_imatrix_free(im);
    int up_rc = up ? upscale_images(up, a->upscale_repeats, images, count) : 0;
    sdc_upscaler_free(up);
    int saved = up_rc ? 0 : save_images(a, &rs, &gp, images, count);
    sdc_free_images(images, count);
    free_inputs(&init, &mask, &gp);
    sdc_context_free(rs.ctx);
    if (saved != count || imat_rc || up_rc) return 1;

    /* time per step from the progress reports; the whole call if there were none */
    int total_steps = rs.bar.total_steps;
    double per_step = total_steps ? rs.bar.total_seconds / total_steps
                                  : gen_seconds / ((double)gp.steps * (count ? count : 1));
    printf("generated %d image(s) in %.2fs (%.2fs/step), peak memory %.0f MiB\n", count,
           gen_seconds, per_step, (double)sdc_peak_rss_bytes() / (1024.0 * 1024.0));
    return 0;
}

static void list_devices(void) {
    for (int i = 0; i < sdc_device_count(); i++) {
        char name[64], desc[512];
        if (sdc_device_info(i, name, sizeof name, desc, sizeof desc) == SDC_OK)
            printf("%s\t%s\n", name, desc);
    }
}

static int run(sdc_cli_args *a) {
    sdc_set_log_level(a->verbose ? SDC_LOG_DEBUG : SDC_LOG_WARN);
    sdc_set_log_callback(log_to_stderr, NULL);
    for (int i = 0; i < a->n_notes; i++) warn(a->notes[i]);
    if (a->mode == SDC_CLI_MODE_METADATA) return print_metadata(a);
    /* --cpu-devices re-creates the device list, so it comes before anything uses it */
    if (a->cpu_devices > 0) {
        sdc_status st = sdc_set_cpu_devices(a->cpu_devices);
        if (st != SDC_OK) return fail("--cpu-devices: %s", library_error(st));
    }
    if (a->list_devices) {
        list_devices();
        return 0;
    }
    if (a->mode == SDC_CLI_MODE_UPSCALE) return upscale_mode(a);
    return a->mode == SDC_CLI_MODE_CONVERT ? convert(a) : generate(a);
}

int main(int argc, char **argv) {
    sdc_cli_args a;
    sdc_cli_parse_result r = sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, argc, argv);
    g_color = a.color;
    int rc = 0;
    if (r == SDC_CLI_PARSE_ERROR) {
        rc = fail("%s", a.error);
    } else if (r == SDC_CLI_PARSE_EXIT) {
        if (a.help)
            sdc_cli_print_usage(stdout, SDC_CLI_PROGRAM_SDC);
        else
            printf("sdc %s\n", sdc_version());
    } else {
        rc = run(&a);
    }
    sdc_cli_args_free(&a);
    return rc;
}
