#include "jobs.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base64.h"
#include "png_encode.h"
#include "queue.h"

struct sdc_srv_job {
    char id[40];
    sdc_srv_request req;
    sdc_srv_job_state state;
    bool cancel_requested;
    bool interrupt_requested; /* A1111 /interrupt: keep the images done so far */
    bool delivered;           /* a synchronous waiter took the images */
    int refs;                 /* synchronous waiters; a held job is never dropped */
    time_t created, started, finished;
    double started_mono, finished_mono;
    /* progress */
    int step, steps, image, images;
    double step_seconds_sum;
    int step_count;
    /* result */
    sdc_srv_result result;
    sdc_srv_job *next;       /* all jobs, newest first */
    sdc_srv_job *queue_next; /* FIFO of queued jobs */
};

struct sdc_srv_jobs {
    sdc_context *ctx;
    sdc_srv_jobs_config cfg;
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* worker: a job was queued, or stop */
    pthread_cond_t done_cv; /* waiters: a job finished */
    pthread_t worker;
    bool stopping;
    sdc_srv_job *all;
    sdc_srv_job *queue_head, *queue_tail;
    int queued, kept;
    sdc_srv_job *running;
    uint32_t id_salt, id_counter;
    sdc_srv_stats stats;
    sdc_srv_rq *rq; /* non-NULL: every call goes to the Redis queue */
    int current_model;
};

static double mono_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *sdc_srv_job_state_name(sdc_srv_job_state s) {
    switch (s) {
    case SDC_SRV_JOB_QUEUED:
        return "queued";
    case SDC_SRV_JOB_RUNNING:
        return "generating";
    case SDC_SRV_JOB_COMPLETED:
        return "completed";
    case SDC_SRV_JOB_FAILED:
        return "failed";
    case SDC_SRV_JOB_CANCELLED:
        return "cancelled";
    }
    return "unknown";
}

void sdc_srv_result_free(sdc_srv_result *r) {
    if (!r) return;
    for (int i = 0; i < r->count; i++) {
        if (r->b64_png) free(r->b64_png[i]);
        if (r->infotext) free(r->infotext[i]);
    }
    free(r->b64_png);
    free(r->infotext);
    free(r->seeds);
    memset(r, 0, sizeof *r);
}

static void job_free(sdc_srv_job *j) {
    sdc_srv_request_free(&j->req);
    sdc_srv_result_free(&j->result);
    free(j);
}

static bool is_finished(const sdc_srv_job *j) {
    return j->state == SDC_SRV_JOB_COMPLETED || j->state == SDC_SRV_JOB_FAILED ||
           j->state == SDC_SRV_JOB_CANCELLED;
}

/* Marks a job finished (lock held). */
static void finish_job(sdc_srv_jobs *q, sdc_srv_job *j, sdc_srv_job_state state) {
    j->state = state;
    j->finished = time(NULL);
    j->finished_mono = mono_now();
    q->kept++;
    if (state == SDC_SRV_JOB_COMPLETED)
        q->stats.completed++;
    else if (state == SDC_SRV_JOB_FAILED)
        q->stats.failed++;
    else
        q->stats.cancelled++;
    if (q->cfg.verbose) /* -v: one line per job, however it ended */
        fprintf(stderr, "sdc-server: job %s %s: %d image(s) %dx%d, %d steps, %.2f s%s%s\n", j->id,
                sdc_srv_job_state_name(state), j->result.count, j->req.width, j->req.height,
                j->req.n_sigmas > 0 ? j->req.n_sigmas - 1 : j->req.steps,
                j->started ? j->finished_mono - j->started_mono : 0.0,
                state == SDC_SRV_JOB_COMPLETED ? "" : ": ",
                state == SDC_SRV_JOB_COMPLETED ? "" : j->result.error);
    /* the request (prompt, init image) is no longer needed */
    sdc_srv_request_free(&j->req);
    pthread_cond_broadcast(&q->done_cv);
}

/* Drops finished jobs past their time, and the oldest beyond max_kept (lock held). */
static void prune(sdc_srv_jobs *q) {
    double now = mono_now();
    /* walk newest -> oldest; count finished ones so the oldest extras go */
    int finished_seen = 0;
    for (sdc_srv_job **pp = &q->all; *pp;) {
        sdc_srv_job *j = *pp;
        if (is_finished(j)) {
            finished_seen++;
            bool expired = now - j->finished_mono > q->cfg.keep_seconds;
            bool too_many = finished_seen > q->cfg.max_kept;
            if ((expired || too_many) && j->refs == 0) {
                *pp = j->next;
                q->kept--;
                finished_seen--;
                job_free(j);
                continue;
            }
        }
        pp = &j->next;
    }
}

