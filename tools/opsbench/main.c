/* sdc-opsbench: throughput of the non-GEMM op kernels (conv2d, attention, norms,
 * elementwise) on 1 and N threads. Figures only; nothing here is a test.
 *   sdc-opsbench [-t N] [--quick] [--cpu-time] [filter...]   (filter: words in the labels)
 * --cpu-time times runs by process CPU time / threads, which leaves out the time threads
 * wait for a core on a loaded machine (spinning and imbalance still count). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/threadpool.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_ops.h"
#include "cpu/quant_dispatch.h"

static int g_quick, g_nfilters, g_cpu_time;
static char **g_filters;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double run_clock(int nth) {
    if (!g_cpu_time) return now_s();
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return ((double)t.tv_sec + (double)t.tv_nsec * 1e-9) / nth;
}

static int selected(const char *label) {
    if (!g_nfilters) return 1;
    for (int i = 0; i < g_nfilters; i++)
        if (strstr(label, g_filters[i])) return 1;
    return 0;
}

static unsigned long long g_rng = 88172645463325252ull;
static float randf(void) {
    g_rng ^= g_rng << 13, g_rng ^= g_rng >> 7, g_rng ^= g_rng << 17;
    return (float)((double)(g_rng >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* A contiguous tensor with random data (F32 values stored in its type). */
static sdc_tensor *tensor(sdc_type type, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    sdc_tensor *t = calloc(1, sizeof *t);
    t->type = type;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = n2, t->ne[3] = n3;
    const sdc_type_traits *tr = sdc_type_get(type);
    int64_t n = n0 * n1 * n2 * n3;
    float *tmp = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) tmp[i] = randf();
    if (tr->is_quantized) { /* conv weights: Cout rows of n0*n1*n2 values */
        size_t rb = sdc_type_row_bytes(type, n0 * n1 * n2);
        t->data = malloc(rb * (size_t)n3);
        for (int64_t r = 0; r < n3; r++)
            tr->from_float(tmp + r * n0 * n1 * n2, (char *)t->data + r * rb, n0 * n1 * n2, NULL);
    } else {
        sdc_tensor_set_contiguous_strides(t);
        t->data = malloc(sdc_tensor_nbytes(t));
        tr->from_float(tmp, t->data, n, NULL);
    }
    free(tmp);
    return t;
}

static void tensor_free(sdc_tensor *t) {
    if (t) free(t->data), free(t);
}

typedef struct {
    sdc_tensor *dst;
    void *work;
    size_t wsize;
    sdc_threadpool *pool;
} job;

static void task(void *arg, int ith, int nth) {
    job *j = arg;
    sdc_cpu_params p = {ith, nth, j->work, j->wsize, j->pool};
    sdc_cpu_kernel_for(j->dst->op)(&p, j->dst);
}

/* Best wall time of several runs (the machine is shared: the minimum is the least
 * disturbed figure). */
static double time_node(sdc_tensor *dst, sdc_threadpool *pool) {
    const int nth = sdc_threadpool_size(pool);
    sdc_cpu_work_fn wf = sdc_cpu_work_for(dst->op);
    size_t ws = wf ? wf(dst, nth) : 0;
    job j = {dst, malloc(ws ? ws : 1), ws, pool};
    double budget = g_quick ? 0.2 : 1.0, best = 1e30, start = now_s();
    int runs = 0;
    do {
        double t0 = run_clock(nth);
        sdc_threadpool_run(pool, task, &j);
        double t = run_clock(nth) - t0;
        if (t < best) best = t;
        runs++;
    } while (runs < 2 || (now_s() - start < budget && runs < 50));
    free(j.work);
    return best;
}

static sdc_threadpool *g_p1, *g_pn;

