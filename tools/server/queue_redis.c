/* The shared job queue of sdc-server on Redis (--queue redis://HOST:PORT[/NAME]).
 * Keys (P = "sdc:NAME", NAME defaults to "default"; docs/server.md "Scale-out on Redis"):
 *   P:stream:MODEL    a stream per model: one entry {id, req} per waiting or running job
 *   group "workers"   on each stream; a node is a consumer named host-pid-random
 *   P:job:ID          hash: state, times, progress, node, attempts, stores, count,
 *                     seedI/infoI/pngI (base64 PNG); expires job-ttl after the job ends
 *   P:notify:ID       list: one element pushed when the job ends (BLPOP by the waiter)
 *   P:running         zset of running job ids (score: start time), for /progress
 *   P:node:CONSUMER   the node's model name, TTL 3 heartbeats (the /models listings)
 *   P:stored          count of results stored (each job at most once)
 * A node takes one entry at a time (XAUTOCLAIM of an entry idle longer than the claim
 * timeout first, then XREADGROUP); while it runs it, a heartbeat thread resets the entry's
 * idle time (XCLAIM ... JUSTID, only while the job hash names this node), pushes progress
 * and reads the cancel flag. Results are stored by a Lua script that refuses a job already
 * finished, so a job re-run after its node was presumed dead is stored once. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "queue.h"

#ifdef SDC_HAVE_HIREDIS

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>

#define GROUP    "workers"
#define POOL_MAX 16

/* Lua scripts: each change of a job's state is one atomic step on the Redis server. */

/* KEYS stream, job; ARGV max, id, req, created, ttl, steps, images, model */
static const char *k_submit =
    "if redis.call('XLEN', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end\n"
    "local e = redis.call('XADD', KEYS[1], '*', 'id', ARGV[2], 'req', ARGV[3])\n"
    "redis.call('HSET', KEYS[2], 'state', 'queued', 'created', ARGV[4], 'steps', ARGV[6],\n"
    "  'images', ARGV[7], 'entry', e, 'model', ARGV[8], 'step', 0, 'image', 0, 'attempts', 0)\n"
    "redis.call('EXPIRE', KEYS[2], ARGV[5])\n"
    "return 1\n";

/* KEYS job, stream, running; ARGV group, entry, id, node, now -> run / skip / cancel */
static const char *k_start =
    "local s = redis.call('HGET', KEYS[1], 'state')\n"
    "if not s or s == 'completed' or s == 'failed' or s == 'cancelled' then\n"
    "  redis.call('XACK', KEYS[2], ARGV[1], ARGV[2]); redis.call('XDEL', KEYS[2], ARGV[2])\n"
    "  return 'skip' end\n"
    "if redis.call('HGET', KEYS[1], 'cancel') then return 'cancel' end\n"
    "redis.call('HSET', KEYS[1], 'state', 'generating', 'started', ARGV[5], 'node', ARGV[4],\n"
    "  'step', 0, 'image', 0)\n"
    "redis.call('HINCRBY', KEYS[1], 'attempts', 1)\n"
    "redis.call('ZADD', KEYS[3], ARGV[5], ARGV[3])\n"
    "return 'run'\n";

/* KEYS job, stream, notify, running, stored; ARGV group, entry, id, state, error, finished,
 * ttl, node, status, count, interrupted, then seed/info/png per image. 1: stored, 0: the job
 * had already ended (or expired). */
static const char *k_finish =
    "local s = redis.call('HGET', KEYS[1], 'state')\n"
    "redis.call('XACK', KEYS[2], ARGV[1], ARGV[2]); redis.call('XDEL', KEYS[2], ARGV[2])\n"
    "redis.call('ZREM', KEYS[4], ARGV[3])\n"
    "if not s or s == 'completed' or s == 'failed' or s == 'cancelled' then return 0 end\n"
    "redis.call('HSET', KEYS[1], 'state', ARGV[4], 'error', ARGV[5], 'finished', ARGV[6],\n"
    "  'stored_by', ARGV[8], 'status', ARGV[9], 'count', ARGV[10], 'interrupted', ARGV[11])\n"
    "for i = 0, tonumber(ARGV[10]) - 1 do\n"
    "  redis.call('HSET', KEYS[1], 'seed'..i, ARGV[12+3*i], 'info'..i, ARGV[13+3*i],\n"
    "    'png'..i, ARGV[14+3*i]) end\n"
    "if ARGV[4] == 'completed' then redis.call('HSET', KEYS[1], 'step', redis.call('HGET', "
    "KEYS[1], 'steps')) end\n"
    "redis.call('HINCRBY', KEYS[1], 'stores', 1)\n"
    "redis.call('EXPIRE', KEYS[1], ARGV[7])\n"
    "redis.call('INCR', KEYS[5])\n"
    "redis.call('RPUSH', KEYS[3], '1'); redis.call('EXPIRE', KEYS[3], ARGV[7])\n"
    "return 1\n";

/* KEYS job, stream; ARGV group, node, entry, step, steps, image, step_sum, step_count.
 * Refreshes the claim only while the job is this node's; returns the cancel flag. */
static const char *k_heartbeat =
    "if redis.call('HGET', KEYS[1], 'node') == ARGV[2] then\n"
    "  redis.call('XCLAIM', KEYS[2], ARGV[1], ARGV[2], 0, ARGV[3], 'JUSTID')\n"
    "  redis.call('HSET', KEYS[1], 'step', ARGV[4], 'steps', ARGV[5], 'image', ARGV[6],\n"
    "    'step_sum', ARGV[7], 'step_count', ARGV[8]) end\n"
    "return redis.call('HGET', KEYS[1], 'cancel') or ''\n";

/* KEYS job, stream, running; ARGV group, node, entry, id: a stopping node gives its job
 * back: queued again, and idle long enough for the next XAUTOCLAIM of any node. */
static const char *k_handback =
    "if redis.call('HGET', KEYS[1], 'node') == ARGV[2] and\n"
    "   redis.call('HGET', KEYS[1], 'state') == 'generating' then\n"
    "  redis.call('HSET', KEYS[1], 'state', 'queued') end\n"
    "redis.call('XCLAIM', KEYS[2], ARGV[1], ARGV[2], 0, ARGV[3], 'IDLE', '1000000000', 'JUSTID')\n"
    "redis.call('ZREM', KEYS[3], ARGV[4])\n"
    "return 1\n";

