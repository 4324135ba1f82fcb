/* sdc-server: loads the models once and serves sd.cpp's sd-server APIs (OpenAI images,
 * A1111 sdapi, sdcpp async jobs) over HTTP. Model and default generation flags are
 * sdc's (the shared parser, tools/common/args.c); the server adds its listening and queue
 * flags. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_shared.h"
#include "http.h"
#include "jobs.h"
#include "request.h"
#include "sdc.h"
#include "sha256.h"

typedef struct server_flags {
    const char *listen_ip;
    int port;
    const char *html_path;
    const char *api_key;
    long long max_body;
    int max_queue, max_kept, max_connections;
    double job_ttl;
    const char *queue_url;
    const char *model_dir;
} server_flags;

static const struct {
    const char *short_name, *name, *value, *help;
} k_server_flags[] = {
    {"-l", "--listen-ip", "IP", "address to listen on (default: 127.0.0.1)"},
    {NULL, "--listen-port", "PORT", "port to listen on, 0: any free one (default: 1234)"},
    {NULL, "--serve-html-path", "PATH", "serve this HTML file at / instead of the built-in page"},
    {NULL, "--api-key", "KEY", "require 'Authorization: Bearer KEY' on the API routes"},
    {NULL, "--max-request-size", "BYTES", "largest request body accepted (default: 33554432)"},
    {NULL, "--max-queue", "N", "queued jobs at most; more get 429/503 (default: 16)"},
    {NULL, "--job-ttl", "SECONDS", "how long finished jobs stay readable (default: 600)"},
    {NULL, "--max-jobs-kept", "N", "finished jobs kept at most (default: 256)"},
    {NULL, "--max-connections", "N", "simultaneous HTTP connections at most (default: 256)"},
    {NULL, "--queue", "URL",
     "shared job queue redis://HOST:PORT[/NAME][?claim-timeout=S] (default: in memory)"},
    {NULL, "--model-dir", "DIR",
     "checkpoints A1111 clients may switch to (sd_model_checkpoint); the model flag's "
     "file is loaded first (default: the first in DIR)"},
};

static void usage(FILE *f) {
    fprintf(f, "sdc-server %s: HTTP server for sdc (sd.cpp sd-server APIs)\n", sdc_version());
    fprintf(f, "Usage: sdc-server [server options] [model options and generation defaults]\n\n");
    fprintf(f, "Server:\n");
    for (size_t i = 0; i < sizeof k_server_flags / sizeof k_server_flags[0]; i++) {
        char names[64], short_name[8] = "";
        snprintf(names, sizeof names, "%s %s", k_server_flags[i].name, k_server_flags[i].value);
        if (k_server_flags[i].short_name)
            snprintf(short_name, sizeof short_name, "%s,", k_server_flags[i].short_name);
        fprintf(f, "  %-3s %-30s %s\n", short_name, names, k_server_flags[i].help);
    }
    sdc_cli_print_usage(f, SDC_CLI_PROGRAM_SERVER);
}

static bool parse_ll(const char *flag, const char *s, long long lo, long long hi, long long *out) {
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) {
        fprintf(stderr, "sdc-server: error: %s: '%s' is not an integer in [%lld, %lld]\n", flag, s,
                lo, hi);
        return false;
    }
    *out = v;
    return true;
}

/* Takes the server's own flags out of argv (compacting it); the rest goes to the CLI
 * parser. Returns false on a bad value. */
static bool take_server_flags(int *argc, char **argv, server_flags *f) {
    int out = 1;
    for (int i = 1; i < *argc; i++) {
        const char *arg = argv[i];
        size_t k = 0, n_flags = sizeof k_server_flags / sizeof k_server_flags[0];
        const char *value = NULL;
        for (; k < n_flags; k++) {
            size_t len = strlen(k_server_flags[k].name);
            if (!strncmp(arg, k_server_flags[k].name, len) &&
                (arg[len] == '\0' || arg[len] == '=')) {
                value = arg[len] == '=' ? arg + len + 1 : NULL;
                break;
            }
            if (k_server_flags[k].short_name && !strcmp(arg, k_server_flags[k].short_name)) break;
        }
        if (k == n_flags) {
            argv[out++] = argv[i];
            continue;
        }
        if (!value) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "sdc-server: error: option '%s' needs a value (%s)\n", arg,
                        k_server_flags[k].value);
                return false;
            }
            value = argv[++i];
        }
        long long v = 0;
        switch (k) {
        case 0:
            f->listen_ip = value;
            break;
        case 1:
            if (!parse_ll(arg, value, 0, 65535, &v)) return false;
            f->port = (int)v;
            break;
        case 2:
            f->html_path = value;
            break;
        case 3:
            f->api_key = value;
            break;
        case 4:
            if (!parse_ll(arg, value, 1024, (long long)1 << 34, &v)) return false;
            f->max_body = v;
            break;
        case 5:
            if (!parse_ll(arg, value, 1, 100000, &v)) return false;
            f->max_queue = (int)v;
            break;
        case 6:
            if (!parse_ll(arg, value, 0, 10000000, &v)) return false;
            f->job_ttl = (double)v;
            break;
        case 7:
            if (!parse_ll(arg, value, 1, 1000000, &v)) return false;
            f->max_kept = (int)v;
            break;
        case 8:
            if (!parse_ll(arg, value, 1, 100000, &v)) return false;
            f->max_connections = (int)v;
            break;
        case 9:
            f->queue_url = value;
            break;
        case 10:
            f->model_dir = value;
            break;
        }
    }
    *argc = out;
    argv[out] = NULL;
    return true;
}