static sdc_srv_job *find(sdc_srv_jobs *q, const char *id) {
    for (sdc_srv_job *j = q->all; j; j = j->next)
        if (!strcmp(j->id, id)) return j;
    return NULL;
}

static void unqueue(sdc_srv_jobs *q, sdc_srv_job *j) {
    sdc_srv_job *prev = NULL;
    for (sdc_srv_job *c = q->queue_head; c; prev = c, c = c->queue_next) {
        if (c != j) continue;
        if (prev)
            prev->queue_next = c->queue_next;
        else
            q->queue_head = c->queue_next;
        if (q->queue_tail == c) q->queue_tail = prev;
        c->queue_next = NULL;
        q->queued--;
        return;
    }
}

/* ---- the worker ---- */

typedef struct run_state {
    sdc_srv_jobs *q;
    sdc_srv_job *job;
} run_state;

static void on_progress(int step, int steps, double step_seconds, void *user) {
    run_state *rs = user;
    sdc_srv_jobs *q = rs->q;
    pthread_mutex_lock(&q->mu);
    sdc_srv_job *j = rs->job;
    if (step <= j->step && j->image + 1 < j->images) j->image++; /* next image of a batch */
    j->step = step;
    j->steps = steps;
    j->step_seconds_sum += step_seconds;
    j->step_count++;
    /* a cancel that raced with the start of sampling is applied here, within a step */
    bool cancel = j->cancel_requested || q->stopping;
    pthread_mutex_unlock(&q->mu);
    if (cancel) sdc_cancel(q->ctx);
}

/* Encodes the images of a finished generation into *res (no lock held). */
static sdc_status encode_results(sdc_context *ctx, const sdc_generate_params *p,
                                 const sdc_image *images, int count, sdc_srv_result *res) {
    res->b64_png = calloc((size_t)count, sizeof(char *));
    res->infotext = calloc((size_t)count, sizeof(char *));
    res->seeds = calloc((size_t)count, sizeof(int64_t));
    if (!res->b64_png || !res->infotext || !res->seeds) return SDC_ERR_NO_MEMORY;
    res->count = count;
    for (int i = 0; i < count; i++) {
        res->seeds[i] = images[i].seed;
        res->infotext[i] = sdc_generation_parameters_text(ctx, p, images[i].seed);
        size_t png_size = 0;
        uint8_t *png = sdc_srv_png_encode(&images[i], res->infotext[i], &png_size);
        if (!png) return SDC_ERR_NO_MEMORY;
        res->b64_png[i] = sdc_srv_base64_encode(png, png_size);
        free(png);
        if (!res->b64_png[i] || !res->infotext[i]) return SDC_ERR_NO_MEMORY;
    }
    return SDC_OK;
}

/* Reference images into p (refs: room for r->n_refs + 1). An OpenAI edit's images are
 * sd.cpp's references and its first the init image too: a model that reads no references
 * gets the init image only (sd.cpp ignores them there), Qwen-Image-Layered the references
 * only (it refuses -i), InstructPix2Pix both. */
static void refs_into_params(sdc_context *ctx, const sdc_srv_request *r, sdc_generate_params *p,
                             sdc_image *refs) {
    int n = 0;
    if (r->refs_from_edit) {
        sdc_ref_use use = sdc_context_ref_use(ctx);
        if (use == SDC_REFS_NONE) return;
        if (p->init_image) refs[n++] = *p->init_image;
        if (use == SDC_REFS_ONLY) p->init_image = p->mask_image = NULL;
    }
    for (int i = 0; i < r->n_refs; i++)
        refs[n++] =
            (sdc_image){(uint32_t)r->refs[i].w, (uint32_t)r->refs[i].h, 3, r->refs[i].rgb, 0};
    p->ref_images = n ? refs : NULL;
    p->n_ref_images = n;
}

