/* Bounded load test of sdc-server on loopback: starts the real server (tiny random model,
 * queue of 8) and runs 50 client threads for a fixed time (SDC_SERVER_LOAD_SECONDS,
 * default 20) that submit, poll and cancel async jobs, call the synchronous OpenAI route
 * (some hang up mid-request), read /progress and send malformed requests, over kept-alive
 * connections (new ones paced, see CONNECT_INTERVAL_S). Checks: every answer has an
 * expected status, no connection fails, the queue never grows past its bound and refuses
 * (429/503) under the load, every accepted job ends completed or cancelled (none lost or
 * failed), and the server exits cleanly on SIGTERM (status 0: no ASan leak report). Then,
 * without timing: with one long job running and 8 queued, a submit gets 429 and a
 * synchronous request 503. Prints request and connection counts, p50/p99 latency per call
 * kind, job outcomes and peak RSS. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test_util.h"

#define N_CLIENTS 50
#define MAX_QUEUE 8

enum kind { K_SUBMIT, K_POLL, K_CANCEL, K_PROGRESS, K_SYNC, K_HANGUP, K_BAD, K_CAPS, K_COUNT };
static const char *const k_kind_names[K_COUNT] = {"POST img_gen",
                                                  "GET job",
                                                  "POST cancel",
                                                  "GET progress",
                                                  "POST generations (sync)",
                                                  "sync, client hangs up",
                                                  "malformed JSON",
                                                  "GET capabilities"};

static int g_port;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Client connections are kept alive: each client thread sends its requests over one
 * HTTP/1.1 connection, and opens a new one only when the server closed the last one or
 * for a request it hangs up on. New connections are paced (at most one per client every
 * CONNECT_INTERVAL_S, so at most N_CLIENTS / CONNECT_INTERVAL_S per second in all): a
 * connection per request at ~5k requests/s would run through the ephemeral ports faster
 * than TIME_WAIT frees them, and whether connect() then fails depends on the kernel
 * (tcp_tw_reuse, port range), not on the server. With the bound, no port is ever needed
 * twice within TIME_WAIT (<= 250/s x 60 s = 15000 < 28232 ports in Linux's default range),
 * so every connection failure counted below is the server's. */
#define CONNECT_INTERVAL_S 0.2

typedef struct conn {
    int fd; /* -1: none open */
    double next_connect;
    double paced_s; /* time spent waiting for the pacing, left out of the latencies */
    int opened;
} conn;

static int open_conn(conn *k) {
    double wait = k->next_connect - now_s();
    if (wait > 0) {
        usleep((useconds_t)(wait * 1e6));
        k->paced_s += wait;
    }
    k->next_connect = now_s() + CONNECT_INTERVAL_S;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)g_port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    k->opened++;
    return fd;
}

static void close_conn(conn *k) {
    if (k->fd >= 0) close(k->fd);
    k->fd = -1;
}

/* Head and body go out in one send: split in two, Nagle would hold the body back until
 * the server's delayed ACK of the head (~40 ms per request on a kept-alive connection). */
static bool send_request(int fd, const char *method, const char *path, const char *body,
                         bool keep_alive) {
    size_t blen = body ? strlen(body) : 0;
    char *msg = malloc(512 + blen);
    if (!msg) return false;
    int hn = snprintf(msg, 512,
                      "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: %s\r\n"
                      "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
                      method, path, keep_alive ? "keep-alive" : "close", blen);
    if (blen) memcpy(msg + hn, body, blen);
    size_t n = (size_t)hn + blen;
    bool ok = send(fd, msg, n, MSG_NOSIGNAL) == (ssize_t)n;
    free(msg);
    return ok;
}

/* Case-insensitive search for a header line's value within the head [h, end). */
static const char *header_value(const char *h, const char *end, const char *name) {
    size_t n = strlen(name);
    for (const char *p = h; p && p < end; p = strstr(p, "\r\n")) {
        if (p[0] == '\r') p += 2;
        if (!strncasecmp(p, name, n) && p[n] == ':') {
            p += n + 1;
            while (*p == ' ') p++;
            return p;
        }
    }
    return NULL;
}

/* One request on k's connection (opened if needed). Returns the status, or -1 when the
 * connection failed or the answer was cut short; the body goes to *out. */
