/* f16 and bf16 rows. Both round to nearest even (as ggml's reference converters do);
 * an importance vector cannot change a per-element rounding, so it is ignored. */
#include "core/quant_search.h" /* first: disables FP contraction */

#include "core/quant.h"
#include "core/quant_simd.h"

void sdc_f32_to_f16_row(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_fp16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sdc_f32_to_fp16(src[i]);
}

void sdc_f16_to_f32_row(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(f16_to_f32, src, dst, n);
    const sdc_fp16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sdc_fp16_to_f32(s[i]);
}

void sdc_f32_to_bf16_row(const float *src, void *dst, int64_t n, const float *importance) {
    (void)importance;
    sdc_bf16 *d = dst;
    for (int64_t i = 0; i < n; i++) d[i] = sdc_f32_to_bf16(src[i]);
}

void sdc_bf16_to_f32_row(const void *src, float *dst, int64_t n) {
    SDC_QUANT_DISPATCH(bf16_to_f32, src, dst, n);
    const sdc_bf16 *s = src;
    for (int64_t i = 0; i < n; i++) dst[i] = sdc_bf16_to_f32(s[i]);
}
