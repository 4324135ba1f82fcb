/* The device registry: the CPU device(s) and, later, registered accelerators. One static
 * table guarded by a mutex; entries are rewritten in place so pointers stay valid. */
#include "placement/devices.h"
#ifdef SDC_HAVE_CUDA
#include "cuda/backend_cuda.h"
#endif

#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/log.h"
#include "core/status.h"
#include "core/threadpool.h"
#include "cpu/cpu_features.h"

#define GIB 1073741824.0

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static sdc_device g_dev[SDC_MAX_DEVICES];
static int g_n_cpu;            /* CPU devices first: g_dev[0 .. g_n_cpu-1] */
static int g_n_other;          /* then accelerators: g_dev[g_n_cpu .. g_n_cpu+g_n_other-1] */
static int g_threads_override; /* tests: pretend this many hardware threads (0 = real) */

static int host_threads(void) {
    return g_threads_override > 0 ? g_threads_override : sdc_cpu_count();
}

/* "model name" from /proc/cpuinfo, or a generic label */
static void cpu_model(char *out, size_t size) {
    snprintf(out, size, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        snprintf(out, size, "%s", v);
        out[strcspn(out, "\n")] = 0;
        break;
    }
    fclose(f);
}

/* a number of bytes from the first line of a file; 0 when absent or "max" */
static uint64_t read_u64_file(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    unsigned long long v = 0;
    int ok = fscanf(f, "%llu", &v) == 1;
    fclose(f);
    return ok ? (uint64_t)v : 0;
}

/* Host RAM a process here may use: MemTotal, lowered by a cgroup limit (containers). */
static uint64_t host_memory_bytes(void) {
    uint64_t total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            unsigned long long kib;
            if (sscanf(line, "MemTotal: %llu kB", &kib) == 1) {
                total = (uint64_t)kib * 1024;
                break;
            }
        }
        fclose(f);
    }
    if (!total) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
        if (pages > 0 && page > 0) total = (uint64_t)pages * (uint64_t)page;
    }
    const char *limits[] = {"/sys/fs/cgroup/memory.max",
                            "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (int i = 0; i < 2; i++) {
        uint64_t lim = read_u64_file(limits[i]);
        if (lim && (!total || lim < total)) total = lim;
    }
    return total;
}

/* the --list-devices text of CPU device d (of n), from its fields */
static void describe_cpu(sdc_device *d, int n, int total_threads) {
    bool split = strcmp(d->name, "cpu") != 0; /* cpu0..: say which share it is */
    char model[160];
    cpu_model(model, sizeof model);
    char threads[64];
    if (!split)
        snprintf(threads, sizeof threads, "%d threads", d->n_threads);
    else if (n <= total_threads)
        snprintf(threads, sizeof threads, "%d of %d threads", d->n_threads, total_threads);
    else /* more devices than cores: each runs one thread on shared cores */
        snprintf(threads, sizeof threads, "1 thread, %d devices share %d cores", n, total_threads);
    char budget[48] = "";
    if (d->budget_bytes)
        snprintf(budget, sizeof budget, ", budget %.1f GiB", (double)d->budget_bytes / GIB);
    snprintf(d->description, sizeof d->description, "%s (%s, %s, %.1f GiB%s)", model, threads,
             sdc_isa_name(sdc_cpu_isa()), (double)d->total_bytes / GIB, budget);
}

/* Rebuilds the CPU devices (n >= 1; split = names cpu0..) keeping the accelerators behind
 * them. Caller holds g_mu. */
static void make_cpu_devices(int n, bool split) {
    sdc_device others[SDC_MAX_OTHER_DEVICES];
    memcpy(others, g_dev + g_n_cpu, (size_t)g_n_other * sizeof *others);
    int threads = host_threads();
    uint64_t mem = host_memory_bytes();
    for (int i = 0; i < n; i++) {
        sdc_device *d = &g_dev[i];
        memset(d, 0, sizeof *d);
        d->index = i;
        d->kind = SDC_DEVICE_CPU;
        if (split)
            snprintf(d->name, sizeof d->name, "cpu%d", i);
        else
            snprintf(d->name, sizeof d->name, "cpu");
        snprintf(d->registry, sizeof d->registry, "cpu");
        /* as even as possible, the first ones get the remainder; at least one each */
        d->n_threads = threads / n + (i < threads % n);
        if (d->n_threads < 1) d->n_threads = 1;
        /* shares that add up to exactly the total */
        d->total_bytes = mem / (uint64_t)n + ((uint64_t)i < mem % (uint64_t)n);
        describe_cpu(d, n, threads);
    }
    g_n_cpu = n;
    for (int i = 0; i < g_n_other; i++) {
        g_dev[n + i] = others[i];
        g_dev[n + i].index = n + i;
    }
}

