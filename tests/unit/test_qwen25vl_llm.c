/* Qwen2.5-VL language model (src/models/qwen25vl_llm.c) against tests/data/qwen_text (made by
 * tests/golden/gen_qwen25vl_llm_ref.py): transformers' Qwen2_5_VLTextModel in float64 on a
 * small random model (hidden 128, 4 query / 2 key-value heads, 2 layers, MLP 256, vocabulary
 * 2650, F16 weights) for the Qwen-Image template around a prompt, around "", and 96 random ids:
 *  - the last hidden state (after the final norm), with the weights as stored (F16) and as F32;
 *  - the residual stream after layer 0 (hidden_states[1]);
 *  - only the rows after the 34 template tokens, whose keys and values come from a run of their
 *    own, cached for the next prompt (hits, misses, numerics changes);
 *  - the same weights under the transformers >= 4.52 and llama.cpp GGUF names (bit-identical);
 *  - sdc_qwen_image_encode_prompt with the stand-in tokenizer of ${GOLDEN}/qwen_image
 *    (skipped without the golden dir);
 *  - bad input (token ids outside the vocabulary, a missing or misshapen tensor);
 *  - the full-width random LLM of the golden set (qwen25vl_llm_1001.safetensors, 2 GB, made by
 *    ../shared/golden/tools/make_qwen_image_random.py) when SDC_QWEN_LLM names it: config as
 *    sd.cpp detected it, finite states for the a1 prompt, and transformers' values there when
 *    tests/data/qwen_text/qwen25vl_full_ref.safetensors has them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/backend.h"
#include "core/clock.h"
#include "models/qwen25vl_llm.h"
#include "st_weights.h"
#include "test_util.h"
#include "text/qwen2_tokenizer.h"

#define DATA(f) SDC_SOURCE_DIR "/tests/data/qwen_text/" f

/* Tolerances (max abs error; the states are O(1), |max| 3.5 .. 5.3): F32 rounding against
 * float64 only. Measured 2.9e-6 at most (scalar, AVX, AVX2 kernels; SDC_CPU_ISA), ~3.5x that;
 * a wrong rotary base (1e4) or a missing causal mask gives errors of order 1. */
#define TOL_F32    1e-5
#define TOL_LAYER0 1e-5
/* sd.cpp numerics: rounding every matmul input to F16 makes results chaotic in the rounding
 * (torch's own float32 emulation is as far from the float64 one as sdc is: 1.5e-5 mean after
 * layer 0 for the a1 prompt, 1.3e-4 mean / 1.2e-3 max after the final norm; sdc measured
 * 0.8e-5 .. 3.7e-5 mean after layer 0). After layer 0 the mean still tells the numerics apart
 * (the plain reference is 2.1e-4 .. 2.5e-4 away, more than twice both the tolerance and the
 * error found); after the final norm it is a sanity bound only. */
#define TOL_SDCPP0      2e-3
#define TOL_SDCPP0_MEAN 8e-5
#define TOL_SDCPP       4e-3
#define TOL_SDCPP_MEAN  4e-4
#define TOL_FULL        1e-5 /* measured 2.3e-6 (full width, a1 prompt) */

static sdc_st_file *ref;

/* ---- a weight source over the tiny file: as stored, as F32, or under other names ---- */
typedef struct ws_wrap {
    st_weights w;
    sdc_tensor *conv; /* [w.n] F32 copies, made on first use */
    int to_f32;       /* give F32 copies */
    int scheme;       /* 0: as stored (model.*), 1: model.language_model.*, 2: llama.cpp */
    const char *hide; /* a stored name to report missing */
    const char *bend; /* a stored name to report with ne[0] - 1 */
    sdc_tensor bent;
} ws_wrap;

/* llama.cpp GGUF names -> the stored (HF) names */
static const char *const GGUF_MAP[][2] = {
    {"attn_norm.weight", "input_layernorm.weight"},
    {"attn_q.weight", "self_attn.q_proj.weight"},
    {"attn_q.bias", "self_attn.q_proj.bias"},
    {"attn_k.weight", "self_attn.k_proj.weight"},
    {"attn_k.bias", "self_attn.k_proj.bias"},
    {"attn_v.weight", "self_attn.v_proj.weight"},
    {"attn_v.bias", "self_attn.v_proj.bias"},
    {"attn_output.weight", "self_attn.o_proj.weight"},
    {"ffn_norm.weight", "post_attention_layernorm.weight"},
    {"ffn_gate.weight", "mlp.gate_proj.weight"},
    {"ffn_up.weight", "mlp.up_proj.weight"},
    {"ffn_down.weight", "mlp.down_proj.weight"},
};