/* KEYS job, stream, notify; ARGV ttl, now, flag (cancel / interrupt) -> 200 / 404 / 409 */
static const char *k_cancel =
    "local s = redis.call('HGET', KEYS[1], 'state')\n"
    "if not s then return 404 end\n"
    "if s == 'completed' or s == 'failed' then return 409 end\n"
    "if s == 'cancelled' then return 200 end\n"
    "if s == 'queued' then\n"
    "  redis.call('XDEL', KEYS[2], redis.call('HGET', KEYS[1], 'entry'))\n"
    "  redis.call('HSET', KEYS[1], 'state', 'cancelled', 'error', 'job cancelled by client',\n"
    "    'finished', ARGV[2], 'status', 'cancelled')\n"
    "  redis.call('EXPIRE', KEYS[1], ARGV[1])\n"
    "  redis.call('RPUSH', KEYS[3], '1'); redis.call('EXPIRE', KEYS[3], ARGV[1])\n"
    "  return 200 end\n"
    "redis.call('HSET', KEYS[1], 'cancel', ARGV[3])\n"
    "return 200\n";

typedef struct pooled {
    redisContext *c;
    struct pooled *next;
} pooled;

struct sdc_srv_rq {
    sdc_context *ctx;
    sdc_srv_jobs_config cfg;
    char host[256];
    int port;
    char prefix[160], stream[512], running_key[200], stored_key[200], node_key[400];
    char me[128], model[128];
    int claim_ms, ttl;
    pthread_mutex_t mu; /* the pool, the running job, the counters */
    pooled *pool;
    int pooled_n;
    pthread_t worker, heart;
    atomic_bool stopping;
    /* the job this node runs (worker thread; read by the heartbeat and /progress) */
    bool running, cancel, interrupt;
    char run_id[64], run_entry[64];
    int step, steps, image, images, step_count;
    double step_sum;
    sdc_srv_stats stats;
    uint32_t id_salt, id_counter;
};

static double mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms) {
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static redisContext *rq_connect(sdc_srv_rq *q) {
    struct timeval tv = {1, 0};
    redisContext *c = redisConnectWithTimeout(q->host, q->port, tv);
    if (!c || c->err) {
        if (c) redisFree(c);
        return NULL;
    }
    struct timeval io = {5, 0};
    redisSetTimeout(c, io);
    return c;
}

static redisContext *pool_get(sdc_srv_rq *q) {
    redisContext *c = NULL;
    pthread_mutex_lock(&q->mu);
    pooled *p = q->pool;
    if (p) {
        q->pool = p->next;
        q->pooled_n--;
        c = p->c;
    }
    pthread_mutex_unlock(&q->mu);
    free(p);
    return c ? c : rq_connect(q);
}

static void pool_put(sdc_srv_rq *q, redisContext *c) {
    if (!c) return;
    pooled *p = c->err ? NULL : malloc(sizeof *p);
    pthread_mutex_lock(&q->mu);
    if (p && q->pooled_n < POOL_MAX) {
        p->c = c;
        p->next = q->pool;
        q->pool = p;
        q->pooled_n++;
        c = NULL;
        p = NULL;
    }
    pthread_mutex_unlock(&q->mu);
    free(p);
    if (c) redisFree(c);
}

/* Drops every pooled connection: after one broke (Redis restarted) the others are dead too. */
static void pool_flush(sdc_srv_rq *q) {
    pthread_mutex_lock(&q->mu);
    pooled *p = q->pool;
    q->pool = NULL;
    q->pooled_n = 0;
    pthread_mutex_unlock(&q->mu);
    while (p) {
        pooled *next = p->next;
        redisFree(p->c);
        free(p);
        p = next;
    }
}

/* A command on a pooled connection; a broken one is replaced and the command sent once more.
 * *cp may be NULL on entry (one is taken) and is NULL on return when Redis is unreachable. */
static redisReply *pool_cmd(sdc_srv_rq *q, redisContext **cp, const char *fmt, ...) {
    for (int attempt = 0; attempt < 2; attempt++) {
        if (!*cp && !(*cp = pool_get(q))) return NULL;
        va_list ap;
        va_start(ap, fmt);
        redisReply *r = redisvCommand(*cp, fmt, ap);
        va_end(ap);
        if (r) return r;
        redisFree(*cp);
        *cp = NULL;
        pool_flush(q);
    }
    return NULL;
}

/* An argument list for redisCommandArgv (copies nothing: the values must outlive it). */
typedef struct args {
    const char **v;
    size_t *len;
    int n, cap;
    char nums[24][32];
    int n_nums;
} args;

static bool args_init(args *a, int cap) {
    memset(a, 0, sizeof *a);
    a->v = calloc((size_t)cap, sizeof *a->v);
    a->len = calloc((size_t)cap, sizeof *a->len);
    a->cap = cap;
    return a->v && a->len;
}
static void args_free(args *a) {
    free(a->v);
    free(a->len);
}
static void arg_b(args *a, const void *p, size_t n) {
    if (a->n >= a->cap) return;
    a->v[a->n] = p;
    a->len[a->n++] = n;
}
static void arg_s(args *a, const char *s) {
    arg_b(a, s, strlen(s));
}
static void arg_i(args *a, long long v) {
    if (a->n_nums >= 24) return;
    char *s = a->nums[a->n_nums++];
    snprintf(s, 32, "%lld", v);
    arg_s(a, s);
}
static redisReply *run_args(redisContext *c, args *a) {
    if (a->n >= a->cap) return NULL; /* too many arguments: a bug, not sent */
    return redisCommandArgv(c, a->n, a->v, a->len);
}

static void job_key(const sdc_srv_rq *q, const char *id, char *out, size_t n) {
    snprintf(out, n, "%s:job:%s", q->prefix, id);
}
static void notify_key(const sdc_srv_rq *q, const char *id, char *out, size_t n) {
    snprintf(out, n, "%s:notify:%s", q->prefix, id);
}
static void stream_key(const sdc_srv_rq *q, const char *model, char *out, size_t n) {
    snprintf(out, n, "%s:stream:%s", q->prefix, model);
}

/* ids are ours ("job_" + hex); anything else is unknown without asking Redis */
static bool valid_id(const char *id) {
    size_t n = strlen(id);
    if (n < 5 || n > 40 || strncmp(id, "job_", 4)) return false;
    for (size_t i = 4; i < n; i++)
        if (!strchr("0123456789abcdef", id[i])) return false;
    return true;
}

/* field of an HGETALL reply, or NULL */
static const char *hfield(const redisReply *r, const char *name) {
    if (!r || r->type != REDIS_REPLY_ARRAY) return NULL;
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        if (r->element[i]->type == REDIS_REPLY_STRING && !strcmp(r->element[i]->str, name) &&
            r->element[i + 1]->type == REDIS_REPLY_STRING)
            return r->element[i + 1]->str;
    return NULL;
}
static double hnum(const redisReply *r, const char *name) {
    const char *s = hfield(r, name);
    return s ? strtod(s, NULL) : 0.0;
}

static sdc_srv_job_state state_from(const char *s) {
    if (!s) return SDC_SRV_JOB_FAILED;
    if (!strcmp(s, "queued")) return SDC_SRV_JOB_QUEUED;
    if (!strcmp(s, "generating")) return SDC_SRV_JOB_RUNNING;
    if (!strcmp(s, "completed")) return SDC_SRV_JOB_COMPLETED;
    if (!strcmp(s, "cancelled")) return SDC_SRV_JOB_CANCELLED;
    return SDC_SRV_JOB_FAILED;
}

static bool ensure_group(sdc_srv_rq *q, redisContext *c) {
    redisReply *r = redisCommand(c, "XGROUP CREATE %s " GROUP " 0 MKSTREAM", q->stream);
    bool ok = r && (r->type != REDIS_REPLY_ERROR || strstr(r->str, "BUSYGROUP"));
    if (r) freeReplyObject(r);
    return ok;
}

/* ---- the worker ---- */

static void on_progress(int step, int steps, double step_seconds, void *user) {
    sdc_srv_rq *q = user;
    pthread_mutex_lock(&q->mu);
    if (step <= q->step && q->image + 1 < q->images) q->image++; /* next image of a batch */
    q->step = step;
    q->steps = steps;
    q->step_sum += step_seconds;
    q->step_count++;
    bool cancel = q->cancel || q->stopping;
    pthread_mutex_unlock(&q->mu);
    if (cancel) sdc_cancel(q->ctx);
}

static bool run_stop(void *user) {
    sdc_srv_rq *q = user;
    pthread_mutex_lock(&q->mu);
    bool stop = q->cancel || q->stopping;
    pthread_mutex_unlock(&q->mu);
    return stop;
}

static bool run_interrupted(void *user) {
    sdc_srv_rq *q = user;
    pthread_mutex_lock(&q->mu);
    bool interrupted = q->interrupt;
    pthread_mutex_unlock(&q->mu);
    return interrupted;
}

/* One entry {id, req} from a stream reply element; false if malformed. */
static bool parse_entry(const redisReply *e, char *entry, size_t entry_n, char *id, size_t id_n,
                        uint8_t **req, size_t *req_n) {
    if (!e || e->type != REDIS_REPLY_ARRAY || e->elements < 2 ||
        e->element[0]->type != REDIS_REPLY_STRING)
        return false;
    snprintf(entry, entry_n, "%s", e->element[0]->str);
    const redisReply *f = e->element[1];
    id[0] = '\0';
    *req = NULL;
    if (f->type != REDIS_REPLY_ARRAY) return true; /* deleted entry: only acked */
    for (size_t i = 0; i + 1 < f->elements; i += 2) {
        const redisReply *k = f->element[i], *v = f->element[i + 1];
        if (k->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING) continue;
        if (!strcmp(k->str, "id")) snprintf(id, id_n, "%s", v->str);
        if (!strcmp(k->str, "req") && !*req && (*req = malloc(v->len ? v->len : 1))) {
            memcpy(*req, v->str, v->len);
            *req_n = v->len;
        }
    }
    return true;
}

/* Takes one entry: an abandoned one (idle past the claim timeout) first, else a new one
 * (waits up to 0.5 s). 1: taken, 0: none, -1: connection lost. */
static int take_entry(sdc_srv_rq *q, redisContext *c, char *entry, char *id, uint8_t **req,
                      size_t *req_n) {
    redisReply *r =
        redisCommand(c, "XAUTOCLAIM %s " GROUP " %s %d 0-0 COUNT 1", q->stream, q->me, q->claim_ms);
    if (!r) return -1;
    int got = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements >= 2 &&
        r->element[1]->type == REDIS_REPLY_ARRAY && r->element[1]->elements > 0)
        got = parse_entry(r->element[1]->element[0], entry, 64, id, 64, req, req_n);
    else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOGROUP"))
        ensure_group(q, c);
    freeReplyObject(r);
    if (got) return 1;
    r = redisCommand(c, "XREADGROUP GROUP " GROUP " %s COUNT 1 BLOCK 500 STREAMS %s >", q->me,
                     q->stream);
    if (!r) return -1;
    if (r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
        const redisReply *s = r->element[0];
        if (s->type == REDIS_REPLY_ARRAY && s->elements >= 2 &&
            s->element[1]->type == REDIS_REPLY_ARRAY && s->element[1]->elements > 0)
            got = parse_entry(s->element[1]->element[0], entry, 64, id, 64, req, req_n);
    } else if (r->type == REDIS_REPLY_ERROR && strstr(r->str, "NOGROUP")) {
        ensure_group(q, c);
    }
    freeReplyObject(r);
    return got;
}