static int http(conn *k, const char *method, const char *path, const char *body, char **out) {
    if (out) *out = NULL;
    if (k->fd < 0 && (k->fd = open_conn(k)) < 0) return -1;
    if (!send_request(k->fd, method, path, body, true)) {
        close_conn(k);
        return -1;
    }
    size_t cap = 8192, len = 0, need = 0;
    char *buf = malloc(cap);
    const char *end_head = NULL;
    bool server_closes = false;
    for (;;) {
        if (len + 4096 > cap) buf = realloc(buf, cap *= 2);
        ssize_t n = recv(k->fd, buf + len, cap - len - 1, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        len += (size_t)n;
        buf[len] = '\0';
        if (!end_head && (end_head = strstr(buf, "\r\n\r\n"))) {
            const char *cl = header_value(buf, end_head, "Content-Length");
            const char *cn = header_value(buf, end_head, "Connection");
            server_closes = cn && !strncasecmp(cn, "close", 5);
            if (!cl) break; /* the server's answers all carry a length */
            need = (size_t)(end_head + 4 - buf) + (size_t)strtoull(cl, NULL, 10);
        }
        if (end_head && len >= need) break;
    }
    buf[len] = '\0';
    int status = -1;
    if (!end_head || len < need || sscanf(buf, "HTTP/1.%*d %d", &status) != 1) status = -1;
    if (status == -1 || server_closes) close_conn(k);
    if (out) *out = strdup(end_head ? end_head + 4 : "");
    free(buf);
    return status;
}

/* A request on a new connection that the client closes after hangup_ms, unanswered.
 * Returns 0, or -1 when the connection failed. */
static int http_hangup(conn *k, const char *method, const char *path, const char *body,
                       int hangup_ms) {
    int fd = open_conn(k);
    if (fd < 0) return -1;
    bool sent = send_request(fd, method, path, body, false);
    if (sent) usleep((useconds_t)hangup_ms * 1000);
    close(fd);
    return sent ? 0 : -1;
}

/* Value of "key":"..." in a JSON text, copied into out. */
static bool json_str(const char *json, const char *key, char *out, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = json ? strstr(json, pat) : NULL;
    if (!p) return false;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e || (size_t)(e - p) >= n) return false;
    memcpy(out, p, (size_t)(e - p));
    out[e - p] = '\0';
    return true;
}

typedef struct client {
    int index;
    double until;
    unsigned long long rng;
    char (*ids)[40];
    int n_ids, cap_ids;
    double *lat[K_COUNT];
    int n_lat[K_COUNT], cap_lat[K_COUNT];
    conn conn;
    int requests, unexpected, conn_failures, refused, queue_over;
    int completed, cancelled, failed, lost;
    char first_unexpected[160];
} client;

static void record(client *c, int k, double seconds) {
    if (c->n_lat[k] == c->cap_lat[k]) {
        c->cap_lat[k] = c->cap_lat[k] ? c->cap_lat[k] * 2 : 64;
        c->lat[k] = realloc(c->lat[k], sizeof(double) * (size_t)c->cap_lat[k]);
    }
    c->lat[k][c->n_lat[k]++] = seconds;
    c->requests++;
}

static void unexpected(client *c, const char *what, int status, const char *body) {
    if (!c->unexpected++)
        snprintf(c->first_unexpected, sizeof c->first_unexpected, "%s -> %d %.100s", what, status,
                 body ? body : "");
}

static unsigned pick(client *c, unsigned n) {
    return (unsigned)((t_randf(&c->rng) + 1.0f) * 0.5f * (float)n) % n;
}

