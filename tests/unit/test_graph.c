/* Graph building, planner invariants and the thread pool. */
#include <stdatomic.h>

#include "core/graph.h"
#include "core/threadpool.h"
#include "test_util.h"

/* Builds a unary node by hand (the op builders are tested elsewhere). */
static sdc_tensor *node1(sdc_graph *g, sdc_tensor *a, int64_t n) {
    int64_t ne[2] = {n, a->ne[1]};
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_SILU, SDC_TYPE_F32, 2, ne);
    if (t) t->src[0] = a;
    return t;
}
static sdc_tensor *node2(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_ADD, SDC_TYPE_F32, 2, a->ne);
    if (t) t->src[0] = a, t->src[1] = b;
    return t;
}

static int64_t first_use(sdc_tensor *t) {
    return t->index;
}

/* Every two planned tensors whose lifetimes overlap must not share bytes. */
static int check_no_overlap(sdc_graph *g, int *pairs) {
    int n = sdc_graph_n_nodes(g), bad = 0;
    /* recompute lifetimes independently: last reader index */
    int *last = calloc((size_t)n, sizeof(int));
    for (int i = 0; i < n; i++) last[i] = i;
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_graph_get_node(g, i);
        for (int s = 0; s < SDC_MAX_SRC; s++) {
            sdc_tensor *src = t->src[s];
            if (!src) continue;
            if (src->view_src) src = src->view_src;
            if (src->index >= 0 && last[src->index] < i) last[src->index] = i;
        }
    }
    for (int i = 0; i < n; i++) {
        sdc_tensor *a = sdc_graph_get_node(g, i);
        if (a->plan_offset < 0) continue;
        int la = (a->flags & SDC_TENSOR_OUTPUT) ? n : last[i];
        for (int j = i + 1; j < n; j++) {
            sdc_tensor *b = sdc_graph_get_node(g, j);
            if (b->plan_offset < 0) continue;
            int lb = (b->flags & SDC_TENSOR_OUTPUT) ? n : last[j];
            bool live_together = first_use(b) <= la && first_use(a) <= lb;
            if (!live_together) continue;
            (*pairs)++;
            int64_t a0 = a->plan_offset, a1 = a0 + (int64_t)sdc_tensor_nbytes(a);
            int64_t b0 = b->plan_offset, b1 = b0 + (int64_t)sdc_tensor_nbytes(b);
            if (a0 < b1 && b0 < a1) bad++;
        }
    }
    free(last);
    return bad;
}

static void test_planner_chain(void) {
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {1000, 7};
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *cur = x, *skip = NULL;
    for (int i = 0; i < 40; i++) {
        cur = node1(g, cur, 1000 + (i % 5) * 17 % 3);
        if (i % 7 == 0) skip = cur;
        if (i % 7 == 6) cur = node2(g, cur, skip); /* residual-like long-lived tensors */
    }
    sdc_graph_mark_output(g, cur);
    CHECK(sdc_graph_status(g) == SDC_OK, "graph built: %s", sdc_graph_error(g));
    sdc_plan_stats st;
    CHECK(sdc_graph_plan(g, 64, NULL, NULL, &st) == SDC_OK, "plan: %s", sdc_last_error());
    int pairs = 0, bad = check_no_overlap(g, &pairs);
    printf("chain: %d nodes, scratch %zu bytes vs naive %zu (%.1f%%), %d live pairs, %d overlaps\n",
           sdc_graph_n_nodes(g), st.scratch_bytes, st.naive_bytes,
           100.0 * (double)st.scratch_bytes / (double)st.naive_bytes, pairs, bad);
    CHECK(bad == 0, "%d live pairs share memory", bad);
    CHECK(st.scratch_bytes < st.naive_bytes / 4, "planner reuses memory: %zu vs %zu",
          st.scratch_bytes, st.naive_bytes);
    CHECK(x->plan_offset >= 0, "input planned");
    /* the input is alive all along: nothing may overlap it */
    for (int i = 0; i < sdc_graph_n_nodes(g); i++) {
        sdc_tensor *t = sdc_graph_get_node(g, i);
        int64_t a0 = x->plan_offset, a1 = a0 + (int64_t)sdc_tensor_nbytes(x);
        int64_t b0 = t->plan_offset, b1 = b0 + (int64_t)sdc_tensor_nbytes(t);
        CHECK(!(a0 < b1 && b0 < a1), "node %d overlaps the input", i);
    }
    sdc_graph_free(g);
}

