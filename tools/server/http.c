#include "http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "cli_shared.h"

struct sdc_srv_http {
    sdc_srv_http_config cfg;
    sdc_srv_jobs *jobs;
    struct MHD_Daemon *daemon;
    int port;
    char model_stem[128];
};

typedef enum route {
    R_NONE,
    R_INDEX,
    R_MODELS,
    R_GENERATIONS,
    R_EDITS,
    R_SD_MODELS,
    R_SAMPLERS,
    R_SCHEDULERS,
    R_UPSCALERS,
    R_LATENT_MODES,
    R_LORAS,
    R_OPTIONS,
    R_SET_OPTIONS,
    R_PROGRESS,
    R_INTERRUPT,
    R_TXT2IMG,
    R_IMG2IMG,
    R_CAPABILITIES,
    R_IMG_GEN,
    R_JOB,
    R_JOB_CANCEL,
} route;

static const struct {
    const char *path;
    const char *method; /* "GET" or "POST" */
    route r;
} k_routes[] = {
    {"/", "GET", R_INDEX},
    {"/v1/models", "GET", R_MODELS},
    {"/v1/images/generations", "POST", R_GENERATIONS},
    {"/v1/images/edits", "POST", R_EDITS},
    {"/sdapi/v1/sd-models", "GET", R_SD_MODELS},
    {"/sdapi/v1/samplers", "GET", R_SAMPLERS},
    {"/sdapi/v1/schedulers", "GET", R_SCHEDULERS},
    {"/sdapi/v1/upscalers", "GET", R_UPSCALERS},
    {"/sdapi/v1/latent-upscale-modes", "GET", R_LATENT_MODES},
    {"/sdapi/v1/loras", "GET", R_LORAS},
    {"/sdapi/v1/options", "GET", R_OPTIONS},
    {"/sdapi/v1/options", "POST", R_SET_OPTIONS},
    {"/sdapi/v1/progress", "GET", R_PROGRESS},
    {"/sdapi/v1/interrupt", "POST", R_INTERRUPT},
    {"/sdapi/v1/txt2img", "POST", R_TXT2IMG},
    {"/sdapi/v1/img2img", "POST", R_IMG2IMG},
    {"/sdcpp/v1/capabilities", "GET", R_CAPABILITIES},
    {"/sdcpp/v1/img_gen", "POST", R_IMG_GEN},
};

#define JOBS_PREFIX "/sdcpp/v1/jobs/"

/* A refused request's body is read and dropped before the answer, up to this much past
 * the body limit: clients that send the whole body before reading (the OpenAI SDKs)
 * see a reset connection, not the error, when the server closes first. */
#define DRAIN_EXTRA_BYTES ((size_t)64 << 20)

/* Per-request state, kept across the calls MHD makes while the body arrives. */
typedef struct conn_state {
    route r;
    char job_id[40];
    char *body;
    size_t len, cap;
    bool too_big;
    bool answered;   /* a response was queued */
    unsigned refuse; /* != 0: answer this error once the body has been drained */
    char refuse_msg[160];
    size_t drained;
    char method[12], url[120]; /* for the -v log */
    double t0;
} conn_state;

/* The status of the last response queued by this thread (connection threads answer one
 * request at a time), for the -v log. */
static _Thread_local unsigned t_status;

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- responses ---- */

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, char *text, size_t n,
                                 const char *type) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(
        n, text, text ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
    if (!resp) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
    if (status == 401) MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    if (status == 429 || status == 503) MHD_add_response_header(resp, "Retry-After", "1");
    t_status = status;
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

/* Sends and frees a JSON value. */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, cJSON *j) {
    char *text = j ? cJSON_PrintUnformatted(j) : NULL;
    cJSON_Delete(j);
    if (!text) {
        static const char oom[] =
            "{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}";
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, "Content-Type", "application/json");
        t_status = 500;
        enum MHD_Result ret = MHD_queue_response(c, 500, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    return send_text(c, status, text, strlen(text), "application/json");
}

static const char *error_code_for(unsigned status) {
    switch (status) {
    case 400:
        return "invalid_request";
    case 401:
        return "unauthorized";
    case 404:
        return "not_found";
    case 405:
        return "method_not_allowed";
    case 409:
        return "conflict";
    case 413:
        return "request_too_large";
    case 415:
        return "unsupported_media_type";
    case 429:
        return "queue_full";
    case 503:
        return "unavailable";
    default:
        return status >= 500 ? "internal" : "error";
    }
}

/* {"error":{"code":..,"message":..,"type":..}}: OpenAI's shape, used by every route. */
static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *message) {
    cJSON *j = cJSON_CreateObject();
    cJSON *e = j ? cJSON_AddObjectToObject(j, "error") : NULL;
    if (e) {
        cJSON_AddStringToObject(e, "code", error_code_for(status));
        cJSON_AddStringToObject(e, "message", message);
        cJSON_AddStringToObject(e, "type",
                                status >= 500 ? "server_error" : "invalid_request_error");
    }
    return send_json(c, status, j);
}

/* ---- routing ---- */