static void params_from_request(const sdc_srv_jobs_config *cfg, const sdc_srv_request *r,
                                sdc_generate_params *p, sdc_image *init, sdc_image *mask) {
    sdc_generate_params_init(p);
    p->prompt = r->prompt;
    p->negative_prompt = r->negative_prompt;
    p->width = r->width;
    p->height = r->height;
    p->steps = r->steps;
    p->cfg_scale = r->cfg_scale;
    p->seed = r->seed;
    p->sampling_method = r->sampler[0] ? r->sampler : NULL;
    p->scheduler = r->scheduler[0] ? r->scheduler : NULL;
    if (cfg->rng) p->rng = cfg->rng;
    if (cfg->sampler_rng) p->sampler_rng = cfg->sampler_rng;
    p->img_cfg_scale = r->img_cfg;
    p->guidance = r->guidance;
    p->flow_shift = r->flow_shift;
    if (isfinite(r->eta)) p->eta = r->eta;
    p->batch_count = r->batch_count;
    p->qwen_image_layers = r->qwen_image_layers;
    if (r->clip_skip > 0) p->clip_skip = r->clip_skip;
    if (r->n_sigmas > 0) {
        p->sigmas = r->sigmas;
        p->n_sigmas = r->n_sigmas;
        p->steps = r->n_sigmas - 1;
    }
    if (r->init_rgb) {
        *init = (sdc_image){(uint32_t)r->init_w, (uint32_t)r->init_h, 3, r->init_rgb, 0};
        p->init_image = init;
        p->strength = r->strength;
        if (r->mask_rgb) {
            *mask = (sdc_image){(uint32_t)r->mask_w, (uint32_t)r->mask_h, 3, r->mask_rgb, 0};
            p->mask_image = mask;
        }
    }
}

sdc_status sdc_srv_run_request(sdc_context *ctx, const sdc_srv_jobs_config *cfg,
                               const sdc_srv_request *r, const sdc_srv_run_hooks *h,
                               sdc_srv_result *res) {
    sdc_image init = {0}, mask = {0};
    sdc_generate_params p;
    params_from_request(cfg, r, &p, &init, &mask);
    p.progress = h->progress;
    p.progress_user = h->user;
    memset(res, 0, sizeof *res);
    /* views of the request's pixels (not copied) */
    sdc_image *refs = calloc((size_t)r->n_refs + 1, sizeof *refs);
    char *ref_args = sdc_srv_request_ref_args(cfg->ref_image_args, r);
    p.ref_image_args = ref_args;
    if (!refs || ((r->no_ref_resize || r->increase_ref_index) && !ref_args)) {
        free(refs);
        free(ref_args);
        snprintf(res->error, sizeof res->error, "out of memory");
        res->status = SDC_ERR_NO_MEMORY;
        return SDC_ERR_NO_MEMORY;
    }
    refs_into_params(ctx, r, &p, refs);

    /* image by image (seeds seed, seed+1, ... as the library's batch), so that an A1111
     * interrupt keeps the images finished before it */
    int n = p.batch_count, count = 0;
    sdc_image *images = calloc((size_t)n, sizeof *images);
    sdc_status st = images ? SDC_OK : SDC_ERR_NO_MEMORY;
    int64_t base =
        p.seed >= 0 ? p.seed : (int64_t)(((uint64_t)time(NULL) ^ h->seed_salt) & 0x7fffffff);
    p.batch_count = 1;
    for (int b = 0; b < n && st == SDC_OK; b++) {
        sdc_image *one = NULL;
        int got = 0;
        /* a cancel between two images (each call clears the context's flag) */
        if (b > 0 && h->stop && h->stop(h->user)) {
            st = SDC_ERR_CANCELLED;
            break;
        }
        p.seed = base + b;
        st = sdc_generate_image(ctx, &p, &one, &got);
        /* Qwen-Image-Layered gives layers + 1 RGBA images per seed: keep them all */
        sdc_image *more = st == SDC_OK && got > 1
                              ? realloc(images, (size_t)(n - b + count + got) * sizeof *images)
                              : images;
        if (st == SDC_OK && got >= 1 && more) {
            images = more;
            for (int i = 0; i < got; i++) images[count++] = one[i];
            free(one);
        } else {
            if (st == SDC_OK) st = SDC_ERR_NO_MEMORY;
            images = more ? more : images;
            sdc_free_images(one, got);
        }
    }
    p.seed = base;
    bool interrupted = st == SDC_ERR_CANCELLED && h->interrupted && h->interrupted(h->user);
    if (st == SDC_OK || interrupted) {
        sdc_status enc = encode_results(ctx, &p, images, count, res);
        if (enc != SDC_OK) {
            st = enc;
            interrupted = false;
            snprintf(res->error, sizeof res->error, "out of memory encoding images");
        }
    } else {
        snprintf(res->error, sizeof res->error, "%s",
                 *sdc_last_error() ? sdc_last_error() : sdc_status_string(st));
    }
    if (images) sdc_free_images(images, count);
    if (st == SDC_ERR_CANCELLED) {
        if (!interrupted) sdc_srv_result_free(res);
        res->interrupted = interrupted;
        snprintf(res->error, sizeof res->error, "%s",
                 interrupted ? "job interrupted" : "job cancelled");
    } else if (st != SDC_OK) { /* keep only the message */
        sdc_srv_result err_only = {.status = st};
        memcpy(err_only.error, res->error, sizeof res->error);
        sdc_srv_result_free(res);
        *res = err_only;
    }
    free(refs);
    free(ref_args);
    res->status = st;
    return st;
}

