/* The CUDA kernels read weights through src/cuda/cuda_dequant.h; compiled here for the
 * host, its readers must give exactly the floats of the CPU's row converters (core/quant.h)
 * for every weight type, and sdc_hd_half every F16 pattern as sdc_fp16_to_f32. This runs
 * on every machine, GPU or not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/quant.h"
#include "core/types.h"
#include "cuda/cuda_dequant.h"

static int fails;

static void check_type(int type) {
    const sdc_type_traits *tr = sdc_type_get(type);
    const int64_t n = 4096;
    float *src = malloc(n * sizeof(float)), *ref = malloc(n * sizeof(float));
    uint8_t *q = malloc(sdc_type_row_bytes(type, n) + 64);
    uint32_t s = 12345u + (uint32_t)type;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        src[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * (1.0f + (float)(i % 97) * 0.05f);
    }
    if (tr->from_float)
        tr->from_float(src, q, n, NULL);
    else
        memcpy(q, src, n * sizeof(float));
    tr->to_float(q, ref, n);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = sdc_hd_row_elem(type, q, i);
        if (memcmp(&v, &ref[i], 4) != 0 && !(isnan(v) && isnan(ref[i]))) {
            if (bad < 3) printf("  %s element %lld: %g vs %g\n", tr->name, (long long)i, v, ref[i]);
            bad++;
        }
    }
    printf("%-5s block %d/%d bytes: %lld of %lld elements differ from the CPU converter\n",
           tr->name, sdc_hd_block_size(type), sdc_hd_block_bytes(type), (long long)bad,
           (long long)n);
    if (bad || sdc_hd_block_size(type) != tr->block_size ||
        (size_t)sdc_hd_block_bytes(type) != tr->block_bytes)
        fails++;
    free(src), free(ref), free(q);
}

int main(void) {
    int half_bad = 0;
    for (int h = 0; h < 65536; h++) {
        float a = sdc_hd_half((uint16_t)h), b = sdc_fp16_to_f32((sdc_fp16)h);
        if (memcmp(&a, &b, 4) != 0 && !(isnan(a) && isnan(b))) half_bad++;
    }
    printf("f16: %d of 65536 patterns differ\n", half_bad);
    if (half_bad) fails++;
    const int types[] = {SDC_TYPE_F32,  SDC_TYPE_F16,  SDC_TYPE_BF16, SDC_TYPE_Q4_0, SDC_TYPE_Q4_1,
                         SDC_TYPE_Q5_0, SDC_TYPE_Q5_1, SDC_TYPE_Q8_0, SDC_TYPE_Q8_1, SDC_TYPE_Q2_K,
                         SDC_TYPE_Q3_K, SDC_TYPE_Q4_K, SDC_TYPE_Q5_K, SDC_TYPE_Q6_K, SDC_TYPE_Q8_K};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) check_type(types[i]);
    printf("%s\n", fails ? "FAILED" : "all weight readers match the CPU converters");
    return fails ? 1 : 0;
}
