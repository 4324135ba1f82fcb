/* The CUDA backend against the CPU backend, op by op: each case builds one small graph
 * (strided views, broadcasts, every weight type the GEMMs read, masks with -inf, grouped
 * attention) twice, runs it on cpu and on cuda0, and compares the outputs. Exit 77 when
 * sdc was built without CUDA or no GPU is visible (the CPU-side readers the kernels share
 * are checked by test_cuda_dequant_host on every machine). */
#include <math.h>

#include "core/backend.h"
#include "core/ops.h"
#include "core/quant.h"
#include "placement/devices.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SDC_HAVE_CUDA
#include "cuda/backend_cuda.h"

typedef struct host_in {
    sdc_tensor *t;
    void *data;
    size_t size;
} host_in;

typedef struct build {
    sdc_graph *g;
    host_in in[8];
    int n_in;
    uint32_t seed;
} build;

/* weights stay allocated to the end: the backend caches uploads by host address */
static void *g_keep[256];
static int g_n_keep;

static float frand(uint32_t *s) {
    *s = *s * 1664525u + 1013904223u;
    return (float)(*s >> 8) / 16777216.0f * 2.0f - 1.0f;
}

/* A graph input of `type` filled with values in [-amp, amp] (quantised when asked). As a
 * weight (param) it keeps host data, which the CUDA backend uploads into its cache. */
static sdc_tensor *input(build *b, sdc_type type, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                         float amp, bool param) {
    int64_t ne[4] = {n0, n1, n2, n3};
    sdc_tensor *t = sdc_graph_input(b->g, type, 4, ne);
    const int64_t n = n0 * n1 * n2 * n3;
    float *f = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) f[i] = amp * frand(&b->seed);
    size_t size = sdc_tensor_nbytes(t);
    void *data = malloc(size);
    if (type == SDC_TYPE_I32) {
        for (int64_t i = 0; i < n; i++) ((int32_t *)data)[i] = (int32_t)(fabsf(f[i]) * amp);
    } else if (type == SDC_TYPE_F32) {
        memcpy(data, f, size);
    } else {
        sdc_type_get(type)->from_float(f, data, n, NULL);
    }
    free(f);
    if (param) {
        t->data = data;
        t->flags = SDC_TENSOR_PARAM;
    }
    if (param && g_n_keep < 256) g_keep[g_n_keep++] = data;
    b->in[b->n_in++] = (host_in){param ? NULL : t, param ? NULL : data, size};
    return t;
}

typedef sdc_tensor *(*case_fn)(build *b);

static sdc_status run_on(sdc_backend *be, case_fn fn, float **out, int64_t *n) {
    build b = {.g = sdc_graph_create(), .seed = 7};
    sdc_tensor *y = fn(&b);
    sdc_status s = sdc_graph_status(b.g);
    sdc_input_data in[8];
    int k = 0;
    for (int i = 0; i < b.n_in; i++)
        if (b.in[i].t) in[k++] = (sdc_input_data){b.in[i].t, b.in[i].data, b.in[i].size};
    if (s == SDC_OK) {
        sdc_graph_mark_output(b.g, y);
        s = sdc_backend_set_inputs(be, b.g, in, k);
    }
    if (s == SDC_OK) s = sdc_backend_compute(be, b.g, NULL, NULL);
    if (s == SDC_OK) {
        *n = sdc_tensor_nelements(y);
        *out = malloc((size_t)*n * sizeof(float));
        s = sdc_backend_tensor_get(be, y, *out, 0, (size_t)*n * sizeof(float));
    }
    for (int i = 0; i < b.n_in; i++) free(b.in[i].data);
    sdc_graph_free(b.g);
    return s;
}

static int fails;

