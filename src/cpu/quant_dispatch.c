/* Picks the quantiser variants for the SIMD level in use (sdc_cpu_isa(), asked on every
 * call so that SDC_CPU_ISA and sdc_cpu_set_isa apply at once). */
#include "cpu/quant_dispatch.h"

#include <stddef.h>

#include "core/quant_simd.h"
#include "cpu/cpu_features.h"
#include "cpu/quant_avx2.h"
#include "cpu/quant_neon.h"

#if defined(SDC_HAVE_X86)
static const sdc_quant_simd g_avx2 = {
    .dequant_q4_0 = sdc_dequant_q4_0_avx2,
    .dequant_q8_0 = sdc_dequant_q8_0_avx2,
    .dequant_q4_K = sdc_dequant_q4_K_avx2,
    .dequant_q6_K = sdc_dequant_q6_K_avx2,
    .f16_to_f32 = sdc_f16_to_f32_row_avx2,
    .bf16_to_f32 = sdc_bf16_to_f32_row_avx2,
    .search_symmetric = sdc_qsearch_symmetric_avx2,
    .search_affine = sdc_qsearch_affine_avx2,
};
#endif

#if defined(__aarch64__)
/* no NEON scale searches yet: NULL entries run the scalar ones */
static const sdc_quant_simd g_neon = {
    .dequant_q4_0 = sdc_dequant_q4_0_neon,
    .dequant_q8_0 = sdc_dequant_q8_0_neon,
    .dequant_q4_K = sdc_dequant_q4_K_neon,
    .dequant_q6_K = sdc_dequant_q6_K_neon,
    .f16_to_f32 = sdc_f16_to_f32_row_neon,
    .bf16_to_f32 = sdc_bf16_to_f32_row_neon,
};
#endif

static const sdc_quant_simd *cpu_quant_table(void) {
#if defined(SDC_HAVE_X86)
    if (sdc_cpu_isa() >= SDC_ISA_AVX2) return &g_avx2;
#endif
#if defined(__aarch64__)
    if (sdc_cpu_isa() == SDC_ISA_NEON) return &g_neon;
#endif
    return NULL;
}

void sdc_cpu_quant_init(void) {
    sdc_quant_simd_set_provider(cpu_quant_table);
}
