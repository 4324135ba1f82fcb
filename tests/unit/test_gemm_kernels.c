/* The GEMM building blocks of every compiled SIMD level (cpu/gemm.h: micro-kernel, dot,
 * panel transpose, activation packing) against a double-precision reference, on odd
 * lengths. Small, fast and single-threaded on purpose: tests/cross/run.sh runs it under
 * qemu-aarch64, where test_matmul (threaded) did not finish. Packing must be exact; products are
 * compared relative to sum |a*b| (float rounding over k terms: measured <= 1.4e-7 on scalar, AVX,
 * AVX2 and NEON; limit 5e-7). */
#include "test_util.h"

#include "cpu/cpu_features.h"
#include "cpu/gemm.h"

#define MR SDC_GEMM_MR
#define NR SDC_GEMM_NR

static unsigned long long g_seed = 99;

static void check_level(sdc_isa isa) {
    const sdc_gemm_kernels *kern = sdc_gemm_kernels_for(isa);
    static const int64_t ks[] = {1, 3, 7, 8, 13, 33, 256};
    double worst_uk = 0, worst_dot = 0;
    long bad_pack = 0;
    for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
        const int64_t kc = ks[ki];
        /* rows of the weight and of the activations, k contiguous (odd row stride) */
        const int64_t ld = kc + 3;
        float *w = malloc(sizeof(float) * (size_t)(NR * ld)),
              *x = malloc(sizeof(float) * (size_t)(MR * ld));
        for (int64_t i = 0; i < NR * ld; i++) w[i] = t_randf(&g_seed);
        for (int64_t i = 0; i < MR * ld; i++) x[i] = t_randf(&g_seed);
        const float *wr[NR], *xr[MR];
        for (int j = 0; j < NR; j++) wr[j] = w + j * ld;
        for (int i = 0; i < MR; i++) xr[i] = x + i * ld;
        /* panels are 32-byte aligned in matmul.c (the AVX kernels use aligned loads);
         * pack_a may write 8 floats past the end */
        float *panel = aligned_alloc(64, (sizeof(float) * (size_t)(kc * NR) + 63) / 64 * 64);
        float *apack = aligned_alloc(64, (sizeof(float) * (size_t)(kc * MR + 8) + 63) / 64 * 64);
        kern->transpose(wr, kc, panel);
        kern->pack_a(xr, kc, apack);
        for (int64_t k = 0; k < kc; k++) {
            for (int j = 0; j < NR; j++) bad_pack += panel[k * NR + j] != wr[j][k];
            for (int i = 0; i < MR; i++) bad_pack += apack[k * MR + i] != xr[i][k];
        }
        /* micro-kernel, overwrite then accumulate into a prefilled C */
        for (int load_c = 0; load_c < 2; load_c++) {
            float cbuf[MR][NR], c0[MR][NR];
            float *c[MR];
            for (int i = 0; i < MR; i++) {
                c[i] = cbuf[i];
                for (int j = 0; j < NR; j++) cbuf[i][j] = c0[i][j] = t_randf(&g_seed);
            }
            kern->ukernel(kc, apack, panel, c, load_c);
            for (int i = 0; i < MR; i++)
                for (int j = 0; j < NR; j++) {
                    double s = load_c ? c0[i][j] : 0, mag = load_c ? fabs(c0[i][j]) : 0;
                    for (int64_t k = 0; k < kc; k++) {
                        s += (double)xr[i][k] * wr[j][k];
                        mag += fabs((double)xr[i][k] * wr[j][k]);
                    }
                    double e = fabs(cbuf[i][j] - s) / (mag + 1e-30);
                    if (e > worst_uk) worst_uk = e;
                }
        }
        /* dot on every length up to kc (tails of 1..15) */
        for (int64_t n = kc > 20 ? kc - 17 : 0; n <= kc; n++) {
            double s = 0, mag = 0;
            for (int64_t k = 0; k < n; k++) {
                s += (double)xr[0][k] * wr[1][k];
                mag += fabs((double)xr[0][k] * wr[1][k]);
            }
            double e = fabs(kern->dot(xr[0], wr[1], n) - s) / (mag + 1e-30);
            if (e > worst_dot) worst_dot = e;
        }
        free(w), free(x), free(panel), free(apack);
    }
    printf("gemm kernels %-14s: pack/transpose %ld wrong; ukernel max rel err %.3g; dot %.3g\n",
           sdc_isa_name(isa), bad_pack, worst_uk, worst_dot);
    CHECK(bad_pack == 0, "%s: %ld packed floats wrong", sdc_isa_name(isa), bad_pack);
    CHECK(worst_uk < 5e-7, "%s: micro-kernel rel err %g", sdc_isa_name(isa), worst_uk);
    CHECK(worst_dot < 5e-7, "%s: dot rel err %g", sdc_isa_name(isa), worst_dot);
}

int main(void) {
    sdc_isa top = sdc_cpu_isa_supported();
    printf("CPU supports %s\n", sdc_isa_name(top));
    check_level(SDC_ISA_SCALAR);
    if (top == SDC_ISA_NEON) check_level(SDC_ISA_NEON);
    if (top >= SDC_ISA_AVX && top != SDC_ISA_NEON) check_level(SDC_ISA_AVX);
    if (top >= SDC_ISA_AVX2 && top != SDC_ISA_NEON) check_level(SDC_ISA_AVX2);
    TEST_MAIN_END();
}