static void compare(const char *name, case_fn fn, sdc_backend *cpu, sdc_backend *gpu, double tol) {
    float *a = NULL, *c = NULL;
    int64_t na = 0, nc = 0;
    sdc_status s1 = run_on(cpu, fn, &a, &na), s2 = run_on(gpu, fn, &c, &nc);
    if (s1 != SDC_OK || s2 != SDC_OK || na != nc) {
        printf("FAIL %-18s cpu %d cuda %d: %s\n", name, s1, s2, sdc_last_error());
        fails++;
    } else {
        double mx = 0, e = 0;
        for (int64_t i = 0; i < na; i++) mx = fmax(mx, fabs(a[i]));
        for (int64_t i = 0; i < na; i++) {
            double d = isnan(a[i]) || isnan(c[i]) ? (isnan(a[i]) != isnan(c[i]) ? 1e30 : 0)
                                                  : fabs((double)a[i] - c[i]);
            e = fmax(e, d);
        }
        const double rel = e / (mx > 0 ? mx : 1);
        printf("%s %-18s %7lld values: max |cuda - cpu| %.3g (relative %.3g, limit %.0e)\n",
               rel <= tol ? "ok  " : "FAIL", name, (long long)na, e, rel, tol);
        if (rel > tol) fails++;
    }
    free(a), free(c);
}

/* ---- cases ---- */

static sdc_tensor *c_binary(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 33, 7, 5, 2, 1, false);
    sdc_tensor *y = input(b, SDC_TYPE_F16, 33, 1, 5, 1, 1, false);
    sdc_tensor *z = input(b, SDC_TYPE_F32, 1, 7, 1, 2, 1, false);
    sdc_tensor *xt = sdc_permute(b->g, x, 0, 2, 1, 3); /* strided a */
    sdc_tensor *s = sdc_add(b->g, sdc_cont(b->g, xt), sdc_permute(b->g, y, 0, 2, 1, 3));
    s = sdc_mul(b->g, sdc_permute(b->g, s, 0, 2, 1, 3), z);
    s = sdc_div(b->g, sdc_sub(b->g, s, y), sdc_scale(b->g, sdc_sqr(b->g, z), 1.0f, 2.0f));
    return s;
}

static sdc_tensor *c_unary(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 64, 9, 3, 1, 4, false);
    sdc_tensor *s = sdc_gelu(b->g, x);
    s = sdc_add(b->g, s, sdc_gelu_erf(b->g, x));
    s = sdc_add(b->g, s, sdc_silu(b->g, sdc_transpose(b->g, x)));
    s = sdc_add(b->g, s, sdc_sigmoid(b->g, x));
    s = sdc_add(b->g, s, sdc_tanh(b->g, sdc_relu(b->g, x)));
    s = sdc_add(b->g, s, sdc_sqrt(b->g, sdc_exp(b->g, sdc_clamp(b->g, x, -2.0f, 1.5f))));
    return s;
}

static sdc_tensor *c_gelu_f16(build *b) {
    return sdc_gelu_f16(b->g, input(b, SDC_TYPE_F32, 1000, 13, 1, 1, 12, false));
}

static sdc_tensor *c_softmax(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 300, 17, 4, 2, 3, false);
    sdc_tensor *m = input(b, SDC_TYPE_F16, 300, 17, 1, 2, 2, false);
    return sdc_add(b->g, sdc_softmax(b->g, x, m, 0.7f), sdc_softmax(b->g, x, NULL, 1.3f));
}

static sdc_tensor *flat(sdc_graph *g, sdc_tensor *t) {
    int64_t n[1] = {sdc_tensor_nelements(t)};
    return sdc_reshape(g, sdc_cont(g, t), 1, n);
}

static sdc_tensor *join(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    return sdc_concat(g, flat(g, a), flat(g, b), 0);
}

static sdc_tensor *vec(build *b, int64_t n, bool param) {
    int64_t ne[1] = {n};
    return sdc_reshape(b->g, input(b, SDC_TYPE_F32, n, 1, 1, 1, 1, param), 1, ne);
}

static sdc_tensor *c_norms(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 320, 11, 3, 1, 2, false);
    sdc_tensor *w = vec(b, 320, true), *bi = vec(b, 320, true);
    sdc_tensor *s = sdc_layer_norm(b->g, x, w, bi, 1e-5f);
    s = sdc_add(b->g, s, sdc_rms_norm(b->g, sdc_permute(b->g, x, 0, 2, 1, 3), w, 1e-6f));
    return join(b->g, s, sdc_mean(b->g, x));
}

static sdc_tensor *c_group_norm(build *b) {
    sdc_tensor *img = input(b, SDC_TYPE_F32, 9, 7, 32, 2, 3, false);
    sdc_tensor *gn = sdc_group_norm(b->g, img, 8, vec(b, 32, true), vec(b, 32, true), 1e-6f);
    sdc_tensor *seq = input(b, SDC_TYPE_F32, 50, 16, 2, 1, 3, false); /* [L, C, N] */
    sdc_tensor *g2 = sdc_group_norm(b->g, seq, 4, NULL, NULL, 1e-5f);
    return join(b->g, join(b->g, gn, g2), sdc_sum_rows(b->g, gn));
}

