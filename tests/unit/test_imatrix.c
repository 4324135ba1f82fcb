/* imatrix: sd.cpp's file loads and saves back byte for byte; merging adds calls;
 * collection equals a double-precision reference (non-finite inputs skipped, planes
 * counted as calls); malformed files are refused without changing anything; and the
 * matrix collected during a real generation on the golden tiny MiniT2I agrees with the
 * one sd.cpp wrote for the same run (golden imatrix/imatrix.dat). */
#include "test_util.h"

#include "pipeline/imatrix.h"
#include "sdc.h"

#include <stdint.h>

static void test_golden_roundtrip(const unsigned char *file, size_t size) {
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    CHECK(sdc_imatrix_load_memory(im, file, size, "golden") == SDC_OK, "load: %s",
          sdc_last_error());
    CHECK(sdc_imatrix_entry_count(im) == 41, "41 entries, got %d", sdc_imatrix_entry_count(im));
    void *out;
    size_t n;
    CHECK(sdc_imatrix_save_memory(im, &out, &n) == SDC_OK, "save");
    CHECK(n == size && !memcmp(out, file, size), "saved bytes equal sd.cpp's file (%zu vs %zu)", n,
          size);
    free(out);
    /* merging the same file again doubles calls and values */
    int i = sdc_imatrix_find(im, "text_encoders.t5xxl.transformer.encoder.block.1.layer.1."
                                 "DenseReluDense.wo.weight");
    CHECK(i >= 0 && sdc_imatrix_nval(im, i) == 256, "T5 wo entry, 256 values");
    float before[344], after[344];
    if (i >= 0) sdc_imatrix_values(im, i, before);
    int64_t nc = i >= 0 ? sdc_imatrix_ncall(im, i) : 0;
    CHECK(sdc_imatrix_load_memory(im, file, size, "golden") == SDC_OK, "merge");
    if (i >= 0) {
        sdc_imatrix_values(im, i, after);
        double m = 0;
        for (int j = 0; j < 256; j++) m = fmax(m, fabs(after[j] - 2.0 * before[j]) / before[j]);
        CHECK(m < 1e-6 && sdc_imatrix_ncall(im, i) == 2 * nc, "merge doubles (max rel %.2e)", m);
        printf("  merge: ncall %lld -> %lld, values x2 within %.2e\n", (long long)nc,
               (long long)sdc_imatrix_ncall(im, i), m);
    }
    CHECK(sdc_imatrix_entry_count(im) == 41, "merge adds no entries");
    sdc_imatrix_free(im);
}

static void test_collect_reference(void) {
    enum { NV = 40, ROWS = 5, PLANES = 3, STRIDE = 48 };
    static float x[PLANES * ROWS * STRIDE];
    unsigned long long seed = 99;
    for (int i = 0; i < PLANES * ROWS * STRIDE; i++) x[i] = 3.0f * t_randf(&seed);
    x[7] = NAN;               /* plane 0 row 0 col 7 */
    x[STRIDE + 9] = INFINITY; /* row 1 col 9 */
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    CHECK(sdc_imatrix_add(im, "model.a.weight", x, NV, ROWS, PLANES, STRIDE, ROWS * STRIDE) ==
              SDC_OK,
          "add");
    CHECK(sdc_imatrix_add(im, "model.a.weight", x, NV, 2, 1, STRIDE, 0) == SDC_OK, "add again");
    CHECK(sdc_imatrix_add(im, "model.a.weight", x, NV + 1, 1, 1, STRIDE, 0) != SDC_OK,
          "other width refused: %s", sdc_last_error());
    float v[NV];
    int i = sdc_imatrix_find(im, "model.a.weight");
    CHECK(i >= 0 && sdc_imatrix_ncall(im, i) == PLANES + 1, "ncall = planes + 1");
    CHECK(i >= 0 && sdc_imatrix_values(im, i, v), "values");
    double maxrel = 0;
    for (int j = 0; j < NV; j++) {
        double s = 0;
        long c = 0;
        for (int p = 0; p < PLANES; p++)
            for (int r = 0; r < ROWS; r++) {
                double e = x[p * ROWS * STRIDE + r * STRIDE + j];
                if (isfinite(e)) s += e * e, c++;
            }
        for (int r = 0; r < 2; r++) {
            double e = x[r * STRIDE + j];
            if (isfinite(e)) s += e * e, c++;
        }
        double ref = s / (double)c * (PLANES + 1);
        maxrel = fmax(maxrel, fabs(v[j] - ref) / ref);
    }
    CHECK(maxrel < 1e-6, "collected values vs double reference: max rel %.2e", maxrel);
    printf("  collect vs reference: max rel %.2e\n", maxrel);
    /* an entry with a column never seen is left out of the file */
    float y[4] = {NAN, 1, 2, 3};
    sdc_imatrix_add(im, "model.partial.weight", y, 4, 1, 1, 4, 0);
    void *out;
    size_t n;
    sdc_imatrix_save_memory(im, &out, &n);
    int32_t stored;
    memcpy(&stored, out, 4);
    CHECK(stored == 1 && n == 4 + 4 + 14 + 8 + 4 * NV + 4, "partial entry skipped (%d, %zu)",
          stored, n);
    sdc_imatrix *back;
    sdc_imatrix_create(&back);
    CHECK(sdc_imatrix_load_memory(back, out, n, "saved") == SDC_OK, "reload");
    float w[NV];
    CHECK(sdc_imatrix_values(back, 0, w) && !memcmp(v, w, sizeof v), "reload equals");
    free(out);
    sdc_imatrix_free(back);
    sdc_imatrix_free(im);
}