/* Stores the end of a job (once: the script refuses a finished job). true once the
 * script ran, whatever it answered; false when the connection failed. */
static bool store_result(sdc_srv_rq *q, redisContext *c, const char *entry, const char *id,
                         sdc_srv_job_state state, const sdc_srv_result *res) {
    char key[256], nkey[256];
    job_key(q, id[0] ? id : "none", key, sizeof key);
    notify_key(q, id[0] ? id : "none", nkey, sizeof nkey);
    args a;
    int count = res->count; /* completed, or interrupted with the images done */
    if (!args_init(&a, 20 + 3 * count)) {
        args_free(&a);
        return false;
    }
    arg_s(&a, "EVAL");
    arg_s(&a, k_finish);
    arg_s(&a, "5");
    arg_s(&a, key);
    arg_s(&a, q->stream);
    arg_s(&a, nkey);
    arg_s(&a, q->running_key);
    arg_s(&a, q->stored_key);
    arg_s(&a, GROUP);
    arg_s(&a, entry);
    arg_s(&a, id);
    arg_s(&a, sdc_srv_job_state_name(state));
    arg_s(&a, res->error);
    arg_i(&a, (long long)time(NULL));
    arg_i(&a, q->ttl);
    arg_s(&a, q->me);
    arg_i(&a, (long long)res->status);
    arg_i(&a, count);
    arg_i(&a, res->interrupted);
    for (int i = 0; i < count; i++) {
        arg_i(&a, (long long)res->seeds[i]);
        arg_s(&a, res->infotext[i]);
        arg_s(&a, res->b64_png[i]);
    }
    redisReply *r = run_args(c, &a);
    args_free(&a);
    if (!r) return false;
    freeReplyObject(r);
    return true;
}

static void hand_back(sdc_srv_rq *q, redisContext *c, const char *entry, const char *id) {
    char key[256];
    job_key(q, id, key, sizeof key);
    redisReply *r = redisCommand(c, "EVAL %s 3 %s %s %s " GROUP " %s %s %s", k_handback, key,
                                 q->stream, q->running_key, q->me, entry, id);
    if (r) freeReplyObject(r);
}

static void set_running(sdc_srv_rq *q, bool on, const char *id, const char *entry, int images,
                        int steps) {
    pthread_mutex_lock(&q->mu);
    q->running = on;
    q->cancel = q->interrupt = false;
    snprintf(q->run_id, sizeof q->run_id, "%s", on ? id : "");
    snprintf(q->run_entry, sizeof q->run_entry, "%s", on ? entry : "");
    q->step = q->image = q->step_count = 0;
    q->step_sum = 0.0;
    q->images = images;
    q->steps = steps;
    pthread_mutex_unlock(&q->mu);
}