static sdc_tensor *c_rope(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 64, 4, 10, 2, 1, false); /* [D, H, L, B] */
    sdc_tensor *c = input(b, SDC_TYPE_F32, 32, 10, 1, 1, 1, false);
    sdc_tensor *sn = input(b, SDC_TYPE_F32, 32, 10, 1, 2, 1, false);
    sdc_tensor *r0 = sdc_rope(b->g, x, c, c, SDC_ROPE_INTERLEAVED);
    return join(b->g, r0, sdc_rope(b->g, x, c, sn, SDC_ROPE_HALF));
}

static sdc_tensor *c_timestep(build *b) {
    sdc_tensor *t = input(b, SDC_TYPE_F32, 5, 1, 1, 1, 900, false);
    int64_t n[1] = {5};
    return sdc_timestep_embedding(b->g, sdc_reshape(b->g, t, 1, n), 321, 10000);
}

static sdc_tensor *c_layout(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 6, 5, 3, 2, 1, false);
    sdc_tensor *y = input(b, SDC_TYPE_F32, 6, 5, 4, 2, 1, false);
    sdc_tensor *cat = sdc_concat(b->g, x, y, 2);
    int64_t rep[4] = {12, 10, 7, 2};
    sdc_tensor *r = sdc_repeat(b->g, cat, rep);
    sdc_tensor *p = sdc_pad(b->g, sdc_permute(b->g, x, 1, 0, 2, 3), 2, 1, 0, 1);
    sdc_tensor *u = sdc_upsample_nearest(b->g, x, 2);
    sdc_tensor *h = sdc_cast(b->g, sdc_transpose(b->g, y), SDC_TYPE_F16);
    sdc_tensor *back = sdc_cast(b->g, sdc_cast(b->g, h, SDC_TYPE_BF16), SDC_TYPE_F32);
    return join(b->g, join(b->g, join(b->g, r, p), u), back);
}

static sdc_tensor *c_get_rows(build *b) {
    sdc_tensor *table = input(b, SDC_TYPE_Q8_0, 64, 40, 1, 1, 1, true);
    sdc_tensor *ids = input(b, SDC_TYPE_I32, 7, 3, 1, 1, 39, false);
    int64_t ne[2] = {7, 3};
    return sdc_get_rows(b->g, table, sdc_reshape(b->g, ids, 2, ne));
}

static sdc_type g_wtype;

static sdc_tensor *c_matmul(build *b) {
    sdc_tensor *w = input(b, g_wtype, 256, 48, 2, 1, 0.5f, true);
    sdc_tensor *x = input(b, SDC_TYPE_F32, 256, 19, 4, 3, 1, false);
    sdc_tensor *y = sdc_matmul(b->g, w, x); /* w slices broadcast over x's dim 2 */
    sdc_tensor *xt = input(b, SDC_TYPE_F32, 19, 256, 1, 1, 1, false);
    sdc_tensor *w2 = sdc_slice(b->g, w, (int64_t[4]){256, 48, 1, 1}, (int64_t[4]){0, 0, 1, 0});
    return join(b->g, y, sdc_matmul(b->g, w2, sdc_transpose(b->g, xt))); /* strided x */
}

static sdc_tensor *c_conv(build *b) {
    sdc_tensor *x = input(b, SDC_TYPE_F32, 19, 14, 8, 2, 1, false);
    sdc_tensor *w = input(b, g_wtype, 3, 3, 4, 12, 0.3f, true); /* groups 2 */
    sdc_tensor *bias = vec(b, 12, true);
    sdc_tensor *y = sdc_conv2d(b->g, x, w, bias, 2, 1, 1, 1, 1, 1, 2);
    sdc_tensor *w1 = input(b, SDC_TYPE_F32, 1, 1, 8, 5, 0.3f, true);
    sdc_tensor *dw = input(b, SDC_TYPE_F16, 3, 3, 1, 8, 0.3f, true); /* depthwise, dilation 2 */
    sdc_tensor *z = sdc_conv2d(b->g, x, dw, NULL, 1, 1, 2, 2, 2, 2, 8);
    return join(b->g, join(b->g, y, sdc_conv2d(b->g, x, w1, NULL, 1, 1, 0, 0, 1, 1, 1)), z);
}