static bool valid_job_id(const char *s, size_t n) {
    if (n == 0 || n >= 40) return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

/* Finds the route of url. *want_method is the method it takes; R_NONE: no such path. */
static route find_route(const char *url, const char *method, const char **want_method,
                        char job_id[40]) {
    route found = R_NONE;
    bool is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    for (size_t i = 0; i < sizeof k_routes / sizeof k_routes[0]; i++) {
        if (strcmp(url, k_routes[i].path)) continue;
        if (found == R_NONE || !strcmp(k_routes[i].method, is_get ? "GET" : method)) {
            found = k_routes[i].r;
            *want_method = k_routes[i].method;
        }
    }
    if (found != R_NONE) return found;
    size_t plen = strlen(JOBS_PREFIX);
    if (!strncmp(url, JOBS_PREFIX, plen)) {
        const char *id = url + plen, *slash = strchr(id, '/');
        size_t n = slash ? (size_t)(slash - id) : strlen(id);
        if (!valid_job_id(id, n)) return R_NONE;
        memcpy(job_id, id, n);
        job_id[n] = '\0';
        if (!slash) {
            *want_method = "GET";
            return R_JOB;
        }
        if (!strcmp(slash, "/cancel")) {
            *want_method = "POST";
            return R_JOB_CANCEL;
        }
    }
    return R_NONE;
}

static bool authorized(const sdc_srv_http *h, struct MHD_Connection *c) {
    if (!h->cfg.api_key || !*h->cfg.api_key) return true;
    const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
    if (!auth || strncasecmp(auth, "Bearer ", 7)) return false;
    const char *given = auth + 7, *key = h->cfg.api_key;
    size_t gn = strlen(given), kn = strlen(key);
    unsigned diff = gn != kn;
    for (size_t i = 0; i < kn; i++) diff |= (unsigned)(key[i] ^ given[i < gn ? i : 0]);
    return diff == 0;
}

/* ---- waiting for a synchronous job ---- */

/* A client that closed its end no longer wants the answer: its job is cancelled, so a
 * hung-up client cannot hold the queue. */
static bool client_still_connected(void *user) {
    struct MHD_Connection *c = user;
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!info) return true;
    struct pollfd p = {.fd = info->connect_fd, .events = POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return true;
    return !(p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

/* Queues req, waits, and leaves the results in *res. Returns 0 or an HTTP status to
 * answer with, and a message in err. */
static unsigned run_sync(sdc_srv_http *h, struct MHD_Connection *c, sdc_srv_request *req,
                         bool take_interrupted, sdc_srv_result *res, char *err, size_t err_size) {
    char id[40];
    sdc_srv_job *job = NULL;
    memset(res, 0, sizeof *res);
    int rc = sdc_srv_jobs_submit(h->jobs, req, id, &job);
    if (rc) {
        snprintf(err, err_size, "%s",
                 rc == 429 ? "the job queue is full, try again later"
                           : "the server is shutting down");
        return 503; /* synchronous APIs: busy */
    }
    sdc_srv_job_state st = sdc_srv_jobs_wait(h->jobs, job, client_still_connected, c);
    bool ok = sdc_srv_jobs_result(h->jobs, job, res);
    sdc_srv_jobs_release(h->jobs, job);
    if (!ok) {
        snprintf(err, err_size, "out of memory");
        return 500;
    }
    if (st == SDC_SRV_JOB_COMPLETED) return 0;
    /* A1111: an interrupted generation answers 200 with the images finished before it */
    if (st == SDC_SRV_JOB_CANCELLED && res->interrupted && take_interrupted) return 0;
    snprintf(err, err_size, "%s", res->error[0] ? res->error : "generation failed");
    sdc_status s = res->status;
    sdc_srv_result_free(res);
    if (st == SDC_SRV_JOB_CANCELLED) return 503;
    return (s == SDC_ERR_INVALID_ARG || s == SDC_ERR_UNSUPPORTED || s == SDC_ERR_FORMAT) ? 400
                                                                                         : 500;
}

/* ---- checkpoints ---- */

/* The model loaded now (NULL without a list). */
static const sdc_srv_model *current_model(const sdc_srv_http *h) {
    if (h->cfg.n_models <= 0) return NULL;
    int m = h->cfg.switchable ? sdc_srv_jobs_current_model(h->jobs) : 0;
    return &h->cfg.models[m >= 0 && m < h->cfg.n_models ? m : 0];
}

/* An A1111 checkpoint name: its title ("name.safetensors [hash]"), file name, name
 * without extension, short hash, sha256 or path. Returns the index or -1. */
static int find_checkpoint(const sdc_srv_http *h, const char *want) {
    for (int i = 0; i < h->cfg.n_models; i++) {
        const sdc_srv_model *m = &h->cfg.models[i];
        const char *base = strrchr(m->path, '/');
        base = base ? base + 1 : m->path;
        if (!strcmp(want, m->title) || !strcmp(want, m->name) || !strcmp(want, base) ||
            !strcmp(want, m->path) || !strcasecmp(want, m->hash) ||
            (m->sha256[0] && !strcasecmp(want, m->sha256)))
            return i;
    }
    return -1;
}

/* Resolves a requested checkpoint into req->model_slot; 0 or 400 with a message listing
 * the titles served. */
static unsigned resolve_checkpoint(const sdc_srv_http *h, const char *want, int *slot, char *err,
                                   size_t err_size) {
    *slot = 0;
    if (!want || !*want) return 0;
    int i = find_checkpoint(h, want);
    if (i >= 0) {
        const sdc_srv_model *cur = current_model(h);
        if (!h->cfg.switchable && cur != &h->cfg.models[i]) {
            snprintf(err, err_size,
                     "checkpoint '%.80s' is known but this server cannot switch models "
                     "(start it with --model-dir, without --queue)",
                     want);
            return 400;
        }
        *slot = h->cfg.switchable ? i + 1 : 0;
        return 0;
    }
    size_t o = (size_t)snprintf(err, err_size, "unknown checkpoint '%.80s'; known:", want);
    for (int k = 0; k < h->cfg.n_models && o < err_size; k++)
        o += (size_t)snprintf(err + o, err_size - o, "%s '%s'", k ? "," : "",
                              h->cfg.models[k].title);
    if (h->cfg.n_models == 0 && o < err_size) snprintf(err + o, err_size - o, " none");
    return 400;
}

/* POST /sdapi/v1/options: sd_model_checkpoint switches (queued behind the jobs before
 * it, answered once the model is loaded); other keys are accepted and left as they are
 * (output is PNG, the library reads no other A1111 option). */
static enum MHD_Result set_options(sdc_srv_http *h, struct MHD_Connection *c, conn_state *s) {
    cJSON *o = s->len ? cJSON_ParseWithLength(s->body, s->len) : NULL;
    if (!cJSON_IsObject(o)) {
        cJSON_Delete(o);
        return send_error(c, 400, "the request must be a JSON object of options");
    }
    const cJSON *ck = cJSON_GetObjectItemCaseSensitive(o, "sd_model_checkpoint");
    char err[1024];
    int slot = 0;
    unsigned rc = 0;
    if (ck && !cJSON_IsNull(ck)) {
        if (!cJSON_IsString(ck)) {
            snprintf(err, sizeof err, "'sd_model_checkpoint' must be a string");
            rc = 400;
        } else {
            rc = resolve_checkpoint(h, ck->valuestring, &slot, err, sizeof err);
        }
    }
    cJSON_Delete(o);
    if (rc) return send_error(c, rc, err);
    if (slot > 0) { /* a job that only switches: it waits for those queued before it */
        sdc_srv_request req;
        sdc_srv_request_clear(&req);
        req.model_slot = slot;
        sdc_srv_result res;
        unsigned fail = run_sync(h, c, &req, false, &res, err, sizeof err);
        sdc_srv_request_free(&req);
        if (fail) return send_error(c, fail == 400 ? 500 : fail, err);
        sdc_srv_result_free(&res);
    }
    return send_json(c, 200, cJSON_CreateObject());
}

/* ---- endpoint bodies ---- */

static cJSON *string_array(size_t n, const char *(*name)(size_t)) {
    cJSON *a = cJSON_CreateArray();
    for (size_t i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateString(name(i)));
    return a;
}

static enum MHD_Result openai_generate(sdc_srv_http *h, struct MHD_Connection *c, conn_state *s) {
    sdc_srv_request req;
    char err[512];
    int rc;
    if (s->r == R_EDITS) {
        const char *type = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
        if (type && !strncasecmp(type, "multipart/form-data", 19)) {
            rc = sdc_srv_parse_edit_multipart(type, s->body, s->len, h->cfg.defaults, &req, err,
                                              sizeof err);
        } else if (!type || !strncasecmp(type, "application/json", 16)) {
            rc = sdc_srv_parse_json(SDC_SRV_API_OPENAI_EDIT, s->body, s->len, h->cfg.defaults, &req,
                                    err, sizeof err);
        } else {
            return send_error(c, 415, "use multipart/form-data or application/json");
        }
    } else {
        rc = sdc_srv_parse_json(SDC_SRV_API_OPENAI_GENERATE, s->body, s->len, h->cfg.defaults, &req,
                                err, sizeof err);
    }
    if (rc) {
        sdc_srv_request_free(&req);
        return send_error(c, (unsigned)rc, err);
    }
    sdc_srv_result res;
    unsigned fail = run_sync(h, c, &req, false, &res, err, sizeof err);
    sdc_srv_request_free(&req);
    if (fail) return send_error(c, fail, err);
    cJSON *j = cJSON_CreateObject();
    if (j) {
        cJSON_AddNumberToObject(j, "created", (double)time(NULL));
        cJSON_AddStringToObject(j, "output_format", "png");
        cJSON *data = cJSON_AddArrayToObject(j, "data");
        for (int i = 0; data && i < res.count; i++) {
            cJSON *item = cJSON_CreateObject();
            cJSON_AddStringToObject(item, "b64_json", res.b64_png[i]);
            cJSON_AddItemToArray(data, item);
        }
    }
    sdc_srv_result_free(&res);
    return send_json(c, 200, j);
}

static enum MHD_Result sdapi_generate(sdc_srv_http *h, struct MHD_Connection *c, conn_state *s) {
    sdc_srv_request req;
    char err[512];
    bool img2img = s->r == R_IMG2IMG;
    int rc = sdc_srv_parse_json(img2img ? SDC_SRV_API_SDAPI_IMG2IMG : SDC_SRV_API_SDAPI_TXT2IMG,
                                s->body, s->len, h->cfg.defaults, &req, err, sizeof err);
    if (!rc) rc = (int)resolve_checkpoint(h, req.checkpoint, &req.model_slot, err, sizeof err);
    if (rc) {
        sdc_srv_request_free(&req);
        return send_error(c, (unsigned)rc, err);
    }
    /* kept for "info": the request moves into the job */
    char *prompt = strdup(req.prompt ? req.prompt : ""),
         *negative = strdup(req.negative_prompt ? req.negative_prompt : "");
    int w = req.width, hgt = req.height, steps = req.steps;
    double cfg = req.cfg_scale;
    char sampler[32];
    snprintf(sampler, sizeof sampler, "%s", req.sampler);
    sdc_srv_result res;
    unsigned fail = run_sync(h, c, &req, true, &res, err, sizeof err);
    sdc_srv_request_free(&req);
    if (fail) {
        free(prompt);
        free(negative);
        return send_error(c, fail, err);
    }
    cJSON *j = cJSON_CreateObject();
    cJSON *images = j ? cJSON_AddArrayToObject(j, "images") : NULL;
    for (int i = 0; images && i < res.count; i++)
        cJSON_AddItemToArray(images, cJSON_CreateString(res.b64_png[i]));
    /* "parameters" echoes the request, without the (large) input images */
    cJSON *echo = cJSON_ParseWithLength(s->body, s->len);
    if (echo) {
        if (cJSON_GetObjectItemCaseSensitive(echo, "init_images"))
            cJSON_ReplaceItemInObjectCaseSensitive(echo, "init_images", cJSON_CreateNull());
        if (cJSON_GetObjectItemCaseSensitive(echo, "mask"))
            cJSON_ReplaceItemInObjectCaseSensitive(echo, "mask", cJSON_CreateNull());
        if (cJSON_GetObjectItemCaseSensitive(echo, "extra_images"))
            cJSON_ReplaceItemInObjectCaseSensitive(echo, "extra_images", cJSON_CreateNull());
    }
    if (j)
        cJSON_AddItemToObject(j, "parameters", echo ? echo : cJSON_CreateObject());
    else
        cJSON_Delete(echo);
    cJSON *info = cJSON_CreateObject();
    if (info) {
        cJSON_AddStringToObject(info, "prompt", prompt ? prompt : "");
        cJSON_AddStringToObject(info, "negative_prompt", negative ? negative : "");
        cJSON_AddNumberToObject(info, "seed", res.count ? (double)res.seeds[0] : 0);
        cJSON *seeds = cJSON_AddArrayToObject(info, "all_seeds");
        cJSON *texts = cJSON_AddArrayToObject(info, "infotexts");
        for (int i = 0; i < res.count; i++) {
            cJSON_AddItemToArray(seeds, cJSON_CreateNumber((double)res.seeds[i]));
            cJSON_AddItemToArray(texts, cJSON_CreateString(res.infotext[i]));
        }
        cJSON_AddNumberToObject(info, "width", w);
        cJSON_AddNumberToObject(info, "height", hgt);
        cJSON_AddNumberToObject(info, "steps", steps);
        cJSON_AddNumberToObject(info, "cfg_scale", cfg);
        cJSON_AddStringToObject(info, "sampler_name", sampler);
        cJSON_AddNumberToObject(info, "batch_size", res.count);
    }
    char *info_text = info ? cJSON_PrintUnformatted(info) : NULL;
    cJSON_Delete(info);
    if (j) cJSON_AddStringToObject(j, "info", info_text ? info_text : "");
    free(info_text);
    free(prompt);
    free(negative);
    sdc_srv_result_free(&res);
    return send_json(c, 200, j);
}

static enum MHD_Result sdcpp_submit(sdc_srv_http *h, struct MHD_Connection *c, conn_state *s) {
    sdc_srv_request req;
    char err[512], id[40];
    int rc = sdc_srv_parse_json(SDC_SRV_API_SDCPP, s->body, s->len, h->cfg.defaults, &req, err,
                                sizeof err);
    if (rc) {
        sdc_srv_request_free(&req);
        return send_error(c, (unsigned)rc, err);
    }
    rc = sdc_srv_jobs_submit(h->jobs, &req, id, NULL);
    sdc_srv_request_free(&req);
    if (rc)
        return send_error(c, (unsigned)rc,
                          rc == 429 ? "the job queue is full, try again later"
                                    : "the server is shutting down");
    cJSON *j = cJSON_CreateObject();
    if (j) {
        char poll_url[80];
        snprintf(poll_url, sizeof poll_url, JOBS_PREFIX "%s", id);
        cJSON_AddStringToObject(j, "id", id);
        cJSON_AddStringToObject(j, "kind", "img_gen");
        cJSON_AddStringToObject(j, "status", "queued");
        cJSON_AddNumberToObject(j, "created", (double)time(NULL));
        cJSON_AddStringToObject(j, "poll_url", poll_url);
    }
    return send_json(c, 202, j);
}

/* a number, or null when unset (NAN), as sd.cpp's defaults JSON */
static void add_number_or_null(cJSON *o, const char *name, float v) {
    if (isnan(v))
        cJSON_AddNullToObject(o, name);
    else
        cJSON_AddNumberToObject(o, name, v);
}

static cJSON *defaults_json(const sdc_srv_defaults *d) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "prompt", d->prompt ? d->prompt : "");
    cJSON_AddStringToObject(o, "negative_prompt", d->negative_prompt ? d->negative_prompt : "");
    cJSON_AddNumberToObject(o, "clip_skip", -1);
    cJSON_AddNumberToObject(o, "width", d->width);
    cJSON_AddNumberToObject(o, "height", d->height);
    cJSON_AddNumberToObject(o, "strength", d->strength);
    cJSON_AddNumberToObject(o, "seed", (double)d->seed);
    cJSON_AddNumberToObject(o, "batch_count", d->batch_count);
    cJSON_AddNumberToObject(o, "qwen_image_layers", d->qwen_image_layers);
    cJSON_AddBoolToObject(o, "auto_resize_ref_image", true);
    cJSON_AddBoolToObject(o, "increase_ref_index", false);
    cJSON *sp = cJSON_AddObjectToObject(o, "sample_params");
    if (sp) {
        if (d->scheduler)
            cJSON_AddStringToObject(sp, "scheduler", d->scheduler);
        else
            cJSON_AddNullToObject(sp, "scheduler");
        if (d->sampler)
            cJSON_AddStringToObject(sp, "sample_method", d->sampler);
        else
            cJSON_AddNullToObject(sp, "sample_method");
        cJSON_AddNumberToObject(sp, "sample_steps", d->steps);
        add_number_or_null(sp, "eta", d->eta);
        add_number_or_null(sp, "flow_shift", d->flow_shift);
        cJSON *g = cJSON_AddObjectToObject(sp, "guidance");
        if (g) {
            cJSON_AddNumberToObject(g, "txt_cfg", d->cfg_scale);
            add_number_or_null(g, "img_cfg", d->img_cfg);
            add_number_or_null(g, "distilled_guidance", d->guidance);
        }
    }
    cJSON_AddStringToObject(o, "output_format", "png");
    return o;
}

static cJSON *capabilities(const sdc_srv_http *h) {
    const sdc_srv_defaults *d = h->cfg.defaults;
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON *m = cJSON_AddObjectToObject(o, "model");
    if (m) {
        const sdc_srv_model *cur = current_model(h);
        cJSON_AddStringToObject(m, "name", cur ? cur->name : h->model_stem);
        cJSON_AddStringToObject(m, "stem", cur ? cur->name : h->model_stem);
        cJSON_AddStringToObject(m, "path",
                                cur                 ? cur->path
                                : h->cfg.model_path ? h->cfg.model_path
                                                    : "");
    }
    cJSON_AddStringToObject(o, "current_mode", "img_gen");
    cJSON *modes = cJSON_AddArrayToObject(o, "supported_modes");
    if (modes) cJSON_AddItemToArray(modes, cJSON_CreateString("img_gen"));
    cJSON_AddItemToObject(o, "defaults", defaults_json(d));
    cJSON *fmts = cJSON_AddArrayToObject(o, "output_formats");
    if (fmts) cJSON_AddItemToArray(fmts, cJSON_CreateString("png"));
    cJSON *feat = cJSON_CreateObject();
    if (feat) {
        cJSON_AddBoolToObject(feat, "init_image", true);
        cJSON_AddBoolToObject(feat, "mask_image", true);
        cJSON_AddBoolToObject(feat, "batch", true);
        cJSON_AddBoolToObject(feat, "cancel", true);
        cJSON_AddBoolToObject(feat, "lora", false);
        cJSON_AddBoolToObject(feat, "hires", false);
        cJSON_AddBoolToObject(feat, "ref_images", true);
        cJSON_AddBoolToObject(feat, "control_image", false);
    }
    cJSON_AddItemToObject(o, "features", feat);
    cJSON *dbm = cJSON_AddObjectToObject(o, "defaults_by_mode");
    if (dbm) cJSON_AddItemToObject(dbm, "img_gen", defaults_json(d));
    cJSON *fbm = cJSON_AddObjectToObject(o, "output_formats_by_mode");
    if (fbm) cJSON_AddItemToObject(fbm, "img_gen", cJSON_Duplicate(fmts, true));
    cJSON *febm = cJSON_AddObjectToObject(o, "features_by_mode");
    if (febm) cJSON_AddItemToObject(febm, "img_gen", cJSON_Duplicate(feat, true));
    cJSON_AddItemToObject(o, "samplers",
                          string_array(sdc_srv_sampler_count(), sdc_srv_sampler_name));
    cJSON_AddItemToObject(o, "schedulers",
                          string_array(sdc_srv_scheduler_count(), sdc_srv_scheduler_name));
    cJSON_AddArrayToObject(o, "loras");
    cJSON_AddArrayToObject(o, "upscalers");
    cJSON *lim = cJSON_AddObjectToObject(o, "limits");
    if (lim) {
        int step = d->size_step >= 8 ? d->size_step : 8;
        cJSON_AddNumberToObject(lim, "min_width", step);
        cJSON_AddNumberToObject(lim, "max_width", d->max_side);
        cJSON_AddNumberToObject(lim, "min_height", step);
        cJSON_AddNumberToObject(lim, "max_height", d->max_side);
        cJSON_AddNumberToObject(lim, "size_step", step); /* width/height multiples of this */
        cJSON_AddNumberToObject(lim, "max_prompt_bytes", SDC_SRV_MAX_PROMPT_BYTES);
        cJSON_AddNumberToObject(lim, "max_ref_images", SDC_SRV_MAX_REF_IMAGES);
        cJSON_AddNumberToObject(lim, "max_ref_image_pixels", SDC_SRV_MAX_REF_PIXELS);
        cJSON_AddNumberToObject(lim, "max_ref_images_pixels", SDC_SRV_MAX_REF_TOTAL_PIXELS);
        cJSON_AddNumberToObject(lim, "max_qwen_image_layers", SDC_SRV_MAX_QWEN_LAYERS);
        cJSON_AddNumberToObject(lim, "max_steps", d->max_steps);
        cJSON_AddNumberToObject(lim, "max_batch_count", d->max_batch);
        cJSON_AddNumberToObject(lim, "max_queue_size", h->cfg.max_queue);
        cJSON_AddNumberToObject(lim, "max_body_bytes", (double)h->cfg.max_body);
    }
    return o;
}

static cJSON *discovery(const sdc_srv_http *h, route r) {
    cJSON *a = NULL;
    switch (r) {
    case R_MODELS: {
        a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "object", "list");
        cJSON *data = cJSON_AddArrayToObject(a, "data");
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "id", "sdc-local");
        cJSON_AddStringToObject(m, "object", "model");
        cJSON_AddNumberToObject(m, "created", 0);
        cJSON_AddStringToObject(m, "owned_by", "local");
        cJSON_AddStringToObject(m, "name", h->model_stem);
        cJSON_AddItemToArray(data, m);
        sdc_srv_jobs_add_models(h->jobs, data, false); /* --queue: the other nodes' */
        return a;
    }
    case R_SD_MODELS: {
        a = cJSON_CreateArray();
        for (int i = 0; i < h->cfg.n_models || (i == 0 && h->cfg.n_models == 0); i++) {
            const sdc_srv_model *sm = h->cfg.n_models ? &h->cfg.models[i] : NULL;
            cJSON *m = cJSON_CreateObject();
            cJSON_AddStringToObject(m, "title", sm ? sm->title : h->model_stem);
            cJSON_AddStringToObject(m, "model_name", sm ? sm->name : h->model_stem);
            cJSON_AddStringToObject(m, "filename",
                                    sm                  ? sm->path
                                    : h->cfg.model_path ? h->cfg.model_path
                                                        : "");
            cJSON_AddStringToObject(m, "hash", sm ? sm->hash : "00000000");
            cJSON_AddStringToObject(m, "sha256", sm ? sm->sha256 : "");
            cJSON_AddNullToObject(m, "config");
            cJSON_AddItemToArray(a, m);
        }
        sdc_srv_jobs_add_models(h->jobs, a, true);
        return a;
    }
    case R_SAMPLERS:
        a = cJSON_CreateArray();
        for (size_t i = 0; a && i < sdc_srv_sampler_count(); i++) {
            cJSON *s = cJSON_CreateObject();
            cJSON_AddStringToObject(s, "name", sdc_srv_sampler_name(i));
            cJSON *al = cJSON_AddArrayToObject(s, "aliases");
            cJSON_AddItemToArray(al, cJSON_CreateString(sdc_srv_sampler_name(i)));
            /* the A1111 labels that select it ("Euler a", "k_euler_a") */
            const char *label, *name, *sched;
            for (size_t k = 0; sdc_srv_sampler_label(k, &label, &name, &sched); k++)
                if (!sched && !strcmp(name, sdc_srv_sampler_name(i)))
                    cJSON_AddItemToArray(al, cJSON_CreateString(label));
            cJSON_AddObjectToObject(s, "options");
            cJSON_AddItemToArray(a, s);
        }
        return a;
    case R_SCHEDULERS:
        a = cJSON_CreateArray();
        for (size_t i = 0; a && i < sdc_srv_scheduler_count(); i++) {
            cJSON *s = cJSON_CreateObject();
            const char *name = sdc_srv_scheduler_name(i), *label = NULL, *l, *n;
            cJSON *al = cJSON_CreateArray();
            for (size_t k = 0; sdc_srv_scheduler_label(k, &l, &n); k++) {
                if (strcmp(n, name)) continue;
                if (!label) label = l; /* the first is A1111's own label */
                cJSON_AddItemToArray(al, cJSON_CreateString(l));
            }
            cJSON_AddStringToObject(s, "name", name);
            cJSON_AddStringToObject(s, "label", label ? label : name);
            cJSON_AddItemToObject(s, "aliases", al);
            cJSON_AddItemToArray(a, s);
        }
        return a;
    case R_UPSCALERS: {
        a = cJSON_CreateArray();
        cJSON *u = cJSON_CreateObject();
        cJSON_AddStringToObject(u, "name", "None");
        cJSON_AddNullToObject(u, "model_name");
        cJSON_AddNullToObject(u, "model_path");
        cJSON_AddNullToObject(u, "model_url");
        cJSON_AddNumberToObject(u, "scale", 4);
        cJSON_AddItemToArray(a, u);
        return a;
    }
    case R_LATENT_MODES:
    case R_LORAS:
        return cJSON_CreateArray();
    case R_OPTIONS:
        a = cJSON_CreateObject();
        cJSON_AddStringToObject(a, "samples_format", "png");
        cJSON_AddStringToObject(a, "sd_model_checkpoint",
                                current_model(h) ? current_model(h)->title : h->model_stem);
        if (current_model(h))
            cJSON_AddStringToObject(a, "sd_checkpoint_hash", current_model(h)->hash);
        cJSON_AddNumberToObject(a, "CLIP_stop_at_last_layers",
                                h->cfg.defaults->clip_skip > 0 ? h->cfg.defaults->clip_skip : 1);
        return a;
    case R_PROGRESS: {
        sdc_srv_progress p;
        sdc_srv_jobs_progress(h->jobs, &p);
        a = cJSON_CreateObject();
        cJSON_AddNumberToObject(a, "progress", p.running ? p.fraction : 0.0);
        cJSON_AddNumberToObject(a, "eta_relative", p.eta_seconds);
        cJSON *st = cJSON_AddObjectToObject(a, "state");
        cJSON_AddBoolToObject(st, "skipped", false);
        cJSON_AddBoolToObject(st, "interrupted", false);
        cJSON_AddStringToObject(st, "job", p.job_id);
        cJSON_AddNumberToObject(st, "job_count", p.queued + (p.running ? 1 : 0));
        cJSON_AddStringToObject(st, "job_timestamp", "");
        cJSON_AddNumberToObject(st, "job_no", p.image);
        cJSON_AddNumberToObject(st, "sampling_step", p.step);
        cJSON_AddNumberToObject(st, "sampling_steps", p.steps);
        cJSON_AddNullToObject(a, "current_image");
        cJSON_AddStringToObject(a, "textinfo", p.running ? "generating" : "idle");
        return a;
    }
    case R_CAPABILITIES:
        return capabilities(h);
    default:
        return NULL;
    }
}

