/* Placeholder until the quantisers land (quant helper replaces this file). */
#include "core/quant.h"

#define STUB(t)                                                                                    \
    void sdc_dequant_##t(const void *src, float *dst, int64_t n) {                                 \
        (void)src;                                                                                 \
        for (int64_t i = 0; i < n; i++) dst[i] = 0;                                                \
    }                                                                                              \
    void sdc_quant_##t(const float *src, void *dst, int64_t n, const float *importance) {          \
        (void)src, (void)dst, (void)n, (void)importance;                                           \
    }
SDC_QUANT_TYPES(STUB)

void sdc_f32_to_f16_row(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_fp16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sdc_f32_to_fp16(src[i]);
}
void sdc_f16_to_f32_row(const void *src, float *dst, int64_t n) {
    const sdc_fp16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sdc_fp16_to_f32(s[i]);
}
void sdc_f32_to_bf16_row(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_bf16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sdc_f32_to_bf16(src[i]);
}
void sdc_bf16_to_f32_row(const void *src, float *dst, int64_t n) {
    const sdc_bf16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sdc_bf16_to_f32(s[i]);
}
