/* Single-threaded F32 GEMM on a block, for kernels that build their own tiles
 * (conv2d im2col tiles, attention blocks). Callers split work across threads.
 *   C[i*ldc + j] = (accumulate ? C[i*ldc + j] : 0) + sum_k A[i*lda + k] * B[j*ldb + k]
 * for i < m, j < n: A holds m rows and B holds n rows, both contiguous over k. */
#ifndef SDC_CPU_GEMM_H
#define SDC_CPU_GEMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/types.h"
#include "cpu/cpu_features.h"

void sdc_gemm_f32_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc, bool accumulate);

/* ---- internals shared by matmul.c, gemm_pack.c and the gemm_<isa>.c kernels ----
 * The weight ("B", n rows over k) is packed into panels of SDC_GEMM_NR columns:
 * panel[k * NR + j] = B[j][k], dequantised to F32. A micro-kernel multiplies MR rows
 * of the activations ("A", packed per block as [k][MR]) by one panel. */
#define SDC_GEMM_MR 6
#define SDC_GEMM_NR 16
#define SDC_GEMM_KC 256 /* k block: a multiple of every quant block size */

/* c[i][0..NR) (+)= sum_k a[k * MR + i] * panel[k * NR + j] for i < MR; load_c adds to c.
 * a is a packed micro-panel of MR activation rows. */
typedef void (*sdc_gemm_ukernel_fn)(int64_t kc, const float *a, const float *panel, float *const *c,
                                    int load_c);
typedef float (*sdc_gemm_dot_fn)(const float *a, const float *b, int64_t n);
/* panel[k * NR + j] = rows[j][k] for k < kc, j < NR. */
typedef void (*sdc_gemm_transpose_fn)(const float *const *rows, int64_t kc, float *panel);

/* dst[k * MR + i] = rows[i][k] for k < kc, i < MR; may write 8 floats past the end. */
typedef void (*sdc_gemm_pack_a_fn)(const float *const *rows, int64_t kc, float *dst);

typedef struct sdc_gemm_kernels {
    sdc_gemm_ukernel_fn ukernel;
    sdc_gemm_pack_a_fn pack_a;
    sdc_gemm_dot_fn dot;
    sdc_gemm_transpose_fn transpose;
} sdc_gemm_kernels;

/* Kernels for an ISA level (falls back to the best compiled level at or below it). */
const sdc_gemm_kernels *sdc_gemm_kernels_for(sdc_isa isa);
void sdc_gemm_kernels_init_scalar(sdc_gemm_kernels *k);
void sdc_gemm_kernels_init_avx(sdc_gemm_kernels *k);
void sdc_gemm_kernels_init_avx2(sdc_gemm_kernels *k);
void sdc_gemm_kernels_init_neon(sdc_gemm_kernels *k);

/* A weight matrix: n rows of k elements of `type`, row r at data + r * row_bytes. */
typedef struct sdc_gemm_weight {
    const void *data;
    size_t row_bytes;
    sdc_type type;
} sdc_gemm_weight;

/* Dequantises and packs rows [n0, n0+nr) (nr <= NR; missing rows are zero), columns
 * [k0, k0+kc) into one panel. k0 and kc are multiples of the type's block size
 * (kc may end at the row end). tmp holds NR * SDC_GEMM_KC floats. */
void sdc_gemm_pack_panel(const sdc_gemm_kernels *kern, const sdc_gemm_weight *w, int64_t n0,
                         int64_t nr, int64_t k0, int64_t kc, float *panel, float *tmp);

#endif