/* The stored name for a requested one in the wrapper's scheme; 0 if it has none. */
static int stored_name(const ws_wrap *c, const char *name, char *out, size_t cap) {
    if (c->scheme == 0) return snprintf(out, cap, "%s", name) > 0;
    if (c->scheme == 1) {
        const char *p = "model.language_model.";
        if (strncmp(name, p, strlen(p))) return 0;
        return snprintf(out, cap, "model.%s", name + strlen(p)) > 0;
    }
    if (!strcmp(name, "token_embd.weight")) return snprintf(out, cap, "model.embed_tokens.weight");
    if (!strcmp(name, "output_norm.weight")) return snprintf(out, cap, "model.norm.weight");
    int l = 0, off = 0;
    if (sscanf(name, "blk.%d.%n", &l, &off) != 1 || !off) return 0;
    for (size_t k = 0; k < sizeof GGUF_MAP / sizeof *GGUF_MAP; k++)
        if (!strcmp(name + off, GGUF_MAP[k][0]))
            return snprintf(out, cap, "model.layers.%d.%s", l, GGUF_MAP[k][1]) > 0;
    return 0;
}

static sdc_tensor *wrap_find(void *user, const char *name) {
    ws_wrap *c = user;
    char sname[256];
    if (!stored_name(c, name, sname, sizeof sname)) return NULL;
    if (c->hide && !strcmp(sname, c->hide)) return NULL;
    int i = 0;
    while (i < c->w.n && strcmp(c->w.t[i].name, sname)) i++;
    if (i == c->w.n) return NULL;
    sdc_tensor *src = &c->w.t[i];
    if (c->bend && !strcmp(sname, c->bend)) {
        c->bent = *src;
        c->bent.ne[0] -= 1;
        sdc_tensor_set_contiguous_strides(&c->bent);
        return &c->bent;
    }
    if (!c->to_f32 || src->type == SDC_TYPE_F32) return src;
    sdc_tensor *t = &c->conv[i];
    if (!t->data) {
        *t = *src;
        t->type = SDC_TYPE_F32;
        sdc_tensor_set_contiguous_strides(t);
        float *f = malloc((size_t)sdc_tensor_nelements(src) * sizeof *f);
        sdc_weight_to_f32(src, f);
        t->data = f;
    }
    return t;
}

static int wrap_open(ws_wrap *c, int to_f32, int scheme, sdc_weight_source *ws) {
    memset(c, 0, sizeof *c);
    if (st_weights_open(&c->w, DATA("qwen25vl_tiny.safetensors"), ws) != 0) return -1;
    c->conv = calloc((size_t)c->w.n, sizeof *c->conv);
    c->to_f32 = to_f32;
    c->scheme = scheme;
    ws->find = wrap_find;
    ws->user = c;
    return 0;
}

static void wrap_close(ws_wrap *c) {
    for (int i = 0; i < c->w.n; i++) free(c->conv[i].data);
    free(c->conv);
    st_weights_close(&c->w);
}

/* ---- helpers ---- */
static int32_t *read_ids(const char *name, int *n) {
    int64_t cnt = 0;
    float *f = st_read_f32(ref, name, &cnt);
    CHECK(f != NULL, "reference %s missing", name);
    *n = f ? (int)cnt : 0;
    int32_t *ids = malloc((size_t)(*n ? *n : 1) * sizeof *ids);
    for (int i = 0; i < *n; i++) ids[i] = (int32_t)f[i];
    free(f);
    return ids;
}