static void one_action(client *c) {
    char path[96], body[256];
    char *resp = NULL;
    unsigned r = pick(c, 100);
    double t0 = now_s();
    c->conn.paced_s = 0;
    int k, st;
    if (r < 30 || c->n_ids == 0) {
        k = K_SUBMIT;
        snprintf(body, sizeof body,
                 "{\"prompt\":\"load %d\",\"width\":32,\"height\":32,\"seed\":%u,"
                 "\"sample_params\":{\"sample_steps\":%u}}",
                 c->index, pick(c, 1000), 1 + pick(c, 4));
        st = http(&c->conn, "POST", "/sdcpp/v1/img_gen", body, &resp);
        char id[40];
        if (st == 202 && json_str(resp, "id", id, sizeof id)) {
            if (c->n_ids == c->cap_ids) {
                c->cap_ids = c->cap_ids ? c->cap_ids * 2 : 64;
                c->ids = realloc(c->ids, sizeof(*c->ids) * (size_t)c->cap_ids);
            }
            memcpy(c->ids[c->n_ids++], id, 40);
        } else if (st == 429) {
            c->refused++;
        } else {
            unexpected(c, "submit", st, resp);
        }
    } else if (r < 60) {
        k = K_POLL;
        snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s", c->ids[pick(c, (unsigned)c->n_ids)]);
        st = http(&c->conn, "GET", path, NULL, &resp);
        if (st != 200) unexpected(c, "poll", st, resp);
    } else if (r < 72) {
        k = K_CANCEL;
        snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s/cancel",
                 c->ids[pick(c, (unsigned)c->n_ids)]);
        st = http(&c->conn, "POST", path, NULL, &resp);
        if (st != 200 && st != 409) unexpected(c, "cancel", st, resp);
    } else if (r < 82) {
        k = K_PROGRESS;
        st = http(&c->conn, "GET", "/sdapi/v1/progress", NULL, &resp);
        const char *jc = resp ? strstr(resp, "\"job_count\":") : NULL;
        if (st != 200 || !jc)
            unexpected(c, "progress", st, resp);
        else if (atoi(jc + 12) > MAX_QUEUE + 1)
            c->queue_over++;
    } else if (r < 88) {
        k = K_SYNC;
        st = http(&c->conn, "POST", "/v1/images/generations",
                  "{\"prompt\":\"sync\",\"size\":\"32x32\"}", &resp);
        if (st == 503)
            c->refused++;
        else if (st != 200 || !strstr(resp, "b64_json"))
            unexpected(c, "sync", st, resp);
    } else if (r < 91) {
        k = K_HANGUP;
        st = http_hangup(&c->conn, "POST", "/sdapi/v1/txt2img",
                         "{\"prompt\":\"gone\",\"width\":64,\"height\":64,\"steps\":20,"
                         "\"batch_size\":4}",
                         1 + (int)pick(c, 50));
        if (st != 0) unexpected(c, "hangup", st, NULL);
    } else if (r < 96) {
        k = K_BAD;
        st = http(&c->conn, "POST", "/sdapi/v1/txt2img", "{\"prompt\": [", &resp);
        if (st != 400 || !strstr(resp, "\"error\"")) unexpected(c, "malformed", st, resp);
    } else {
        k = K_CAPS;
        st = http(&c->conn, "GET", "/sdcpp/v1/capabilities", NULL, &resp);
        if (st != 200) unexpected(c, "capabilities", st, resp);
    }
    if (st == -1) c->conn_failures++;
    record(c, k, now_s() - t0 - c->conn.paced_s);
    free(resp);
}

/* After the load: every accepted job must reach completed or cancelled. */
static void settle(client *c) {
    for (int i = 0; i < c->n_ids; i++) {
        char path[96], status[32] = "";
        snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s", c->ids[i]);
        for (int tries = 0; tries < 20000; tries++) { /* a bound against a hang, not a timing */
            char *resp = NULL;
            int st = http(&c->conn, "GET", path, NULL, &resp);
            bool have = st == 200 && json_str(resp, "status", status, sizeof status);
            free(resp);
            if (st == 404) {
                c->lost++;
                break;
            }
            if (have && strcmp(status, "queued") && strcmp(status, "generating")) break;
            usleep(20000);
        }
        if (!strcmp(status, "completed"))
            c->completed++;
        else if (!strcmp(status, "cancelled"))
            c->cancelled++;
        else if (!strcmp(status, "failed"))
            c->failed++;
    }
}

static void *client_main(void *arg) {
    client *c = arg;
    while (now_s() < c->until) one_action(c);
    settle(c);
    close_conn(&c->conn);
    return NULL;
}