static char *read_file(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, fp);
        len += got;
        if (got == 0) break;
        if (len + 1 == cap) {
            char *grown = realloc(buf, cap *= 2);
            if (!grown) {
                free(buf);
                buf = NULL;
            }
            buf = grown;
        }
    }
    bool bad = ferror(fp);
    fclose(fp);
    if (!buf || bad) {
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    return buf;
}

static void log_to_stderr(sdc_log_level level, const char *msg, void *user) {
    (void)user;
    static const char *const prefix[] = {"debug: ", "", "warning: ", "error: "};
    const char *p = (level >= SDC_LOG_DEBUG && level <= SDC_LOG_ERROR) ? prefix[level] : "";
    size_t n = strlen(msg);
    fprintf(stderr, "sdc-server: %s%s%s", p, msg, (n && msg[n - 1] == '\n') ? "" : "\n");
}

/* The model's size rule, checked when a job is accepted: the least multiple of 8 that the
 * model's size multiple divides (MiniT2I: 16). */
static int size_step(const sdc_context *ctx) {
    int mult = sdc_context_size_multiple(ctx), step = 8;
    while (mult > 1 && step % mult) step += 8;
    return step;
}

/* --list-devices: one "name<TAB>description" line per device; 0, or 1 on a bad value. */
static int list_devices(int cpu_devices) {
    sdc_status st = cpu_devices > 0 ? sdc_set_cpu_devices(cpu_devices) : SDC_OK;
    if (st != SDC_OK) {
        fprintf(stderr, "sdc-server: error: --cpu-devices: %s\n",
                *sdc_last_error() ? sdc_last_error() : sdc_status_string(st));
        return 1;
    }
    for (int i = 0; i < sdc_device_count(); i++) {
        char name[64], desc[512];
        if (sdc_device_info(i, name, sizeof name, desc, sizeof desc) == SDC_OK)
            printf("%s\t%s\n", name, desc);
    }
    return 0;
}

/* ---- the checkpoints served (--model-dir) ---- */

static bool model_file(const char *name) {
    static const char *const ext[] = {".safetensors", ".ckpt", ".gguf", ".sft", ".pt", ".pth"};
    size_t n = strlen(name);
    if (name[0] == '.') return false;
    for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && !strcmp(name + n - k, ext[i])) return true;
    }
    return false;
}

/* name, A1111's short hash (sha256 of the 64 KiB at offset 1 MiB, first 8 hex digits:
 * modules/sd_models.py model_hash; cheap, so every listing has one) and title. */
static void describe_model(sdc_srv_model *m, const char *path) {
    memset(m, 0, sizeof *m);
    m->path = path;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(m->name, sizeof m->name, "%s", base);
    char *dot = strrchr(m->name, '.');
    if (dot && dot != m->name) *dot = '\0';
    static unsigned char buf[0x10000];
    size_t got = 0;
    FILE *fp = fopen(path, "rb");
    if (fp) {
        if (fseek(fp, 0x100000, SEEK_SET) == 0) got = fread(buf, 1, sizeof buf, fp);
        fclose(fp);
    }
    char hex[65];
    sdc_srv_sha256_hex(buf, got, hex);
    snprintf(m->hash, sizeof m->hash, "%.8s", hex);
    snprintf(m->title, sizeof m->title, "%.250s [%s]", base, m->hash);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The model files of dir, sorted, as "dir/name" strings (*n of them); NULL with a
 * message on failure. */
static char **list_model_dir(const char *dir, int *n, char *err, size_t err_size) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, err_size, "--model-dir: cannot open '%s': %s", dir, strerror(errno));
        return NULL;
    }
    char **paths = NULL;
    int cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!model_file(e->d_name)) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(paths, sizeof *paths * (size_t)cap);
            if (!grown) break;
            paths = grown;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        if (!(paths[*n] = malloc(len))) break;
        snprintf(paths[*n], len, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (*n == 0) {
        free(paths);
        snprintf(err, err_size, "--model-dir: no model files (.safetensors, .ckpt, .gguf) in '%s'",
                 dir);
        return NULL;
    }
    qsort(paths, (size_t)*n, sizeof *paths, cmp_str);
    return paths;
}

