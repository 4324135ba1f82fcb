/* Block-quantised formats (byte-identical to ggml's) and their row converters.
 * from_float_* take optional per-column importance weights (imatrix). */
#ifndef SDC_CORE_QUANT_H
#define SDC_CORE_QUANT_H

#include "core/fp16.h"
#include "core/types.h"

#define SDC_QUANT_TYPES(X)                                                                         \
    X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q8_1) X(q2_K) X(q3_K) X(q4_K) X(q5_K) X(q6_K) X(q8_K)

#define SDC_DECLARE_QUANT(t)                                                                       \
    void sdc_dequant_##t(const void *src, float *dst, int64_t n);                                  \
    void sdc_quant_##t(const float *src, void *dst, int64_t n, const float *importance);
SDC_QUANT_TYPES(SDC_DECLARE_QUANT)
#undef SDC_DECLARE_QUANT

void sdc_f32_to_f16_row(const float *src, void *dst, int64_t n, const float *importance);
void sdc_f16_to_f32_row(const void *src, float *dst, int64_t n);
void sdc_f32_to_bf16_row(const float *src, void *dst, int64_t n, const float *importance);
void sdc_bf16_to_f32_row(const void *src, float *dst, int64_t n);

#endif
