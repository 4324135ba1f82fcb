/* AVX2/F16C variants of the quantisers of src/core (src/cpu/quant_avx2.c,
 * quant_search_avx2.c): the same floats and levels as the scalar code. */
#ifndef SDC_CPU_QUANT_AVX2_H
#define SDC_CPU_QUANT_AVX2_H

#include <stdbool.h>
#include <stdint.h>

void sdc_dequant_q4_0_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q8_0_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q4_K_avx2(const void *src, float *dst, int64_t n);
void sdc_dequant_q6_K_avx2(const void *src, float *dst, int64_t n);
void sdc_f16_to_f32_row_avx2(const void *src, float *dst, int64_t n);
void sdc_bf16_to_f32_row_avx2(const void *src, float *dst, int64_t n);

/* sdc_qsearch_symmetric with the grid steps side by side in AVX2 lanes (n <= 32). */
float sdc_qsearch_symmetric_avx2(int n, int nmax, const float *x, const float *w, int8_t *L);
/* sdc_qsearch_affine, eight grid steps per AVX2 vector (n <= 32). */
float sdc_qsearch_affine_avx2(int n, int nmax, const float *x, const float *w, uint8_t *L,
                              float *neg_min, float rmin, float rdelta, int nstep, bool use_mad);

#endif