static bool job_stop(void *user) {
    run_state *rs = user;
    pthread_mutex_lock(&rs->q->mu);
    bool stop = rs->job->cancel_requested || rs->q->stopping;
    pthread_mutex_unlock(&rs->q->mu);
    return stop;
}

static bool job_interrupted(void *user) {
    run_state *rs = user;
    pthread_mutex_lock(&rs->q->mu);
    bool interrupted = rs->job->interrupt_requested;
    pthread_mutex_unlock(&rs->q->mu);
    return interrupted;
}

/* Loads model index m in place of the loaded one (worker thread, no lock held). The old
 * context is freed first (two SD checkpoints at once may not fit); when the new one
 * fails to load, the previous model is loaded again. */
static sdc_status switch_model(sdc_srv_jobs *q, int m, char *err, size_t err_size) {
    pthread_mutex_lock(&q->mu);
    sdc_context *old = q->ctx;
    int prev = q->current_model;
    q->ctx = NULL; /* cancels from other threads skip a context being replaced */
    pthread_mutex_unlock(&q->mu);
    sdc_context_free(old);
    sdc_context_params cp = *q->cfg.ctx_params;
    const sdc_srv_model *want = &q->cfg.models[m];
    if (q->cfg.switch_diffusion_model)
        cp.diffusion_model_path = want->path;
    else
        cp.model_path = want->path;
    double t0 = mono_now();
    sdc_context *ctx = NULL;
    sdc_status st = sdc_context_create(&cp, &ctx);
    if (st != SDC_OK) {
        snprintf(err, err_size, "cannot load the checkpoint '%.100s': %.100s", want->title,
                 *sdc_last_error() ? sdc_last_error() : sdc_status_string(st));
        fprintf(stderr, "sdc-server: error: %s\n", err);
        want = &q->cfg.models[prev];
        if (q->cfg.switch_diffusion_model)
            cp.diffusion_model_path = want->path;
        else
            cp.model_path = want->path;
        if (sdc_context_create(&cp, &ctx) != SDC_OK) ctx = NULL;
        m = prev;
    } else {
        fprintf(stderr, "sdc-server: loaded the checkpoint '%s' in %.2f s\n", want->title,
                mono_now() - t0);
    }
    pthread_mutex_lock(&q->mu);
    q->ctx = ctx;
    q->current_model = ctx ? m : prev;
    pthread_mutex_unlock(&q->mu);
    return st;
}

