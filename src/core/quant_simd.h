/* Fast dequantisers (src/core/quant_avx2.c), chosen at run time. They give the
 * same floats as the scalar code: the same products, never fused. Private to src/core. */
#ifndef SDC_CORE_QUANT_SIMD_H
#define SDC_CORE_QUANT_SIMD_H

#include <stdint.h>

#include "cpu/cpu_features.h"

#if defined(SDC_HAVE_X86)
void sdc_dequant_q4_0_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q8_0_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q4_K_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q6_K_avx2(const void *src, float *dst, int64_t n);
void sdc_f16_to_f32_row_avx2(const void *src, float *dst, int64_t n);
void sdc_bf16_to_f32_row_avx2(const void *src, float *dst, int64_t n);

/* Returns from the calling function after running the AVX2 variant when it may be used. */
#define SDC_QUANT_DISPATCH_AVX2(fn, src, dst, n)                                                   \
    do {                                                                                           \
        if (sdc_cpu_isa() >= SDC_ISA_AVX2) {                                                       \
            fn##_avx2(src, dst, n);                                                                \
            return;                                                                                \
        }                                                                                          \
    } while (0)
#else
#define SDC_QUANT_DISPATCH_AVX2(fn, src, dst, n) ((void)0)
#endif

#endif