/* Runs one taken entry to its end; *cp is the worker's connection (replaced when it
 * breaks while the result waits to be stored). */
static void run_entry(sdc_srv_rq *q, redisContext **cp, const char *entry, const char *id,
                      const uint8_t *req, size_t req_n) {
    char key[256];
    job_key(q, id[0] ? id : "none", key, sizeof key);
    if (q->stopping) {
        hand_back(q, *cp, entry, id);
        return;
    }
    redisReply *r =
        redisCommand(*cp, "EVAL %s 3 %s %s %s " GROUP " %s %s %s %lld", k_start, key, q->stream,
                     q->running_key, entry, id, q->me, (long long)time(NULL));
    if (!r) return; /* left pending: claimed again after the timeout */
    bool run = r->type == REDIS_REPLY_STRING && !strcmp(r->str, "run");
    bool cancel = r->type == REDIS_REPLY_STRING && !strcmp(r->str, "cancel");
    freeReplyObject(r);
    if (!run && !cancel) return; /* finished or expired: the script acked it */

    sdc_srv_request rq;
    sdc_srv_result res = {0};
    sdc_srv_job_state state = SDC_SRV_JOB_CANCELLED;
    if (cancel) {
        snprintf(res.error, sizeof res.error, "job cancelled by client");
        res.status = SDC_ERR_CANCELLED;
    } else if (!req || !sdc_srv_request_unpack(req, req_n, &rq)) {
        state = SDC_SRV_JOB_FAILED;
        snprintf(res.error, sizeof res.error, "malformed job entry in the queue");
        res.status = SDC_ERR_INTERNAL;
    } else {
        set_running(q, true, id, entry, rq.batch_count, rq.steps);
        sdc_srv_run_hooks h = {on_progress, run_stop, run_interrupted, q, q->id_salt};
        double t0 = mono();
        int w = rq.width, ht = rq.height, steps = rq.n_sigmas > 0 ? rq.n_sigmas - 1 : rq.steps;
        sdc_status st = sdc_srv_run_request(q->ctx, &q->cfg, &rq, &h, &res);
        sdc_srv_request_free(&rq);
        if (q->cfg.verbose) /* -v: one line per job run here */
            fprintf(stderr, "sdc-server: job %s %s: %d image(s) %dx%d, %d steps, %.2f s%s%s\n", id,
                    st == SDC_OK              ? "completed"
                    : st == SDC_ERR_CANCELLED ? "cancelled"
                                              : "failed",
                    res.count, w, ht, steps, mono() - t0, st == SDC_OK ? "" : ": ",
                    st == SDC_OK ? "" : res.error);
        pthread_mutex_lock(&q->mu);
        bool client_cancel = q->cancel;
        pthread_mutex_unlock(&q->mu);
        set_running(q, false, NULL, NULL, 0, 0);
        if (st == SDC_ERR_CANCELLED && q->stopping && !client_cancel) {
            sdc_srv_result_free(&res);
            hand_back(q, *cp, entry, id);
            return;
        }
        state = st == SDC_OK              ? SDC_SRV_JOB_COMPLETED
                : st == SDC_ERR_CANCELLED ? SDC_SRV_JOB_CANCELLED
                                          : SDC_SRV_JOB_FAILED;
    }
    /* the result is kept until Redis takes it: a node that lost Redis finishes its job
     * and stores it when Redis is back (bounded: about 10 minutes, or a few tries when
     * the node stops) */
    int backoff = 100;
    for (int tries = 0; tries < 400; tries++) {
        if (*cp && store_result(q, *cp, entry, id, state, &res)) break;
        if (*cp) redisFree(*cp);
        *cp = NULL;
        if (q->stopping && tries >= 3) break;
        sleep_ms(backoff);
        backoff = backoff < 1600 ? backoff * 2 : 2000;
        *cp = rq_connect(q);
    }
    pthread_mutex_lock(&q->mu);
    if (state == SDC_SRV_JOB_COMPLETED)
        q->stats.completed++;
    else if (state == SDC_SRV_JOB_FAILED)
        q->stats.failed++;
    else
        q->stats.cancelled++;
    pthread_mutex_unlock(&q->mu);
    sdc_srv_result_free(&res);
}

static void *worker_main(void *arg) {
    sdc_srv_rq *q = arg;
    redisContext *c = NULL;
    int backoff = 100;
    while (!q->stopping) {
        if (!c) {
            c = rq_connect(q);
            if (!c || !ensure_group(q, c)) {
                if (c) redisFree(c);
                c = NULL;
                sleep_ms(backoff);
                backoff = backoff < 1000 ? backoff * 2 : 2000;
                continue;
            }
            backoff = 100;
        }
        char entry[64], id[64];
        uint8_t *req = NULL;
        size_t req_n = 0;
        int got = take_entry(q, c, entry, id, &req, &req_n);
        if (got < 0) {
            redisFree(c);
            c = NULL;
        } else if (got > 0) {
            run_entry(q, &c, entry, id, req, req_n);
        }
        free(req);
    }
    if (c) redisFree(c);
    return NULL;
}

/* Announces the node, refreshes the claim of the running job, pushes its progress and
 * reads its cancel flag, 4 times a second. */
static void *heart_main(void *arg) {
    sdc_srv_rq *q = arg;
    redisContext *c = NULL;
    double next_announce = 0.0;
    int node_ttl = q->claim_ms / 1000 > 3 ? q->claim_ms / 1000 : 3;
    while (!q->stopping) {
        sleep_ms(250);
        if (!c && !(c = rq_connect(q))) continue;
        bool ok = true;
        if (mono() >= next_announce) {
            redisReply *r =
                redisCommand(c, "SET %s %s EX %d", q->node_key, q->cfg.model_name, node_ttl);
            ok = r != NULL;
            if (r) freeReplyObject(r);
            next_announce = mono() + 1.0;
        }
        pthread_mutex_lock(&q->mu);
        bool running = q->running;
        char id[64], entry[64];
        memcpy(id, q->run_id, sizeof id);
        memcpy(entry, q->run_entry, sizeof entry);
        int step = q->step, steps = q->steps, image = q->image, count = q->step_count;
        double sum = q->step_sum;
        pthread_mutex_unlock(&q->mu);
        if (ok && running) {
            char key[256];
            job_key(q, id, key, sizeof key);
            redisReply *r =
                redisCommand(c, "EVAL %s 2 %s %s " GROUP " %s %s %d %d %d %.6f %d", k_heartbeat,
                             key, q->stream, q->me, entry, step, steps, image, sum, count);
            ok = r != NULL;
            if (r && r->type == REDIS_REPLY_STRING && r->len > 0) {
                pthread_mutex_lock(&q->mu);
                bool same = q->running && !strcmp(q->run_id, id);
                if (same) q->cancel = true;
                if (same && !strcmp(r->str, "interrupt")) q->interrupt = true;
                pthread_mutex_unlock(&q->mu);
                if (same) sdc_cancel(q->ctx);
            }
            if (r) freeReplyObject(r);
        }
        if (!ok) {
            redisFree(c);
            c = NULL;
        }
    }
    if (c) {
        redisReply *r = redisCommand(c, "DEL %s", q->node_key);
        if (r) freeReplyObject(r);
        redisFree(c);
    }
    return NULL;
}