/* One row: GFLOP/s when flops > 0, else ns per output element. */
static void row(const char *label, sdc_tensor *dst, double flops) {
    if (!selected(label)) return;
    sdc_tensor_set_contiguous_strides(dst);
    dst->data = malloc(sdc_tensor_nbytes(dst));
    double t1 = time_node(dst, g_p1), tn = time_node(dst, g_pn);
    double n = (double)sdc_tensor_nelements(dst);
    if (flops > 0)
        printf("%-44s %9.1f %9.1f GFLOP/s  %5.2fx\n", label, flops / t1 * 1e-9, flops / tn * 1e-9,
               t1 / tn);
    else
        printf("%-44s %9.3f %9.3f ns/elem  %5.2fx\n", label, t1 * 1e9 / n, tn * 1e9 / n, t1 / tn);
    free(dst->data);
    dst->data = NULL;
}

static void bench_conv(void) {
    static const struct {
        int64_t w, cin, cout, k;
        int stride, groups;
        sdc_type wt;
    } cs[] = {
        {64, 128, 128, 3, 1, 1, SDC_TYPE_F32},   {64, 128, 128, 3, 1, 1, SDC_TYPE_F16},
        {32, 512, 512, 3, 1, 1, SDC_TYPE_F16},   {64, 256, 256, 3, 2, 1, SDC_TYPE_F16},
        {32, 512, 512, 3, 1, 1, SDC_TYPE_Q8_0},  {64, 512, 512, 1, 1, 1, SDC_TYPE_F16},
        {64, 256, 256, 3, 1, 256, SDC_TYPE_F32},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const int64_t pad = cs[i].k / 2, ow = (cs[i].w + 2 * pad - cs[i].k) / cs[i].stride + 1;
        sdc_tensor *x = tensor(SDC_TYPE_F32, cs[i].w, cs[i].w, cs[i].cin, 1);
        sdc_tensor *w = tensor(cs[i].wt, cs[i].k, cs[i].k, cs[i].cin / cs[i].groups, cs[i].cout);
        sdc_tensor dst = {.type = SDC_TYPE_F32, .ne = {ow, ow, cs[i].cout, 1}, .op = SDC_OP_CONV2D};
        dst.src[0] = x, dst.src[1] = w;
        int32_t prm[7] = {cs[i].stride, cs[i].stride, (int)pad, (int)pad, 1, 1, cs[i].groups};
        memcpy(dst.params.i, prm, sizeof prm);
        char label[128];
        snprintf(label, sizeof label, "conv2d %lldx%lld %lld->%lld %lldx%lld s%d g%d w %s",
                 (long long)cs[i].w, (long long)cs[i].w, (long long)cs[i].cin,
                 (long long)cs[i].cout, (long long)cs[i].k, (long long)cs[i].k, cs[i].stride,
                 cs[i].groups, sdc_type_name(cs[i].wt));
        row(label, &dst,
            2.0 * (double)(ow * ow * cs[i].cout) *
                (double)(cs[i].k * cs[i].k * cs[i].cin / cs[i].groups));
        tensor_free(x), tensor_free(w);
    }
}

static void bench_attention(void) {
    static const struct {
        int64_t l, d, h;
        sdc_type t;
    } as[] = {
        {1280, 64, 12, SDC_TYPE_F32}, {4096, 64, 4, SDC_TYPE_F32}, {4096, 128, 2, SDC_TYPE_F16}};
    for (size_t i = 0; i < sizeof as / sizeof as[0]; i++) {
        sdc_tensor *q = tensor(as[i].t, as[i].d, as[i].l, as[i].h, 1);
        sdc_tensor *k = tensor(as[i].t, as[i].d, as[i].l, as[i].h, 1);
        sdc_tensor *v = tensor(as[i].t, as[i].d, as[i].l, as[i].h, 1);
        sdc_tensor dst = {
            .type = SDC_TYPE_F32, .ne = {as[i].d, as[i].h, as[i].l, 1}, .op = SDC_OP_ATTENTION};
        dst.src[0] = q, dst.src[1] = k, dst.src[2] = v;
        dst.params.f[0] = 0.125f;
        char label[128];
        snprintf(label, sizeof label, "attention seq %lld D=%lld H=%lld %s", (long long)as[i].l,
                 (long long)as[i].d, (long long)as[i].h, sdc_type_name(as[i].t));
        row(label, &dst, 4.0 * (double)(as[i].l * as[i].l) * (double)(as[i].d * as[i].h));
        tensor_free(q), tensor_free(k), tensor_free(v);
    }
}

