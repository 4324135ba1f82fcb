/* Small helpers shared by the CPU op kernels: element access for the float types
 * and row index arithmetic. */
#ifndef SDC_CPU_OPS_UTIL_H
#define SDC_CPU_OPS_UTIL_H

#include "core/fp16.h"
#include "cpu/cpu_ops.h"

static inline float sdc_load_elem(sdc_type t, const void *p) {
    switch (t) {
    case SDC_TYPE_F16:
        return sdc_fp16_to_f32(*(const sdc_fp16 *)p);
    case SDC_TYPE_BF16:
        return sdc_bf16_to_f32(*(const sdc_bf16 *)p);
    default:
        return *(const float *)p;
    }
}

static inline void sdc_store_elem(sdc_type t, void *p, float v) {
    switch (t) {
    case SDC_TYPE_F16:
        *(sdc_fp16 *)p = sdc_f32_to_fp16(v);
        break;
    case SDC_TYPE_BF16:
        *(sdc_bf16 *)p = sdc_f32_to_bf16(v);
        break;
    default:
        *(float *)p = v;
        break;
    }
}

/* Row r of a tensor with rows ne[1]*ne[2]*ne[3] -> (i1, i2, i3). */
static inline void sdc_row_index(const sdc_tensor *t, int64_t r, int64_t *i1, int64_t *i2,
                                 int64_t *i3) {
    *i1 = r % t->ne[1];
    r /= t->ne[1];
    *i2 = r % t->ne[2];
    *i3 = r / t->ne[2];
}

static inline char *sdc_row_ptr(const sdc_tensor *t, int64_t i1, int64_t i2, int64_t i3) {
    return (char *)t->data + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

/* This thread's share of a tensor's rows. */
static inline void sdc_split_rows(const sdc_cpu_params *p, const sdc_tensor *t, int64_t *lo,
                                  int64_t *hi) {
    sdc_cpu_split(sdc_tensor_nrows(t), p->ith, p->nth, lo, hi);
}

#endif