static void run_job(sdc_srv_jobs *q, sdc_srv_job *j) {
    int slot = j->req.model_slot;
    if (slot > 0 && slot <= q->cfg.n_models && (slot - 1 != q->current_model || !q->ctx)) {
        char err[sizeof j->result.error];
        sdc_status st = switch_model(q, slot - 1, err, sizeof err);
        if (st != SDC_OK || !q->ctx) {
            pthread_mutex_lock(&q->mu);
            j->result.status = st != SDC_OK ? st : SDC_ERR_IO;
            snprintf(j->result.error, sizeof j->result.error, "%s",
                     st != SDC_OK ? err : "no model is loaded");
            q->running = NULL;
            finish_job(q, j, SDC_SRV_JOB_FAILED);
            pthread_mutex_unlock(&q->mu);
            return;
        }
    }
    if (j->req.batch_count == 0 || !q->ctx) { /* a switch only, or no model left */
        pthread_mutex_lock(&q->mu);
        if (!q->ctx) {
            j->result.status = SDC_ERR_IO;
            snprintf(j->result.error, sizeof j->result.error, "no model is loaded");
        }
        q->running = NULL;
        finish_job(q, j, q->ctx ? SDC_SRV_JOB_COMPLETED : SDC_SRV_JOB_FAILED);
        pthread_mutex_unlock(&q->mu);
        return;
    }
    run_state rs = {q, j};
    sdc_srv_run_hooks h = {on_progress, job_stop, job_interrupted, &rs, q->id_salt};
    sdc_srv_result res;
    sdc_status st = sdc_srv_run_request(q->ctx, &q->cfg, &j->req, &h, &res);
    pthread_mutex_lock(&q->mu);
    sdc_srv_job_state final = st == SDC_OK              ? SDC_SRV_JOB_COMPLETED
                              : st == SDC_ERR_CANCELLED ? SDC_SRV_JOB_CANCELLED
                                                        : SDC_SRV_JOB_FAILED;
    j->result = res;
    q->running = NULL;
    finish_job(q, j, final);
    pthread_mutex_unlock(&q->mu);
}

static void *worker_main(void *arg) {
    sdc_srv_jobs *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->queue_head && !q->stopping) {
            /* wake up now and then so expired jobs go even when nobody calls in */
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 5;
            pthread_cond_timedwait(&q->work_cv, &q->mu, &until);
            prune(q);
        }
        if (q->stopping) break;
        sdc_srv_job *j = q->queue_head;
        unqueue(q, j);
        j->state = SDC_SRV_JOB_RUNNING;
        j->started = time(NULL);
        j->started_mono = mono_now();
        j->images = j->req.batch_count;
        q->running = j;
        pthread_mutex_unlock(&q->mu);
        run_job(q, j);
        pthread_mutex_lock(&q->mu);
        prune(q);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* ---- public ---- */

sdc_srv_jobs *sdc_srv_jobs_create(sdc_context *ctx, const sdc_srv_jobs_config *cfg, char *err,
                                  size_t err_size) {
    sdc_srv_jobs *q = calloc(1, sizeof *q);
    snprintf(err, err_size, "out of memory");
    if (!q) return NULL;
    q->ctx = ctx;
    q->cfg = *cfg;
    q->current_model = cfg->current_model;
    if (q->cfg.max_queue < 1) q->cfg.max_queue = 1;
    if (q->cfg.max_kept < 1) q->cfg.max_kept = 1;
    if (cfg->queue_url) {
        q->rq = sdc_srv_rq_create(ctx, &q->cfg, err, err_size);
        if (!q->rq) {
            free(q);
            return NULL;
        }
        return q;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    q->id_salt = (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)getpid();
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->work_cv, NULL);
    pthread_cond_init(&q->done_cv, NULL);
    if (pthread_create(&q->worker, NULL, worker_main, q) != 0) {
        pthread_mutex_destroy(&q->mu);
        pthread_cond_destroy(&q->work_cv);
        pthread_cond_destroy(&q->done_cv);
        free(q);
        snprintf(err, err_size, "cannot start the worker thread");
        return NULL;
    }
    return q;
}

void sdc_srv_jobs_shutdown(sdc_srv_jobs *q) {
    if (q->rq) {
        sdc_srv_rq_shutdown(q->rq);
        return;
    }
    pthread_mutex_lock(&q->mu);
    q->stopping = true;
    while (q->queue_head) {
        sdc_srv_job *j = q->queue_head;
        unqueue(q, j);
        snprintf(j->result.error, sizeof j->result.error, "server shutting down");
        finish_job(q, j, SDC_SRV_JOB_CANCELLED);
    }
    if (q->running) {
        q->running->cancel_requested = true;
        if (q->ctx) sdc_cancel(q->ctx);
    }
    pthread_cond_broadcast(&q->work_cv);
    pthread_cond_broadcast(&q->done_cv);
    pthread_mutex_unlock(&q->mu);
}

