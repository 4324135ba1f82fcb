/* Block quantisers against ggml: the golden file holds ggml's own bytes (with and without
 * an importance matrix) and ggml's dequantised floats, which must match exactly. Then
 * round-trip error bounds on random data, odd inputs, an independent fp16 reference, and
 * the AVX2 dequantisers against the scalar ones. */
#include "test_util.h"

#include "core/quant.h"
#include "core/types.h"
#include "cpu/cpu_features.h"
#include "io/safetensors.h"

#include <stdint.h>

/* The ISA level in use at start (SDC_CPU_ISA may cap it); restored after each switch. */
static sdc_isa g_isa = SDC_ISA_AVX512;

/* The types of the golden file, in its order. */
static const char *const k_golden_types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
                                             "q3_K", "q4_K", "q5_K", "q6_K", "f16",  "bf16"};
#define N_GOLDEN_TYPES 12

/* Every type with a quantiser, and its round-trip bound (relative RMS error on N(0,1)
 * data). A uniform quantiser with step D has RMS error D/sqrt(12). Gaussian blocks of 32
 * reach |x| ~ 2.5 (256: ~3), so the step is about 2.5/2^(b-1) for symmetric b-bit
 * levels, (range ~5)/(2^b - 1) for affine ones; k-quants add the rounding of their
 * group scales. Bounds are those estimates with ~1.5x margin. */
static const struct {
    const char *name;
    double bound;
} k_round_trip[] = {
    {"q4_0", 0.12}, {"q4_1", 0.12},  {"q5_0", 0.06}, {"q5_1", 0.06}, {"q8_0", 0.01},
    {"q8_1", 0.01}, {"q2_K", 0.45},  {"q3_K", 0.25}, {"q4_K", 0.12}, {"q5_K", 0.06},
    {"q6_K", 0.03}, {"q8_K", 0.011}, {"f16", 5e-4},  {"bf16", 4e-3},
};
#define N_TYPES ((int)(sizeof k_round_trip / sizeof k_round_trip[0]))

static const sdc_type_traits *traits(const char *name) {
    return sdc_type_get(sdc_type_from_name(name));
}

/* Tensor data copied to an aligned buffer (mapped safetensors data need not be). */
static void *load(const sdc_st_file *f, const char *name, size_t bytes) {
    const sdc_st_tensor *t = sdc_st_find(f, name);
    CHECK(t && t->nbytes == bytes, "golden tensor %s: missing or %zu bytes, expected %zu", name,
          t ? t->nbytes : 0, bytes);
    if (!t || t->nbytes != bytes) return NULL;
    void *p = malloc(bytes);
    memcpy(p, t->data, bytes);
    return p;
}

static long count_diff_floats(const float *a, const float *b, long n) {
    long bad = 0;
    for (long i = 0; i < n; i++) bad += memcmp(a + i, b + i, sizeof(float)) != 0;
    return bad;
}

/* Which ISA levels to run dequantisation under: scalar, and AVX2 or NEON where the CPU has it. */
static int isa_levels(sdc_isa *out) {
    int n = 0;
    out[n++] = SDC_ISA_SCALAR;
    if (sdc_cpu_isa_supported() >= SDC_ISA_AVX2) out[n++] = SDC_ISA_AVX2;
    if (sdc_cpu_isa_supported() == SDC_ISA_NEON) out[n++] = SDC_ISA_NEON;
    return n;
}

/* ---- golden: ggml's bytes and floats ------------------------------------------------ */

