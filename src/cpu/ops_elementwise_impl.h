/* Row functions behind sdc_cpu_unary (scalar and SIMD variants). */
#ifndef SDC_CPU_OPS_ELEMENTWISE_IMPL_H
#define SDC_CPU_OPS_ELEMENTWISE_IMPL_H

#include "core/tensor.h"

/* d[i] = op(a[i]) for a contiguous row; f0/f1 are the op's params (scale/clamp). */
typedef void (*sdc_unary_row_fn)(sdc_op op, float *d, const float *a, int64_t n, float f0,
                                 float f1);
void sdc_unary_row_scalar(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1);
void sdc_unary_row_avx2(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1);
void sdc_unary_row_neon(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1);
float sdc_gelu_tanh_ref(float x);

#endif
