/* Placeholder until the GEMM lands (gemm helper replaces this file). */
#include "cpu/cpu_ops.h"
#include "cpu/gemm.h"

void sdc_cpu_matmul(const sdc_cpu_params *p, sdc_tensor *dst) {
    (void)p, (void)dst;
}
size_t sdc_cpu_matmul_work_size(const sdc_tensor *dst, int nth) {
    return 0;
}

void sdc_gemm_f32_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float s = accumulate ? C[i * ldc + j] : 0.0f;
            for (int64_t kk = 0; kk < k; kk++) s += A[i * lda + kk] * B[j * ldb + kk];
            C[i * ldc + j] = s;
        }
}