/* got[rows][h] against rows first.. of reference `name`. Returns the max abs error. */
static double compare(const char *what, const float *got, const char *name, int first, int rows,
                      int h, double tol) {
    int64_t cnt = 0;
    float *r = st_read_f32(ref, name, &cnt);
    CHECK(r && cnt >= (int64_t)(first + rows) * h, "%s: reference %s missing or short", what, name);
    if (!r || cnt < (int64_t)(first + rows) * h) {
        free(r);
        return INFINITY;
    }
    long n = (long)rows * h;
    const float *rr = r + (size_t)first * h;
    double err = t_max_abs_diff(got, rr, n), num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = (double)got[i] - rr[i];
        num += d * d;
        den += (double)rr[i] * rr[i];
    }
    printf("  %-44s vs %-14s rows %2d..%2d: max abs err %.3g (tol %.2g), rel L2 %.3g\n", what, name,
           first, first + rows - 1, err, tol, sqrt(num / den));
    CHECK(err <= tol, "%s: max abs err %g > %g", what, err, tol);
    free(r);
    return err;
}

static void run_cases(sdc_qwen25vl_llm *m, sdc_backend *be, const char *label, double tol,
                      int layer0) {
    static const char *const cases[] = {"a1", "empty", "rand"};
    int h = sdc_qwen25vl_llm_get_config(m)->hidden;
    for (int k = 0; k < 3; k++) {
        char name[64], what[96];
        snprintf(name, sizeof name, "ids.%s", cases[k]);
        int n = 0;
        int32_t *ids = read_ids(name, &n);
        float *out = malloc((size_t)(n ? n : 1) * h * sizeof *out);
        sdc_status s = sdc_qwen25vl_llm_encode(m, be, ids, n, 0, 0, out, NULL, NULL);
        CHECK(s == SDC_OK, "%s %s: %s", label, cases[k], sdc_last_error());
        snprintf(name, sizeof name, "hidden.%s", cases[k]);
        snprintf(what, sizeof what, "%s, %s: last hidden state", label, cases[k]);
        if (s == SDC_OK) compare(what, out, name, 0, n, h, tol);
        if (layer0) {
            s = sdc_qwen25vl_llm_encode(m, be, ids, n, 0, 1, out, NULL, NULL);
            CHECK(s == SDC_OK, "%s %s layer 0: %s", label, cases[k], sdc_last_error());
            snprintf(name, sizeof name, "layer0.%s", cases[k]);
            snprintf(what, sizeof what, "%s, %s: after layer 0", label, cases[k]);
            if (s == SDC_OK) compare(what, out, name, 0, n, h, TOL_LAYER0);
        }
        if (n > SDC_QWEN_IMAGE_DROP_TOKENS + 1) {
            int first = SDC_QWEN_IMAGE_DROP_TOKENS;
            s = sdc_qwen25vl_llm_encode(m, be, ids, n, first, 0, out, NULL, NULL);
            CHECK(s == SDC_OK, "%s %s from row 34: %s", label, cases[k], sdc_last_error());
            snprintf(name, sizeof name, "hidden.%s", cases[k]);
            snprintf(what, sizeof what, "%s, %s: template dropped", label, cases[k]);
            if (s == SDC_OK) compare(what, out, name, first, n - first, h, tol);
        }
        free(out);
        free(ids);
    }
}

static double mean_abs(const float *a, const float *b, long n) {
    double s = 0;
    for (long i = 0; i < n; i++) s += fabs((double)a[i] - (double)b[i]);
    return n ? s / n : 0;
}

/* sd.cpp numerics (matmul inputs rounded to F16) against the float64 emulation, after layer 0
 * (must_differ: the plain reference must be farther than the tolerance, or the check could
 * not tell the numerics apart) and after the final norm (a sanity bound only). */
