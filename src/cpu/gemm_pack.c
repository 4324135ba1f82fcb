/* Weight panel packing: dequantise NR rows of a k block to F32, then transpose them
 * into the [k][NR] layout the micro-kernels stream through. */
#include <stdatomic.h>

#include "cpu/gemm.h"

static const float g_zero_row[SDC_GEMM_KC];

void sdc_gemm_pack_panel(const sdc_gemm_kernels *kern, const sdc_gemm_weight *w, int64_t n0,
                         int64_t nr, int64_t k0, int64_t kc, float *panel, float *tmp) {
    const float *rows[SDC_GEMM_NR];
    const sdc_type_traits *tr = sdc_type_get(w->type);
    size_t koff = (size_t)(k0 / tr->block_size) * tr->block_bytes;
    if (w->type == SDC_TYPE_F32) {
        for (int64_t j = 0; j < nr; j++)
            rows[j] = (const float *)((const char *)w->data + (size_t)(n0 + j) * w->row_bytes) + k0;
    } else {
        sdc_to_float_fn conv = tr->to_float;
        for (int64_t j = 0; j < nr; j++) {
            float *dst = tmp + j * SDC_GEMM_KC;
            conv((const char *)w->data + (size_t)(n0 + j) * w->row_bytes + koff, dst, kc);
            rows[j] = dst;
        }
    }
    for (int64_t j = nr; j < SDC_GEMM_NR; j++) rows[j] = g_zero_row;
    kern->transpose(rows, kc, panel);
}

static sdc_gemm_kernels g_kern[SDC_ISA_AVX512 + 1];
static atomic_int g_kern_ready;

static void init_all(void) {
    sdc_gemm_kernels_init_scalar(&g_kern[SDC_ISA_SCALAR]);
    g_kern[SDC_ISA_NEON] = g_kern[SDC_ISA_SCALAR];
#if defined(__aarch64__)
    sdc_gemm_kernels_init_neon(&g_kern[SDC_ISA_NEON]);
#endif
    g_kern[SDC_ISA_AVX] = g_kern[SDC_ISA_SCALAR];
#if defined(SDC_HAVE_X86)
    sdc_gemm_kernels_init_avx(&g_kern[SDC_ISA_AVX]);
    g_kern[SDC_ISA_AVX2] = g_kern[SDC_ISA_AVX];
    sdc_gemm_kernels_init_avx2(&g_kern[SDC_ISA_AVX2]);
#else
    g_kern[SDC_ISA_AVX2] = g_kern[SDC_ISA_SCALAR];
#endif
    g_kern[SDC_ISA_AVX512] = g_kern[SDC_ISA_AVX2];
}

const sdc_gemm_kernels *sdc_gemm_kernels_for(sdc_isa isa) {
    /* one-time fill; a spin lock keeps a second thread from reading it half done */
    if (!atomic_load_explicit(&g_kern_ready, memory_order_acquire)) {
        static atomic_flag busy = ATOMIC_FLAG_INIT;
        while (atomic_flag_test_and_set(&busy)) {
        }
        if (!atomic_load(&g_kern_ready)) init_all();
        atomic_store_explicit(&g_kern_ready, 1, memory_order_release);
        atomic_flag_clear(&busy);
    }
    if ((int)isa < 0 || isa > SDC_ISA_AVX512) isa = SDC_ISA_SCALAR;
    return &g_kern[isa];
}
