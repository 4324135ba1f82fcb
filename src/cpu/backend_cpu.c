/* The CPU backend: plans a graph, keeps one scratch buffer (grown as needed) and runs
 * every node on the thread pool, with a barrier between nodes. */
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/backend.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_ops.h"
#include "cpu/op_profile.h"
#include "cpu/quant_dispatch.h"

#define SDC_CPU_ALIGN 64

typedef struct cpu_backend {
    sdc_op_profile *profile; /* NULL unless SDC_PROFILE is set */
    sdc_threadpool *pool;
    sdc_buffer *scratch;      /* planned inputs, intermediates and the per-node work area */
    unsigned long generation; /* bumped by every graph allocation into scratch */
    sdc_plan_stats last_plan;
    size_t budget; /* largest scratch allowed (a device's --max-vram), 0 = none */
    char label[32];
} cpu_backend;

typedef struct run_state {
    sdc_graph *g;
    sdc_threadpool *pool;
    void *work;
    size_t work_size;
    sdc_eval_fn cb;
    void *cb_user;
    bool observe; /* decided by thread 0 for the current node */
    sdc_op_profile *profile;
    _Atomic int cancelled;
} run_state;

static const char *cpu_name(const sdc_backend *b) {
    return "cpu";
}

static void cpu_free(sdc_backend *b) {
    cpu_backend *c = b->impl;
    sdc_op_profile_print_free(c->profile);
    sdc_threadpool_free(c->pool);
    sdc_buffer_free(c->scratch);
    free(c);
    free(b);
}

static sdc_status cpu_alloc(sdc_backend *b, size_t size, void **ptr) {
    *ptr = aligned_alloc(SDC_CPU_ALIGN, (size + SDC_CPU_ALIGN - 1) / SDC_CPU_ALIGN * SDC_CPU_ALIGN);
    return *ptr ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "cpu: cannot allocate %zu bytes", size);
}

static void cpu_release(sdc_backend *b, void *ptr) {
    free(ptr);
}

static bool cpu_supports(const sdc_backend *b, const sdc_tensor *node, char *why, size_t why_size) {
    (void)b;
    const char *reason = NULL;
    bool ok = node->op == SDC_OP_NONE || node->op == SDC_OP_VIEW || sdc_cpu_kernel_for(node->op);
    if (!ok)
        reason = "no kernel for this op";
    else
        ok = sdc_cpu_types_ok(node, &reason);
    if (!ok && why && why_size) snprintf(why, why_size, "%s", reason ? reason : "unsupported");
    return ok;
}

/* "dst f16, src0 f32, src1 q4_0" for messages */
static void node_types(const sdc_tensor *t, char *buf, size_t size) {
    int n = snprintf(buf, size, "dst %s", sdc_type_name(t->type));
    for (int i = 0; i < SDC_MAX_SRC && n >= 0 && (size_t)n < size; i++)
        if (t->src[i])
            n += snprintf(buf + n, size - (size_t)n, ", src%d %s", i,
                          sdc_type_name(t->src[i]->type));
}

typedef struct work_ctx {
    int nth;
} work_ctx;

static size_t node_work_size(const sdc_tensor *node, void *user) {
    sdc_cpu_work_fn f = sdc_cpu_work_for(node->op);
    return f ? f(node, ((work_ctx *)user)->nth) : 0;
}

static void run_graph(void *arg, int ith, int nth) {
    run_state *rs = arg;
    sdc_cpu_params p = {ith, nth, rs->work, rs->work_size, rs->pool};
    int n = sdc_graph_n_nodes(rs->g);
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_graph_get_node(rs->g, i);
        if (t->op == SDC_OP_VIEW || t->op == SDC_OP_NONE) continue;
        if (rs->cb) {
            if (ith == 0) rs->observe = rs->cb(t, true, rs->cb_user);
            sdc_cpu_barrier(&p);
        }
        double t0 = rs->profile && ith == 0 ? sdc_now_seconds() : 0;
        sdc_cpu_kernel_for(t->op)(&p, t);
        sdc_cpu_barrier(&p);
        if (rs->profile && ith == 0) sdc_op_profile_add(rs->profile, t, sdc_now_seconds() - t0);
        if (rs->cb) {
            if (ith == 0 && rs->observe && !rs->cb(t, false, rs->cb_user))
                atomic_store(&rs->cancelled, 1);
            sdc_cpu_barrier(&p);
            if (atomic_load(&rs->cancelled)) return;
        }
    }
}

/* Refuses a graph with a node the kernels cannot compute (wrong op or types) before any
 * memory is touched: a kernel given types it does not read would compute garbage. */
static sdc_status check_nodes(const sdc_backend *b, sdc_graph *g) {
    int n = sdc_graph_n_nodes(g);
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_graph_get_node(g, i);
        char why[128], types[192];
        if (cpu_supports(b, t, why, sizeof why)) continue;
        node_types(t, types, sizeof types);
        return sdc_fail(SDC_ERR_UNSUPPORTED, "cpu: node %d '%s' (op %s, %s) is not supported: %s",
                        i, t->name, sdc_op_name(t->op), types, why);
    }
    return SDC_OK;
}

