/* -M convert through sdc_convert: safetensors -> GGUF at every type, checked against
 * ggml's own bytes (golden gguf/quant_expected.safetensors, with and without an imatrix)
 * and against our quantiser's output after loading the GGUF back; the keep rule and
 * --tensor-type-rules; several component files into one GGUF with their prefixes;
 * safetensors output; --type on load; error cases. */
#include "test_util.h"

#include "core/quant.h"
#include "core/types.h"
#include "cpu/cpu_features.h"
#include "io/gguf.h"
#include "io/model_loader.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "pipeline/convert.h"
#include "pipeline/imatrix.h"
#include "pipeline/quant_rules.h"
#include "sdc.h"

#include <stdint.h>

static void tmp_path(char *buf, size_t size, const char *name) {
    snprintf(buf, size, "%s/test_convert_%s", SDC_BINARY_DIR, name);
}

/* the golden 3x512 matrix and its importance vector */
static float g_src[3 * 512], g_imp[512];
static float g_big[64 * 512], g_mid[64 * 96], g_odd[16 * 300], g_norm[512], g_bias[3];
static float g_fin[16 * 512], g_t5[32 * 256];

static void fill(float *x, size_t n, unsigned long long seed) {
    for (size_t i = 0; i < n; i++) x[i] = t_randf(&seed);
}

static void write_st(const char *path, int n, const char *const *names, float *const *data,
                     const int64_t (*shape)[2], const int *ndim) {
    sdc_st_writer *w;
    CHECK(sdc_st_writer_create(&w) == SDC_OK, "st writer");
    for (int i = 0; i < n; i++)
        sdc_st_writer_add(w, names[i], SDC_ST_F32, ndim[i], shape[i], data[i]);
    CHECK(sdc_st_writer_write(w, path, NULL, NULL) == SDC_OK, "write %s: %s", path,
          sdc_last_error());
    sdc_st_writer_free(w);
}

/* imatrix.dat with one entry: ncall 1, so the stored values are the importances */
static void write_imatrix(const char *path, const char *name, const float *v, int32_t n) {
    FILE *f = fopen(path, "wb");
    int32_t one = 1, len = (int32_t)strlen(name), zero = 0;
    fwrite(&one, 4, 1, f);
    fwrite(&len, 4, 1, f);
    fwrite(name, 1, (size_t)len, f);
    fwrite(&one, 4, 1, f);
    fwrite(&n, 4, 1, f);
    fwrite(v, 4, (size_t)n, f);
    fwrite(&zero, 4, 1, f);
    fclose(f);
}

static const char *const k_types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K",
                                      "q3_K", "q4_K", "q5_K", "q6_K", "f16",  "bf16"};

/* Converts the dit file with a rule forcing w.weight to type t, checks the bytes against
 * ggml's (with the golden importances, or without an imatrix against ggml's bytes for an
 * importance vector of ones, which is what sd.cpp's convert passes: uniform, else the
 * golden plain bytes for f16/bf16) and the loaded values against our quantiser's own round
 * trip. */
static void check_type(const char *dit, const char *t, const sdc_imatrix *im,
                       const sdc_st_file *gold, const sdc_st_file *uniform) {
    char out[512], rules[64], key[128];
    tmp_path(out, sizeof out, "type.gguf");
    snprintf(rules, sizeof rules, "\\.w\\.weight$=%s", t);
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.diffusion_model_path = dit;
    p.output_path = out;
    p.tensor_type_rules = rules;
    p.imatrix = im;
    p.n_threads = 2;
    sdc_status s = sdc_convert(&p);
    CHECK(s == SDC_OK, "convert %s: %s", t, sdc_last_error());
    if (s != SDC_OK) return;
    sdc_gguf_file *g;
    CHECK(sdc_gguf_open(out, &g) == SDC_OK, "open %s: %s", out, sdc_last_error());
    const sdc_gguf_tensor *gt = sdc_gguf_find_tensor(g, "model.diffusion_model.net.w.weight");
    int type = sdc_type_from_name(t);
    CHECK(gt && (int)gt->type == type && gt->ne[0] == 512 && gt->ne[1] == 3 && gt->n_dims == 2,
          "%s: tensor type/shape", t);
    const sdc_type_traits *tr = sdc_type_get(type);
    snprintf(key, sizeof key, "m3x512.%s.%s.q", t, im ? "imatrix" : "ones");
    const sdc_st_tensor *q = sdc_st_find(im ? gold : uniform, key);
    if (!im && !tr->is_quantized) {
        snprintf(key, sizeof key, "m3x512.%s.plain.q", t);
        q = sdc_st_find(gold, key);
    }
    CHECK(q != NULL, "reference %s present", key);
    if (gt && q) {
        CHECK(gt->nbytes == q->nbytes, "%s: %zu bytes, ggml %zu", key, gt->nbytes, q->nbytes);
        size_t diff = 0;
        for (size_t i = 0; i < gt->nbytes && i < q->nbytes; i++)
            diff += ((const uint8_t *)gt->data)[i] != ((const uint8_t *)q->data)[i];
        CHECK(diff == 0, "%s: %zu bytes differ from ggml's", key, diff);
        printf("  %-22s %5zu bytes, %zu differ from ggml\n", key, gt->nbytes, diff);
    }
    /* load back: dequantised values equal our quantiser's own output */
    float ones[512];
    for (int i = 0; i < 512; i++) ones[i] = 1.0f;
    size_t rb = sdc_type_row_bytes(type, 512);
    uint8_t *blk = malloc(rb * 3);
    float ref[3 * 512], got[3 * 512];
    for (int r = 0; r < 3; r++) {
        tr->from_float(g_src + r * 512, blk + r * rb, 512,
                       !tr->is_quantized || type == SDC_TYPE_Q8_0 ? NULL
                       : im                                       ? g_imp
                                                                  : ones);
        tr->to_float(blk + r * rb, ref + r * 512, 512);
    }
    free(blk);
    sdc_loader *l;
    sdc_loader_create(&l);
    CHECK(sdc_loader_add_file(l, out, NULL) == SDC_OK, "load %s: %s", out, sdc_last_error());
    sdc_tensor *w = sdc_loader_find(l, "model.diffusion_model.net.w.weight");
    if (w) {
        for (int r = 0; r < 3; r++)
            tr->to_float((const char *)w->data + r * w->nb[1], got + r * 512, 512);
        double d = t_max_abs_diff(got, ref, 3 * 512);
        CHECK(d == 0, "%s: loaded values differ from the quantiser's by %g", t, d);
    }
    /* the other tensors kept their stored values and types */
    sdc_tensor *b = sdc_loader_find(l, "model.diffusion_model.net.w.bias");
    CHECK(b && b->type == SDC_TYPE_F32 && !memcmp(b->data, g_bias, sizeof g_bias),
          "%s: bias kept as F32", t);
    sdc_loader_free(l);
    sdc_gguf_close(g);
}