static enum MHD_Result dispatch(sdc_srv_http *h, struct MHD_Connection *c, conn_state *s) {
    switch (s->r) {
    case R_INDEX: {
        const char *page = h->cfg.html ? h->cfg.html : sdc_srv_index_html;
        struct MHD_Response *resp =
            MHD_create_response_from_buffer(strlen(page), (void *)page, MHD_RESPMEM_PERSISTENT);
        if (!resp) return MHD_NO;
        MHD_add_response_header(resp, "Content-Type", "text/html; charset=utf-8");
        t_status = 200;
        enum MHD_Result ret = MHD_queue_response(c, 200, resp);
        MHD_destroy_response(resp);
        return ret;
    }
    case R_GENERATIONS:
    case R_EDITS:
        return openai_generate(h, c, s);
    case R_TXT2IMG:
    case R_IMG2IMG:
        return sdapi_generate(h, c, s);
    case R_IMG_GEN:
        return sdcpp_submit(h, c, s);
    case R_SET_OPTIONS:
        return set_options(h, c, s);
    case R_INTERRUPT: {
        bool any = sdc_srv_jobs_interrupt(h->jobs);
        cJSON *j = cJSON_CreateObject();
        if (j) cJSON_AddBoolToObject(j, "interrupted", any);
        return send_json(c, 200, j);
    }
    case R_JOB: {
        cJSON *j = sdc_srv_jobs_describe(h->jobs, s->job_id);
        return j ? send_json(c, 200, j) : send_error(c, 404, "no such job (or it expired)");
    }
    case R_JOB_CANCEL: {
        cJSON *j = NULL;
        int rc = sdc_srv_jobs_cancel(h->jobs, s->job_id, &j);
        if (rc == 404) return send_error(c, 404, "no such job (or it expired)");
        if (rc == 409) {
            cJSON_Delete(j);
            return send_error(c, 409, "the job has already finished");
        }
        return send_json(c, 200, j);
    }
    default: {
        cJSON *j = discovery(h, s->r);
        return j ? send_json(c, 200, j) : send_error(c, 500, "internal error");
    }
    }
}

