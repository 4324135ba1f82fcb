/* Portable micro-kernels: the reference path every SIMD level is tested against. */
#include "cpu/gemm.h"

/* Two rows at a time: 2 x NR accumulators fit the 16 SSE/NEON registers once the
 * compiler vectorises the j loops (all MR x NR would spill). */
static void ukernel_scalar(int64_t kc, const float *a, const float *panel, float *const *c,
                           int load_c) {
    enum { MR = SDC_GEMM_MR, NR = SDC_GEMM_NR };
    for (int i = 0; i < MR; i += 2) {
        float acc0[NR] = {0}, acc1[NR] = {0};
        for (int64_t k = 0; k < kc; k++) {
            const float *b = panel + k * NR;
            float a0 = a[k * MR + i], a1 = a[k * MR + i + 1];
            for (int j = 0; j < NR; j++) {
                acc0[j] += a0 * b[j];
                acc1[j] += a1 * b[j];
            }
        }
        for (int j = 0; j < NR; j++) {
            c[i][j] = (load_c ? c[i][j] : 0.0f) + acc0[j];
            c[i + 1][j] = (load_c ? c[i + 1][j] : 0.0f) + acc1[j];
        }
    }
}

static float dot_scalar(const float *a, const float *b, int64_t n) {
    /* eight partial sums: shorter rounding chains and independent adds */
    float s[8] = {0};
    int64_t k = 0;
    for (; k + 8 <= n; k += 8)
        for (int j = 0; j < 8; j++) s[j] += a[k + j] * b[k + j];
    for (; k < n; k++) s[0] += a[k] * b[k];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void transpose_scalar(const float *const *rows, int64_t kc, float *panel) {
    for (int64_t k = 0; k < kc; k++)
        for (int j = 0; j < SDC_GEMM_NR; j++) panel[k * SDC_GEMM_NR + j] = rows[j][k];
}

static void pack_a_scalar(const float *const *rows, int64_t kc, float *dst) {
    for (int64_t k = 0; k < kc; k++)
        for (int i = 0; i < SDC_GEMM_MR; i++) dst[k * SDC_GEMM_MR + i] = rows[i][k];
}

void sdc_gemm_kernels_init_scalar(sdc_gemm_kernels *k) {
    k->pack_a = pack_a_scalar;
    k->ukernel = ukernel_scalar;
    k->dot = dot_scalar;
    k->transpose = transpose_scalar;
}
