/* Contiguous-row SIMD variants behind the norm and softmax kernels (ops_norm.c). */
#ifndef SDC_CPU_OPS_NORM_IMPL_H
#define SDC_CPU_OPS_NORM_IMPL_H

#include <stdint.h>

/* d = x / sqrt(mean(x^2) + eps) * w (w may be NULL) */
void sdc_rms_row_avx2(float *d, const float *x, int64_t n, const float *w, float eps);
/* d = (x - mean) / sqrt(var + eps) * w + b (w, b may be NULL) */
void sdc_layer_row_avx2(float *d, const float *x, int64_t n, const float *w, const float *b,
                        float eps);
/* In place: d = softmax(d); a row of only -inf becomes zeros. */
void sdc_softmax_row_avx2(float *d, int64_t n);

/* Pieces for group norm: sum, sum of (x-mean)^2, and d = (x-mean)*k + off. */
double sdc_sum_avx2(const float *x, int64_t n);
double sdc_sum_sq_dev_avx2(const float *x, int64_t n, float mean);
void sdc_scale_shift_avx2(float *d, const float *x, int64_t n, float mean, float k, float off);

#if defined(__aarch64__)
/* ops_norm_neon.c: the same rows in ASIMD. ops_norm.c calls its SIMD rows by the AVX2
 * names; on AArch64 those names are these (no x86 file is compiled there). */
void sdc_rms_row_neon(float *d, const float *x, int64_t n, const float *w, float eps);
void sdc_layer_row_neon(float *d, const float *x, int64_t n, const float *w, const float *b,
                        float eps);
void sdc_softmax_row_neon(float *d, int64_t n);
double sdc_sum_neon(const float *x, int64_t n);
double sdc_sum_sq_dev_neon(const float *x, int64_t n, float mean);
void sdc_scale_shift_neon(float *d, const float *x, int64_t n, float mean, float k, float off);
#define sdc_rms_row_avx2     sdc_rms_row_neon
#define sdc_layer_row_avx2   sdc_layer_row_neon
#define sdc_softmax_row_avx2 sdc_softmax_row_neon
#define sdc_sum_avx2         sdc_sum_neon
#define sdc_sum_sq_dev_avx2  sdc_sum_sq_dev_neon
#define sdc_scale_shift_avx2 sdc_scale_shift_neon
#endif

#endif