static void sdcpp_case(sdc_qwen25vl_llm *m, sdc_backend *be, const char *c, int n_layers,
                       double tol, double tol_mean, int must_differ) {
    int h = sdc_qwen25vl_llm_get_config(m)->hidden, n = 0;
    char name[64], plain[64], what[96];
    snprintf(name, sizeof name, "ids.%s", c);
    int32_t *ids = read_ids(name, &n);
    float *out = malloc((size_t)(n ? n : 1) * h * sizeof *out);
    sdc_status s = sdc_qwen25vl_llm_encode(m, be, ids, n, 0, n_layers, out, NULL, NULL);
    CHECK(s == SDC_OK, "sdcpp %s: %s", c, sdc_last_error());
    snprintf(name, sizeof name, "%s.%s", n_layers ? "sdcpp0" : "sdcpp", c);
    snprintf(plain, sizeof plain, "%s.%s", n_layers ? "layer0" : "hidden", c);
    snprintf(what, sizeof what, "sd.cpp numerics, %s, %s", c, n_layers ? "layer 0" : "final");
    if (s == SDC_OK) compare(what, out, name, 0, n, h, tol);
    float *e = st_read_f32(ref, name, NULL), *p = st_read_f32(ref, plain, NULL);
    CHECK(e && p, "%s / %s missing", name, plain);
    if (e && p && s == SDC_OK) {
        long nn = (long)n * h;
        double me = mean_abs(out, e, nn), mp = mean_abs(out, p, nn);
        printf("  %-44s mean abs err %.3g (tol %.2g) vs emulation, %.3g vs plain F32\n", what, me,
               tol_mean, mp);
        CHECK(me <= tol_mean, "%s: mean err %g > %g", what, me, tol_mean);
        CHECK(!must_differ || (mp > 2 * me && mp > tol_mean), "%s: plain reference as close (%g)",
              what, mp);
    }
    free(e);
    free(p);
    free(out);
    free(ids);
}

static void sdcpp_numerics(sdc_qwen25vl_llm *m, sdc_backend *be) {
    static const char *const cases[] = {"a1", "empty", "rand"};
    sdc_qwen25vl_llm_set_sdcpp_numerics(m, true);
    for (int k = 0; k < 3; k++) {
        sdcpp_case(m, be, cases[k], 1, TOL_SDCPP0, TOL_SDCPP0_MEAN, 1);
        sdcpp_case(m, be, cases[k], 0, TOL_SDCPP, TOL_SDCPP_MEAN, 0);
    }
    sdc_qwen25vl_llm_set_sdcpp_numerics(m, false);
}

/* The template's keys and values are cached: a second prompt with the same 34 leading ids gives
 * bit-identically what a model without a cache gives; other leading ids replace the cache; a
 * change of numerics does not reuse it. */
static void prefix_cache(sdc_qwen25vl_llm *m, sdc_backend *be, const sdc_weight_source *ws) {
    int h = sdc_qwen25vl_llm_get_config(m)->hidden, na = 0, ne = 0, nr = 0;
    const int P = SDC_QWEN_IMAGE_DROP_TOKENS;
    int32_t *a1 = read_ids("ids.a1", &na), *em = read_ids("ids.empty", &ne);
    int32_t *rnd = read_ids("ids.rand", &nr);
    float *x = malloc((size_t)nr * h * sizeof *x), *y = malloc((size_t)nr * h * sizeof *y);
    CHECK(!memcmp(a1, em, (size_t)P * sizeof *a1), "a1 and empty share the template");
    sdc_qwen25vl_llm *fresh = NULL;
    CHECK(sdc_qwen25vl_llm_load(ws, "", 32, &fresh) == SDC_OK, "load: %s", sdc_last_error());
    if (!fresh) goto done;
    CHECK(sdc_qwen25vl_llm_cached_prefix(fresh) == 0, "a new model has no cache");
    /* m: the a1 prompt fills the cache, the empty prompt reuses it */
    sdc_status s = sdc_qwen25vl_llm_encode(m, be, a1, na, P, 0, y, NULL, NULL);
    if (s == SDC_OK) s = sdc_qwen25vl_llm_encode(m, be, em, ne, P, 0, y, NULL, NULL);
    CHECK(s == SDC_OK && sdc_qwen25vl_llm_cached_prefix(m) == P, "cache of %d",
          sdc_qwen25vl_llm_cached_prefix(m));
    /* fresh: the empty prompt first (its own prefix run) */
    if (s == SDC_OK) s = sdc_qwen25vl_llm_encode(fresh, be, em, ne, P, 0, x, NULL, NULL);
    double d = s == SDC_OK ? t_max_abs_diff(x, y, (long)(ne - P) * h) : INFINITY;
    printf("  prefix cache: empty prompt after a1 (cache hit) vs a fresh model: max diff %.3g "
           "(must be 0)\n",
           d);
    CHECK(d == 0, "cache hit differs by %g", d);
    /* other leading ids: the cache is replaced (checked against the reference) */
    s = sdc_qwen25vl_llm_encode(m, be, rnd, nr, P, 0, y, NULL, NULL);
    CHECK(s == SDC_OK, "rand: %s", sdc_last_error());
    if (s == SDC_OK)
        compare("prefix cache replaced: rand", y, "hidden.rand", P, nr - P, h, TOL_F32);
    /* a cache made in sd.cpp numerics is not used in plain numerics */
    sdc_qwen25vl_llm_set_sdcpp_numerics(m, true);
    s = sdc_qwen25vl_llm_encode(m, be, a1, na, P, 0, y, NULL, NULL);
    sdc_qwen25vl_llm_set_sdcpp_numerics(m, false);
    if (s == SDC_OK) s = sdc_qwen25vl_llm_encode(m, be, a1, na, P, 0, y, NULL, NULL);
    CHECK(s == SDC_OK, "a1: %s", sdc_last_error());
    if (s == SDC_OK)
        compare("prefix cache after sd.cpp numerics: a1", y, "hidden.a1", P, na - P, h, TOL_F32);
    sdc_qwen25vl_llm_free(fresh);
done:
    free(a1);
    free(em);
    free(rnd);
    free(x);
    free(y);
}