#define DATA(name) SDC_SOURCE_DIR "/tests/data/sdconvert/" name

/* Importances of ones through the convert path's quantiser (scalar and SIMD dispatch) equal
 * ggml's quantize_<t>(..., ones) bytes on both golden matrices, and differ from the plain
 * quantiser's (ggml's _ref) for every type but q8_0: -M convert without --imat-in writes
 * what sd.cpp's convert writes. */
static void test_uniform_importance(const sdc_st_file *gold, const sdc_st_file *uniform) {
    static const char *const mats[] = {"m4x256", "m3x512"};
    static const char *const types[] = {"q4_0", "q4_1", "q5_0", "q5_1", "q8_0",
                                        "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"};
    static float x[4 * 512], ones[512];
    static uint8_t q[4 * 512 * 2];
    for (int i = 0; i < 512; i++) ones[i] = 1.0f;
    for (int m = 0; m < 2; m++) {
        char key[96];
        snprintf(key, sizeof key, "%s.src", mats[m]);
        const sdc_st_tensor *src = sdc_st_find(gold, key);
        CHECK(src && src->ndim == 2, "golden %s", key);
        if (!src) continue;
        int64_t rows = src->shape[0], cols = src->shape[1];
        sdc_st_to_f32(src, x);
        sdc_tensor t = {0};
        snprintf(t.name, sizeof t.name, "%s", key);
        t.type = SDC_TYPE_F32;
        t.ne[0] = cols, t.ne[1] = rows, t.ne[2] = t.ne[3] = 1;
        t.data = x;
        sdc_tensor_set_contiguous_strides(&t);
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
            sdc_type ty = (sdc_type)sdc_type_from_name(types[i]);
            if (cols % sdc_type_get(ty)->block_size) continue;
            snprintf(key, sizeof key, "%s.%s.ones.q", mats[m], types[i]);
            const sdc_st_tensor *want = sdc_st_find(uniform, key);
            snprintf(key, sizeof key, "%s.%s.plain.q", mats[m], types[i]);
            const sdc_st_tensor *plain = sdc_st_find(gold, key);
            snprintf(t.name, sizeof t.name, "%s", key);
            sdc_status s = sdc_convert_tensor_data(&t, ty, q, ones, NULL);
            CHECK(s == SDC_OK && want && plain, "%s %s: %s", mats[m], types[i],
                  s ? sdc_last_error() : "reference missing");
            if (s != SDC_OK || !want || !plain) continue;
            size_t n = sdc_type_row_bytes(ty, cols) * (size_t)rows, diff = 0, vs_plain = 0;
            CHECK(n == want->nbytes, "%s %s: %zu bytes, ggml %zu", mats[m], types[i], n,
                  want->nbytes);
            for (size_t b = 0; b < n && b < want->nbytes; b++) {
                diff += q[b] != ((const uint8_t *)want->data)[b];
                vs_plain += q[b] != ((const uint8_t *)plain->data)[b];
            }
            printf("  uniform %s %-4s: %zu/%zu bytes differ from ggml(ones), %zu from plain\n",
                   mats[m], types[i], diff, n, vs_plain);
            CHECK(diff == 0, "%s %s: %zu bytes differ from ggml's uniform-importance bytes",
                  mats[m], types[i], diff);
            CHECK((vs_plain == 0) == (ty == SDC_TYPE_Q8_0), "%s %s: ones %s the plain quantiser",
                  mats[m], types[i], vs_plain ? "differ from" : "equal");
        }
    }
}

static double psnr(const sdc_image *a, const sdc_image *b);

/* ---- the SD1 golden checkpoint to q8_0, as sd.cpp's convert writes it ---- */

/* What sd.cpp keeps out of its converted file for this checkpoint: the noise schedule
 * tables except alphas_cumprod, and CLIP's position_ids (its list of unused tensors). */