static int register_device(const sdc_device *d, const sdc_device_ops *ops, void *user);

static void init_once(void) {
    pthread_mutex_lock(&g_mu);
    make_cpu_devices(1, false);
    pthread_mutex_unlock(&g_mu);
#ifdef SDC_HAVE_CUDA
    sdc_cuda_add_devices(register_device); /* every visible GPU, after the CPU */
#endif
}

static void ensure_init(void) {
    pthread_once(&g_once, init_once);
}

int sdc_devices_count(void) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    int n = g_n_cpu + g_n_other;
    pthread_mutex_unlock(&g_mu);
    return n;
}

const sdc_device *sdc_devices_get(int index) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    const sdc_device *d = index >= 0 && index < g_n_cpu + g_n_other ? &g_dev[index] : NULL;
    pthread_mutex_unlock(&g_mu);
    return d;
}

static void list_names_locked(char *buf, size_t size) {
    size_t len = 0;
    if (size) buf[0] = 0;
    for (int i = 0; i < g_n_cpu + g_n_other && len < size; i++) {
        int w = snprintf(buf + len, size - len, "%s%s", i ? ", " : "", g_dev[i].name);
        if (w < 0) break;
        len += (size_t)w;
    }
}

void sdc_devices_list_names(char *buf, size_t size) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    list_names_locked(buf, size);
    pthread_mutex_unlock(&g_mu);
}

/* the lookup rules of sdc_devices_find; caller holds g_mu */
static const sdc_device *find_locked(const char *name, int *n_prefix) {
    int n = g_n_cpu + g_n_other;
    *n_prefix = 0;
    for (int i = 0; i < n; i++)
        if (!strcasecmp(g_dev[i].name, name)) return &g_dev[i];
    for (int i = 0; i < n; i++)
        if (!strcasecmp(g_dev[i].registry, name)) return &g_dev[i];
    if (!strcasecmp(name, "gpu")) {
        for (int i = 0; i < n; i++)
            if (g_dev[i].kind == SDC_DEVICE_ACCEL) return &g_dev[i];
        return NULL;
    }
    const sdc_device *hit = NULL;
    size_t len = strlen(name);
    for (int i = 0; i < n && len; i++) {
        if (!strncasecmp(g_dev[i].name, name, len)) {
            hit = &g_dev[i];
            (*n_prefix)++;
        }
    }
    return *n_prefix == 1 ? hit : NULL;
}

const sdc_device *sdc_devices_find(const char *name) {
    ensure_init();
    if (!name) name = "";
    pthread_mutex_lock(&g_mu);
    int n_prefix;
    const sdc_device *d = find_locked(name, &n_prefix);
    if (!d) {
        char names[512];
        list_names_locked(names, sizeof names);
        if (n_prefix > 1)
            sdc_fail(SDC_ERR_INVALID_ARG, "device name '%s' is ambiguous; devices: %s", name,
                     names);
        else if (!strcasecmp(name, "gpu"))
            sdc_fail(SDC_ERR_INVALID_ARG, "no GPU device in this build; devices: %s", names);
        else
            sdc_fail(SDC_ERR_INVALID_ARG, "unknown device '%s'; devices: %s (see --list-devices)",
                     name, names);
    }
    pthread_mutex_unlock(&g_mu);
    return d;
}

const sdc_device *sdc_devices_default(void) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    const sdc_device *d = g_n_other ? &g_dev[g_n_cpu] : &g_dev[0];
    pthread_mutex_unlock(&g_mu);
    return d;
}

sdc_backend *sdc_device_create_backend_threads(const sdc_device *d, int n_threads) {
    if (!d) return NULL;
    if (d->kind == SDC_DEVICE_CPU)
        return sdc_backend_cpu_create(n_threads > 0 ? n_threads : d->n_threads);
    if (!d->ops || !d->ops->create_backend) return NULL;
    return d->ops->create_backend(d, n_threads);
}