static sdc_status cpu_graph_alloc(sdc_backend *b, sdc_graph *g) {
    cpu_backend *c = b->impl;
    sdc_status s = check_nodes(b, g);
    if (s != SDC_OK) return s;
    work_ctx wc = {sdc_threadpool_size(c->pool)};
    sdc_plan_stats st;
    if ((s = sdc_graph_plan(g, SDC_CPU_ALIGN, node_work_size, &wc, &st)) != SDC_OK) return s;
    size_t work_off = (st.scratch_bytes + SDC_CPU_ALIGN - 1) / SDC_CPU_ALIGN * SDC_CPU_ALIGN;
    size_t need = work_off + st.work_bytes + SDC_CPU_ALIGN;
    if (c->budget && need > c->budget)
        return sdc_fail(SDC_ERR_NO_MEMORY,
                        "%s: the graph needs %.1f MiB of scratch, over the device's budget of "
                        "%.1f MiB",
                        c->label[0] ? c->label : "cpu", need / 1048576.0, c->budget / 1048576.0);
    if (!c->scratch || need > c->scratch->size) {
        sdc_buffer_free(c->scratch);
        c->scratch = NULL;
        if ((s = sdc_buffer_alloc(b, need, SDC_BUFFER_SCRATCH, &c->scratch)) != SDC_OK) return s;
    }
    c->last_plan = st;
    sdc_graph_bind_buffer(g, c->scratch, 0);
    *sdc_graph_get_binding(g) = (sdc_graph_binding){.owner = c,
                                                    .generation = ++c->generation,
                                                    .work_offset = work_off,
                                                    .work_bytes = st.work_bytes};
    return SDC_OK;
}

static sdc_status cpu_compute(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb, void *cb_user) {
    cpu_backend *c = b->impl;
    sdc_graph_binding *bd = sdc_graph_get_binding(g);
    /* Allocated by sdc_backend_graph_alloc with nothing allocated since: its inputs are
     * written, use it as it is. Else (a plain compute, or a second one) plan and bind again
     * as every compute did before, so callers that re-point inputs between runs still work. */
    if (bd->owner != c || bd->generation != c->generation) {
        sdc_status s = cpu_graph_alloc(b, g);
        if (s != SDC_OK) return s;
    }
    bd->owner = NULL; /* used up */
    run_state rs = {.g = g,
                    .pool = c->pool,
                    .profile = c->profile,
                    .work = (char *)c->scratch->base + bd->work_offset,
                    .work_size = bd->work_bytes,
                    .cb = cb,
                    .cb_user = cb_user};
    sdc_threadpool_run(c->pool, run_graph, &rs);
    if (atomic_load(&rs.cancelled)) return sdc_fail(SDC_ERR_CANCELLED, "computation cancelled");
    return SDC_OK;
}

/* bounds and ownership are checked by sdc_backend_tensor_set/get */
static sdc_status cpu_tensor_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                                 size_t size) {
    (void)b;
    memcpy((char *)t->data + offset, src, size);
    return SDC_OK;
}

static sdc_status cpu_tensor_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                                 size_t size) {
    (void)b;
    memcpy(dst, (const char *)t->data + offset, size);
    return SDC_OK;
}

/* The kernels read host memory: a graph input can compute from the caller's array. */
static bool cpu_tensor_use_host(sdc_backend *b, sdc_tensor *t, void *host, size_t size) {
    (void)b;
    if (t->data || t->op != SDC_OP_NONE || size != sdc_tensor_nbytes(t) || (!host && size))
        return false;
    t->data = host;
    t->buffer = NULL; /* host memory of the caller */
    return true;
}

static void cpu_memory(const sdc_backend *b, size_t *free_bytes, size_t *total_bytes) {
    long pages = sysconf(_SC_PHYS_PAGES), avail = sysconf(_SC_AVPHYS_PAGES),
         psize = sysconf(_SC_PAGESIZE);
    if (total_bytes) *total_bytes = pages > 0 ? (size_t)pages * (size_t)psize : 0;
    if (free_bytes) *free_bytes = avail > 0 ? (size_t)avail * (size_t)psize : 0;
}

static const sdc_backend_iface g_cpu_iface = {
    .name = cpu_name,
    .free = cpu_free,
    .alloc = cpu_alloc,
    .release = cpu_release,
    .supports_op = cpu_supports,
    .compute = cpu_compute,
    .memory = cpu_memory,
    .graph_alloc = cpu_graph_alloc,
    .tensor_set = cpu_tensor_set,
    .tensor_get = cpu_tensor_get,
    .tensor_use_host = cpu_tensor_use_host,
    .host_memory = true,
};

sdc_backend *sdc_backend_cpu_create(int n_threads) {
    sdc_cpu_quant_init();
    sdc_backend *b = calloc(1, sizeof *b);
    cpu_backend *c = calloc(1, sizeof *c);
    if (!b || !c) goto fail;
    c->profile = sdc_op_profile_from_env();
    c->pool = sdc_threadpool_create(n_threads);
    if (!c->pool) goto fail;
    b->iface = &g_cpu_iface;
    b->impl = c;
    return b;
fail:
    free(b);
    free(c);
    sdc_fail(SDC_ERR_NO_MEMORY, "cpu: cannot create backend");
    return NULL;
}

void sdc_backend_cpu_set_budget(sdc_backend *b, const char *device, size_t bytes) {
    cpu_backend *c = b->impl;
    c->budget = bytes;
    snprintf(c->label, sizeof c->label, "%s", device ? device : "cpu");
}

sdc_plan_stats sdc_backend_cpu_last_plan(const sdc_backend *b) {
    return ((const cpu_backend *)b->impl)->last_plan;
}