static bool sd1_dropped(const char *name) {
    static const char *const drop[] = {"betas",
                                       "alphas_cumprod_prev",
                                       "sqrt_alphas_cumprod",
                                       "sqrt_one_minus_alphas_cumprod",
                                       "log_one_minus_alphas_cumprod",
                                       "sqrt_recip_alphas_cumprod",
                                       "sqrt_recipm1_alphas_cumprod",
                                       "posterior_variance",
                                       "posterior_log_variance_clipped",
                                       "posterior_mean_coef1",
                                       "posterior_mean_coef2",
                                       "cond_stage_model.transformer.text_model.embeddings."
                                       "position_ids"};
    for (size_t i = 0; i < sizeof drop / sizeof drop[0]; i++)
        if (!strcmp(name, drop[i])) return true;
    return false;
}

/* sd.cpp's type for --type q8_0 on an SD1 tensor (ModelLoader::tensor_should_be_converted,
 * restated for the names an SD1 checkpoint has): float tensors whose innermost dimension
 * is a multiple of 32, except biases, the UNet's time_embed and label_emb and the CLIP
 * embeddings. 1-D norm weights are quantised; 3x3 and 1x1 convolutions (innermost 3 or 1)
 * are not. */
static sdc_type sd1_expected_type(const sdc_st_tensor *t) {
    sdc_type stored = (sdc_type)sdc_st_dtype_to_type(t->dtype);
    size_t n = strlen(t->name);
    bool is_float = t->dtype == SDC_ST_F16 || t->dtype == SDC_ST_F32 || t->dtype == SDC_ST_BF16;
    if (!is_float || t->shape[t->ndim - 1] % 32) return stored;
    if (n >= 5 && !strcmp(t->name + n - 5, ".bias")) return stored;
    if (strstr(t->name, "time_embed.") || strstr(t->name, "label_emb.") ||
        strstr(t->name, "embedding"))
        return stored;
    return SDC_TYPE_Q8_0;
}

static sdc_image *sd1_image(const char *model, const char *tokenizer, int type) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.weight_type = type;
    cp.clip_tokenizer_path = tokenizer;
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context %s: %s", model, sdc_last_error());
    if (!ctx) return NULL;
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 64;
    p.steps = 1;
    p.seed = 42;
    sdc_image *img = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &img, &n) == SDC_OK, "generate %s: %s", model,
          sdc_last_error());
    sdc_context_free(ctx);
    return img;
}

static void test_sd1_q8_0(void) {
#ifdef SDC_SANITIZED
    printf("SKIP sd1 q8_0: full-size SD1 runs are too slow under the sanitizers\n");
    return;
#endif
    const char *model = SDC_SD1_MODEL;
    sdc_st_file *src = NULL;
    if (sdc_st_open(model, &src) != SDC_OK) {
        printf("SKIP sd1 q8_0: %s absent (make_sd1_random.py --seed 1001 makes it)\n", model);
        sdc_clear_error();
        return;
    }
    char out[512];
    tmp_path(out, sizeof out, "sd1_q8_0.gguf");
    sdc_convert_params cp;
    sdc_convert_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.output_path = out;
    cp.type = SDC_TYPE_Q8_0;
    cp.n_threads = 2;
    CHECK(sdc_convert(&cp) == SDC_OK, "convert sd1: %s", sdc_last_error());
    sdc_gguf_file *g = NULL;
    CHECK(sdc_gguf_open(out, &g) == SDC_OK, "open %s: %s", out, sdc_last_error());
    if (g) {
        int kept = 0, dropped = 0, bad = 0, quantised = 0;
        for (int i = 0; i < sdc_st_count(src); i++) {
            const sdc_st_tensor *t = sdc_st_at(src, i);
            const sdc_gguf_tensor *gt = sdc_gguf_find_tensor(g, t->name);
            if (sd1_dropped(t->name)) {
                dropped++;
                if (gt && bad++ < 5) printf("  %s: sd.cpp drops it, we wrote it\n", t->name);
                continue;
            }
            kept++;
            sdc_type want = sd1_expected_type(t);
            bool shape_ok = gt && gt->n_dims == t->ndim;
            for (int d = 0; shape_ok && d < t->ndim; d++)
                shape_ok = gt->ne[d] == t->shape[t->ndim - 1 - d];
            if (!gt || (sdc_type)gt->type != want || !shape_ok) {
                if (bad++ < 5)
                    printf("  %s: %s, want %s%s\n", t->name,
                           gt ? sdc_type_name((sdc_type)gt->type) : "missing", sdc_type_name(want),
                           shape_ok ? "" : " (shape)");
                continue;
            }
            quantised += want == SDC_TYPE_Q8_0;
        }
        printf("  sd1 q8_0: %d tensors written (%d q8_0), %d dropped, %d wrong\n",
               sdc_gguf_tensor_count(g), quantised, dropped, bad);
        CHECK(bad == 0 && dropped == 12 && sdc_gguf_tensor_count(g) == kept,
              "sd1 q8_0 names/types as sd.cpp writes them: %d wrong, %d dropped, %d of %d", bad,
              dropped, sdc_gguf_tensor_count(g), kept);
        /* the tokenizer: OpenAI's merges, verbatim */
        const char *merges = NULL;
        size_t n = 0;
        unsigned char *gold = t_read_file(GOLDEN("sd1/tokenizer/merges.txt"), &n);
        CHECK(sdc_gguf_get_str(g, "tokenizer.clip_l.merges", &merges) == SDC_OK && merges && gold &&
                  strlen(merges) == n && !memcmp(merges, gold, n),
              "CLIP merges embedded, equal to the tokenizer's merges.txt (%zu bytes)", n);
        free(gold);
        sdc_gguf_close(g);
    }
    sdc_st_close(src);
    /* the converted file alone (no tokenizer flag) generates the F16 checkpoint's image up to
     * q8_0 rounding: measured 42.5 dB at 64x64, 1 step */
    sdc_image *q = sd1_image(out, NULL, -1);
    sdc_image *ref = sd1_image(model, GOLDEN("sd1/tokenizer/vocab.json"), -1);
    if (q && ref) {
        double db = psnr(ref, q);
        printf("  sd1 q8_0 GGUF vs F16 checkpoint, 64x64 1 step: PSNR %.2f dB\n", db);
        CHECK(db > 37, "sd1 q8_0 image PSNR %.2f dB", db);
    }
    /* --type q8_0 on load takes the same rule and quantiser: the same image, exactly */
    sdc_image *onload = sd1_image(model, GOLDEN("sd1/tokenizer/vocab.json"), SDC_TYPE_Q8_0);
    if (q && onload) {
        double db = psnr(onload, q);
        printf("  sd1 q8_0 GGUF vs --type q8_0 on load: PSNR %.2f dB\n", db);
        CHECK(isinf(db), "converted file and on-load conversion give the same image (%.2f dB)", db);
    }
    sdc_free_images(q, 1);
    sdc_free_images(ref, 1);
    sdc_free_images(onload, 1);
    remove(out);
}