/* The same weights under another naming scheme give bit-identical states. */
static void other_names(sdc_backend *be, const float *base, const int32_t *ids, int n) {
    static const char *const label[] = {"", "model.language_model.*", "llama.cpp blk.*"};
    for (int scheme = 1; scheme <= 2; scheme++) {
        ws_wrap c;
        sdc_weight_source ws;
        CHECK(wrap_open(&c, 0, scheme, &ws) == 0, "open tiny weights");
        sdc_qwen25vl_llm *m = NULL;
        CHECK(sdc_qwen25vl_llm_detect(&ws, ""), "%s: not detected", label[scheme]);
        sdc_status s = sdc_qwen25vl_llm_load(&ws, "", 32, &m);
        CHECK(s == SDC_OK, "%s: %s", label[scheme], sdc_last_error());
        if (m) {
            int h = sdc_qwen25vl_llm_get_config(m)->hidden;
            float *out = malloc((size_t)n * h * sizeof *out);
            s = sdc_qwen25vl_llm_encode(m, be, ids, n, 0, 0, out, NULL, NULL);
            double d = s == SDC_OK ? t_max_abs_diff(out, base, (long)n * h) : INFINITY;
            printf("  names %-24s vs model.*: max abs diff %.3g (must be 0)\n", label[scheme], d);
            CHECK(d == 0, "%s: differs by %g", label[scheme], d);
            free(out);
        }
        sdc_qwen25vl_llm_free(m);
        wrap_close(&c);
    }
}

static void expect_load_fail(const char *hide, const char *bend, const char *needle) {
    ws_wrap c;
    sdc_weight_source ws;
    CHECK(wrap_open(&c, 0, 0, &ws) == 0, "open tiny weights");
    c.hide = hide;
    c.bend = bend;
    sdc_qwen25vl_llm *m = NULL;
    sdc_status s = sdc_qwen25vl_llm_load(&ws, "", 32, &m);
    const char *msg = sdc_last_error();
    printf("  rejects %s %-40s %s\n", hide ? "missing" : "misshapen", hide ? hide : bend,
           s ? msg : "(accepted)");
    CHECK(s != SDC_OK && !m && strstr(msg, needle), "load without/with bent %s: %d '%s'",
          hide ? hide : bend, s, msg);
    sdc_qwen25vl_llm_free(m);
    wrap_close(&c);
}