/* ---- public ---- */

static bool parse_url(sdc_srv_rq *q, const char *url, char *err, size_t err_size) {
    const char *p = url;
    if (strncmp(p, "redis://", 8)) {
        snprintf(err, err_size, "--queue '%s': expected redis://HOST:PORT[/NAME]", url);
        return false;
    }
    p += 8;
    const char *colon = strrchr(p, ':'), *slash = strchr(p, '/'), *qm = strchr(p, '?');
    const char *host_end = colon && (!slash || colon < slash) ? colon
                           : slash                            ? slash
                                                              : p + strlen(p);
    size_t hn = (size_t)(host_end - p);
    if (hn == 0 || hn >= sizeof q->host) {
        snprintf(err, err_size, "--queue '%s': no host", url);
        return false;
    }
    memcpy(q->host, p, hn);
    q->host[hn] = '\0';
    q->port = 6379;
    if (host_end == colon) {
        char *end = NULL;
        long port = strtol(colon + 1, &end, 10);
        if (end == colon + 1 || port < 1 || port > 65535 || (*end && *end != '/' && *end != '?')) {
            snprintf(err, err_size, "--queue '%s': bad port", url);
            return false;
        }
        q->port = (int)port;
    }
    char name[64] = "default";
    if (slash && (!qm || slash < qm)) {
        size_t n = qm ? (size_t)(qm - slash - 1) : strlen(slash + 1);
        if (n >= sizeof name) n = sizeof name - 1;
        if (n > 0) {
            memcpy(name, slash + 1, n);
            name[n] = '\0';
        }
    }
    for (char *c = name; *c; c++)
        if (*c == ' ' || *c == '*' || *c == '?' || *c == '[') *c = '_';
    double claim = q->cfg.claim_timeout > 0 ? q->cfg.claim_timeout : 10.0;
    if (qm) {
        const char *ct = strstr(qm, "claim-timeout=");
        if (ct) claim = strtod(ct + 14, NULL);
        if (!(claim >= 1.0 && claim <= 3600.0)) {
            snprintf(err, err_size, "--queue '%s': claim-timeout must be 1..3600 s", url);
            return false;
        }
    }
    q->claim_ms = (int)(claim * 1000.0);
    snprintf(q->prefix, sizeof q->prefix, "sdc:%s", name);
    return true;
}

sdc_srv_rq *sdc_srv_rq_create(sdc_context *ctx, const sdc_srv_jobs_config *cfg, char *err,
                              size_t err_size) {
    sdc_srv_rq *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, err_size, "out of memory");
        return NULL;
    }
    q->ctx = ctx;
    q->cfg = *cfg;
    if (!parse_url(q, cfg->queue_url, err, err_size)) {
        free(q);
        return NULL;
    }
    q->ttl = cfg->keep_seconds >= 1.0 ? (int)cfg->keep_seconds : 1;
    /* model names become key parts: keep them printable and short */
    char model[128];
    snprintf(model, sizeof model, "%s", cfg->model_name ? cfg->model_name : "sdc-local");
    for (char *c = model; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '*' || *c == '?' || *c == '[') *c = '_';
    q->cfg.model_name = NULL; /* the copy below is the one used */
    stream_key(q, model, q->stream, sizeof q->stream);
    snprintf(q->running_key, sizeof q->running_key, "%s:running", q->prefix);
    snprintf(q->stored_key, sizeof q->stored_key, "%s:stored", q->prefix);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    q->id_salt =
        (uint32_t)ts.tv_nsec ^ (uint32_t)ts.tv_sec * 2654435761u ^ (uint32_t)getpid() * 40503u;
    char host[64] = "node";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    for (char *c = host; *c; c++)
        if ((unsigned char)*c <= ' ' || *c == '*' || *c == '?' || *c == '[') *c = '_';
    snprintf(q->me, sizeof q->me, "%s-%d-%08x", host, (int)getpid(), q->id_salt);
    snprintf(q->node_key, sizeof q->node_key, "%s:node:%s", q->prefix, q->me);
    memcpy(q->model, model, sizeof model);
    q->cfg.model_name = q->model;
    pthread_mutex_init(&q->mu, NULL);
    redisContext *c = rq_connect(q);
    if (c) {
        ensure_group(q, c);
        pool_put(q, c);
    } else {
        fprintf(stderr, "sdc-server: warning: Redis at %s:%d unreachable; retrying\n", q->host,
                q->port);
    }
    if (pthread_create(&q->worker, NULL, worker_main, q) != 0) {
        pthread_mutex_destroy(&q->mu);
        free(q);
        snprintf(err, err_size, "cannot start the worker thread");
        return NULL;
    }
    if (pthread_create(&q->heart, NULL, heart_main, q) != 0) {
        q->stopping = true;
        pthread_join(q->worker, NULL);
        pthread_mutex_destroy(&q->mu);
        free(q);
        snprintf(err, err_size, "cannot start the heartbeat thread");
        return NULL;
    }
    fprintf(stderr, "sdc-server: queue %s on redis %s:%d, node %s, model %s, claim timeout %d ms\n",
            q->prefix, q->host, q->port, q->me, q->cfg.model_name, q->claim_ms);
    return q;
}

void sdc_srv_rq_shutdown(sdc_srv_rq *q) {
    q->stopping = true;
    pthread_mutex_lock(&q->mu);
    bool running = q->running;
    pthread_mutex_unlock(&q->mu);
    if (running) sdc_cancel(q->ctx);
}

void sdc_srv_rq_destroy(sdc_srv_rq *q) {
    if (!q) return;
    sdc_srv_rq_shutdown(q);
    pthread_join(q->worker, NULL);
    pthread_join(q->heart, NULL);
    for (pooled *p = q->pool, *next; p; p = next) {
        next = p->next;
        redisFree(p->c);
        free(p);
    }
    pthread_mutex_destroy(&q->mu);
    free(q);
}