/* ---- MHD callbacks ---- */

/* Refuses the request: at once when no body follows (or the client waits for "100
 * Continue" before sending it), else once the body has been read and dropped. */
static enum MHD_Result refuse(struct MHD_Connection *c, conn_state *s, unsigned status,
                              const char *msg) {
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
    const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
    const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Expect");
    bool body = (cl && strtoull(cl, NULL, 10) > 0) || (te && strcasestr(te, "chunked"));
    if (!body || (expect && !strcasecmp(expect, "100-continue"))) {
        s->answered = true;
        return send_error(c, status, msg);
    }
    s->refuse = status;
    snprintf(s->refuse_msg, sizeof s->refuse_msg, "%s", msg);
    return MHD_YES;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **con_cls) {
    (void)version;
    sdc_srv_http *h = cls;
    conn_state *s = *con_cls;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) return MHD_NO;
        *con_cls = s;
        s->t0 = now_seconds();
        snprintf(s->method, sizeof s->method, "%s", method);
        snprintf(s->url, sizeof s->url, "%s", url);
        t_status = 0;
        const char *want = NULL;
        s->r = find_route(url, method, &want, s->job_id);
        if (!strcmp(method, "OPTIONS")) { /* CORS preflight */
            s->answered = true;
            struct MHD_Response *resp =
                MHD_create_response_from_buffer(0, NULL, MHD_RESPMEM_PERSISTENT);
            if (!resp) return MHD_NO;
            MHD_add_response_header(resp, "Access-Control-Allow-Origin", "*");
            MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, POST, OPTIONS");
            MHD_add_response_header(resp, "Access-Control-Allow-Headers",
                                    "Content-Type, Authorization");
            t_status = s->r == R_NONE ? 404 : 204;
            enum MHD_Result ret = MHD_queue_response(c, t_status, resp);
            MHD_destroy_response(resp);
            return ret;
        }
        if (s->r == R_NONE) return refuse(c, s, 404, "unknown endpoint");
        bool is_get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
        if (!(is_get && !strcmp(want, "GET")) && strcmp(method, want)) {
            char msg[96];
            snprintf(msg, sizeof msg, "method %.16s is not allowed here (use %s)", method, want);
            return refuse(c, s, 405, msg);
        }
        if (s->r != R_INDEX && !authorized(h, c))
            return refuse(c, s, 401, "missing or wrong API key (Authorization: Bearer ...)");
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > h->cfg.max_body) {
            char msg[96];
            snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", h->cfg.max_body);
            return refuse(c, s, 413, msg);
        }
        return MHD_YES;
    }
    if (s->answered) { /* a response is queued; discard what still arrives */
        *upload_size = 0;
        return MHD_YES;
    }
    if (s->refuse) {
        /* drained, bounded: past the bound the answer goes out now and MHD closes */
        s->drained += *upload_size;
        bool more = *upload_size > 0 && s->drained <= h->cfg.max_body + DRAIN_EXTRA_BYTES;
        *upload_size = 0;
        if (more) return MHD_YES;
        s->answered = true;
        return send_error(c, s->refuse, s->refuse_msg);
    }
    if (*upload_size > 0) {
        size_t n = *upload_size;
        *upload_size = 0;
        if (s->too_big || s->len + n > h->cfg.max_body) {
            s->too_big = true; /* chunked bodies: keep reading, answer 413 at the end */
            free(s->body);
            s->body = NULL;
            s->len = s->cap = 0;
            return MHD_YES;
        }
        if (s->len + n + 1 > s->cap) {
            size_t cap = s->cap ? s->cap : 4096;
            while (cap < s->len + n + 1) cap *= 2;
            char *grown = realloc(s->body, cap);
            if (!grown) return MHD_NO;
            s->body = grown;
            s->cap = cap;
        }
        memcpy(s->body + s->len, upload, n);
        s->len += n;
        s->body[s->len] = '\0';
        return MHD_YES;
    }
    s->answered = true;
    if (s->too_big) {
        char msg[96];
        snprintf(msg, sizeof msg, "the request body is larger than %zu bytes", h->cfg.max_body);
        return send_error(c, 413, msg);
    }
    return dispatch(h, c, s);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                         enum MHD_RequestTerminationCode toe) {
    (void)c;
    const sdc_srv_http *h = cls;
    conn_state *s = *con_cls;
    if (!s) return;
    if (h->cfg.verbose) {
        char status[16];
        snprintf(status, sizeof status, "%u", t_status);
        fprintf(stderr, "sdc-server: %s %s %s %.1f ms%s\n", s->method, s->url,
                t_status ? status : "-", (now_seconds() - s->t0) * 1e3,
                toe == MHD_REQUEST_TERMINATED_COMPLETED_OK ? "" : " (connection closed)");
    }
    free(s->body);
    free(s);
    *con_cls = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
    (void)cls;
    fputs("sdc-server: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

sdc_srv_http *sdc_srv_http_start(const sdc_srv_http_config *cfg, sdc_srv_jobs *jobs, char *err,
                                 size_t err_size) {
    sdc_srv_http *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    h->cfg = *cfg;
    h->jobs = jobs;
    const char *path = cfg->model_path ? cfg->model_path : "";
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(h->model_stem, sizeof h->model_stem, "%s", base);
    char *dot = strrchr(h->model_stem, '.');
    if (dot && dot != h->model_stem) *dot = '\0';

    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    unsigned flags =
        MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    const char *ip = cfg->listen_ip ? cfg->listen_ip : "127.0.0.1";
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)cfg->port);
    } else if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)cfg->port);
        flags |= MHD_USE_IPv6;
    } else {
        snprintf(err, err_size, "--listen-ip: '%s' is not an IPv4 or IPv6 address", ip);
        free(h);
        return NULL;
    }
    h->daemon = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, h,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL, MHD_OPTION_SOCK_ADDR,
                                 (struct sockaddr *)&ss, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
                                 h, MHD_OPTION_CONNECTION_LIMIT,
                                 (unsigned)(cfg->max_connections > 0 ? cfg->max_connections : 256),
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120, MHD_OPTION_END);
    if (!h->daemon) {
        snprintf(err, err_size, "cannot listen on %s:%d (address in use or not available)", ip,
                 cfg->port);
        free(h);
        return NULL;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    return h;
}

int sdc_srv_http_port(const sdc_srv_http *h) {
    return h->port;
}

void sdc_srv_http_stop(sdc_srv_http *h) {
    if (!h) return;
    MHD_stop_daemon(h->daemon);
    free(h);
}
