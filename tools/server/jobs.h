/* The job queue of sdc-server: one worker thread owns the sdc_context and runs jobs one
 * at a time from a bounded FIFO; finished jobs stay readable for a while. Every
 * function is thread-safe (one mutex; the worker signals a condition variable). */
#ifndef SDC_SERVER_JOBS_H
#define SDC_SERVER_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "request.h"
#include "sdc.h"

typedef enum sdc_srv_job_state {
    SDC_SRV_JOB_QUEUED,
    SDC_SRV_JOB_RUNNING,
    SDC_SRV_JOB_COMPLETED,
    SDC_SRV_JOB_FAILED,
    SDC_SRV_JOB_CANCELLED,
} sdc_srv_job_state;

/* A checkpoint the server can switch to (--model-dir; A1111 sd_model_checkpoint). */
typedef struct sdc_srv_model {
    const char *path; /* the file, as given */
    char name[256];   /* file name without its extension (A1111 model_name) */
    char title[300];  /* "file.safetensors [hash]" as A1111 lists it */
    char hash[16];    /* A1111's short model hash: sha256 of 64 KiB at 1 MiB, 8 hex */
    char sha256[72];  /* "" : not computed (a whole-file hash costs seconds per GB) */
} sdc_srv_model;

typedef struct sdc_srv_jobs_config {
    int max_queue;       /* queued jobs at most; more are refused (429/503) */
    int max_kept;        /* finished jobs kept at most (oldest dropped first) */
    double keep_seconds; /* finished jobs are dropped this long after they end */
    const char *rng, *sampler_rng;
    bool verbose; /* one stderr line per finished job */
    /* NULL: the in-memory queue. "redis://HOST:PORT[/NAME]": the shared Redis queue
     * (queue_redis.c, docs/server.md "Scale-out on Redis"). */
    const char *queue_url;
    const char *model_name; /* announced to the other nodes; jobs are routed by it */
    double claim_timeout;   /* Redis: seconds without a heartbeat before a job is re-run */
    /* model switching (in-memory queue only): the checkpoints served, the one loaded at
     * start, and the context parameters a switch reuses with another model file */
    const sdc_srv_model *models;
    int n_models, current_model;
    const sdc_context_params *ctx_params;
    bool switch_diffusion_model; /* the files are --diffusion-model ones, not -m */
    const char *ref_image_args;  /* --ref-image-args for every request (NULL: none) */
} sdc_srv_jobs_config;

typedef struct sdc_srv_jobs sdc_srv_jobs;
typedef struct sdc_srv_job sdc_srv_job;

/* Starts the worker. ctx stays owned by the caller and must outlive the queue, except
 * with cfg.n_models > 0: then the queue owns it (a switch replaces it) and destroy frees it. On
 * failure returns NULL with a message in err. */
sdc_srv_jobs *sdc_srv_jobs_create(sdc_context *ctx, const sdc_srv_jobs_config *cfg, char *err,
                                  size_t err_size);
/* Refuses new jobs, cancels queued and running ones, wakes waiters (they see CANCELLED). */
void sdc_srv_jobs_shutdown(sdc_srv_jobs *q);
/* Joins the worker and frees everything; call after the HTTP server has stopped. */
void sdc_srv_jobs_destroy(sdc_srv_jobs *q);

/* A request with model_slot > 0 runs on that model: the worker loads it first (freeing
 * the one loaded), so the requests queued behind it run on it too. A request with
 * batch_count 0 only switches (POST /sdapi/v1/options). */
/* Queues a job, taking ownership of *req (left zeroed). With held != NULL the caller
 * keeps a reference (for sdc_srv_jobs_wait, then sdc_srv_jobs_release). Writes the id.
 * Returns 0, 429 (queue full) or 503 (shutting down). */
int sdc_srv_jobs_submit(sdc_srv_jobs *q, sdc_srv_request *req, char id[40], sdc_srv_job **held);

/* Waits until the held job ends. still_wanted is polled a few times a second; when it
 * says false (the client went away) the job is cancelled. Returns the final state. */
sdc_srv_job_state sdc_srv_jobs_wait(sdc_srv_jobs *q, sdc_srv_job *job, bool (*still_wanted)(void *),
                                    void *user);

/* Results of a finished held job: arrays of count entries the caller frees with
 * sdc_srv_result_free. error/status for a failed job. The images move to the caller:
 * a synchronous job's results stay in memory only until they are delivered (the job
 * stays listed, without images). interrupted: cancelled by /sdapi/v1/interrupt; the
 * images finished before it are kept. */
typedef struct sdc_srv_result {
    int count;
    char **b64_png;
    char **infotext;
    int64_t *seeds;
    sdc_status status;
    char error[256];
    bool interrupted;
} sdc_srv_result;
bool sdc_srv_jobs_result(sdc_srv_jobs *q, sdc_srv_job *job, sdc_srv_result *out);
void sdc_srv_result_free(sdc_srv_result *r);
void sdc_srv_jobs_release(sdc_srv_jobs *q, sdc_srv_job *job);

/* sd.cpp's job object (id, kind, status, created, started, completed, queue_position,
 * progress, result, error); NULL if the id is unknown (or out of memory). */
cJSON *sdc_srv_jobs_describe(sdc_srv_jobs *q, const char *id);
/* Cancels a queued or running job. Returns 200 (with *desc), 404 or 409 (already done). */
int sdc_srv_jobs_cancel(sdc_srv_jobs *q, const char *id, cJSON **desc);
/* Cancels whatever runs now (A1111 /interrupt); returns whether something ran. */
bool sdc_srv_jobs_interrupt(sdc_srv_jobs *q);

/* A1111 /progress: the running job's step, and an ETA from the mean step time. */
typedef struct sdc_srv_progress {
    bool running;
    char job_id[40];
    int step, steps;    /* within the current image */
    int image, images;  /* 0-based index of the current image, image count */
    double fraction;    /* of the whole job, 0..1 */
    double eta_seconds; /* remaining, from the mean step time (0 if unknown) */
    int queued;         /* jobs waiting */
} sdc_srv_progress;
void sdc_srv_jobs_progress(sdc_srv_jobs *q, sdc_srv_progress *p);

/* Counters since start (for the load test and logs). */
typedef struct sdc_srv_stats {
    int64_t submitted, completed, failed, cancelled, refused;
    int queued, kept;
} sdc_srv_stats;
void sdc_srv_jobs_stats(sdc_srv_jobs *q, sdc_srv_stats *s);

const char *sdc_srv_job_state_name(sdc_srv_job_state s);

/* The index of the loaded model among cfg.models (0 without models). */
int sdc_srv_jobs_current_model(sdc_srv_jobs *q);

/* With Redis: appends to list the models the other live nodes serve (OpenAI /v1/models
 * entries, or A1111 sd-models ones with sdapi); the in-memory queue adds nothing. */
void sdc_srv_jobs_add_models(sdc_srv_jobs *q, cJSON *list, bool sdapi);

#endif