/* A PyTorch .ckpt converts too (tests/data/ckpt/basic.ckpt, made by gen_ckpt_cases.py),
 * its empty zeros(0, 3) tensor included: 2 dims, no bytes. */
static void test_ckpt_input(void) {
    char out[512];
    tmp_path(out, sizeof out, "ckpt.gguf");
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.model_path = SDC_SOURCE_DIR "/tests/data/ckpt/basic.ckpt";
    p.output_path = out;
    p.type = SDC_TYPE_Q8_0;
    CHECK(sdc_convert(&p) == SDC_OK, "convert basic.ckpt: %s", sdc_last_error());
    sdc_gguf_file *g = NULL;
    if (sdc_gguf_open(out, &g) != SDC_OK) {
        CHECK(0, "open %s: %s", out, sdc_last_error());
        return;
    }
    const sdc_gguf_tensor *e = sdc_gguf_find_tensor(g, "empty");
    CHECK(e && e->n_dims == 2 && e->ne[0] == 3 && e->ne[1] == 0 && e->nbytes == 0,
          "empty tensor written as ne [3, 0]");
    printf("  basic.ckpt -> GGUF: %d tensors\n", sdc_gguf_tensor_count(g));
    CHECK(sdc_gguf_tensor_count(g) == 16, "16 tensors, got %d", sdc_gguf_tensor_count(g));
    sdc_gguf_close(g);
    remove(out);
}