sdc_backend *sdc_device_create_backend(const sdc_device *d) {
    return sdc_device_create_backend_threads(d, 0);
}

/* ---- --max-vram ---- */

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

/* a finite number and nothing else */
static bool parse_gib(const char *s, double *v) {
    char *end;
    double x = strtod(s, &end);
    if (end == s || !isfinite(x)) return false;
    while (isspace((unsigned char)*end)) end++;
    if (*end) return false;
    *v = x;
    return true;
}

static bool is_default_key(const char *k) {
    return !strcasecmp(k, "all") || !strcasecmp(k, "default") || !strcmp(k, "*");
}

/* budget in bytes for a requested value in GiB on device d; a reason in `warn` when a
 * negative value gives none (logged by the caller, outside the lock) */
static uint64_t resolve_budget(const sdc_device *d, double gib, char *warn, size_t warn_size) {
    if (gib == 0) return 0;
    if (gib > 0) {
        double b = gib * GIB;
        return b >= 9.2e18 ? (uint64_t)9.2e18 : (uint64_t)b;
    }
    /* negative: free memory minus |gib| GiB, only where the device reports free memory */
    if (!d->ops || !d->ops->free_bytes) {
        snprintf(warn, warn_size,
                 "--max-vram %g on %s: a negative budget needs a device that reports free "
                 "memory; no budget set",
                 gib, d->name);
        return 0;
    }
    double spare = -gib * GIB, free_b = (double)d->ops->free_bytes(d);
    if (free_b <= spare) {
        snprintf(warn, warn_size, "--max-vram %g on %s: only %.2f GiB free; no budget set", gib,
                 d->name, free_b / GIB);
        return 0;
    }
    return (uint64_t)(free_b - spare);
}

sdc_status sdc_devices_apply_max_vram(const char *spec) {
    ensure_init();
    char *copy = strdup(spec ? spec : "");
    if (!copy) return sdc_fail(SDC_ERR_NO_MEMORY, "--max-vram: out of memory");
    double value[SDC_MAX_DEVICES];
    bool named[SDC_MAX_DEVICES] = {false};
    double def = 0;
    sdc_status s = SDC_OK;
    pthread_mutex_lock(&g_mu);
    int n = g_n_cpu + g_n_other;
    for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && s == SDC_OK;
         tok = strtok_r(NULL, ",", &save)) {
        char *part = trim(tok);
        if (!*part) continue;
        char *eq = strchr(part, '=');
        double v;
        if (!eq) {
            if (!parse_gib(part, &v))
                s = sdc_fail(SDC_ERR_INVALID_ARG,
                             "--max-vram: '%s' is not a number of GiB (expected GiB or "
                             "DEVICE=GiB, e.g. 6 or cpu0=4,cpu1=2.5)",
                             part);
            else
                def = v;
            continue;
        }
        *eq = 0;
        char *key = trim(part), *val = trim(eq + 1);
        if (!*key || !*val) {
            s = sdc_fail(SDC_ERR_INVALID_ARG,
                         "--max-vram: '%s=%s' needs a device and a value (DEVICE=GiB)", key, val);
        } else if (!parse_gib(val, &v)) {
            s = sdc_fail(SDC_ERR_INVALID_ARG, "--max-vram: '%s' in '%s=%s' is not a number of GiB",
                         val, key, val);
        } else if (is_default_key(key)) {
            def = v;
        } else {
            int n_prefix;
            const sdc_device *d = find_locked(key, &n_prefix);
            if (!d) {
                char names[512];
                list_names_locked(names, sizeof names);
                s = sdc_fail(SDC_ERR_INVALID_ARG, "--max-vram: %s device '%s'; devices: %s",
                             n_prefix > 1 ? "ambiguous" : "unknown", key, names);
            } else {
                value[d->index] = v;
                named[d->index] = true;
            }
        }
    }
    char warn[256] = "";
    if (s == SDC_OK) {
        for (int i = 0; i < n; i++) {
            char w[256] = "";
            g_dev[i].budget_bytes =
                resolve_budget(&g_dev[i], named[i] ? value[i] : def, w, sizeof w);
            if (w[0] && !warn[0]) memcpy(warn, w, sizeof warn);
            if (g_dev[i].kind == SDC_DEVICE_CPU) describe_cpu(&g_dev[i], g_n_cpu, host_threads());
        }
    }
    pthread_mutex_unlock(&g_mu);
    free(copy);
    /* one warning is enough: the same value usually applies to every device */
    if (warn[0]) SDC_LOGW("%s", warn);
    return s;
}