int sdc_srv_rq_submit(sdc_srv_rq *q, sdc_srv_request *req, char id[40]) {
    id[0] = '\0';
    if (q->stopping) return 503;
    if (req->seed < 0) { /* a random seed is drawn here, so that a re-run makes the same image */
        pthread_mutex_lock(&q->mu);
        uint32_t x = q->id_salt ^ (uint32_t)time(NULL) ^ (q->id_counter * 2654435761u);
        pthread_mutex_unlock(&q->mu);
        req->seed = (int64_t)(x & 0x7fffffff);
    }
    size_t n = 0;
    uint8_t *blob = sdc_srv_request_pack(req, &n);
    if (!blob) return 503;
    pthread_mutex_lock(&q->mu);
    char my_id[40];
    snprintf(my_id, sizeof my_id, "job_%08x%08x", q->id_salt, ++q->id_counter);
    pthread_mutex_unlock(&q->mu);
    char key[256];
    job_key(q, my_id, key, sizeof key);
    args a;
    int rc = 503;
    redisContext *c = NULL;
    if (args_init(&a, 16) && (c = pool_get(q))) {
        arg_s(&a, "EVAL");
        arg_s(&a, k_submit);
        arg_s(&a, "2");
        arg_s(&a, q->stream);
        arg_s(&a, key);
        arg_i(&a, q->cfg.max_queue);
        arg_s(&a, my_id);
        arg_b(&a, blob, n);
        arg_i(&a, (long long)time(NULL));
        arg_i(&a, 86400 + q->ttl); /* a queued job outlives any sane wait */
        arg_i(&a, req->steps);
        arg_i(&a, req->batch_count);
        arg_s(&a, q->cfg.model_name);
        redisReply *r = run_args(c, &a);
        if (!r) { /* a stale pooled connection: once more on a new one */
            redisFree(c);
            pool_flush(q);
            c = rq_connect(q);
            r = c ? run_args(c, &a) : NULL;
        }
        if (r && r->type == REDIS_REPLY_INTEGER) rc = r->integer == 1 ? 0 : 429;
        if (r) freeReplyObject(r);
    }
    args_free(&a);
    pool_put(q, c);
    free(blob);
    pthread_mutex_lock(&q->mu);
    if (rc == 0)
        q->stats.submitted++;
    else
        q->stats.refused++;
    pthread_mutex_unlock(&q->mu);
    if (rc == 0) {
        memcpy(id, my_id, sizeof my_id);
        sdc_srv_request_free(req);
    }
    return rc;
}

sdc_srv_job_state sdc_srv_rq_wait(sdc_srv_rq *q, const char *id, bool (*still_wanted)(void *),
                                  void *user) {
    char key[256], nkey[256];
    job_key(q, id, key, sizeof key);
    notify_key(q, id, nkey, sizeof nkey);
    redisContext *c = NULL;
    double next_check = mono() + 0.1, give_up = mono() + 120.0; /* without Redis */
    for (;;) {
        redisReply *r = pool_cmd(q, &c, "HGET %s state", key);
        if (!r) {
            if (q->stopping || mono() > give_up) return SDC_SRV_JOB_FAILED;
            sleep_ms(200);
            continue;
        }
        give_up = mono() + 120.0;
        sdc_srv_job_state s =
            r->type == REDIS_REPLY_STRING ? state_from(r->str) : SDC_SRV_JOB_FAILED; /* gone */
        freeReplyObject(r);
        if (s != SDC_SRV_JOB_QUEUED && s != SDC_SRV_JOB_RUNNING) {
            pool_put(q, c);
            return s;
        }
        if (q->stopping) {
            pool_put(q, c);
            return SDC_SRV_JOB_CANCELLED;
        }
        r = redisCommand(c, "BLPOP %s 0.1", nkey);
        if (r) freeReplyObject(r);
        if (still_wanted && mono() >= next_check) {
            next_check = mono() + 0.1;
            if (!still_wanted(user)) {
                pool_put(q, c);
                c = NULL;
                cJSON *d = NULL;
                sdc_srv_rq_cancel(q, id, false, &d);
                cJSON_Delete(d);
            }
        }
    }
}

bool sdc_srv_rq_result(sdc_srv_rq *q, const char *id, sdc_srv_result *out) {
    memset(out, 0, sizeof *out);
    char key[256];
    job_key(q, id, key, sizeof key);
    redisContext *c = NULL;
    redisReply *r = pool_cmd(q, &c, "HGETALL %s", key);
    bool ok = true;
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0) {
        out->status = SDC_ERR_IO;
        snprintf(out->error, sizeof out->error, "the job was lost with the queue (Redis)");
    } else {
        const char *e = hfield(r, "error");
        snprintf(out->error, sizeof out->error, "%s", e ? e : "");
        out->status = (sdc_status)(int)hnum(r, "status");
        sdc_srv_job_state st = state_from(hfield(r, "state"));
        out->interrupted = st == SDC_SRV_JOB_CANCELLED && hnum(r, "interrupted") != 0.0;
        int n = st == SDC_SRV_JOB_COMPLETED || out->interrupted ? (int)hnum(r, "count") : 0;
        if (n > 0) {
            out->b64_png = calloc((size_t)n, sizeof(char *));
            out->infotext = calloc((size_t)n, sizeof(char *));
            out->seeds = calloc((size_t)n, sizeof(int64_t));
            ok = out->b64_png && out->infotext && out->seeds;
            if (ok) out->count = n;
            for (int i = 0; ok && i < n; i++) {
                char f[32];
                snprintf(f, sizeof f, "png%d", i);
                const char *png = hfield(r, f);
                snprintf(f, sizeof f, "info%d", i);
                const char *info = hfield(r, f);
                snprintf(f, sizeof f, "seed%d", i);
                out->seeds[i] = (int64_t)hnum(r, f);
                out->b64_png[i] = strdup(png ? png : "");
                out->infotext[i] = strdup(info ? info : "");
                ok = out->b64_png[i] && out->infotext[i];
            }
        }
    }
    if (r) freeReplyObject(r);
    pool_put(q, c);
    if (!ok) {
        sdc_srv_result_free(out);
        out->status = SDC_ERR_NO_MEMORY;
    }
    return ok;
}

/* KEYS job: the images of a delivered synchronous job go; the job stays listed */
static const char *k_delivered =
    "local n = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')\n"
    "for i = 0, n - 1 do redis.call('HDEL', KEYS[1], 'png'..i) end\n"
    "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'delivered', '1') end\n"
    "return n\n";

void sdc_srv_rq_delivered(sdc_srv_rq *q, const char *id) {
    char key[256];
    job_key(q, id, key, sizeof key);
    redisContext *c = NULL;
    redisReply *r = pool_cmd(q, &c, "EVAL %s 1 %s", k_delivered, key);
    if (r) freeReplyObject(r);
    pool_put(q, c);
}

/* queued entries before (and with) this one, less those being run */
static int queue_position(sdc_srv_rq *q, redisContext *c, const redisReply *h) {
    const char *entry = hfield(h, "entry"), *model = hfield(h, "model");
    if (!entry || !model) return 0;
    char stream[512];
    stream_key(q, model, stream, sizeof stream);
    int n = 0, pending = 0;
    redisReply *r = redisCommand(c, "XRANGE %s - %s COUNT 100000", stream, entry);
    if (r && r->type == REDIS_REPLY_ARRAY) n = (int)r->elements;
    if (r) freeReplyObject(r);
    r = redisCommand(c, "XPENDING %s " GROUP, stream);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        pending = (int)r->element[0]->integer;
    if (r) freeReplyObject(r);
    return n - pending > 1 ? n - pending : 1;
}