static void put32(unsigned char *b, size_t *o, int32_t v) {
    memcpy(b + *o, &v, 4);
    *o += 4;
}

static void test_malformed(void) {
    unsigned char good[64];
    size_t o = 0;
    float one = 1.0f;
    put32(good, &o, 1), put32(good, &o, 3), memcpy(good + o, "abc", 3), o += 3;
    put32(good, &o, 2), put32(good, &o, 2);
    memcpy(good + o, &one, 4), o += 4, memcpy(good + o, &one, 4), o += 4;
    put32(good, &o, 0);
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    CHECK(sdc_imatrix_load_memory(im, good, o, "good") == SDC_OK, "good file: %s",
          sdc_last_error());
    struct {
        const char *what;
        size_t at; /* byte to patch (int32), or truncate to `size` */
        int32_t value;
        size_t size;
        const char *needle; /* expected in the message, if set */
    } bad[] = {
        {"no entries", 0, 0, 0, NULL},
        {"negative count", 0, -5, 0, NULL},
        {"name length 0", 4, 0, 0, NULL},
        {"name past the end", 4, 1000, 0, NULL},
        {"nval 0", 15, 0, 0, NULL},
        {"negative ncall", 11, -1, 0, NULL},
        {"nval past the end", 15, 9, 0, NULL},
        {"NaN value", 19, 0x7fc00000, 0, "value 0 is nan"},
        /* docs/quantization.md: negative and infinite values are errors too */
        {"value -1", 19, (int32_t)0xbf800000u, 0, "value 0 is -1"},
        {"value +inf", 23, 0x7f800000, 0, "value 1 is inf"},
        {"value -inf", 19, (int32_t)0xff800000u, 0, "value 0 is -inf"},
        {"truncated values", 0, 1, 22, NULL},
        {"empty file", 0, 1, 0xffff, NULL},
        {"wrong width vs loaded", 15, 1, 0, NULL},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        unsigned char b[64];
        memcpy(b, good, o);
        size_t n = o;
        if (bad[k].size == 0xffff)
            n = 0;
        else if (bad[k].size)
            n = bad[k].size;
        else
            memcpy(b + bad[k].at, &bad[k].value, 4);
        if (bad[k].at == 15 && bad[k].value == 1) {
            /* a valid file whose entry has 1 value where 2 are loaded */
            n = 4 + 4 + 3 + 8 + 4 + 4;
            size_t q = 15;
            put32(b, &q, 1);
            memcpy(b + q, &one, 4), q += 4;
            put32(b, &q, 0);
        }
        sdc_status s = sdc_imatrix_load_memory(im, b, n, "bad");
        CHECK(s == SDC_ERR_FORMAT, "%s: refused", bad[k].what);
        CHECK(!bad[k].needle || strstr(sdc_last_error(), bad[k].needle), "%s: message lacks '%s'",
              bad[k].what, bad[k].needle);
        printf("  %-22s -> %s\n", bad[k].what, sdc_last_error());
    }
    int i = sdc_imatrix_find(im, "abc");
    CHECK(sdc_imatrix_entry_count(im) == 1 && i == 0 && sdc_imatrix_ncall(im, 0) == 2,
          "bad files changed nothing");
    CHECK(sdc_imatrix_load(im, "/nonexistent/imatrix.dat") == SDC_ERR_IO, "missing file");
    sdc_imatrix_free(im);
}