static void prompt_function(sdc_qwen25vl_llm *m, sdc_backend *be) {
    struct stat sb;
    if (stat(GOLDEN("qwen_image/tokenizer/tokenizer.json"), &sb) != 0) {
        printf("  %s absent: prompt check skipped\n", GOLDEN("qwen_image/tokenizer"));
        return;
    }
    sdc_qwen2_tokenizer *tok = NULL;
    CHECK(sdc_qwen2_tokenizer_load(GOLDEN("qwen_image/tokenizer/tokenizer.json"), &tok) == SDC_OK,
          "tokenizer: %s", sdc_last_error());
    if (!tok) return;
    const char *prompts[2] = {"a red fox sitting in a snowy forest, watercolor painting", ""};
    const char *names[2] = {"hidden.a1", "hidden.empty"};
    int want[2] = {16, 5};
    int h = sdc_qwen25vl_llm_get_config(m)->hidden;
    for (int k = 0; k < 2; k++) {
        float *ctx = NULL;
        int n = 0;
        sdc_status s = sdc_qwen_image_encode_prompt(m, be, tok, prompts[k], &ctx, &n, NULL, NULL);
        CHECK(s == SDC_OK && n == want[k], "encode_prompt \"%s\": %d states (want %d): %s",
              prompts[k], n, want[k], s ? sdc_last_error() : "");
        if (s == SDC_OK && n == want[k])
            compare(k ? "encode_prompt(\"\")" : "encode_prompt(a1 prompt)", ctx, names[k],
                    SDC_QWEN_IMAGE_DROP_TOKENS, n, h, TOL_F32);
        free(ctx);
    }
    sdc_qwen2_tokenizer_free(tok);
}

/* The full-width random LLM of the golden set: loads with sd.cpp's detected config and runs. */
static void full_width(sdc_backend *be) {
    const char *path = getenv("SDC_QWEN_LLM");
    struct stat sb;
    if (!path || stat(path, &sb) != 0) {
        printf("  SDC_QWEN_LLM unset or absent: full-width LLM check skipped\n");
        return;
    }
    st_weights w;
    sdc_weight_source ws;
    CHECK(st_weights_open(&w, path, &ws) == 0, "open %s", path);
    sdc_qwen25vl_llm *m = NULL;
    double t0 = sdc_now_seconds();
    sdc_status s = sdc_qwen25vl_llm_load(&ws, "", 0, &m);
    CHECK(s == SDC_OK, "%s: %s", path, sdc_last_error());
    if (m) {
        const sdc_qwen25vl_llm_config *c = sdc_qwen25vl_llm_get_config(m);
        printf("  full width: %d layers, hidden %d, %d/%d heads of %d, mlp %d, vocab %d\n",
               c->n_layers, c->hidden, c->n_heads, c->n_kv_heads, c->head_dim, c->mlp, c->vocab);
        CHECK(c->n_layers == 2 && c->hidden == 3584 && c->n_heads == 28 && c->n_kv_heads == 4 &&
                  c->mlp == 18944 && c->vocab == 152064 && c->qkv_bias,
              "full-width config differs from sd.cpp's detection");
        sdc_st_file *tiny = ref, *full = NULL;
        CHECK(sdc_st_open(DATA("qwen25vl_full_ref.safetensors"), &full) == SDC_OK,
              "full-width reference: %s", sdc_last_error());
        int n = 0;
        int32_t *ids = NULL;
        if (full) {
            ref = full;
            ids = read_ids("full.ids.a1", &n);
        }
        if (n > SDC_QWEN_IMAGE_DROP_TOKENS) {
            int k = n - SDC_QWEN_IMAGE_DROP_TOKENS;
            float *out = malloc((size_t)k * c->hidden * sizeof *out);
            s = sdc_qwen25vl_llm_encode(m, be, ids, n, SDC_QWEN_IMAGE_DROP_TOKENS, 0, out, NULL,
                                        NULL);
            CHECK(s == SDC_OK, "full width encode: %s", sdc_last_error());
            double t1 = sdc_now_seconds();
            /* again, the weights now paged in: the compute alone (a figure, not a check) */
            if (s == SDC_OK)
                s = sdc_qwen25vl_llm_encode(m, be, ids, n, SDC_QWEN_IMAGE_DROP_TOKENS, 0, out, NULL,
                                            NULL);
            double t2 = sdc_now_seconds();
            int finite = 1;
            for (long i = 0; s == SDC_OK && i < (long)k * c->hidden; i++)
                finite &= isfinite(out[i]);
            CHECK(finite, "full width: non-finite states");
            printf("  full width: %d tokens: first encode %.2f s (page-in included), again %.2f s "
                   "(2 threads, template cached)\n",
                   n, t1 - t0, t2 - t1);
            if (s == SDC_OK)
                compare("full width, a1: context states", out, "full.hidden.a1", 0, k, c->hidden,
                        TOL_FULL);
            free(out);
        }
        free(ids);
        sdc_st_close(full);
        ref = tiny;
    }
    sdc_qwen25vl_llm_free(m);
    st_weights_close(&w);
}

