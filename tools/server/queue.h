/* The queue back ends of sdc-server's jobs (jobs.h is the interface the HTTP layer uses).
 * jobs.c holds the in-memory queue and calls the Redis one (queue_redis.c) when the
 * server runs with --queue redis://...; both run a request with sdc_srv_run_request. */
#ifndef SDC_SERVER_QUEUE_H
#define SDC_SERVER_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "jobs.h"

typedef void (*sdc_srv_progress_fn)(int step, int steps, double step_seconds, void *user);

/* What a run asks of its queue: progress (which also applies cancels within a step), a
 * cancel between two images of a batch, whether a cancel was an A1111 interrupt (the
 * images done are kept), and a salt for random seeds. */
typedef struct sdc_srv_run_hooks {
    sdc_srv_progress_fn progress;
    bool (*stop)(void *user);
    bool (*interrupted)(void *user);
    void *user;
    uint32_t seed_salt;
} sdc_srv_run_hooks;

/* Runs one request on ctx image by image and fills *res (images as base64 PNGs with their
 * A1111 "parameters" text, or the error). Returns the generation's status. */
sdc_status sdc_srv_run_request(sdc_context *ctx, const sdc_srv_jobs_config *cfg,
                               const sdc_srv_request *r, const sdc_srv_run_hooks *h,
                               sdc_srv_result *res);

/* Request <-> bytes (the stream entry of a job). Same-endian nodes only. */
uint8_t *sdc_srv_request_pack(const sdc_srv_request *r, size_t *size);
bool sdc_srv_request_unpack(const uint8_t *buf, size_t size, sdc_srv_request *r);

/* ---- the Redis queue (queue_redis.c) ---- */
typedef struct sdc_srv_rq sdc_srv_rq;

/* Connects (or keeps retrying in the background when Redis is down) and starts the
 * worker and heartbeat threads. NULL with err on a bad URL or without hiredis. */
sdc_srv_rq *sdc_srv_rq_create(sdc_context *ctx, const sdc_srv_jobs_config *cfg, char *err,
                              size_t err_size);
/* Stops taking jobs; the running one is stopped and handed back to the other nodes. */
void sdc_srv_rq_shutdown(sdc_srv_rq *q);
void sdc_srv_rq_destroy(sdc_srv_rq *q);
/* 0, 429 (queue full) or 503 (Redis unreachable or shutting down). */
int sdc_srv_rq_submit(sdc_srv_rq *q, sdc_srv_request *req, char id[40]);
sdc_srv_job_state sdc_srv_rq_wait(sdc_srv_rq *q, const char *id, bool (*still_wanted)(void *),
                                  void *user);
bool sdc_srv_rq_result(sdc_srv_rq *q, const char *id, sdc_srv_result *out);
/* A synchronous result was sent: its images leave Redis (the job stays listed). */
void sdc_srv_rq_delivered(sdc_srv_rq *q, const char *id);
cJSON *sdc_srv_rq_describe(sdc_srv_rq *q, const char *id);
/* interrupt: an A1111 interrupt (a running job keeps the images it finished). */
int sdc_srv_rq_cancel(sdc_srv_rq *q, const char *id, bool interrupt, cJSON **desc);
bool sdc_srv_rq_interrupt(sdc_srv_rq *q);
void sdc_srv_rq_progress(sdc_srv_rq *q, sdc_srv_progress *p);
void sdc_srv_rq_stats(sdc_srv_rq *q, sdc_srv_stats *s);
cJSON *sdc_srv_rq_models(sdc_srv_rq *q);

#endif