static void add_time(cJSON *o, const char *name, const redisReply *h, const char *field) {
    const char *v = hfield(h, field);
    if (v)
        cJSON_AddNumberToObject(o, name, strtod(v, NULL));
    else
        cJSON_AddNullToObject(o, name);
}

static cJSON *describe_hash(sdc_srv_rq *q, redisContext *c, const char *id, const redisReply *h) {
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    sdc_srv_job_state s = state_from(hfield(h, "state"));
    cJSON_AddStringToObject(o, "id", id);
    cJSON_AddStringToObject(o, "kind", "img_gen");
    cJSON_AddStringToObject(o, "status", sdc_srv_job_state_name(s));
    cJSON_AddNumberToObject(o, "created", hnum(h, "created"));
    add_time(o, "started", h, "started");
    add_time(o, "completed", h, "finished");
    cJSON_AddNumberToObject(o, "queue_position",
                            s == SDC_SRV_JOB_QUEUED ? queue_position(q, c, h) : 0);
    const char *node = hfield(h, "stored_by") ? hfield(h, "stored_by") : hfield(h, "node");
    if (node) cJSON_AddStringToObject(o, "node", node);
    cJSON *prog = cJSON_AddObjectToObject(o, "progress");
    double step = hnum(h, "step"), steps = hnum(h, "steps"), image = hnum(h, "image");
    double images = hnum(h, "images"), sum = hnum(h, "step_sum"), cnt = hnum(h, "step_count");
    if (prog) {
        cJSON_AddNumberToObject(prog, "step", step);
        cJSON_AddNumberToObject(prog, "steps", steps);
        cJSON_AddNumberToObject(prog, "image", image);
        cJSON_AddNumberToObject(prog, "images", images);
        double f = s == SDC_SRV_JOB_COMPLETED ? 1.0
                   : steps > 0 && images > 0  ? (image * steps + step) / (images * steps)
                                              : 0.0;
        cJSON_AddNumberToObject(prog, "fraction", f > 1.0 ? 1.0 : f);
        double left = (steps - step) + (images - image - 1) * steps;
        cJSON_AddNumberToObject(prog, "eta_seconds",
                                cnt > 0 && left > 0 && s == SDC_SRV_JOB_RUNNING ? sum / cnt * left
                                                                                : 0.0);
    }
    if (s == SDC_SRV_JOB_COMPLETED) {
        cJSON *res = cJSON_AddObjectToObject(o, "result");
        cJSON *imgs = res ? cJSON_AddArrayToObject(res, "images") : NULL;
        if (res) cJSON_AddStringToObject(res, "output_format", "png");
        if (res && hfield(h, "delivered")) cJSON_AddBoolToObject(res, "delivered", true);
        int n = hfield(h, "delivered") ? 0 : (int)hnum(h, "count");
        for (int i = 0; imgs && i < n; i++) {
            cJSON *im = cJSON_CreateObject();
            if (!im) break;
            char f[32];
            snprintf(f, sizeof f, "seed%d", i);
            cJSON_AddNumberToObject(im, "index", i);
            cJSON_AddNumberToObject(im, "seed", hnum(h, f));
            snprintf(f, sizeof f, "png%d", i);
            cJSON_AddStringToObject(im, "b64_json", hfield(h, f) ? hfield(h, f) : "");
            cJSON_AddItemToArray(imgs, im);
        }
    } else {
        cJSON_AddNullToObject(o, "result");
    }
    if (s == SDC_SRV_JOB_FAILED || s == SDC_SRV_JOB_CANCELLED) {
        cJSON *e = cJSON_AddObjectToObject(o, "error");
        const char *msg = hfield(h, "error");
        if (e) {
            cJSON_AddStringToObject(e, "code",
                                    s == SDC_SRV_JOB_FAILED ? "generation_failed" : "cancelled");
            cJSON_AddStringToObject(e, "message", msg ? msg : "");
        }
    } else {
        cJSON_AddNullToObject(o, "error");
    }
    return o;
}

cJSON *sdc_srv_rq_describe(sdc_srv_rq *q, const char *id) {
    if (!valid_id(id)) return NULL;
    char key[256];
    job_key(q, id, key, sizeof key);
    redisContext *c = NULL;
    redisReply *r = pool_cmd(q, &c, "HGETALL %s", key);
    cJSON *o = NULL;
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0) o = describe_hash(q, c, id, r);
    if (r) freeReplyObject(r);
    pool_put(q, c);
    return o;
}

int sdc_srv_rq_cancel(sdc_srv_rq *q, const char *id, bool interrupt, cJSON **desc) {
    *desc = NULL;
    if (!valid_id(id)) return 404;
    char key[256], nkey[256], stream[512];
    job_key(q, id, key, sizeof key);
    notify_key(q, id, nkey, sizeof nkey);
    redisContext *c = NULL;
    int code = 404;
    redisReply *r = pool_cmd(q, &c, "HGET %s model", key);
    if (r && r->type == REDIS_REPLY_STRING) {
        stream_key(q, r->str, stream, sizeof stream);
        freeReplyObject(r);
        r = redisCommand(c, "EVAL %s 3 %s %s %s %d %lld %s", k_cancel, key, stream, nkey, q->ttl,
                         (long long)time(NULL), interrupt ? "interrupt" : "cancel");
        if (r && r->type == REDIS_REPLY_INTEGER) code = (int)r->integer;
    } else if (!r) {
        code = 503;
    }
    if (r) freeReplyObject(r);
    pool_put(q, c);
    if (code == 200 || code == 409) *desc = sdc_srv_rq_describe(q, id);
    /* this node's own job stops at once, not at the next heartbeat */
    pthread_mutex_lock(&q->mu);
    bool mine = code == 200 && q->running && !strcmp(q->run_id, id);
    if (mine) q->cancel = true;
    if (mine && interrupt) q->interrupt = true;
    pthread_mutex_unlock(&q->mu);
    if (mine) sdc_cancel(q->ctx);
    return code;
}

/* The newest running job of the cluster (this node's first), "" if none. */
static void newest_running(sdc_srv_rq *q, redisContext *c, char id[64]) {
    pthread_mutex_lock(&q->mu);
    snprintf(id, 64, "%s", q->running ? q->run_id : "");
    pthread_mutex_unlock(&q->mu);
    if (id[0] || !c) return;
    redisReply *r = redisCommand(c, "ZREVRANGE %s 0 0", q->running_key);
    if (!r) pool_flush(q);
    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        snprintf(id, 64, "%s", r->element[0]->str);
    if (r) freeReplyObject(r);
}