int main(void) {
    if (sdc_st_open(DATA("qwen25vl_tiny_ref.safetensors"), &ref) != SDC_OK) {
        fprintf(stderr, "cannot open the reference: %s\n", sdc_last_error());
        return 1;
    }
    sdc_backend *be = sdc_backend_cpu_create(2);
    ws_wrap c16, c32;
    sdc_weight_source ws16, ws32;
    CHECK(wrap_open(&c16, 0, 0, &ws16) == 0 && wrap_open(&c32, 1, 0, &ws32) == 0,
          "open tiny weights");
    sdc_qwen25vl_llm *m16 = NULL, *m32 = NULL;
    CHECK(sdc_qwen25vl_llm_detect(&ws16, ""), "tiny model not detected");
    CHECK(sdc_qwen25vl_llm_load(&ws16, "", 32, &m16) == SDC_OK, "load: %s", sdc_last_error());
    CHECK(sdc_qwen25vl_llm_load(&ws32, "", 32, &m32) == SDC_OK, "load F32: %s", sdc_last_error());
    if (m16 && m32) {
        const sdc_qwen25vl_llm_config *c = sdc_qwen25vl_llm_get_config(m16);
        printf("config: %d layers, hidden %d, %d/%d heads of %d, mlp %d, vocab %d, bias %d\n",
               c->n_layers, c->hidden, c->n_heads, c->n_kv_heads, c->head_dim, c->mlp, c->vocab,
               c->qkv_bias);
        CHECK(c->n_layers == 2 && c->hidden == 128 && c->n_heads == 4 && c->n_kv_heads == 2 &&
                  c->head_dim == 32 && c->mlp == 256 && c->vocab == 2650 && c->qkv_bias,
              "tiny config");
        run_cases(m16, be, "F16 weights", TOL_F32, 1);
        run_cases(m32, be, "F32 weights", TOL_F32, 0);
        sdcpp_numerics(m16, be);
        prefix_cache(m16, be, &ws16);
        int n = 0;
        int32_t *ids = read_ids("ids.rand", &n);
        float *base = malloc((size_t)n * c->hidden * sizeof *base);
        CHECK(sdc_qwen25vl_llm_encode(m16, be, ids, n, 0, 0, base, NULL, NULL) == SDC_OK, "encode");
        other_names(be, base, ids, n);
        /* bad input */
        ids[3] = 2650;
        sdc_status s = sdc_qwen25vl_llm_encode(m16, be, ids, n, 0, 0, base, NULL, NULL);
        CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "2650"), "id 2650: %d %s", s,
              sdc_last_error());
        s = sdc_qwen25vl_llm_encode(m16, be, ids, n, n, 0, base, NULL, NULL);
        CHECK(s == SDC_ERR_INVALID_ARG, "first row past the end: %d", s);
        free(ids);
        free(base);
        prompt_function(m32, be);
    }
    expect_load_fail("model.layers.1.mlp.up_proj.weight", NULL, "model.layers.1.mlp.up_proj");
    expect_load_fail("model.norm.weight", NULL, "model.norm.weight");
    expect_load_fail(NULL, "model.layers.0.self_attn.v_proj.weight", "v_proj");
    expect_load_fail("model.layers.1.self_attn.k_proj.bias", NULL, "k_proj.bias");
    {
        /* head_dim 128 (the default) does not divide the tiny model's 128/64 widths into heads */
        sdc_qwen25vl_llm *m = NULL;
        sdc_status s = sdc_qwen25vl_llm_load(&ws32, "", 0, &m);
        CHECK(s == SDC_ERR_FORMAT && !m && strstr(sdc_last_error(), "heads"),
              "default head_dim on the tiny model: %d %s", s, sdc_last_error());
    }
    full_width(be);
    sdc_qwen25vl_llm_free(m16);
    sdc_qwen25vl_llm_free(m32);
    wrap_close(&c16);
    wrap_close(&c32);
    sdc_backend_free(be);
    sdc_st_close(ref);
    TEST_MAIN_END();
}