/* ---- accelerators ---- */

static int register_device(const sdc_device *d, const sdc_device_ops *ops, void *user) {
    if (!d || !d->name[0]) {
        sdc_fail(SDC_ERR_INVALID_ARG, "device registration without a name");
        return -1;
    }
    pthread_mutex_lock(&g_mu);
    int idx = -1;
    int n = g_n_cpu + g_n_other;
    for (int i = 0; i < n; i++) {
        if (!strcasecmp(g_dev[i].name, d->name)) {
            sdc_fail(SDC_ERR_INVALID_ARG, "device name '%s' is already registered", d->name);
            goto done;
        }
    }
    if (g_n_other >= SDC_MAX_OTHER_DEVICES) {
        sdc_fail(SDC_ERR_UNSUPPORTED, "cannot register device '%s': at most %d accelerators",
                 d->name, SDC_MAX_OTHER_DEVICES);
        goto done;
    }
    idx = n;
    g_dev[idx] = *d;
    g_dev[idx].index = idx;
    g_dev[idx].budget_bytes = 0;
    g_dev[idx].ops = ops;
    g_dev[idx].user = user;
    g_n_other++;
done:
    pthread_mutex_unlock(&g_mu);
    return idx;
}

int sdc_devices_register(const sdc_device *d, const sdc_device_ops *ops, void *user) {
    ensure_init();
    return register_device(d, ops, user);
}

void sdc_devices_unregister_all(void) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    memset(g_dev + g_n_cpu, 0, (size_t)g_n_other * sizeof *g_dev);
    g_n_other = 0;
    pthread_mutex_unlock(&g_mu);
}

/* ---- public API (sdc.h) ---- */

int sdc_device_count(void) {
    return sdc_devices_count();
}

sdc_status sdc_device_info(int index, char *name, size_t name_size, char *desc, size_t desc_size) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    int n = g_n_cpu + g_n_other;
    sdc_status s = SDC_OK;
    if (index < 0 || index >= n) {
        s = sdc_fail(SDC_ERR_INVALID_ARG, "no device %d (there %s %d)", index,
                     n == 1 ? "is" : "are", n);
    } else {
        if (name && name_size) snprintf(name, name_size, "%s", g_dev[index].name);
        if (desc && desc_size) snprintf(desc, desc_size, "%s", g_dev[index].description);
    }
    pthread_mutex_unlock(&g_mu);
    return s;
}

sdc_status sdc_device_memory(int index, uint64_t *total_bytes, uint64_t *budget_bytes) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    int n = g_n_cpu + g_n_other;
    sdc_status s = SDC_OK;
    if (index < 0 || index >= n) {
        s = sdc_fail(SDC_ERR_INVALID_ARG, "no device %d (there %s %d)", index,
                     n == 1 ? "is" : "are", n);
    } else {
        if (total_bytes) *total_bytes = g_dev[index].total_bytes;
        if (budget_bytes) *budget_bytes = g_dev[index].budget_bytes;
    }
    pthread_mutex_unlock(&g_mu);
    return s;
}

sdc_status sdc_set_cpu_devices(int n) {
    if (n < 1 || n > SDC_MAX_CPU_DEVICES)
        return sdc_fail(SDC_ERR_INVALID_ARG, "--cpu-devices %d: expected 1..%d", n,
                        SDC_MAX_CPU_DEVICES);
    ensure_init();
    pthread_mutex_lock(&g_mu);
    int cores = host_threads();
    pthread_mutex_unlock(&g_mu);
    if (n > cores)
        SDC_LOGW("--cpu-devices %d on %d cores: each device runs 1 thread, cores are shared", n,
                 cores);
    pthread_mutex_lock(&g_mu);
    make_cpu_devices(n, true);
    pthread_mutex_unlock(&g_mu);
    return SDC_OK;
}

void sdc_devices_reset(void) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    g_threads_override = 0;
    make_cpu_devices(1, false);
    pthread_mutex_unlock(&g_mu);
}

void sdc_devices_set_host_threads(int n) {
    ensure_init();
    pthread_mutex_lock(&g_mu);
    g_threads_override = n > 0 ? n : 0;
    pthread_mutex_unlock(&g_mu);
}