/* -m/--model/--diffusion-model among the arguments (as a flag, not as a value). */
static bool has_model_flag(int argc, char **argv) {
    static const char *const names[] = {"-m", "--model", "--diffusion-model"};
    for (int i = 1; i < argc; i++)
        for (int k = 0; k < 3; k++) {
            size_t len = strlen(names[k]);
            if (!strncmp(argv[i], names[k], len) && (argv[i][len] == '\0' || argv[i][len] == '='))
                return true;
        }
    return false;
}

int main(int argc, char **argv) {
    server_flags sf = {"127.0.0.1", 1234, NULL, NULL, 32LL << 20, 16, 256, 256, 600.0, NULL, NULL};
    char **dir_paths = NULL;
    int n_dir = 0;
    sdc_srv_model *models = NULL;
    int n_models = 0;
    char **args = calloc((size_t)argc + 3, sizeof(char *));
    if (!args) return 1;
    memcpy(args, argv, sizeof(char *) * (size_t)argc);
    int n_args = argc;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            free(args);
            return 0;
        }
    }
    if (!take_server_flags(&n_args, args, &sf)) {
        free(args);
        return 1;
    }
    if (!sf.model_dir && !has_model_flag(n_args, args)) { /* no model: the demo's */
        args[n_args++] = "-m";
        args[n_args++] = "demo";
    }
    sdc_cli_args a;
    sdc_cli_parse_result pr = sdc_cli_parse(&a, SDC_CLI_PROGRAM_SERVER, n_args, args);
    if (pr == SDC_CLI_PARSE_EXIT) {
        if (a.version) printf("sdc-server %s\n", sdc_version());
        sdc_cli_args_free(&a);
        free(args);
        return 0;
    }
    int rc = 1;
    char *html = NULL;
    sdc_context *ctx = NULL;
    sdc_srv_jobs *jobs = NULL;
    sdc_srv_http *http = NULL;
    char err[512];
    sdc_status st = SDC_OK;
    if (pr == SDC_CLI_PARSE_ERROR) {
        fprintf(stderr, "sdc-server: error: %s\n", a.error);
        goto done;
    }
    if (a.list_devices) { /* needs no model */
        rc = list_devices(a.cpu_devices);
        goto done;
    }
    if (sf.model_dir) {
        if (sf.queue_url) {
            fprintf(stderr,
                    "sdc-server: error: --model-dir needs the in-memory queue (no --queue): "
                    "the Redis queue routes jobs by the model of each node\n");
            goto done;
        }
        if (!(dir_paths = list_model_dir(sf.model_dir, &n_dir, err, sizeof err))) {
            fprintf(stderr, "sdc-server: error: %s\n", err);
            goto done;
        }
        if (!a.ctx.model_path && !a.ctx.diffusion_model_path) a.ctx.model_path = dir_paths[0];
    }
    if (!sdc_cli_check_inputs(&a, err, sizeof err)) {
        fprintf(stderr, "sdc-server: error: %s\n", err);
        goto done;
    }
    if (sf.html_path && !(html = read_file(sf.html_path))) {
        fprintf(stderr, "sdc-server: error: --serve-html-path: cannot read '%s'\n", sf.html_path);
        goto done;
    }
    sdc_set_log_callback(log_to_stderr, NULL);
    if (a.verbose) sdc_set_log_level(SDC_LOG_INFO);
    for (int i = 0; i < a.n_notes; i++) fprintf(stderr, "sdc-server: warning: %s\n", a.notes[i]);
    /* --cpu-devices re-creates the device list, so it comes before the context */
    if (a.cpu_devices > 0 && (st = sdc_set_cpu_devices(a.cpu_devices)) != SDC_OK) {
        fprintf(stderr, "sdc-server: error: --cpu-devices: %s\n",
                *sdc_last_error() ? sdc_last_error() : sdc_status_string(st));
        goto done;
    }

    sdc_context_params cp;
    sdc_cli_to_context_params(&a, &cp);
    st = sdc_context_create(&cp, &ctx);
    if (st != SDC_OK) {
        fprintf(stderr, "sdc-server: error: cannot load the model: %s\n",
                *sdc_last_error() ? sdc_last_error() : sdc_status_string(st));
        goto done;
    }

    /* generation defaults: the library's, as changed by the flags */
    sdc_srv_defaults d;
    sdc_srv_defaults_init(&d);
    d.prompt = a.gen.prompt;
    d.negative_prompt = a.gen.negative_prompt;
    d.width = a.gen.width;
    d.height = a.gen.height;
    d.steps = a.gen.steps;
    d.batch_count = a.gen.batch_count;
    d.cfg_scale = a.gen.cfg_scale;
    d.strength = a.gen.strength;
    d.eta = a.gen.eta;
    d.img_cfg = a.gen.img_cfg_scale;
    d.guidance = a.gen.guidance;
    d.flow_shift = a.ctx.flow_shift;
    d.seed = a.gen.seed;
    d.sampler = a.gen.sampling_method;
    d.scheduler = a.gen.scheduler;
    d.size_step = size_step(ctx);
    d.qwen_image_layers = a.gen.qwen_image_layers;

    /* signals are taken by sigwait below; every thread inherits this mask */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    const char *model_path =
        a.ctx.diffusion_model_path ? a.ctx.diffusion_model_path : a.ctx.model_path;
    /* the loaded model first, then the others of --model-dir */
    models = calloc((size_t)n_dir + 1, sizeof *models);
    if (!models) goto done;
    describe_model(&models[n_models++], model_path ? model_path : "sdc-local");
    for (int i = 0; i < n_dir; i++) {
        char *ra = realpath(dir_paths[i], NULL),
             *rb = model_path ? realpath(model_path, NULL) : NULL;
        bool same = ra && rb && !strcmp(ra, rb);
        free(ra);
        free(rb);
        if (!same) describe_model(&models[n_models++], dir_paths[i]);
    }
    const char *model_name = model_path ? strrchr(model_path, '/') : NULL;
    model_name = model_name ? model_name + 1 : model_path ? model_path : "sdc-local";
    sdc_srv_jobs_config jc = {sf.max_queue,
                              sf.max_kept,
                              sf.job_ttl,
                              a.gen.rng,
                              a.gen.sampler_rng,
                              a.verbose,
                              sf.queue_url,
                              model_name,
                              10.0,
                              models,
                              0,
                              0,
                              &cp,
                              a.ctx.diffusion_model_path != NULL,
                              a.gen.ref_image_args};
    bool switchable = sf.model_dir && !sf.queue_url;
    if (switchable) jc.n_models = n_models; /* the queue owns ctx from here */
    jobs = sdc_srv_jobs_create(ctx, &jc, err, sizeof err);
    if (!jobs) {
        fprintf(stderr, "sdc-server: error: %s\n", err);
        goto done;
    }
    if (switchable) ctx = NULL; /* freed by sdc_srv_jobs_destroy */
    sdc_srv_http_config hc = {
        .listen_ip = sf.listen_ip,
        .port = sf.port,
        .html = html,
        .api_key = sf.api_key,
        .max_body = (size_t)sf.max_body,
        .max_connections = sf.max_connections,
        .model_path = a.ctx.diffusion_model_path ? a.ctx.diffusion_model_path : a.ctx.model_path,
        .defaults = &d,
        .models = models,
        .n_models = n_models,
        .switchable = switchable,
        .max_queue = sf.max_queue,
        .verbose = a.verbose,
    };
    http = sdc_srv_http_start(&hc, jobs, err, sizeof err);
    if (!http) {
        fprintf(stderr, "sdc-server: error: %s\n", err);
        goto done;
    }
    bool v6 = strchr(sf.listen_ip, ':') != NULL;
    printf("sdc-server: listening on http://%s%s%s:%d\n", v6 ? "[" : "", sf.listen_ip,
           v6 ? "]" : "", sdc_srv_http_port(http));
    fflush(stdout);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "sdc-server: signal %d, shutting down\n", sig);
    rc = 0;

done:
    if (jobs) sdc_srv_jobs_shutdown(jobs); /* wakes synchronous waiters first */
    sdc_srv_http_stop(http);
    if (jobs) {
        sdc_srv_stats s;
        sdc_srv_jobs_stats(jobs, &s);
        fprintf(stderr,
                "sdc-server: jobs submitted %lld, completed %lld, failed %lld, cancelled %lld, "
                "refused %lld; peak memory %.1f MiB\n",
                (long long)s.submitted, (long long)s.completed, (long long)s.failed,
                (long long)s.cancelled, (long long)s.refused,
                (double)sdc_peak_rss_bytes() / (1024.0 * 1024.0));
        sdc_srv_jobs_destroy(jobs);
    }
    sdc_context_free(ctx);
    free(models);
    for (int i = 0; i < n_dir; i++) free(dir_paths[i]);
    free(dir_paths);
    free(html);
    sdc_cli_args_free(&a);
    free(args);
    return rc;
}
