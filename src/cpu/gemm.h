/* Single-threaded F32 GEMM on a block, for kernels that build their own tiles
 * (conv2d im2col tiles, attention blocks). Callers split work across threads.
 *   C[i*ldc + j] = (accumulate ? C[i*ldc + j] : 0) + sum_k A[i*lda + k] * B[j*ldb + k]
 * for i < m, j < n: A holds m rows and B holds n rows, both contiguous over k. */
#ifndef SDC_CPU_GEMM_H
#define SDC_CPU_GEMM_H

#include <stdbool.h>
#include <stdint.h>

void sdc_gemm_f32_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc, bool accumulate);

#endif