static void test_pick_rules(void) {
    sdc_quant_rules *r;
    CHECK(sdc_quant_rules_parse("attn=q8_0,^vae\\.=f16", &r) == SDC_OK, "parse rules: %s",
          sdc_last_error());
    CHECK(sdc_quant_rules_count(r) == 2, "two rules");
    int64_t m[4] = {512, 64, 1, 1}, v[4] = {512, 1, 1, 1}, k[4] = {96, 64, 1, 1},
            o[4] = {300, 64, 1, 1}, s[4] = {512, 4, 1, 1};
    CHECK(sdc_quant_pick_type(r, "x.attn.weight", 2, m, SDC_TYPE_F16, SDC_TYPE_Q4_K) ==
              SDC_TYPE_Q8_0,
          "first matching rule wins");
    CHECK(sdc_quant_pick_type(r, "vae.conv.weight", 2, m, SDC_TYPE_F32, SDC_TYPE_Q4_K) ==
              SDC_TYPE_F16,
          "anchored rule");
    CHECK(sdc_quant_pick_type(r, "x.mlp.weight", 2, m, SDC_TYPE_F16, SDC_TYPE_Q4_K) ==
              SDC_TYPE_Q4_K,
          "default type");
    CHECK(sdc_quant_pick_type(r, "x.norm.weight", 1, v, SDC_TYPE_F32, SDC_TYPE_Q4_K) ==
              SDC_TYPE_F32,
          "1-D kept");
    CHECK(sdc_quant_pick_type(r, "x.attn.bias", 1, v, SDC_TYPE_F32, SDC_TYPE_Q4_K) == SDC_TYPE_F32,
          "1-D kept even under a rule");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, k, SDC_TYPE_F16, SDC_TYPE_Q4_K) == SDC_TYPE_Q5_0,
          "q4_K on 96 columns falls back to q5_0");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, k, SDC_TYPE_F16, SDC_TYPE_Q6_K) == SDC_TYPE_Q8_0,
          "q6_K falls back to q8_0");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, o, SDC_TYPE_F16, SDC_TYPE_Q8_0) == SDC_TYPE_F16,
          "300 columns: kept");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, s, SDC_TYPE_F16, SDC_TYPE_Q8_0) == SDC_TYPE_F16,
          "small tensor kept");
    CHECK(sdc_quant_pick_type(NULL, "m.net.final_layer.linear.weight", 2, m, SDC_TYPE_F16,
                              SDC_TYPE_Q8_0) == SDC_TYPE_F16,
          "final_layer kept");
    CHECK(sdc_quant_pick_type(NULL, "m.net.txt_embedder.weight", 2, m, SDC_TYPE_F16,
                              SDC_TYPE_Q8_0) == SDC_TYPE_Q8_0,
          "txt_embedder is quantised (no substring accident)");
    CHECK(sdc_quant_pick_type(NULL, "m.mask_token", 3, v, SDC_TYPE_F32, SDC_TYPE_Q8_0) ==
              SDC_TYPE_F32,
          "mask_token kept");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, m, SDC_TYPE_F16, -1) == SDC_TYPE_F16,
          "no type: stored");
    CHECK(sdc_quant_pick_type(NULL, "x.w", 2, m, SDC_TYPE_I32, SDC_TYPE_Q8_0) == SDC_TYPE_I32,
          "integers kept");
    /* sd.cpp's rule (SD families): restated from ModelLoader::tensor_should_be_converted */
    int64_t w320[4] = {320, 640, 1, 1}, conv[4] = {3, 3, 320, 320};
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.norm.weight", v, SDC_TYPE_F32, SDC_TYPE_Q8_0) ==
              SDC_TYPE_Q8_0,
          "sd.cpp: 1-D norm weight quantised");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.x.bias", v, SDC_TYPE_F32, SDC_TYPE_Q8_0) ==
              SDC_TYPE_F32,
          "sd.cpp: bias kept");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.x.scale", m, SDC_TYPE_F16, SDC_TYPE_Q8_0) ==
              SDC_TYPE_F16,
          "sd.cpp: .scale kept");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.attn.to_q.weight", w320, SDC_TYPE_F16,
                                    SDC_TYPE_Q4_K) == SDC_TYPE_F16,
          "sd.cpp: q4_K on 320 columns kept (no fallback)");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.conv.weight", conv, SDC_TYPE_F16, SDC_TYPE_Q8_0) ==
              SDC_TYPE_F16,
          "sd.cpp: 3x3 conv kept");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "model.diffusion_model.label_emb.0.0.weight", m,
                                    SDC_TYPE_F16, SDC_TYPE_Q8_0) == SDC_TYPE_F16,
          "sd.cpp: label_emb kept");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "m.token_embedding.weight", m, SDC_TYPE_F16,
                                    SDC_TYPE_Q8_0) == SDC_TYPE_F16,
          "sd.cpp: embeddings kept");
    CHECK(sdc_quant_pick_type_sdcpp(r, "x.attn.weight", m, SDC_TYPE_F16, -1) == SDC_TYPE_Q8_0,
          "sd.cpp: a rule applies without --type");
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "x.w", m, SDC_TYPE_I32, SDC_TYPE_Q8_0) == SDC_TYPE_I32,
          "sd.cpp: integers kept");
    int64_t empty[4] = {0, 3, 1, 1};
    CHECK(sdc_quant_pick_type_sdcpp(NULL, "x.w", empty, SDC_TYPE_F32, SDC_TYPE_Q8_0) ==
              SDC_TYPE_F32,
          "sd.cpp: an empty tensor is kept");
    CHECK(sdc_quant_sdcpp_unused("betas") && !sdc_quant_sdcpp_unused("alphas_cumprod") &&
              sdc_quant_sdcpp_unused("model_ema.diffusion_modelinput_blocks00weight"),
          "sd.cpp's unused tensors");
    sdc_quant_rules_free(r);
    CHECK(sdc_quant_rules_parse("abc", &r) != SDC_OK && !r, "rule without '=' refused");
    CHECK(sdc_quant_rules_parse("a=q9_9", &r) != SDC_OK, "unknown type refused: %s",
          sdc_last_error());
    CHECK(sdc_quant_rules_parse("a(=q8_0", &r) != SDC_OK, "bad regex refused: %s",
          sdc_last_error());
    CHECK(sdc_quant_rules_parse("a=q8_1", &r) != SDC_OK, "q8_1 is no weight type");
    CHECK(sdc_quant_rules_parse(",,", &r) == SDC_OK && sdc_quant_rules_count(r) == 0,
          "empty items ignored");
    sdc_quant_rules_free(r);
}

/* sd.cpp's rule (ModelLoader::tensor_should_be_converted, the parts that concern MiniT2I
 * and T5): everything whose rows fit the block, except .bias and a list of substrings. */
static bool sdcpp_converts(const char *name, int64_t ne0) {
    static const char *const keep[] = {"t_embedder.", "x_embedder.", "final_layer.", "pos_embed",
                                       "embedding"};
    size_t n = strlen(name);
    if (ne0 % 32 || (n > 5 && !strcmp(name + n - 5, ".bias"))) return false;
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (strstr(name, keep[i])) return false;
    return true;
}

static double psnr(const sdc_image *a, const sdc_image *b) {
    double se = 0;
    size_t n = (size_t)a->width * a->height * 3;
    for (size_t i = 0; i < n; i++)
        se += ((double)a->data[i] - b->data[i]) * ((double)a->data[i] - b->data[i]);
    return se == 0 ? INFINITY : 10.0 * log10(255.0 * 255.0 * (double)n / se);
}

static sdc_image *gen_tiny(const char *model, const char *dit, const char *t5) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.diffusion_model_path = dit;
    cp.t5xxl_path = t5;
    cp.t5_tokenizer_path = GOLDEN("minit2i/tokenizer_sdcpp_compat.json");
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) return NULL;
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a cat";
    p.width = p.height = 64;
    p.steps = 4;
    p.cfg_scale = 6;
    p.seed = 42;
    p.rng = "cpu";
    sdc_image *img = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &img, &n) == SDC_OK, "generate: %s", sdc_last_error());
    sdc_context_free(ctx);
    return img;
}

