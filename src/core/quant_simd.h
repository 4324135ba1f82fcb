/* Fast variants of the row dequantisers and scale searches, chosen at run time.
 *
 * src/core knows only this table; the CPU backend (src/cpu/quant_dispatch.c) registers a
 * provider that returns the table for the SIMD level in use (or NULL: scalar). Every
 * variant gives the same floats and levels as the scalar code. Private to src/core
 * and the backend that fills it. */
#ifndef SDC_CORE_QUANT_SIMD_H
#define SDC_CORE_QUANT_SIMD_H

#include <stdbool.h>
#include <stdint.h>

typedef void (*sdc_quant_row_fn)(const void *src, float *dst, int64_t n);

typedef struct sdc_quant_simd {
    sdc_quant_row_fn dequant_q4_0, dequant_q8_0, dequant_q4_K, dequant_q6_K;
    sdc_quant_row_fn f16_to_f32, bf16_to_f32;
    /* the searches of quant_search.h, for groups of n <= 32 */
    float (*search_symmetric)(int n, int nmax, const float *x, const float *w, int8_t *L);
    float (*search_affine)(int n, int nmax, const float *x, const float *w, uint8_t *L,
                           float *neg_min, float rmin, float rdelta, int nstep, bool use_mad);
} sdc_quant_simd;

/* Returns the table to use now (NULL: scalar); asked on every call so that a changed
 * SIMD level (SDC_CPU_ISA, tests capping it) takes effect at once. */
typedef const sdc_quant_simd *(*sdc_quant_simd_provider)(void);

/* Registers the provider (NULL: scalar only). Safe to call from any thread, repeatedly. */
void sdc_quant_simd_set_provider(sdc_quant_simd_provider provider);
/* The table in use, NULL when none is registered or the provider gives none. */
const sdc_quant_simd *sdc_quant_simd_active(void);

/* Returns from the calling function after running table entry `field` when there is one. */
#define SDC_QUANT_DISPATCH(field, src, dst, n)                                                     \
    do {                                                                                           \
        const sdc_quant_simd *simd_ = sdc_quant_simd_active();                                     \
        if (simd_ && simd_->field) {                                                               \
            simd_->field(src, dst, n);                                                             \
            return;                                                                                \
        }                                                                                          \
    } while (0)

#endif