void sdc_srv_jobs_destroy(sdc_srv_jobs *q) {
    if (!q) return;
    if (q->rq) {
        sdc_srv_rq_destroy(q->rq);
        free(q);
        return;
    }
    sdc_srv_jobs_shutdown(q);
    pthread_join(q->worker, NULL);
    /* with models to switch among, the queue owns the context since the first switch
     * may have replaced the caller's */
    if (q->cfg.n_models > 0) sdc_context_free(q->ctx);
    for (sdc_srv_job *j = q->all, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->work_cv);
    pthread_cond_destroy(&q->done_cv);
    free(q);
}

int sdc_srv_jobs_submit(sdc_srv_jobs *q, sdc_srv_request *req, char id[40], sdc_srv_job **held) {
    if (held) *held = NULL;
    id[0] = '\0';
    if (q->rq) { /* a held job is only its id: the state lives in Redis */
        sdc_srv_job *j = held ? calloc(1, sizeof *j) : NULL;
        if (held && !j) return 503;
        int rc = sdc_srv_rq_submit(q->rq, req, id);
        if (rc || !held) {
            free(j);
            return rc;
        }
        memcpy(j->id, id, sizeof j->id);
        *held = j;
        return 0;
    }
    pthread_mutex_lock(&q->mu);
    prune(q);
    int refusal = q->stopping ? 503 : q->queued >= q->cfg.max_queue ? 429 : 0;
    if (refusal) {
        q->stats.refused++;
        pthread_mutex_unlock(&q->mu);
        return refusal;
    }
    sdc_srv_job *j = calloc(1, sizeof *j);
    if (!j) {
        pthread_mutex_unlock(&q->mu);
        return 503;
    }
    snprintf(j->id, sizeof j->id, "job_%08x%08x", q->id_salt, ++q->id_counter);
    j->req = *req;
    memset(req, 0, sizeof *req);
    j->state = SDC_SRV_JOB_QUEUED;
    j->created = time(NULL);
    j->images = j->req.batch_count;
    j->steps = j->req.steps;
    if (held) {
        j->refs = 1;
        *held = j;
    }
    j->next = q->all;
    q->all = j;
    if (q->queue_tail)
        q->queue_tail->queue_next = j;
    else
        q->queue_head = j;
    q->queue_tail = j;
    q->queued++;
    q->stats.submitted++;
    memcpy(id, j->id, sizeof j->id);
    pthread_cond_signal(&q->work_cv);
    pthread_mutex_unlock(&q->mu);
    return 0;
}

/* Cancels j (lock held): a queued job ends at once, a running one within a step. */
static void cancel_locked(sdc_srv_jobs *q, sdc_srv_job *j) {
    if (j->state == SDC_SRV_JOB_QUEUED) {
        unqueue(q, j);
        snprintf(j->result.error, sizeof j->result.error, "job cancelled by client");
        j->result.status = SDC_ERR_CANCELLED;
        finish_job(q, j, SDC_SRV_JOB_CANCELLED);
    } else if (j->state == SDC_SRV_JOB_RUNNING && !j->cancel_requested) {
        j->cancel_requested = true;
        if (q->ctx) sdc_cancel(q->ctx);
    }
}

sdc_srv_job_state sdc_srv_jobs_wait(sdc_srv_jobs *q, sdc_srv_job *j, bool (*still_wanted)(void *),
                                    void *user) {
    if (q->rq) return j->state = sdc_srv_rq_wait(q->rq, j->id, still_wanted, user);
    pthread_mutex_lock(&q->mu);
    /* the client is checked every 100 ms, by the clock: other jobs finishing wake this
     * thread too, and must not postpone the check */
    double next_check = mono_now() + 0.1;
    while (!is_finished(j)) {
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 100 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&q->done_cv, &q->mu, &until);
        if (still_wanted && !is_finished(j) && mono_now() >= next_check) {
            next_check = mono_now() + 0.1;
            pthread_mutex_unlock(&q->mu); /* the check may take a syscall */
            bool wanted = still_wanted(user);
            pthread_mutex_lock(&q->mu);
            if (!wanted) cancel_locked(q, j);
        }
    }
    sdc_srv_job_state s = j->state;
    pthread_mutex_unlock(&q->mu);
    return s;
}