/* A real run collected by sdc vs sd.cpp's file for the same command. */
static void test_pipeline(const unsigned char *file, size_t size) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = GOLDEN("minit2i/minit2i_a_dit_f32.safetensors");
    cp.t5xxl_path = GOLDEN("minit2i/minit2i_a_t5_f32.safetensors");
    cp.t5_tokenizer_path = GOLDEN("minit2i/tokenizer_sdcpp_compat.json");
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) return;
    sdc_imatrix *im, *ref;
    sdc_imatrix_create(&im);
    sdc_imatrix_create(&ref);
    sdc_imatrix_load_memory(ref, file, size, "golden");
    CHECK(sdc_context_collect_imatrix(ctx, im) == SDC_OK, "collect");
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a cat";
    p.width = p.height = 64;
    p.steps = 2;
    p.cfg_scale = 6;
    p.seed = 42;
    p.sampling_method = "euler";
    p.rng = "cpu";
    sdc_image *img = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &img, &n) == SDC_OK, "generate: %s", sdc_last_error());
    sdc_free_images(img, n);
    int dit = 0, t5 = 0, compared = 0;
    double worst = 0;
    for (int i = 0; i < sdc_imatrix_entry_count(im); i++) {
        const char *name = sdc_imatrix_name(im, i);
        CHECK(!strstr(name, "img_embedder"), "%s: patch embedding not collected", name);
        int r = sdc_imatrix_find(ref, name);
        CHECK(r >= 0, "%s is in sd.cpp's file too", name);
        if (r < 0) continue;
        int64_t nv = sdc_imatrix_nval(im, i);
        CHECK(nv == sdc_imatrix_nval(ref, r), "%s: width", name);
        if (strncmp(name, "model.", 6)) {
            t5++;
            CHECK(sdc_imatrix_ncall(im, i) == 1, "%s: T5 runs once", name);
            continue; /* sd.cpp also averages the 254 padded positions: docs */
        }
        dit++;
        bool text_once = strstr(name, "txt_embedder") || strstr(name, "txt_preamble");
        CHECK(sdc_imatrix_ncall(im, i) == (text_once ? 2 : 4), "%s: ncall %lld", name,
              (long long)sdc_imatrix_ncall(im, i));
        if (strstr(name, "final_layer")) continue; /* sd.cpp also feeds the text rows */
        float a[344], b[344];
        sdc_imatrix_values(im, i, a);
        sdc_imatrix_values(ref, r, b);
        double ma = 0, mb = 0, m = 0;
        for (int64_t j = 0; j < nv; j++) ma += a[j], mb += b[j];
        for (int64_t j = 0; j < nv; j++) {
            double x = a[j] / ma * nv, y = b[j] / mb * nv;
            m = fmax(m, fabs(x - y) / y);
        }
        worst = fmax(worst, m);
        compared++;
        CHECK(m < 1e-3, "%s: normalised importances differ by %.2e", name, m);
    }
    printf("  pipeline: %d DiT + %d T5 entries; %d DiT entries compared, max rel %.2e\n", dit, t5,
           compared, worst);
    CHECK(dit == 23 && t5 == 14, "23 DiT and 14 T5 entries (got %d, %d)", dit, t5);
    CHECK(compared == 22, "22 DiT entries compared");
    /* collection stops */
    sdc_context_collect_imatrix(ctx, NULL);
    sdc_context_free(ctx);
    sdc_imatrix_free(im);
    sdc_imatrix_free(ref);
}

int main(void) {
    size_t size = 0;
    unsigned char *file = t_read_file(GOLDEN("imatrix/imatrix.dat"), &size);
    CHECK(file && size == 29691, "golden imatrix.dat (%zu bytes)", size);
    if (!file) TEST_MAIN_END();
    test_golden_roundtrip(file, size);
    test_collect_reference();
    test_malformed();
    test_pipeline(file, size);
    free(file);
    TEST_MAIN_END();
}