static void golden_matrix(const sdc_st_file *f, const char *m, int rows, int cols) {
    char name[96];
    snprintf(name, sizeof name, "%s.src", m);
    float *src = load(f, name, (size_t)rows * cols * sizeof(float));
    snprintf(name, sizeof name, "%s.imatrix", m);
    float *imx = load(f, name, (size_t)cols * sizeof(float));
    if (!src || !imx) goto out;

    sdc_isa isas[2];
    const int n_isa = isa_levels(isas);
    for (int ti = 0; ti < N_GOLDEN_TYPES; ti++) {
        const char *tn = k_golden_types[ti];
        const sdc_type_traits *tr = traits(tn);
        CHECK(tr && tr->from_float && tr->to_float, "type %s has no converters", tn);
        if (!tr || !tr->from_float || !tr->to_float) continue;
        const size_t row_bytes = sdc_type_row_bytes(sdc_type_from_name(tn), cols);
        const size_t q_bytes = row_bytes * rows;
        const long nval = (long)rows * cols;
        for (int v = 0; v < 2; v++) {
            const char *var = v ? "imatrix" : "plain";
            snprintf(name, sizeof name, "%s.%s.%s.q", m, tn, var);
            uint8_t *want_q = load(f, name, q_bytes);
            snprintf(name, sizeof name, "%s.%s.%s.deq", m, tn, var);
            float *want_deq = load(f, name, (size_t)nval * sizeof(float));
            if (!want_q || !want_deq) {
                free(want_q);
                free(want_deq);
                continue;
            }

            uint8_t *q = calloc(q_bytes, 1);
            for (int r = 0; r < rows; r++)
                tr->from_float(src + (size_t)r * cols, q + r * row_bytes, cols, v ? imx : NULL);
            long bad_bytes = 0, first_bad = -1;
            for (size_t i = 0; i < q_bytes; i++) {
                if (q[i] != want_q[i]) {
                    if (first_bad < 0) first_bad = (long)i;
                    bad_bytes++;
                }
            }
            CHECK(bad_bytes == 0, "%s %s %s: %ld of %zu bytes differ from ggml (first at %ld)", m,
                  tn, var, bad_bytes, q_bytes, first_bad);

            /* Dequantise ggml's bytes (not ours) so this stands on its own. */
            float *deq = malloc((size_t)nval * sizeof(float));
            long bad_vals[2] = {0, 0};
            for (int k = 0; k < n_isa; k++) {
                sdc_cpu_set_isa(isas[k]);
                memset(deq, 0xff, (size_t)nval * sizeof(float));
                tr->to_float(want_q, deq, nval);
                bad_vals[k] = count_diff_floats(deq, want_deq, nval);
                CHECK(bad_vals[k] == 0, "%s %s %s: dequant (%s) differs from ggml in %ld of %ld", m,
                      tn, var, sdc_isa_name(isas[k]), bad_vals[k], nval);
            }
            sdc_cpu_set_isa(g_isa);
            printf("  %-6s %-5s %-7s bytes differing %ld/%zu, dequant floats differing %ld/%ld "
                   "(scalar) %ld (%s)\n",
                   m, tn, var, bad_bytes, q_bytes, bad_vals[0], nval, bad_vals[n_isa - 1],
                   n_isa > 1 ? sdc_isa_name(isas[n_isa - 1]) : "no simd");
            free(q);
            free(deq);
            free(want_q);
            free(want_deq);
        }
    }
out:
    free(src);
    free(imx);
}

static void test_golden(void) {
    sdc_st_file *f = NULL;
    sdc_status st = sdc_st_open(GOLDEN("gguf/quant_expected.safetensors"), &f);
    CHECK(st == SDC_OK, "cannot open golden quant file: %s", sdc_last_error());
    if (st != SDC_OK) return;
    const char *commit = sdc_st_metadata(f, "ggml_commit");
    printf("golden: ggml %s\n", commit ? commit : "(unknown)");
    golden_matrix(f, "m4x256", 4, 256);
    golden_matrix(f, "m3x512", 3, 512);
    sdc_st_close(f);
}

/* ---- round trips on random data ----------------------------------------------------- */

static unsigned long long g_seed = 0x9e3779b97f4a7c15ull;