static void test_views_keep_owner_alive(void) {
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {64, 4};
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *a = node1(g, x, 64);
    int64_t vne[2] = {32, 4};
    size_t vnb[2] = {4, 256};
    sdc_tensor *v = sdc_graph_view_node(g, a, 2, vne, vnb, 128);
    sdc_tensor *b = node1(g, x, 64);
    sdc_tensor *c = node1(g, b, 64);
    sdc_tensor *d = node1(g, v, 32); /* reads a (through v) after b, c */
    sdc_graph_mark_output(g, d);
    sdc_graph_mark_output(g, c);
    sdc_plan_stats st;
    CHECK(sdc_graph_plan(g, 64, NULL, NULL, &st) == SDC_OK, "plan");
    int pairs = 0;
    CHECK(check_no_overlap(g, &pairs) == 0, "views: owner freed while a view is live");
    /* a view outside its source is a build error */
    int64_t big[2] = {64, 5};
    size_t bnb[2] = {4, 256};
    CHECK(sdc_graph_view_node(g, a, 2, big, bnb, 0) == NULL, "oversized view rejected");
    CHECK(sdc_graph_status(g) != SDC_OK && strstr(sdc_graph_error(g), "exceeds"), "message: %s",
          sdc_graph_error(g));
    sdc_graph_free(g);
}

/* Weights live outside the graph: their struct fields (zeroed here, like a calloc'ed
 * weight table) must neither be planned nor written by the planner. */
static void test_foreign_tensors_untouched(void) {
    sdc_tensor w;
    memset(&w, 0, sizeof w); /* index 0, plan_offset 0: must not look like node 0 */
    w.type = SDC_TYPE_F32;
    w.ne[0] = 64, w.ne[1] = 4, w.ne[2] = w.ne[3] = 1;
    sdc_tensor_set_contiguous_strides(&w);
    static float wdata[256];
    w.data = wdata;
    sdc_graph *g = sdc_graph_create();
    sdc_tensor *a = node1(g, &w, 64); /* node 0 reads the weight */
    sdc_tensor *b = node1(g, a, 64);
    sdc_tensor *c = node1(g, b, 64);
    sdc_tensor *d = node2(g, c, a); /* a must stay alive until here */
    sdc_graph_mark_output(g, d);
    sdc_plan_stats st;
    CHECK(sdc_graph_plan(g, 64, NULL, NULL, &st) == SDC_OK, "plan");
    int pairs = 0;
    CHECK(check_no_overlap(g, &pairs) == 0, "a weight read by node 0 freed node 0's memory");
    CHECK(w.last_use == 0 && w.plan_offset == 0 && w.data == wdata, "weight fields untouched");
    sdc_graph_free(g);
}

typedef struct pool_job {
    _Atomic long sum;
    long stage_ok;
    int n;
    long *slots;
} pool_job;

static void pool_task(void *arg, int ith, int nth) {
    pool_job *j = arg;
    extern sdc_threadpool *g_pool;
    for (int round = 0; round < 50; round++) {
        j->slots[ith] = round * 1000 + ith;
        sdc_threadpool_barrier(g_pool);
        /* after the barrier every thread sees every slot of this round */
        long ok = 1;
        for (int t = 0; t < nth; t++) ok &= j->slots[t] == round * 1000 + t;
        atomic_fetch_add(&j->sum, ok);
        sdc_threadpool_barrier(g_pool);
    }
}
sdc_threadpool *g_pool;

static void test_threadpool(void) {
    for (int n = 1; n <= 4; n++) {
        g_pool = sdc_threadpool_create(n);
        CHECK(sdc_threadpool_size(g_pool) == n, "pool size %d", n);
        long slots[8] = {0};
        for (int rep = 0; rep < 20; rep++) {
            pool_job j = {.n = n, .slots = slots};
            atomic_store(&j.sum, 0);
            sdc_threadpool_run(g_pool, pool_task, &j);
            CHECK(atomic_load(&j.sum) == 50L * n, "threads %d rep %d: %ld of %d barrier rounds", n,
                  rep, atomic_load(&j.sum), 50 * n);
        }
        sdc_threadpool_free(g_pool);
    }
    printf("thread pool: 1..4 threads, 20 runs x 50 barrier rounds each\n");
}

int main(void) {
    test_planner_chain();
    test_views_keep_owner_alive();
    test_foreign_tensors_untouched();
    test_threadpool();
    TEST_MAIN_END();
}