static sdc_tensor *c_attention(build *b) {
    sdc_tensor *q = input(b, SDC_TYPE_F32, 64, 37, 4, 2, 1, false);  /* [D, Lq, H, B] */
    sdc_tensor *k = input(b, SDC_TYPE_F16, 64, 300, 2, 2, 1, false); /* grouped: Hk = 2 */
    sdc_tensor *v = input(b, SDC_TYPE_F16, 80, 300, 2, 2, 1, false);
    sdc_tensor *m = input(b, SDC_TYPE_F32, 300, 37, 1, 2, 2, false);
    sdc_tensor *a1 = sdc_attention(b->g, q, k, v, m, 0.125f);
    sdc_tensor *q2 = input(b, SDC_TYPE_F32, 48, 5, 3, 1, 1, false);
    sdc_tensor *k2 = input(b, SDC_TYPE_F32, 48, 700, 3, 1, 1, false);
    sdc_tensor *v2 = input(b, SDC_TYPE_F32, 48, 700, 3, 1, 1, false);
    return join(b->g, a1, sdc_attention(b->g, q2, k2, v2, NULL, 0.2f));
}

int main(void) {
    int n = sdc_devices_count(), gi = -1;
    for (int i = 0; i < n; i++)
        if (!strncmp(sdc_devices_get(i)->name, "cuda", 4)) gi = gi < 0 ? i : gi;
    if (gi < 0) {
        printf("no CUDA device visible: skipped\n");
        return 77;
    }
    printf("cpu vs %s (%s)\n", sdc_devices_get(gi)->name, sdc_devices_get(gi)->description);
    sdc_backend *cpu = sdc_backend_cpu_create(2),
                *gpu = sdc_device_create_backend(sdc_devices_get(gi));
    if (!cpu || !gpu) {
        printf("FAIL: backend creation: %s\n", sdc_last_error());
        return 1;
    }
    compare("binary", c_binary, cpu, gpu, 1e-6);
    compare("unary", c_unary, cpu, gpu, 1e-5);
    compare("gelu_f16", c_gelu_f16, cpu, gpu, 1e-3);
    compare("softmax", c_softmax, cpu, gpu, 1e-5);
    compare("layer/rms/mean", c_norms, cpu, gpu, 1e-5);
    compare("group_norm", c_group_norm, cpu, gpu, 1e-5);
    compare("rope", c_rope, cpu, gpu, 1e-6);
    compare("timestep", c_timestep, cpu, gpu, 1e-5);
    compare("layout+casts", c_layout, cpu, gpu, 0);
    compare("get_rows q8_0", c_get_rows, cpu, gpu, 1e-6);
    const sdc_type wt[] = {SDC_TYPE_F32,  SDC_TYPE_F16,  SDC_TYPE_BF16, SDC_TYPE_Q8_0,
                           SDC_TYPE_Q4_0, SDC_TYPE_Q5_1, SDC_TYPE_Q2_K, SDC_TYPE_Q3_K,
                           SDC_TYPE_Q4_K, SDC_TYPE_Q5_K, SDC_TYPE_Q6_K};
    for (size_t i = 0; i < sizeof wt / sizeof wt[0]; i++) {
        char name[32];
        g_wtype = wt[i];
        snprintf(name, sizeof name, "matmul %s", sdc_type_name(wt[i]));
        compare(name, c_matmul, cpu, gpu, 1e-5);
        snprintf(name, sizeof name, "conv2d %s", sdc_type_name(wt[i]));
        compare(name, c_conv, cpu, gpu, 1e-5);
    }
    compare("attention", c_attention, cpu, gpu, 1e-5);
    sdc_backend_free(gpu);
    sdc_backend_free(cpu);
    for (int i = 0; i < g_n_keep; i++) free(g_keep[i]);
    printf("%s\n", fails ? "FAILED" : "every op matches the CPU backend");
    return fails ? 1 : 0;
}
#else
int main(void) {
    printf("built without CUDA (-DSDC_CUDA=ON): skipped\n");
    return 77;
}
#endif