/* A GGUF laid out as sd.cpp's convert writes it for --type q8_0 (1-D norms and mask_token
 * quantised too) loads and generates close to the F32 image. */
static void test_sdcpp_style_gguf(void) {
    sdc_loader *l;
    sdc_loader_create(&l);
    sdc_loader_add_file(l, GOLDEN("minit2i/minit2i_a_dit_f32.safetensors"),
                        "model.diffusion_model.");
    sdc_loader_add_file(l, GOLDEN("minit2i/minit2i_a_t5_f32.safetensors"),
                        "text_encoders.t5xxl.transformer.");
    sdc_gguf_writer *w;
    sdc_gguf_writer_create(&w);
    int n = sdc_loader_tensor_count(l), quantised = 0, one_row = 0;
    void **bufs = calloc((size_t)n, sizeof *bufs);
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        int nd = 1;
        for (int d = 1; d < 4; d++)
            if (t->ne[d] > 1) nd = d + 1;
        if (sdcpp_converts(t->name, t->ne[0])) {
            size_t bytes =
                sdc_type_row_bytes(SDC_TYPE_Q8_0, t->ne[0]) * (size_t)sdc_tensor_nrows(t);
            bufs[i] = malloc(bytes);
            sdc_convert_tensor_data(t, SDC_TYPE_Q8_0, bufs[i], NULL, NULL);
            sdc_gguf_add_tensor(w, t->name, SDC_TYPE_Q8_0, nd, t->ne, bufs[i]);
            quantised++;
            one_row += sdc_tensor_nrows(t) == 1;
        } else {
            sdc_gguf_add_tensor(w, t->name, t->type, nd, t->ne, t->data);
        }
    }
    char path[512];
    tmp_path(path, sizeof path, "sdcpp_style.gguf");
    CHECK(sdc_gguf_write_file(w, path) == SDC_OK, "write: %s", sdc_last_error());
    sdc_gguf_writer_free(w);
    for (int i = 0; i < n; i++) free(bufs[i]);
    free(bufs);
    sdc_loader_free(l);
    sdc_image *ref = gen_tiny(NULL, GOLDEN("minit2i/minit2i_a_dit_f32.safetensors"),
                              GOLDEN("minit2i/minit2i_a_t5_f32.safetensors"));
    sdc_image *q = gen_tiny(path, NULL, NULL);
    if (ref && q) {
        double db = psnr(ref, q);
        printf("  sd.cpp-style q8_0 GGUF (%d tensors q8_0, %d of them single-row): PSNR %.1f dB "
               "vs F32\n",
               quantised, one_row, db);
        CHECK(one_row > 0 && db > 30, "sd.cpp-style GGUF: PSNR %.1f dB", db);
    }
    sdc_free_images(ref, 1);
    sdc_free_images(q, 1);
    remove(path);
}

/* The AVX2 grid search (quant_search_avx2.c) gives the scalar bytes, plain and with
 * importances, on data shaped to hit every branch (offset refits, flat groups, outliers). */
static void test_search_simd_matches_scalar(void) {
    if (sdc_cpu_isa_supported() < SDC_ISA_AVX2) {
        printf("  search simd: no AVX2, skipped\n");
        return;
    }
    enum { ROWS = 96, COLS = 512 };
    static float x[ROWS * COLS], imp[COLS];
    static uint8_t a[ROWS * COLS], b[ROWS * COLS];
    unsigned long long seed = 4242;
    for (int r = 0; r < ROWS; r++)
        for (int j = 0; j < COLS; j++) {
            float v = t_randf(&seed);
            switch (r % 8) {
            case 0:
                break; /* uniform */
            case 1:
                v = v * v * v * 10;
                break; /* heavy tails */
            case 2:
                v = fabsf(v) + 0.5f;
                break; /* all positive */
            case 3:
                v = (j % 37 == 0) ? 40 * v : 0.01f * v;
                break; /* outliers */
            case 4:
                v = (j / 32) % 2 ? 0 : v;
                break; /* flat groups */
            case 5:
                v = -fabsf(v) - 1;
                break; /* all negative */
            case 6:
                v = 1e-3f * (float)(j % 5);
                break; /* few levels */
            default:
                v = (float)(j % 16) / 15.0f + 0.001f * v; /* on a grid */
            }
            x[r * COLS + j] = v;
        }
    for (int j = 0; j < COLS; j++) imp[j] = 0.1f + fabsf(t_randf(&seed)) * (j % 7 ? 1 : 20);
    static const char *const types[] = {"q4_K", "q5_K", "q2_K", "q4_1", "q5_1",
                                        "q3_K", "q6_K", "q4_0", "q5_0"};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const sdc_type_traits *tr = sdc_type_get(sdc_type_from_name(types[t]));
        size_t rb = sdc_type_row_bytes(sdc_type_from_name(types[t]), COLS);
        for (int use = 0; use < 2; use++) {
            sdc_cpu_set_isa(SDC_ISA_SCALAR);
            for (int r = 0; r < ROWS; r++)
                tr->from_float(x + r * COLS, a + r * rb, COLS, use ? imp : NULL);
            sdc_cpu_set_isa(SDC_ISA_AVX2);
            for (int r = 0; r < ROWS; r++)
                tr->from_float(x + r * COLS, b + r * rb, COLS, use ? imp : NULL);
            size_t diff = 0;
            for (size_t i = 0; i < rb * ROWS; i++) diff += a[i] != b[i];
            CHECK(diff == 0, "%s %s: %zu bytes differ between scalar and AVX2 search", types[t],
                  use ? "imatrix" : "plain", diff);
            printf("  search simd %s %-7s: %zu/%zu bytes differ\n", types[t],
                   use ? "imatrix" : "plain", diff, rb * ROWS);
        }
    }
    sdc_cpu_set_isa(sdc_cpu_isa_supported());
}