bool sdc_srv_jobs_result(sdc_srv_jobs *q, sdc_srv_job *j, sdc_srv_result *out) {
    if (q->rq) return sdc_srv_rq_result(q->rq, j->id, out);
    pthread_mutex_lock(&q->mu);
    /* moved, not copied: the images leave the queue with their one waiter */
    *out = j->result;
    memset(&j->result, 0, sizeof j->result);
    j->result.status = out->status;
    j->result.interrupted = out->interrupted;
    memcpy(j->result.error, out->error, sizeof out->error);
    j->delivered = true;
    pthread_mutex_unlock(&q->mu);
    return true;
}

void sdc_srv_jobs_release(sdc_srv_jobs *q, sdc_srv_job *j) {
    if (q->rq) {
        if (j->state == SDC_SRV_JOB_COMPLETED) sdc_srv_rq_delivered(q->rq, j->id);
        free(j);
        return;
    }
    pthread_mutex_lock(&q->mu);
    j->refs--;
    prune(q);
    pthread_mutex_unlock(&q->mu);
}

static int queue_position(sdc_srv_jobs *q, const sdc_srv_job *j) {
    int pos = 1;
    for (sdc_srv_job *c = q->queue_head; c; c = c->queue_next, pos++)
        if (c == j) return pos;
    return 0;
}

static double eta_locked(const sdc_srv_job *j) {
    if (j->step_count == 0 || j->steps <= 0) return 0.0;
    double mean = j->step_seconds_sum / j->step_count;
    int left = (j->steps - j->step) + (j->images - j->image - 1) * j->steps;
    return left > 0 ? mean * left : 0.0;
}

static double fraction_locked(const sdc_srv_job *j) {
    if (j->state == SDC_SRV_JOB_COMPLETED) return 1.0;
    if (j->steps <= 0 || j->images <= 0) return 0.0;
    double f = ((double)j->image * j->steps + j->step) / ((double)j->images * j->steps);
    return f > 1.0 ? 1.0 : f;
}

static cJSON *describe_locked(sdc_srv_jobs *q, const sdc_srv_job *j) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddStringToObject(o, "id", j->id);
    cJSON_AddStringToObject(o, "kind", "img_gen");
    cJSON_AddStringToObject(o, "status", sdc_srv_job_state_name(j->state));
    cJSON_AddNumberToObject(o, "created", (double)j->created);
    if (j->started)
        cJSON_AddNumberToObject(o, "started", (double)j->started);
    else
        cJSON_AddNullToObject(o, "started");
    if (j->finished)
        cJSON_AddNumberToObject(o, "completed", (double)j->finished);
    else
        cJSON_AddNullToObject(o, "completed");
    cJSON_AddNumberToObject(o, "queue_position", queue_position(q, j));
    cJSON *prog = cJSON_AddObjectToObject(o, "progress");
    if (prog) {
        cJSON_AddNumberToObject(prog, "step", j->step);
        cJSON_AddNumberToObject(prog, "steps", j->steps);
        cJSON_AddNumberToObject(prog, "image", j->image);
        cJSON_AddNumberToObject(prog, "images", j->images);
        cJSON_AddNumberToObject(prog, "fraction", fraction_locked(j));
        cJSON_AddNumberToObject(prog, "eta_seconds", eta_locked(j));
    }
    if (j->state == SDC_SRV_JOB_COMPLETED) {
        cJSON *res = cJSON_AddObjectToObject(o, "result");
        cJSON *imgs = res ? cJSON_AddArrayToObject(res, "images") : NULL;
        if (res) cJSON_AddStringToObject(res, "output_format", "png");
        /* a synchronous job's images went to its client and are no longer kept */
        if (res && j->delivered) cJSON_AddBoolToObject(res, "delivered", true);
        for (int i = 0; imgs && i < j->result.count; i++) {
            cJSON *im = cJSON_CreateObject();
            if (!im) break;
            cJSON_AddNumberToObject(im, "index", i);
            cJSON_AddNumberToObject(im, "seed", (double)j->result.seeds[i]);
            cJSON_AddStringToObject(im, "b64_json", j->result.b64_png[i]);
            cJSON_AddItemToArray(imgs, im);
        }
    } else {
        cJSON_AddNullToObject(o, "result");
    }
    if (j->state == SDC_SRV_JOB_FAILED || j->state == SDC_SRV_JOB_CANCELLED) {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        if (e) {
            cJSON_AddStringToObject(
                e, "code", j->state == SDC_SRV_JOB_FAILED ? "generation_failed" : "cancelled");
            cJSON_AddStringToObject(e, "message", j->result.error);
        }
    } else {
        cJSON_AddNullToObject(o, "error");
    }
    return o;
}

