/* AArch64 ASIMD variants of the row dequantisers of src/core (src/cpu/quant_neon.c):
 * the same floats as the scalar code. */
#ifndef SDC_CPU_QUANT_NEON_H
#define SDC_CPU_QUANT_NEON_H

#include <stdint.h>

void sdc_dequant_q4_0_neon(const void *src, float *dst, int64_t n);
void sdc_dequant_q8_0_neon(const void *src, float *dst, int64_t n);
void sdc_dequant_q4_K_neon(const void *src, float *dst, int64_t n);
void sdc_dequant_q6_K_neon(const void *src, float *dst, int64_t n);
void sdc_f16_to_f32_row_neon(const void *src, float *dst, int64_t n);
void sdc_bf16_to_f32_row_neon(const void *src, float *dst, int64_t n);

#endif
