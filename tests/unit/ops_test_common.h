/* Helpers for the op kernel tests: hand-made tensors (malloc'ed data), strided views,
 * element access in double, and running a kernel as nth threads would (each share
 * in turn; kernels without barriers split work the same way). */
#ifndef SDC_OPS_TEST_COMMON_H
#define SDC_OPS_TEST_COMMON_H

#include "core/fp16.h"
#include "core/tensor.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_ops.h"
#include "test_util.h"

static unsigned long long g_seed = 0x9e3779b97f4a7c15ull;

static inline sdc_tensor *t_new(sdc_type type, int64_t n0, int64_t n1, int64_t n2, int64_t n3) {
    sdc_tensor *t = calloc(1, sizeof *t);
    t->type = type;
    t->ne[0] = n0, t->ne[1] = n1, t->ne[2] = n2, t->ne[3] = n3;
    sdc_tensor_set_contiguous_strides(t);
    size_t bytes = sdc_tensor_nbytes(t);
    t->data = calloc(1, bytes ? bytes : 1);
    t->index = -1;
    return t;
}

/* A header viewing `a`'s data (not owning it). */
static inline sdc_tensor *t_view(const sdc_tensor *a, const int64_t *ne, const size_t *nb,
                                 size_t off) {
    sdc_tensor *t = calloc(1, sizeof *t);
    t->type = a->type;
    for (int i = 0; i < 4; i++) t->ne[i] = ne[i], t->nb[i] = nb[i];
    t->data = (char *)a->data + off;
    t->view_src = (sdc_tensor *)a;
    return t;
}

static inline sdc_tensor *t_permute(const sdc_tensor *a, int x0, int x1, int x2, int x3) {
    int ax[4] = {x0, x1, x2, x3};
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < 4; i++) ne[i] = a->ne[ax[i]], nb[i] = a->nb[ax[i]];
    return t_view(a, ne, nb, 0);
}

static inline void t_free(sdc_tensor *t) {
    if (!t) return;
    if (!t->view_src) free(t->data);
    free(t);
}

static inline double t_get(const sdc_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const char *p = (const char *)sdc_tensor_ptr(t, i0, i1, i2, i3);
    switch (t->type) {
    case SDC_TYPE_F16:
        return sdc_fp16_to_f32(*(const sdc_fp16 *)p);
    case SDC_TYPE_BF16:
        return sdc_bf16_to_f32(*(const sdc_bf16 *)p);
    case SDC_TYPE_I32:
        return *(const int32_t *)p;
    default:
        return *(const float *)p;
    }
}

static inline void t_set(sdc_tensor *t, int64_t i0, int64_t i1, int64_t i2, int64_t i3, double v) {
    char *p = (char *)sdc_tensor_ptr(t, i0, i1, i2, i3);
    switch (t->type) {
    case SDC_TYPE_F16:
        *(sdc_fp16 *)p = sdc_f32_to_fp16((float)v);
        break;
    case SDC_TYPE_BF16:
        *(sdc_bf16 *)p = sdc_f32_to_bf16((float)v);
        break;
    case SDC_TYPE_I32:
        *(int32_t *)p = (int32_t)v;
        break;
    default:
        *(float *)p = (float)v;
        break;
    }
}

/* Uniform random values in [lo, hi) over every element. */
static inline void t_fill(sdc_tensor *t, double lo, double hi) {
    for (int64_t i3 = 0; i3 < t->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < t->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < t->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < t->ne[0]; i0++)
                    t_set(t, i0, i1, i2, i3, lo + (hi - lo) * 0.5 * (t_randf(&g_seed) + 1.0));
}

/* A new contiguous output node of op with sources. */
static inline sdc_tensor *t_node(sdc_op op, sdc_type type, const int64_t *ne, sdc_tensor *s0,
                                 sdc_tensor *s1, sdc_tensor *s2, sdc_tensor *s3) {
    sdc_tensor *t = t_new(type, ne[0], ne[1], ne[2], ne[3]);
    t->op = op;
    t->src[0] = s0, t->src[1] = s1, t->src[2] = s2, t->src[3] = s3;
    return t;
}

/* Runs dst's kernel as nth threads, one share after another. */
static inline void t_run(sdc_tensor *dst, int nth) {
    sdc_cpu_work_fn wf = sdc_cpu_work_for(dst->op);
    size_t ws = wf ? wf(dst, nth) : 0;
    void *wdata = ws ? malloc(ws) : NULL;
    for (int ith = 0; ith < nth; ith++) {
        sdc_cpu_params p = {.ith = ith, .nth = nth, .wdata = wdata, .wsize = ws, .pool = NULL};
        sdc_cpu_kernel_for(dst->op)(&p, dst);
    }
    free(wdata);
}

/* Max |dst - ref| over dst's elements (ref laid out contiguously in dst's order). */
static inline double t_max_err(const sdc_tensor *dst, const double *ref) {
    double m = 0;
    int64_t k = 0;
    for (int64_t i3 = 0; i3 < dst->ne[3]; i3++)
        for (int64_t i2 = 0; i2 < dst->ne[2]; i2++)
            for (int64_t i1 = 0; i1 < dst->ne[1]; i1++)
                for (int64_t i0 = 0; i0 < dst->ne[0]; i0++, k++) {
                    double d = fabs(t_get(dst, i0, i1, i2, i3) - ref[k]);
                    if (d != d) return INFINITY;
                    if (d > m) m = d;
                }
    return m;
}

#define T_N(t) ((size_t)sdc_tensor_nelements(t))

#endif
