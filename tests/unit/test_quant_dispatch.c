/* The quantisers' SIMD dispatch: src/core calls the variants of src/cpu only through the
 * provider table (core/quant_simd.h). Checks that the table is really used where the CPU
 * has AVX2 (test_quant's scalar-vs-AVX2 comparisons would also pass if both ran scalar),
 * that capping the ISA turns it off, that the variants give the scalar bytes, and that no
 * file in src/core includes a src/cpu header. */
#include "test_util.h"

#include <dirent.h>
#include <stdint.h>

#include "core/quant_simd.h"
#include "core/types.h"
#include "cpu/cpu_features.h"
#include "cpu/quant_dispatch.h"

static void test_table_follows_isa(void) {
    sdc_isa have = sdc_cpu_isa_supported();
    sdc_cpu_set_isa(SDC_ISA_SCALAR);
    CHECK(sdc_quant_simd_active() == NULL, "scalar cap: a SIMD table is still in use");
    sdc_cpu_set_isa(SDC_ISA_AVX512);
    const sdc_quant_simd *t = sdc_quant_simd_active();
#if defined(SDC_HAVE_X86)
    if (have >= SDC_ISA_AVX2) {
        CHECK(t && t->dequant_q4_0 && t->dequant_q8_0 && t->dequant_q4_K && t->dequant_q6_K &&
                  t->f16_to_f32 && t->bf16_to_f32 && t->search_symmetric && t->search_affine,
              "AVX2 CPU: the AVX2 table is not (fully) registered");
    } else {
        CHECK(t == NULL, "no AVX2: a table is in use");
    }
#elif defined(__aarch64__)
    CHECK(have == SDC_ISA_NEON, "aarch64: ASIMD is baseline, detected %s", sdc_isa_name(have));
    CHECK(t && t->dequant_q4_0 && t->dequant_q8_0 && t->dequant_q4_K && t->dequant_q6_K &&
              t->f16_to_f32 && t->bf16_to_f32,
          "aarch64: the NEON table is not (fully) registered");
#else
    CHECK(t == NULL, "no SIMD variants here: a table is in use");
#endif
    printf("ISA %s: quantiser table %s; scalar cap: none\n", sdc_isa_name(have),
           t ? "SIMD variants" : "none (scalar)");
}

/* Quantise random rows under each level through the type traits: bytes must agree. */
static void test_same_bytes(void) {
    static const int types[] = {SDC_TYPE_Q4_0, SDC_TYPE_Q4_1, SDC_TYPE_Q8_0, SDC_TYPE_Q2_K,
                                SDC_TYPE_Q4_K, SDC_TYPE_Q5_K, SDC_TYPE_Q6_K, SDC_TYPE_F16};
    enum { N = 1024 };
    float x[N], imp[N], back[2][N];
    uint8_t q[2][N * 2];
    unsigned long long s = 7;
    for (int i = 0; i < N; i++) x[i] = t_randf(&s) * 3, imp[i] = 0.5f + 0.5f * t_randf(&s);
    sdc_isa levels[2] = {SDC_ISA_SCALAR, SDC_ISA_AVX512};
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const sdc_type_traits *tr = sdc_type_get(types[k]);
        size_t bytes = sdc_type_row_bytes(types[k], N);
        for (int l = 0; l < 2; l++) {
            sdc_cpu_set_isa(levels[l]);
            tr->from_float(x, q[l], N, imp);
            tr->to_float(q[l], back[l], N);
        }
        long bad = 0;
        for (size_t i = 0; i < bytes; i++) bad += q[0][i] != q[1][i];
        CHECK(bad == 0 && !memcmp(back[0], back[1], sizeof back[0]),
              "%s: %ld of %zu bytes differ between scalar and SIMD", tr->name, bad, bytes);
        printf("%-5s imatrix quantise + dequantise: %ld of %zu bytes differ scalar vs best ISA\n",
               tr->name, bad, bytes);
    }
    sdc_cpu_set_isa(SDC_ISA_AVX512);
}

/* Layering guard: src/core must not include "cpu/..." headers. */
static void test_core_includes(void) {
    const char *dir = SDC_SOURCE_DIR "/src/core";
    DIR *d = opendir(dir);
    CHECK(d != NULL, "cannot open %s", dir);
    if (!d) return;
    int files = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 3 || (strcmp(e->d_name + n - 2, ".c") && strcmp(e->d_name + n - 2, ".h"))) continue;
        char path[1024], line[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        files++;
        while (fgets(line, sizeof line, f))
            if (strstr(line, "#include \"cpu/")) {
                bad++;
                fprintf(stderr, "%s: %s", e->d_name, line);
            }
        fclose(f);
    }
    closedir(d);
    printf("src/core: %d files, %d include src/cpu headers\n", files, bad);
    CHECK(files > 10 && bad == 0, "src/core: %d of %d files include cpu/ headers", bad, files);
}

int main(void) {
    sdc_cpu_quant_init();
    test_table_follows_isa();
    test_same_bytes();
    test_core_includes();
    TEST_MAIN_END();
}