/* N(0,1) by Box-Muller over the harness's uniform generator. */
static float gauss(void) {
    double u1 = 0.5 * (t_randf(&g_seed) + 1.0), u2 = 0.5 * (t_randf(&g_seed) + 1.0);
    if (u1 < 1e-300) u1 = 1e-300;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

/* Quantise rows of `cols` and dequantise; returns relative RMS error against x (double),
 * counts non-finite outputs into *n_bad. */
static double round_trip(const sdc_type_traits *tr, const float *x, int rows, int cols,
                         const float *imp, float *y, long *n_bad) {
    const size_t row_bytes = (size_t)(cols / tr->block_size) * tr->block_bytes;
    uint8_t *q = malloc(row_bytes * rows);
    for (int r = 0; r < rows; r++)
        tr->from_float(x + (size_t)r * cols, q + r * row_bytes, cols, imp);
    for (int r = 0; r < rows; r++) tr->to_float(q + r * row_bytes, y + (size_t)r * cols, cols);
    free(q);
    double num = 0, den = 0;
    long bad = 0;
    for (long i = 0; i < (long)rows * cols; i++) {
        if (!isfinite(y[i])) bad++;
        double d = (double)y[i] - (double)x[i];
        num += d * d;
        den += (double)x[i] * x[i];
    }
    *n_bad = bad;
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static void test_round_trip(void) {
    enum { ROWS = 8, COLS = 2048 };
    float *x = malloc(sizeof(float) * ROWS * COLS), *y = malloc(sizeof(float) * ROWS * COLS);
    float imp[COLS];
    for (int i = 0; i < ROWS * COLS; i++) x[i] = gauss();
    for (int j = 0; j < COLS; j++) imp[j] = 0.25f + 2.0f * (0.5f * (t_randf(&g_seed) + 1.0f));
    printf("round trip, N(0,1) %dx%d: relative RMS error (bound)\n", ROWS, COLS);
    for (int t = 0; t < N_TYPES; t++) {
        const sdc_type_traits *tr = traits(k_round_trip[t].name);
        CHECK(tr && tr->from_float && tr->to_float, "type %s missing", k_round_trip[t].name);
        if (!tr || !tr->from_float) continue;
        long bad0, bad1;
        double e0 = round_trip(tr, x, ROWS, COLS, NULL, y, &bad0);
        double e1 = round_trip(tr, x, ROWS, COLS, imp, y, &bad1);
        printf("  %-5s plain %.5f  imatrix %.5f  (< %.4g)\n", tr->name, e0, e1,
               k_round_trip[t].bound);
        CHECK(e0 < k_round_trip[t].bound && bad0 == 0,
              "%s: round trip error %g (bound %g), %ld non-finite", tr->name, e0,
              k_round_trip[t].bound, bad0);
        CHECK(e1 < k_round_trip[t].bound && bad1 == 0,
              "%s imatrix: round trip error %g (bound %g), %ld non-finite", tr->name, e1,
              k_round_trip[t].bound, bad1);
    }
    free(x);
    free(y);
}

/* ---- odd inputs --------------------------------------------------------------------- */

static void fill(float *x, int n, float scale) {
    for (int i = 0; i < n; i++) x[i] = scale * gauss();
}

static void test_odd_values(void) {
    enum { N = 512 };
    float x[N], y[N], imp[N];
    for (int i = 0; i < N; i++) imp[i] = 1.0f + (float)(i % 7);
    double worst_const = 0, worst_huge = 0, worst_tiny = 0;
    for (int t = 0; t < N_TYPES; t++) {
        const sdc_type_traits *tr = traits(k_round_trip[t].name);
        if (!tr || !tr->from_float) continue;
        const char *tn = tr->name;
        for (int w = 0; w < 2; w++) {
            const float *im = w ? imp : NULL;
            long bad;
            /* All zeros must come back as zeros. */
            memset(x, 0, sizeof x);
            round_trip(tr, x, 1, N, im, y, &bad);
            long nonzero = 0;
            for (int i = 0; i < N; i++) nonzero += y[i] != 0.0f;
            CHECK(nonzero == 0, "%s%s: zeros came back with %ld non-zero values", tn,
                  w ? " imatrix" : "", nonzero);

            /* Constant rows (normal fp16 scale range): every format represents a constant
             * to within the rounding of its one or two fp16 scales, ~2^-11 each. */
            const float consts[] = {0.5f, -3.0f, 1000.0f, -0.25f};
            for (int c = 0; c < 4; c++) {
                for (int i = 0; i < N; i++) x[i] = consts[c];
                double e = round_trip(tr, x, 1, N, im, y, &bad);
                const double lim = 2e-3;
                if (e > worst_const) worst_const = e;
                CHECK(e < lim && bad == 0, "%s%s: constant %g comes back with relative error %g",
                      tn, w ? " imatrix" : "", consts[c], e);
            }

            /* Huge values (up to ~1.5e4: fp16 scales still fit) keep the normal bound. */
            fill(x, N, 4000.0f);
            double e = round_trip(tr, x, 1, N, im, y, &bad);
            if (e / k_round_trip[t].bound > worst_huge) worst_huge = e / k_round_trip[t].bound;
            CHECK(e < k_round_trip[t].bound && bad == 0,
                  "%s%s: sigma 4000 data error %g, %ld non-finite", tn, w ? " imatrix" : "", e,
                  bad);

            /* Tiny values: the fp16 super-block scales go subnormal or to zero, so precision
             * is lost as in ggml (q4_K/q5_K then come back up to ~3x the signal: their
             * dmin rounds up to the smallest subnormal); outputs must stay finite and of
             * the data's order of magnitude. */
            const float tiny[] = {1e-6f, 1e-12f, 1e-30f};
            for (int k = 0; k < 3; k++) {
                fill(x, N, tiny[k]);
                e = round_trip(tr, x, 1, N, im, y, &bad);
                if (e > worst_tiny) worst_tiny = e;
                CHECK(e <= 4.0 && bad == 0, "%s%s: sigma %g data error %g, %ld non-finite", tn,
                      w ? " imatrix" : "", tiny[k], e, bad);
            }

            /* Non-finite inputs: nothing defined to check but that nothing breaks (this runs
             * under the sanitizers) and blocks without them are unaffected. */
            fill(x, N, 1.0f);
            x[5] = NAN, x[300] = INFINITY, x[301] = -INFINITY;
            round_trip(tr, x, 1, N, im, y, &bad);
            long far = 0;
            for (int i = 0; i < N; i++) {
                int blk0 = (int)(i / tr->block_size), nan_blk = (int)(5 / tr->block_size),
                    inf_blk = (int)(300 / tr->block_size);
                if (blk0 != nan_blk && blk0 != inf_blk && isfinite(x[i]) && !w)
                    far += !(fabsf(y[i] - x[i]) < 1.0f);
            }
            CHECK(far == 0, "%s: NaN/inf in one block spoilt %ld values of other blocks", tn, far);

            /* One outlier among small values: must survive to within the format's step. */
            fill(x, N, 0.01f);
            x[100] = 50.0f;
            round_trip(tr, x, 1, N, im, y, &bad);
            CHECK(fabsf(y[100] - 50.0f) < 50.0f * 0.15f && bad == 0,
                  "%s%s: outlier 50 came back as %g", tn, w ? " imatrix" : "", y[100]);
        }
    }
    printf("odd values: zeros exact; constants worst relative error %.2e; sigma 4000 worst "
           "error/bound %.2f; tiny values worst relative error %.2f\n",
           worst_const, worst_huge, worst_tiny);
}

/* ---- fp16 against an independent decoder --------------------------------------------- */

static double half_value(uint16_t h) {
    int s = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return s ? -v : v;
}

static void test_fp16(void) {
    /* Decode: all 65536 patterns, through the row converter at every ISA level. */
    static uint16_t all[65536];
    static float out[65536];
    for (int i = 0; i < 65536; i++) all[i] = (uint16_t)i;
    sdc_isa isas[2];
    const int n_isa = isa_levels(isas);
    for (int k = 0; k < n_isa; k++) {
        sdc_cpu_set_isa(isas[k]);
        sdc_f16_to_f32_row(all, out, 65536);
        long bad = 0;
        for (int i = 0; i < 65536; i++) {
            double r = half_value((uint16_t)i);
            bad += isnan(r) ? !isnan(out[i])
                            : ((double)out[i] != r || !signbit(out[i]) != !signbit(r));
        }
        CHECK(bad == 0, "f16 decode (%s): %ld of 65536 patterns wrong", sdc_isa_name(isas[k]), bad);
        printf("f16 decode (%s): %ld/65536 wrong\n", sdc_isa_name(isas[k]), bad);

        sdc_bf16_to_f32_row(all, out, 65536);
        bad = 0;
        for (int i = 0; i < 65536; i++) {
            uint32_t u;
            memcpy(&u, out + i, 4);
            bad += u != (uint32_t)i << 16;
        }
        CHECK(bad == 0, "bf16 decode (%s): %ld of 65536 patterns wrong", sdc_isa_name(isas[k]),
              bad);
    }
    sdc_cpu_set_isa(g_isa);

    /* Encode: the chosen half must be a nearest one (ties to even mantissa), checked
     * against its neighbours with the decoder above. */
    long bad = 0, checked = 0;
    for (int i = 0; i < 4 * 0x7c00 + 100000; i++) {
        float v;
        if (i < 4 * 0x7c00) { /* every finite half, and the midpoint above it, both signs */
            int p = i >> 2;
            if ((i & 1) && p == 0x7bff) continue;
            v = (float)((i & 1) ? (half_value((uint16_t)p) + half_value((uint16_t)(p + 1))) / 2
                                : half_value((uint16_t)p));
            if (i & 2) v = -v;
        } else {
            v = ldexpf(t_randf(&g_seed), (int)(t_randf(&g_seed) * 20));
        }
        checked++;
        uint16_t h;
        sdc_f32_to_f16_row(&v, &h, 1, NULL);
        if (fabsf(v) >= 65520.0f) {
            bad += (h & 0x7fff) != 0x7c00;
            continue;
        }
        uint16_t mag = h & 0x7fff;
        double err = fabs(half_value(h) - v);
        double up = mag < 0x7bff ? fabs(half_value((uint16_t)(h + 1)) - v) : INFINITY;
        double dn = mag > 0 ? fabs(half_value((uint16_t)(h - 1)) - v) : INFINITY;
        if (mag >= 0x7c00 || err > up || err > dn || ((err == up || err == dn) && (h & 1))) bad++;
    }
    CHECK(bad == 0, "f32->f16: %ld values not rounded to nearest even", bad);
    printf("f32->f16: %ld values checked against neighbours, %ld wrong\n", checked, bad);
}

/* ---- AVX2 against scalar -------------------------------------------------------------- */

static void test_simd_matches_scalar(void) {
    if (sdc_cpu_isa_supported() < SDC_ISA_AVX2) {
        printf("simd: this CPU has no AVX2, skipped\n");
        return;
    }
    /* Random bytes in every block (all level patterns), with the fp16 fields rewritten to
     * finite scales of either sign; plus odd lengths for the plain rows. */
    enum { NB = 64 };
    static uint8_t q[NB * 292];
    static float a[NB * 256 + 7], b[NB * 256 + 7];
    const char *types[] = {"q8_0", "q4_0", "q4_K", "q6_K", "q4_1",
                           "q5_0", "q5_1", "q2_K", "q3_K", "q5_K"};
    for (int t = 0; t < (int)(sizeof types / sizeof types[0]); t++) {
        const sdc_type_traits *tr = traits(types[t]);
        for (size_t i = 0; i < sizeof q; i++) q[i] = (uint8_t)(t_randf(&g_seed) * 128 + 128);
        for (int blk = 0; blk < NB; blk++) {
            uint8_t *p = q + blk * tr->block_bytes;
            sdc_fp16 d = sdc_f32_to_fp16(t_randf(&g_seed) * 4),
                     m = sdc_f32_to_fp16(t_randf(&g_seed));
            if (tr->block_size == 32) {
                memcpy(p, &d, 2);
                if (strcmp(types[t], "q4_1") == 0 || strcmp(types[t], "q5_1") == 0)
                    memcpy(p + 2, &m, 2);
            } else if (strcmp(types[t], "q2_K") == 0) {
                memcpy(p + 80, &d, 2), memcpy(p + 82, &m, 2);
            } else if (strcmp(types[t], "q3_K") == 0 || strcmp(types[t], "q6_K") == 0) {
                memcpy(p + tr->block_bytes - 2, &d, 2);
            } else {
                memcpy(p, &d, 2), memcpy(p + 2, &m, 2);
            }
        }
        const long n = (long)NB * tr->block_size;
        sdc_cpu_set_isa(SDC_ISA_SCALAR);
        tr->to_float(q, a, n);
        sdc_cpu_set_isa(SDC_ISA_AVX2);
        tr->to_float(q, b, n);
        long bad = count_diff_floats(a, b, n);
        CHECK(bad == 0, "%s: AVX2 dequant differs from scalar in %ld of %ld", types[t], bad, n);
        printf("simd %-5s: %ld/%ld floats differ between scalar and avx2\n", types[t], bad, n);
    }
    /* f16/bf16 rows with a ragged tail; NaN patterns excluded (payload quieting may differ). */
    static uint16_t h[1003];
    for (int i = 0; i < 1003; i++) {
        h[i] = (uint16_t)(t_randf(&g_seed) * 32768 + 32768);
        if ((h[i] & 0x7c00) == 0x7c00) h[i] &= 0xfbff;
    }
    sdc_cpu_set_isa(SDC_ISA_SCALAR);
    sdc_f16_to_f32_row(h, a, 1003);
    sdc_cpu_set_isa(SDC_ISA_AVX2);
    sdc_f16_to_f32_row(h, b, 1003);
    CHECK(count_diff_floats(a, b, 1003) == 0, "f16 rows: AVX2 differs from scalar");
    sdc_cpu_set_isa(g_isa);
}

int main(void) {
    g_isa = sdc_cpu_isa();
    test_golden();
    test_round_trip();
    test_odd_values();
    test_fp16();
    test_simd_matches_scalar();
    TEST_MAIN_END();
}