cJSON *sdc_srv_jobs_describe(sdc_srv_jobs *q, const char *id) {
    if (q->rq) return sdc_srv_rq_describe(q->rq, id);
    pthread_mutex_lock(&q->mu);
    sdc_srv_job *j = find(q, id);
    cJSON *o = j ? describe_locked(q, j) : NULL;
    pthread_mutex_unlock(&q->mu);
    return o;
}

int sdc_srv_jobs_cancel(sdc_srv_jobs *q, const char *id, cJSON **desc) {
    *desc = NULL;
    if (q->rq) return sdc_srv_rq_cancel(q->rq, id, false, desc);
    pthread_mutex_lock(&q->mu);
    sdc_srv_job *j = find(q, id);
    int code = 404;
    if (j) {
        code = (j->state == SDC_SRV_JOB_COMPLETED || j->state == SDC_SRV_JOB_FAILED) ? 409 : 200;
        if (code == 200) cancel_locked(q, j);
        *desc = describe_locked(q, j);
    }
    pthread_mutex_unlock(&q->mu);
    return code;
}

bool sdc_srv_jobs_interrupt(sdc_srv_jobs *q) {
    if (q->rq) return sdc_srv_rq_interrupt(q->rq);
    pthread_mutex_lock(&q->mu);
    bool any = q->running != NULL;
    if (any) {
        q->running->interrupt_requested = true;
        cancel_locked(q, q->running);
    }
    pthread_mutex_unlock(&q->mu);
    return any;
}

void sdc_srv_jobs_progress(sdc_srv_jobs *q, sdc_srv_progress *p) {
    memset(p, 0, sizeof *p);
    if (q->rq) {
        sdc_srv_rq_progress(q->rq, p);
        return;
    }
    pthread_mutex_lock(&q->mu);
    p->queued = q->queued;
    const sdc_srv_job *j = q->running;
    if (j) {
        p->running = true;
        memcpy(p->job_id, j->id, sizeof p->job_id);
        p->step = j->step;
        p->steps = j->steps;
        p->image = j->image;
        p->images = j->images;
        p->fraction = fraction_locked(j);
        p->eta_seconds = eta_locked(j);
    }
    pthread_mutex_unlock(&q->mu);
}

void sdc_srv_jobs_stats(sdc_srv_jobs *q, sdc_srv_stats *s) {
    if (q->rq) {
        sdc_srv_rq_stats(q->rq, s);
        return;
    }
    pthread_mutex_lock(&q->mu);
    *s = q->stats;
    s->queued = q->queued;
    s->kept = q->kept;
    pthread_mutex_unlock(&q->mu);
}

void sdc_srv_jobs_add_models(sdc_srv_jobs *q, cJSON *list, bool sdapi) {
    cJSON *names = q->rq ? sdc_srv_rq_models(q->rq) : NULL;
    cJSON *it;
    cJSON_ArrayForEach(it, names) {
        if (!cJSON_IsString(it) ||
            (q->cfg.model_name && !strcmp(it->valuestring, q->cfg.model_name)))
            continue; /* this node's own model is the caller's first entry */
        cJSON *m = cJSON_CreateObject();
        if (!m) break;
        if (sdapi) {
            cJSON_AddStringToObject(m, "title", it->valuestring);
            cJSON_AddStringToObject(m, "model_name", it->valuestring);
            cJSON_AddStringToObject(m, "filename", it->valuestring);
            cJSON_AddStringToObject(m, "hash", "00000000");
            cJSON_AddStringToObject(m, "sha256", "");
            cJSON_AddNullToObject(m, "config");
        } else {
            cJSON_AddStringToObject(m, "id", it->valuestring);
            cJSON_AddStringToObject(m, "object", "model");
            cJSON_AddNumberToObject(m, "created", 0);
            cJSON_AddStringToObject(m, "owned_by", "cluster");
            cJSON_AddStringToObject(m, "name", it->valuestring);
        }
        cJSON_AddItemToArray(list, m);
    }
    cJSON_Delete(names);
}

int sdc_srv_jobs_current_model(sdc_srv_jobs *q) {
    if (q->rq) return 0;
    pthread_mutex_lock(&q->mu);
    int m = q->current_model;
    pthread_mutex_unlock(&q->mu);
    return m;
}