/* Waits for the queue to drain after the load (a bound against a hang, not a timing). */
static void wait_idle(conn *k) {
    for (int tries = 0; tries < 20000; tries++) {
        char *resp = NULL;
        int st = http(k, "GET", "/sdapi/v1/progress", NULL, &resp);
        bool idle = st == 200 && resp && strstr(resp, "\"job_count\":0");
        free(resp);
        if (idle) break;
        usleep(20000);
    }
}

/* The queue's bound, without depending on timing: one long job runs (8 images x 150 steps
 * at 256x256: tens of seconds on any machine), MAX_QUEUE short ones wait behind it; then
 * one more submit must be refused with 429 and a synchronous request with 503. All are
 * cancelled afterwards and must end cancelled. Returns the number of jobs it submitted. */
static int test_queue_bound(conn *k) {
    char *resp = NULL, ids[MAX_QUEUE + 1][40], status[32] = "";
    int n_ids = 0, st;
    wait_idle(k);
    st = http(k, "POST", "/sdcpp/v1/img_gen",
              "{\"prompt\":\"long\",\"width\":256,\"height\":256,\"batch_count\":8,"
              "\"sample_params\":{\"sample_steps\":150}}",
              &resp);
    CHECK(st == 202 && json_str(resp, "id", ids[0], sizeof ids[0]), "long job: %d %s", st,
          resp ? resp : "");
    free(resp);
    if (st != 202) return 0;
    n_ids = 1;
    char path[96];
    snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s", ids[0]);
    for (int tries = 0; tries < 20000 && strcmp(status, "generating"); tries++) {
        st = http(k, "GET", path, NULL, &resp);
        if (st != 200 || !json_str(resp, "status", status, sizeof status)) status[0] = '\0';
        free(resp);
        if (!strcmp(status, "queued")) usleep(5000);
    }
    CHECK(!strcmp(status, "generating"), "long job did not start: '%s'", status);
    int accepted = 0;
    for (int i = 0; i < MAX_QUEUE; i++) {
        st = http(k, "POST", "/sdcpp/v1/img_gen",
                  "{\"prompt\":\"wait\",\"width\":32,\"height\":32,"
                  "\"sample_params\":{\"sample_steps\":1}}",
                  &resp);
        if (st == 202 && json_str(resp, "id", ids[n_ids], sizeof ids[0])) n_ids++, accepted++;
        free(resp);
    }
    CHECK(accepted == MAX_QUEUE, "behind a running job, %d of %d submits accepted", accepted,
          MAX_QUEUE);
    st = http(k, "GET", "/sdapi/v1/progress", NULL, &resp);
    const char *jc = resp ? strstr(resp, "\"job_count\":") : NULL;
    int job_count = jc ? atoi(jc + 12) : -1;
    free(resp);
    CHECK(job_count == MAX_QUEUE + 1, "job_count %d, expected %d", job_count, MAX_QUEUE + 1);
    int st_async = http(k, "POST", "/sdcpp/v1/img_gen", "{\"prompt\":\"one too many\"}", &resp);
    CHECK(st_async == 429 && resp && strstr(resp, "\"error\""),
          "submit to a full queue: %d %.100s (expected 429)", st_async, resp ? resp : "");
    free(resp);
    int st_sync = http(k, "POST", "/v1/images/generations",
                       "{\"prompt\":\"one too many\",\"size\":\"32x32\"}", &resp);
    CHECK(st_sync == 503 && resp && strstr(resp, "\"error\""),
          "synchronous request to a full queue: %d %.100s (expected 503)", st_sync,
          resp ? resp : "");
    free(resp);
    int cancelled = 0;
    for (int i = n_ids - 1; i >= 0; i--) { /* queued ones first: the long job stays busy */
        snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s/cancel", ids[i]);
        st = http(k, "POST", path, NULL, &resp);
        free(resp);
        snprintf(path, sizeof path, "/sdcpp/v1/jobs/%s", ids[i]);
        for (int tries = 0; st == 200 && tries < 20000; tries++) {
            int s2 = http(k, "GET", path, NULL, &resp);
            if (s2 != 200 || !json_str(resp, "status", status, sizeof status)) status[0] = '\0';
            free(resp);
            if (strcmp(status, "queued") && strcmp(status, "generating")) break;
            usleep(5000);
        }
        if (st == 200 && !strcmp(status, "cancelled")) cancelled++;
    }
    CHECK(cancelled == n_ids, "%d of %d jobs of the full queue ended cancelled", cancelled, n_ids);
    printf("full queue (1 running + %d queued): submit -> %d, synchronous -> %d; %d of %d "
           "cancelled\n",
           accepted, st_async, st_sync, cancelled, n_ids);
    return n_ids;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static long peak_rss_kib(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kib = 0;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6)) kib = atol(line + 6);
    if (f) fclose(f);
    return kib;
}

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    const char *env = getenv("SDC_SERVER_LOAD_SECONDS");
    double seconds = env ? atof(env) : 20.0;
    if (!(seconds > 0)) seconds = 20.0;
    char dir[] = "/tmp/sdc_server_load_XXXXXX";
    if (!mkdtemp(dir)) {
        printf("cannot make a temp dir\n");
        return 1;
    }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/sdc-genmodel' --preset tiny -o '%s/m' >/dev/null",
             SDC_BINARY_DIR, dir);
    CHECK(system(cmd) == 0, "sdc-genmodel failed");

    int out_pipe[2];
    if (pipe(out_pipe) != 0) return 1;
    pid_t pid = fork();
    if (pid == 0) {
        char server[512], dit[512], t5[512], err[512];
        snprintf(server, sizeof server, "%s/sdc-server", SDC_BINARY_DIR);
        snprintf(dit, sizeof dit, "%s/m/minit2i.safetensors", dir);
        snprintf(t5, sizeof t5, "%s/m/t5/model.safetensors", dir);
        snprintf(err, sizeof err, "%s/server.err", dir);
        dup2(out_pipe[1], 1);
        close(out_pipe[0]);
        if (!freopen(err, "w", stderr)) _exit(127);
        execl(server, server, "--diffusion-model", dit, "--t5xxl", t5, "-t", "1", "--listen-port",
              "0", "--max-queue", "8", "--job-ttl", "3600", "--max-jobs-kept", "1000000", "-W",
              "32", "-H", "32", "--steps", "2", (char *)NULL);
        _exit(127);
    }
    close(out_pipe[1]);
    FILE *out = fdopen(out_pipe[0], "r");
    char line[256];
    while (out && fgets(line, sizeof line, out)) {
        const char *p = strstr(line, "127.0.0.1:");
        if (p) {
            g_port = atoi(p + 10);
            break;
        }
    }
    CHECK(g_port > 0, "the server did not start (see %s/server.err)", dir);
    if (g_port <= 0) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        TEST_MAIN_END();
    }

    static client clients[N_CLIENTS];
    pthread_t th[N_CLIENTS];
    double start = now_s();
    for (int i = 0; i < N_CLIENTS; i++) {
        clients[i].index = i;
        clients[i].until = start + seconds;
        clients[i].rng = 0x9E3779B97F4A7C15ull * (unsigned long long)(i + 1);
        clients[i].conn.fd = -1;
        pthread_create(&th[i], NULL, client_main, &clients[i]);
    }
    for (int i = 0; i < N_CLIENTS; i++) pthread_join(th[i], NULL);
    double elapsed = now_s() - start;

    /* the server must still answer normally, once the jobs left by the load have run (up to
     * 8 may still be queued when the clients stop: a synchronous request would get 503) */
    conn mk = {-1, 0, 0, 0};
    char *resp = NULL;
    wait_idle(&mk);
    int st = http(&mk, "POST", "/v1/images/generations",
                  "{\"prompt\":\"after\",\"size\":\"32x32\"}", &resp);
    CHECK(st == 200 && resp && strstr(resp, "b64_json"), "request after the load: %d %s", st,
          resp ? resp : "");
    free(resp);
    int burst_jobs = test_queue_bound(&mk);
    close_conn(&mk);
    long rss = peak_rss_kib(pid);
    kill(pid, SIGTERM);
    int wstatus = 0;
    waitpid(pid, &wstatus, 0);
    if (out) fclose(out);

    client sum = {0};
    int total = 0, accepted = 0, opened = 0;
    for (int i = 0; i < N_CLIENTS; i++) {
        client *c = &clients[i];
        total += c->requests;
        accepted += c->n_ids;
        sum.unexpected += c->unexpected;
        sum.conn_failures += c->conn_failures;
        sum.refused += c->refused;
        sum.queue_over += c->queue_over;
        opened += c->conn.opened;
        sum.completed += c->completed;
        sum.cancelled += c->cancelled;
        sum.failed += c->failed;
        sum.lost += c->lost;
        if (c->unexpected && !sum.first_unexpected[0])
            memcpy(sum.first_unexpected, c->first_unexpected, sizeof sum.first_unexpected);
    }
    printf("load: %d clients, %.1f s, %d requests (%.0f/s) over %d connections (%.0f/s, "
           "bound %.0f/s)\n",
           N_CLIENTS, elapsed, total, total / elapsed, opened, opened / elapsed,
           N_CLIENTS / CONNECT_INTERVAL_S);
    printf("%-26s %8s %10s %10s %10s\n", "call", "count", "p50 ms", "p99 ms", "max ms");
    for (int k = 0; k < K_COUNT; k++) {
        int n = 0;
        for (int i = 0; i < N_CLIENTS; i++) n += clients[i].n_lat[k];
        if (!n) continue;
        double *all = malloc(sizeof(double) * (size_t)n);
        int m = 0;
        for (int i = 0; i < N_CLIENTS; i++)
            for (int j = 0; j < clients[i].n_lat[k]; j++) all[m++] = clients[i].lat[k][j];
        qsort(all, (size_t)n, sizeof(double), cmp_double);
        printf("%-26s %8d %10.2f %10.2f %10.2f\n", k_kind_names[k], n, 1e3 * all[n / 2],
               1e3 * all[(size_t)((n - 1) * 0.99)], 1e3 * all[n - 1]);
        free(all);
    }
    printf(
        "jobs accepted %d: completed %d, cancelled %d, failed %d, lost %d; refused (429/503) %d\n",
        accepted, sum.completed, sum.cancelled, sum.failed, sum.lost, sum.refused);
    printf("server peak RSS %.1f MiB, exit status %d\n", rss / 1024.0,
           WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);

    CHECK(sum.unexpected == 0, "%d unexpected answers, first: %s", sum.unexpected,
          sum.first_unexpected);
    CHECK(sum.conn_failures == 0, "%d connections failed", sum.conn_failures);
    /* 50 clients against a queue of 8: the bound must have been hit (and held) under load */
    CHECK(sum.refused > 0, "the full queue never refused a request (429/503)");
    CHECK(sum.queue_over == 0, "the queue grew past %d %d times", MAX_QUEUE, sum.queue_over);
    CHECK(accepted > 0, "no job was accepted");
    CHECK(sum.lost == 0 && sum.failed == 0 && sum.completed + sum.cancelled == accepted,
          "accepted %d, completed %d + cancelled %d (failed %d, lost %d)", accepted, sum.completed,
          sum.cancelled, sum.failed, sum.lost);
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0,
          "server exit status %d (ASan report in %s/server.err)",
          WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1, dir);
    /* the server's own count: cancels beyond the clients' are hung-up synchronous requests */
    snprintf(cmd, sizeof cmd, "%s/server.err", dir);
    FILE *log = fopen(cmd, "r");
    long long s_sub = -1, s_done = -1, s_fail = -1, s_cancel = -1;
    while (log && fgets(line, sizeof line, log)) {
        const char *p = strstr(line, "jobs submitted");
        if (p)
            sscanf(p, "jobs submitted %lld, completed %lld, failed %lld, cancelled %lld", &s_sub,
                   &s_done, &s_fail, &s_cancel);
    }
    if (log) fclose(log);
    printf("server: jobs submitted %lld (async and sync), completed %lld, failed %lld, cancelled "
           "%lld (%lld beyond the clients' own cancels and the full-queue check's: hung-up "
           "synchronous requests)\n",
           s_sub, s_done, s_fail, s_cancel, s_cancel - sum.cancelled - burst_jobs);
    CHECK(s_fail == 0, "the server counted %lld failed jobs", s_fail);
    if (t_failed == 0) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) printf("could not remove %s\n", dir);
    }
    for (int i = 0; i < N_CLIENTS; i++) {
        free(clients[i].ids);
        for (int k = 0; k < K_COUNT; k++) free(clients[i].lat[k]);
    }
    TEST_MAIN_END();
}