static void bench_rowwise(void) {
    const int64_t n0 = 1152, n1 = 4096;
    sdc_tensor *a = tensor(SDC_TYPE_F32, n0, n1, 1, 1), *w = tensor(SDC_TYPE_F32, n0, 1, 1, 1);
    sdc_tensor *b = tensor(SDC_TYPE_F32, n0, n1, 1, 1);
    static const struct {
        sdc_op op;
        const char *name;
    } ops[] = {{SDC_OP_ADD, "add"},           {SDC_OP_MUL, "mul (bcast row)"},
               {SDC_OP_SILU, "silu"},         {SDC_OP_GELU, "gelu"},
               {SDC_OP_RMS_NORM, "rms_norm"}, {SDC_OP_LAYER_NORM, "layer_norm"},
               {SDC_OP_SOFTMAX, "softmax"},   {SDC_OP_CPY, "cast f32->f16"}};
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        sdc_tensor dst = {.type = ops[i].op == SDC_OP_CPY ? SDC_TYPE_F16 : SDC_TYPE_F32,
                          .ne = {n0, n1, 1, 1},
                          .op = ops[i].op};
        dst.src[0] = a;
        if (ops[i].op == SDC_OP_ADD) dst.src[1] = b;
        if (ops[i].op == SDC_OP_MUL || ops[i].op == SDC_OP_RMS_NORM ||
            ops[i].op == SDC_OP_LAYER_NORM)
            dst.src[1] = w;
        dst.params.f[0] = ops[i].op == SDC_OP_SOFTMAX ? 0.125f : 1e-6f;
        char label[128];
        snprintf(label, sizeof label, "%s [1152,4096]", ops[i].name);
        row(label, &dst, 0);
    }
    sdc_tensor *img = tensor(SDC_TYPE_F32, 128, 128, 256, 1);
    sdc_tensor gn = {.type = SDC_TYPE_F32, .ne = {128, 128, 256, 1}, .op = SDC_OP_GROUP_NORM};
    gn.src[0] = img;
    gn.params.i[0] = 32, gn.params.f[1] = 1e-6f, gn.params.i[2] = 2;
    row("group_norm [128,128,256] 32 groups", &gn, 0);
    tensor_free(img), tensor_free(a), tensor_free(b), tensor_free(w);
}

int main(int argc, char **argv) {
    sdc_cpu_quant_init(); /* the SIMD row converters, as a CPU backend installs them */
    int nth = sdc_cpu_physical_cores();
    g_filters = calloc((size_t)argc, sizeof(char *));
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            nth = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--quick")) {
            g_quick = 1;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            g_cpu_time = 1;
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "usage: sdc-opsbench [-t N] [--quick] [--cpu-time] [filter...]\n");
            return 2;
        } else {
            g_filters[g_nfilters++] = argv[i];
        }
    }
    if (nth < 1) nth = 1;
    g_p1 = sdc_threadpool_create(1);
    g_pn = sdc_threadpool_create(nth);
    printf("sdc-opsbench: ISA %s; columns: 1 thread, %d threads, speedup (best %s)\n",
           sdc_isa_name(sdc_cpu_isa()), nth,
           g_cpu_time ? "process CPU time / threads" : "wall time");
    bench_attention();
    bench_conv();
    bench_rowwise();
    sdc_threadpool_free(g_p1);
    sdc_threadpool_free(g_pn);
    free(g_filters);
    return 0;
}