static bool spill_all(const char *name, void *user) {
    (void)name, (void)user;
    return true;
}

int main(void) {
    test_pick_rules();
    test_search_simd_matches_scalar();
    test_sdcpp_style_gguf();
    sdc_st_file *gold;
    CHECK(sdc_st_open(GOLDEN("gguf/quant_expected.safetensors"), &gold) == SDC_OK, "golden: %s",
          sdc_last_error());
    if (!gold) TEST_MAIN_END();
    sdc_st_to_f32(sdc_st_find(gold, "m3x512.src"), g_src);
    sdc_st_to_f32(sdc_st_find(gold, "m3x512.imatrix"), g_imp);
    fill(g_big, 64 * 512, 1), fill(g_mid, 64 * 96, 2), fill(g_odd, 16 * 300, 3);
    fill(g_norm, 512, 4), fill(g_bias, 3, 5), fill(g_fin, 16 * 512, 6), fill(g_t5, 32 * 256, 7);

    char dit[512], t5[512], imat[512], out[512];
    tmp_path(dit, sizeof dit, "dit.safetensors");
    tmp_path(t5, sizeof t5, "t5.safetensors");
    tmp_path(imat, sizeof imat, "imatrix.dat");
    const char *dn[] = {"net.w.weight",
                        "net.w.bias",
                        "net.big.weight",
                        "net.mid.weight",
                        "net.odd.weight",
                        "net.norm.weight",
                        "net.final_layer.linear.weight"};
    float *dd[] = {g_src, g_bias, g_big, g_mid, g_odd, g_norm, g_fin};
    const int64_t ds[][2] = {{3, 512}, {3, 0}, {64, 512}, {64, 96}, {16, 300}, {512, 0}, {16, 512}};
    const int dnd[] = {2, 1, 2, 2, 2, 1, 2};
    write_st(dit, 7, dn, dd, ds, dnd);
    const char *tn[] = {"encoder.block.0.layer.0.SelfAttention.q.weight"};
    float *td[] = {g_t5};
    const int64_t ts[][2] = {{32, 256}};
    const int tnd[] = {2};
    write_st(t5, 1, tn, td, ts, tnd);

    /* every type, plain and with the golden importances, against ggml's bytes */
    write_imatrix(imat, "model.diffusion_model.net.w.weight", g_imp, 512);
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    CHECK(sdc_imatrix_load(im, imat) == SDC_OK, "load imatrix: %s", sdc_last_error());
    sdc_st_file *uniform = NULL;
    CHECK(sdc_st_open(DATA("uniform_expected.safetensors"), &uniform) == SDC_OK, "uniform: %s",
          sdc_last_error());
    test_uniform_importance(gold, uniform);
    test_sd1_q8_0();
    test_ckpt_input();
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++) {
        check_type(dit, k_types[i], NULL, gold, uniform);
        check_type(dit, k_types[i], im, gold, uniform);
    }
    sdc_st_close(uniform);

    /* --type alone: the keep rule decides; two components, one GGUF, prefixes kept */
    tmp_path(out, sizeof out, "multi.gguf");
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.diffusion_model_path = dit;
    p.t5xxl_path = t5;
    p.output_path = out;
    p.type = SDC_TYPE_Q4_K;
    CHECK(sdc_convert(&p) == SDC_OK, "multi convert: %s", sdc_last_error());
    sdc_gguf_file *g = NULL;
    CHECK(sdc_gguf_open(out, &g) == SDC_OK, "open multi: %s", sdc_last_error());
    if (g) {
        CHECK(sdc_gguf_tensor_count(g) == 8, "8 tensors, got %d", sdc_gguf_tensor_count(g));
        static const struct {
            const char *name;
            sdc_type type;
        } want[] = {
            {"model.diffusion_model.net.w.weight", SDC_TYPE_F32}, /* small */
            {"model.diffusion_model.net.w.bias", SDC_TYPE_F32},
            {"model.diffusion_model.net.big.weight", SDC_TYPE_Q4_K},
            {"model.diffusion_model.net.mid.weight", SDC_TYPE_Q5_0}, /* 96 columns */
            {"model.diffusion_model.net.odd.weight", SDC_TYPE_F32},  /* 300 columns */
            {"model.diffusion_model.net.norm.weight", SDC_TYPE_F32},
            {"model.diffusion_model.net.final_layer.linear.weight", SDC_TYPE_F32},
            {"text_encoders.t5xxl.transformer.encoder.block.0.layer.0.SelfAttention.q.weight",
             SDC_TYPE_Q4_K},
        };
        for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
            const sdc_gguf_tensor *t = sdc_gguf_find_tensor(g, want[i].name);
            CHECK(t && t->type == want[i].type, "%s: type %s, want %s", want[i].name,
                  t ? sdc_type_name(t->type) : "missing", sdc_type_name(want[i].type));
        }
        const sdc_gguf_tensor *t = sdc_gguf_find_tensor(g, "model.diffusion_model.net.odd.weight");
        CHECK(t && !memcmp(t->data, g_odd, sizeof g_odd), "kept tensor bytes unchanged");
        uint64_t n = 0;
        const void *arr = NULL;
        CHECK(sdc_gguf_get_arr(g, "sdc.source.types", SDC_GGUF_STRING, &n, &arr) == SDC_OK &&
                  n == 8 && !strcmp(((const char *const *)arr)[2], "F32"),
              "source types recorded");
        CHECK(sdc_gguf_get_arr(g, "sdc.source.files", SDC_GGUF_STRING, &n, &arr) == SDC_OK &&
                  n == 2,
              "source files recorded");
        sdc_gguf_close(g);
    }

    /* safetensors output: f16 matrices, F32 vectors; quantised types refused */
    tmp_path(out, sizeof out, "out.safetensors");
    p.t5xxl_path = NULL;
    p.type = SDC_TYPE_F16;
    CHECK(sdc_convert(&p) == SDC_OK, "f16 safetensors: %s", sdc_last_error());
    sdc_st_file *st = NULL;
    CHECK(sdc_st_open(out, &st) == SDC_OK, "open out: %s", sdc_last_error());
    if (st) {
        const sdc_st_tensor *t = sdc_st_find(st, "model.diffusion_model.net.big.weight");
        CHECK(t && t->dtype == SDC_ST_F16 && t->ndim == 2 && t->shape[0] == 64 &&
                  t->shape[1] == 512,
              "big.weight F16 [64,512]");
        int bad = 0;
        for (int i = 0; t && i < 64 * 512; i++) {
            uint16_t h;
            memcpy(&h, (const char *)t->data + 2 * i, 2);
            bad += h != sdc_f32_to_fp16(g_big[i]);
        }
        CHECK(bad == 0, "f16 values: %d differ", bad);
        t = sdc_st_find(st, "model.diffusion_model.net.norm.weight");
        CHECK(t && t->dtype == SDC_ST_F32 && t->ndim == 1, "norm stays F32 1-D");
        sdc_st_close(st);
    }
    p.type = SDC_TYPE_Q8_0;
    CHECK(sdc_convert(&p) == SDC_ERR_INVALID_ARG, "q8_0 into safetensors refused");
    printf("  refused: %s\n", sdc_last_error());
    sdc_convert_params_init(&p);
    p.output_path = out;
    CHECK(sdc_convert(&p) == SDC_ERR_INVALID_ARG, "no input refused");
    p.model_path = "/nonexistent/model.safetensors";
    CHECK(sdc_convert(&p) != SDC_OK, "missing input refused");

    /* --type on load with importances: in place, equal to the quantiser's output */
    sdc_loader *l;
    sdc_loader_create(&l);
    sdc_loader_add_file(l, dit, "model.diffusion_model.");
    sdc_converted_weights *cw = NULL;
    CHECK(sdc_convert_loaded_weights(l, SDC_TYPE_Q4_0, "\\.w\\.weight$=q4_K", im, 2, NULL, &cw) ==
              SDC_OK,
          "convert on load: %s", sdc_last_error());
    sdc_tensor *w = sdc_loader_find(l, "model.diffusion_model.net.w.weight");
    sdc_tensor *big = sdc_loader_find(l, "model.diffusion_model.net.big.weight");
    CHECK(w && w->type == SDC_TYPE_Q4_K && big && big->type == SDC_TYPE_Q4_0,
          "types after load conversion");
    if (w && w->type == SDC_TYPE_Q4_K) {
        const sdc_st_tensor *q = sdc_st_find(gold, "m3x512.q4_K.imatrix.q");
        CHECK(q && !memcmp(w->data, q->data, q->nbytes), "on-load q4_K with imatrix = ggml");
    }
    sdc_loader_free(l);
    sdc_converted_weights_free(cw);

    /* params on disk: the same conversion written to the spill file, still equal after
     * its pages are dropped (they fault back in from the file) */
    sdc_loader_create(&l);
    sdc_loader_add_file(l, dit, "model.diffusion_model.");
    sdc_convert_spill sp = {spill_all, NULL};
    CHECK(sdc_convert_loaded_weights(l, SDC_TYPE_Q4_0, "\\.w\\.weight$=q4_K", im, 2, &sp, &cw) ==
              SDC_OK,
          "convert on load to disk: %s", sdc_last_error());
    w = sdc_loader_find(l, "model.diffusion_model.net.w.weight");
    if (w && w->type == SDC_TYPE_Q4_K) {
        const sdc_st_tensor *q = sdc_st_find(gold, "m3x512.q4_K.imatrix.q");
        CHECK(sdc_converted_weights_release(cw, w), "the conversion lives in the spill file");
        CHECK(q && !memcmp(w->data, q->data, q->nbytes),
              "on-disk q4_K with imatrix = ggml after its pages were dropped");
    } else {
        CHECK(0, "on-disk conversion: type %d", w ? (int)w->type : -1);
    }
    sdc_loader_free(l);
    sdc_converted_weights_free(cw);

    sdc_imatrix_free(im);
    sdc_st_close(gold);
    remove(dit), remove(t5), remove(imat);
    tmp_path(out, sizeof out, "type.gguf"), remove(out);
    tmp_path(out, sizeof out, "multi.gguf"), remove(out);
    tmp_path(out, sizeof out, "out.safetensors"), remove(out);
    TEST_MAIN_END();
}