bool sdc_srv_rq_interrupt(sdc_srv_rq *q) {
    redisContext *c = NULL;
    redisReply *ping = pool_cmd(q, &c, "PING");
    if (ping) freeReplyObject(ping);
    char id[64];
    newest_running(q, c, id);
    pool_put(q, c);
    if (!id[0]) return false;
    cJSON *d = NULL;
    int code = sdc_srv_rq_cancel(q, id, true, &d);
    cJSON_Delete(d);
    return code == 200;
}

void sdc_srv_rq_progress(sdc_srv_rq *q, sdc_srv_progress *p) {
    memset(p, 0, sizeof *p);
    redisContext *c = NULL;
    redisReply *ping = pool_cmd(q, &c, "PING");
    if (ping) freeReplyObject(ping);
    char id[64];
    newest_running(q, c, id);
    if (c) {
        redisReply *r = redisCommand(c, "XLEN %s", q->stream);
        int len = r && r->type == REDIS_REPLY_INTEGER ? (int)r->integer : 0;
        if (r) freeReplyObject(r);
        r = redisCommand(c, "XPENDING %s " GROUP, q->stream);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            r->element[0]->type == REDIS_REPLY_INTEGER)
            len -= (int)r->element[0]->integer;
        if (r) freeReplyObject(r);
        p->queued = len > 0 ? len : 0;
    }
    if (id[0] && c) {
        char key[256];
        job_key(q, id, key, sizeof key);
        redisReply *r = redisCommand(c, "HGETALL %s", key);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
            state_from(hfield(r, "state")) == SDC_SRV_JOB_RUNNING) {
            p->running = true;
            snprintf(p->job_id, sizeof p->job_id, "%.39s", id);
            p->step = (int)hnum(r, "step");
            p->steps = (int)hnum(r, "steps");
            p->image = (int)hnum(r, "image");
            p->images = (int)hnum(r, "images");
            double cnt = hnum(r, "step_count"), sum = hnum(r, "step_sum");
            if (p->steps > 0 && p->images > 0) {
                double f = ((double)p->image * p->steps + p->step) / ((double)p->images * p->steps);
                p->fraction = f > 1.0 ? 1.0 : f;
            }
            int left = (p->steps - p->step) + (p->images - p->image - 1) * p->steps;
            p->eta_seconds = cnt > 0 && left > 0 ? sum / cnt * left : 0.0;
        }
        if (r) freeReplyObject(r);
    }
    pool_put(q, c);
}

void sdc_srv_rq_stats(sdc_srv_rq *q, sdc_srv_stats *s) {
    pthread_mutex_lock(&q->mu);
    *s = q->stats;
    pthread_mutex_unlock(&q->mu);
}

cJSON *sdc_srv_rq_models(sdc_srv_rq *q) {
    cJSON *a = cJSON_CreateArray();
    redisContext *c = NULL;
    redisReply *ping = pool_cmd(q, &c, "PING");
    if (ping) freeReplyObject(ping);
    if (!a || !c) {
        pool_put(q, c);
        if (a) cJSON_AddItemToArray(a, cJSON_CreateString(q->cfg.model_name));
        return a;
    }
    char cursor[32] = "0", pattern[256];
    snprintf(pattern, sizeof pattern, "%s:node:*", q->prefix);
    /* bounded: a few hundred nodes at most are expected */
    for (int round = 0; round < 64; round++) {
        redisReply *r = redisCommand(c, "SCAN %s MATCH %s COUNT 200", cursor, pattern);
        if (!r || r->type != REDIS_REPLY_ARRAY || r->elements < 2) {
            if (r) freeReplyObject(r);
            break;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str ? r->element[0]->str : "0");
        const redisReply *keys = r->element[1];
        for (size_t i = 0; i < keys->elements; i++) {
            redisReply *v = redisCommand(c, "GET %s", keys->element[i]->str);
            if (v && v->type == REDIS_REPLY_STRING) {
                bool seen = false;
                cJSON *it;
                cJSON_ArrayForEach(it, a) seen = seen || !strcmp(it->valuestring, v->str);
                if (!seen) cJSON_AddItemToArray(a, cJSON_CreateString(v->str));
            }
            if (v) freeReplyObject(v);
        }
        freeReplyObject(r);
        if (!strcmp(cursor, "0")) break;
    }
    pool_put(q, c);
    if (cJSON_GetArraySize(a) == 0) cJSON_AddItemToArray(a, cJSON_CreateString(q->cfg.model_name));
    return a;
}

#else /* built without hiredis: --queue is refused */

sdc_srv_rq *sdc_srv_rq_create(sdc_context *ctx, const sdc_srv_jobs_config *cfg, char *err,
                              size_t err_size) {
    (void)ctx;
    (void)cfg;
    snprintf(err, err_size, "--queue: this sdc-server was built without hiredis (libhiredis-dev)");
    return NULL;
}
void sdc_srv_rq_shutdown(sdc_srv_rq *q) {
    (void)q;
}
void sdc_srv_rq_destroy(sdc_srv_rq *q) {
    (void)q;
}
int sdc_srv_rq_submit(sdc_srv_rq *q, sdc_srv_request *req, char id[40]) {
    (void)q;
    (void)req;
    id[0] = 0;
    return 503;
}
sdc_srv_job_state sdc_srv_rq_wait(sdc_srv_rq *q, const char *id, bool (*still_wanted)(void *),
                                  void *user) {
    (void)q;
    (void)id;
    (void)still_wanted;
    (void)user;
    return SDC_SRV_JOB_FAILED;
}
bool sdc_srv_rq_result(sdc_srv_rq *q, const char *id, sdc_srv_result *out) {
    (void)q;
    (void)id;
    memset(out, 0, sizeof *out);
    return false;
}
cJSON *sdc_srv_rq_describe(sdc_srv_rq *q, const char *id) {
    (void)q;
    (void)id;
    return NULL;
}
int sdc_srv_rq_cancel(sdc_srv_rq *q, const char *id, bool interrupt, cJSON **desc) {
    (void)q;
    (void)id;
    (void)interrupt;
    *desc = NULL;
    return 404;
}
bool sdc_srv_rq_interrupt(sdc_srv_rq *q) {
    (void)q;
    return false;
}
void sdc_srv_rq_progress(sdc_srv_rq *q, sdc_srv_progress *p) {
    (void)q;
    memset(p, 0, sizeof *p);
}
void sdc_srv_rq_stats(sdc_srv_rq *q, sdc_srv_stats *s) {
    (void)q;
    memset(s, 0, sizeof *s);
}
cJSON *sdc_srv_rq_models(sdc_srv_rq *q) {
    (void)q;
    return NULL;
}
void sdc_srv_rq_delivered(sdc_srv_rq *q, const char *id) {
    (void)q;
    (void)id;
}

#endif
