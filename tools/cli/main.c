/* sdc: command-line image generation, flag-compatible with sd.cpp's sd-cli.
 * parse flags -> load models -> generate (progress bar) -> save PNGs -> summary line. */
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
    fprintf(stderr, "sdc: error: %s\n", msg);
    return 1;
}

static const char *library_error(sdc_status st) {
    const char *msg = sdc_last_error();
    return (msg && *msg) ? msg : sdc_status_string(st);
}

static void log_to_stderr(sdc_log_level level, const char *msg, void *user) {
    (void)user;
    static const char *const prefix[] = {"debug: ", "", "warning: ", "error: "};
    const char *p = (level >= SDC_LOG_DEBUG && level <= SDC_LOG_ERROR) ? prefix[level] : "";
    size_t n = strlen(msg);
    fprintf(stderr, "sdc: %s%s%s", p, msg, (n && msg[n - 1] == '\n') ? "" : "\n");
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
} run_state;

static void on_progress(int step, int steps, double step_seconds, void *user) {
    run_state *rs = user;
    sdc_cli_progress_step(step, steps, step_seconds, &rs->bar);
    if (g_interrupted) sdc_cancel(rs->ctx);
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

/* Flags that are parsed for compatibility but have no effect yet. */
static void warn_unused(const sdc_cli_args *a) {
    const char *unused[8];
    int n = 0;
    if (a->backend) unused[n++] = "--backend";
    if (a->convert_name) unused[n++] = "--convert-name";
    if (isfinite(a->flow_shift)) unused[n++] = "--flow-shift";
    for (int i = 0; i < n; i++)
        fprintf(stderr, "sdc: warning: %s is not supported yet and is ignored\n", unused[i]);
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

static int convert(sdc_cli_args *a) {
    char err[1024];
    if (!sdc_cli_check_inputs(a, err, sizeof err)) return fail("%s", err);
    if (!make_parent_dirs(a->output_path, err, sizeof err)) return fail("%s", err);
    sdc_imatrix *im;
    if (load_imatrices(a, false, &im)) return 1;
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.model_path = a->model_path;
    p.diffusion_model_path = a->diffusion_model_path;
    p.t5xxl_path = a->t5xxl_path;
    p.clip_l_path = a->clip_l_path;
    p.clip_g_path = a->clip_g_path;
    p.vae_path = a->vae_path;
    p.t5_tokenizer_path = a->t5_tokenizer_path;
    p.output_path = a->output_path;
    p.type = a->weight_type;
    p.tensor_type_rules = a->tensor_type_rules;
    p.convert_name = a->convert_name;
    p.imatrix = im;
    p.n_threads = a->n_threads;
    double t0 = now_seconds();
    sdc_status st = sdc_convert(&p);
    sdc_imatrix_free(im);
    if (st != SDC_OK) return fail("%s", library_error(st));
    printf("converted to %s in %.2fs, peak memory %.0f MiB\n", a->output_path, now_seconds() - t0,
           (double)sdc_peak_rss_bytes() / (1024.0 * 1024.0));
    return 0;
}

static int generate(sdc_cli_args *a) {
    char err[1024];
    if (!sdc_cli_check_inputs(a, err, sizeof err)) return fail("%s", err);
    if (!make_parent_dirs(a->output_path, err, sizeof err)) return fail("%s", err);
    warn_unused(a);
    if (a->seed < 0) {
        a->seed = random_seed();
        fprintf(stderr, "sdc: using random seed %lld\n", (long long)a->seed);
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
    sdc_imatrix *im;
    if (load_imatrices(a, a->imat_out != NULL, &im)) return 1;
    sdc_context_params cp;
    sdc_cli_to_context_params(a, &cp);
    cp.imatrix = im;
    run_state rs = {NULL, {0}};
    double t0 = now_seconds();
    sdc_status st = sdc_context_create(&cp, &rs.ctx);
    if (st == SDC_OK && a->imat_out) st = sdc_context_collect_imatrix(rs.ctx, im);
    if (st != SDC_OK) {
        sdc_context_free(rs.ctx);
        sdc_imatrix_free(im);
        return fail("%s", library_error(st));
    }
    if (a->verbose) fprintf(stderr, "sdc: models loaded in %.2fs\n", now_seconds() - t0);

    sdc_generate_params gp;
    sdc_cli_to_generate_params(a, &gp);
    /* img2img: the init image sets the size; a mask must match it */
    sdc_image init = {0}, mask = {0};
    if (a->init_img_path) {
        if ((st = sdc_image_load(a->init_img_path, &init)) != SDC_OK) {
            sdc_context_free(rs.ctx);
            return fail("%s", library_error(st));
        }
        gp.init_image = &init;
        gp.width = (int)init.width, gp.height = (int)init.height;
    }
    if (a->mask_path) {
        if ((st = sdc_image_load(a->mask_path, &mask)) != SDC_OK) {
            sdc_image_free(&init);
            sdc_context_free(rs.ctx);
            return fail("%s", library_error(st));
        }
        gp.mask_image = &mask;
    }
    sdc_cli_progress_init(&rs.bar, stderr);
    gp.progress = on_progress;
    gp.progress_user = &rs;

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
    sdc_image_free(&init);
    sdc_image_free(&mask);
    if (st != SDC_OK) {
        int rc = fail("%s", st == SDC_ERR_CANCELLED ? "interrupted" : library_error(st));
        sdc_context_free(rs.ctx);
        sdc_imatrix_free(im);
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

    int saved = 0;
    for (int i = 0; i < count; i++) {
        char *name = sdc_cli_output_name(a, i, count);
        char *text = sdc_generation_parameters_text(rs.ctx, &gp, images[i].seed);
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
    sdc_free_images(images, count);
    sdc_context_free(rs.ctx);
    if (saved != count || imat_rc) return 1;

    /* time per step from the progress reports; the whole call if there were none */
    int total_steps = rs.bar.total_steps;
    double per_step = total_steps ? rs.bar.total_seconds / total_steps
                                  : gen_seconds / ((double)a->steps * (count ? count : 1));
    printf("generated %d image(s) in %.2fs (%.2fs/step), peak memory %.0f MiB\n", count,
           gen_seconds, per_step, (double)sdc_peak_rss_bytes() / (1024.0 * 1024.0));
    return 0;
}

int main(int argc, char **argv) {
    sdc_cli_args a;
    sdc_cli_parse_result r = sdc_cli_parse(&a, argc, argv);
    int rc = 0;
    if (r == SDC_CLI_PARSE_ERROR) {
        rc = fail("%s", a.error);
    } else if (r == SDC_CLI_PARSE_EXIT) {
        if (a.help)
            sdc_cli_print_usage(stdout, "sdc");
        else
            printf("sdc %s\n", sdc_version());
    } else {
        sdc_set_log_level(a.verbose ? SDC_LOG_DEBUG : SDC_LOG_WARN);
        sdc_set_log_callback(log_to_stderr, NULL);
        if (a.list_devices) {
            for (int i = 0; i < sdc_device_count(); i++) {
                char name[64], desc[512];
                if (sdc_device_info(i, name, sizeof name, desc, sizeof desc) == SDC_OK)
                    printf("%s\t%s\n", name, desc);
            }
        } else if (a.mode == SDC_CLI_MODE_CONVERT)
            rc = convert(&a);
        else
            rc = generate(&a);
    }
    sdc_cli_args_free(&a);
    return rc;
}
