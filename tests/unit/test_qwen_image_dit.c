/* The Qwen-Image MMDiT against diffusers' QwenImageTransformer2DModel
 * (tests/golden/gen_qwen_image_dit_ref.py: a tiny random model, float64 references): plain,
 * odd token counts, odd latent sizes (padding), Layered (addition_t_embedding, frames, the
 * condition latent), Edit (a reference latent) and zero_cond_t, each with diffusers' and sd.cpp's
 * positions; the config read from the weights, both name layouts, the position rules, bad input.
 * With the full-width golden checkpoints (../shared/golden/tools/make_qwen_image_random.py, in
 * $SDC_QWEN_DIT_DIR, default ../qwen_ckpt beside the checkout) also their diffusers outputs
 * (full_ref.safetensors).
 */
#include <time.h>

#include "core/backend.h"
#include "core/fp16.h"
#include "models/qwen_image_dit.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA   SDC_SOURCE_DIR "/tests/data/qwen_dit/"
#define PREFIX "model.diffusion_model."
#define ADD    "time_text_embed.addition_t_embedding.weight"

/* Tolerances: max |got - ref| / max |ref|, a few times the largest error measured (F32 math
 * against the float64 reference, scalar and AVX2 kernels). See the measured values printed. */
#define TOL_F32 5e-5
#define TOL_F16 5e-5 /* F16 weights are dequantised exactly: the same error */
/* ggml numerics (F16 rounding of every Linear input, F16 GELU) against the same emulation in
 * torch float64: 3.1-6.1e-4 measured. That is rounding-flip noise, as large as the emulation's
 * own effect (plain math vs the emulated reference: 4.9-6.2e-4; torch's float32 run of the
 * emulation vs its float64 run: 2.3e-4), so this checks that the path runs and stays at that
 * noise level, not that it beats plain math. */
#define TOL_GGML 1.5e-3
#define TOL_FULL 1.5e-5 /* F32 vs torch float32: 3.4e-6 measured */

/* A weight source over the test file: names under `prefix`, tensors as F32 copies (or as
 * stored), the Layered table hidden (plain model), a fake zero_cond_t marker, one name hidden or
 * one with a wrong shape. */
typedef struct tws {
    st_weights base;
    sdc_tensor *f32;
    const char *prefix, *hide, *bad_shape;
    bool hide_add, zero_marker;
    sdc_tensor bad, marker;
} tws;

static sdc_tensor *tws_find(void *user, const char *name) {
    tws *w = user;
    size_t np = strlen(w->prefix);
    if (strncmp(name, w->prefix, np)) return NULL;
    name += np;
    if (w->zero_marker && !strcmp(name, "__index_timestep_zero__")) return &w->marker;
    if ((w->hide && !strcmp(name, w->hide)) || (w->hide_add && !strcmp(name, ADD))) return NULL;
    for (int i = 0; i < w->base.n; i++) {
        if (strcmp(w->base.t[i].name, name)) continue;
        sdc_tensor *t = w->f32 ? &w->f32[i] : &w->base.t[i];
        if (w->bad_shape && !strcmp(name, w->bad_shape)) {
            w->bad = *t;
            w->bad.ne[0] += 1; /* read only after the shape check */
            sdc_tensor_set_contiguous_strides(&w->bad);
            return &w->bad;
        }
        return t;
    }
    return NULL;
}

static int tws_open(tws *w, const char *path, bool f32, sdc_weight_source *ws) {
    memset(w, 0, sizeof *w);
    w->prefix = "";
    sdc_weight_source base_ws;
    if (st_weights_open(&w->base, path, &base_ws) != 0) return -1;
    w->marker.type = SDC_TYPE_F32;
    w->marker.ne[0] = w->marker.ne[1] = w->marker.ne[2] = w->marker.ne[3] = 1;
    sdc_tensor_set_contiguous_strides(&w->marker);
    ws->find = tws_find;
    ws->user = w;
    if (!f32) return 0;
    w->f32 = calloc((size_t)w->base.n, sizeof(sdc_tensor));
    for (int i = 0; i < w->base.n; i++) {
        sdc_tensor *s = &w->base.t[i], *d = &w->f32[i];
        *d = *s;
        d->type = SDC_TYPE_F32;
        sdc_tensor_set_contiguous_strides(d);
        d->data = malloc(sdc_tensor_nbytes(d));
        if (sdc_weight_to_f32(s, d->data) != SDC_OK) return -1;
    }
    return 0;
}

static void tws_close(tws *w) {
    if (w->f32)
        for (int i = 0; i < w->base.n; i++) free(w->f32[i].data);
    free(w->f32);
    st_weights_close(&w->base);
}

static double compare(const char *what, const float *got, const float *ref, long n, double tol) {
    double scale = 0, num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        scale = fmax(scale, fabs((double)ref[i]));
        double d = (double)got[i] - ref[i];
        num += d * d, den += (double)ref[i] * ref[i];
    }
    double e = t_max_abs_diff(got, ref, n) / (scale > 0 ? scale : 1);
    printf("  %-40s max err / max|ref| %.3g (tolerance %.2g), rel-L2 %.3g, %ld values\n", what, e,
           tol, sqrt(num / (den > 0 ? den : 1)), n);
    CHECK(e <= tol, "%s: error %g > %g", what, e, tol);
    return e;
}

/* One case of cases.safetensors: inputs by name prefix, shapes from the file. */
typedef struct ref_case {
    float *x, *t, *ctx, *ref0, *add, *out_diff, *out_sdcpp, *out_ggml;
    int add_i[8];
    sdc_qwen_dit_ref refs[1];
    sdc_qwen_dit_input in;
    long n_out;
} ref_case;

static int case_load(sdc_st_file *f, const char *name, ref_case *c) {
    memset(c, 0, sizeof *c);
    char key[96];
#define READ(field, suffix)                                                                        \
    (snprintf(key, sizeof key, "%s." suffix, name), c->field = st_read_f32(f, key, NULL))
    READ(x, "x"), READ(t, "t"), READ(ctx, "ctx"), READ(ref0, "ref0"), READ(add, "add");
    READ(out_diff, "out.diffusers"), READ(out_sdcpp, "out.sdcpp"), READ(out_ggml, "out.ggml");
#undef READ
    snprintf(key, sizeof key, "%s.x", name);
    const sdc_st_tensor *x = sdc_st_find(f, key);
    snprintf(key, sizeof key, "%s.ctx", name);
    const sdc_st_tensor *ctx = sdc_st_find(f, key);
    if (!c->x || !c->t || !c->ctx || !x || !ctx || x->ndim != 5 || (!c->out_diff && !c->out_sdcpp))
        return -1;
    sdc_qwen_dit_input *in = &c->in;
    in->B = (int)x->shape[0], in->frames = (int)x->shape[2];
    in->h = (int)x->shape[3], in->w = (int)x->shape[4];
    in->x = c->x, in->t = c->t, in->ctx = c->ctx, in->n_ctx = (int)ctx->shape[1];
    c->n_out = (long)sdc_st_numel(x);
    if (c->ref0) {
        snprintf(key, sizeof key, "%s.ref0", name);
        const sdc_st_tensor *r = sdc_st_find(f, key);
        c->refs[0] = (sdc_qwen_dit_ref){c->ref0, (int)r->shape[3], (int)r->shape[2]};
        in->refs = c->refs, in->n_refs = 1;
    }
    if (c->add) {
        for (int b = 0; b < in->B && b < 8; b++) c->add_i[b] = (int)c->add[b];
        in->addition_t_cond = c->add_i;
    }
    return 0;
}

static void case_free(ref_case *c) {
    free(c->x), free(c->t), free(c->ctx), free(c->ref0), free(c->add), free(c->out_diff);
    free(c->out_sdcpp), free(c->out_ggml);
}

typedef struct case_spec {
    const char *name;
    bool layered, zero;
} case_spec;

static const case_spec k_cases[] = {
    {"plain", false, false},  {"odd", false, false},  {"pad", false, false},
    {"layered", true, false}, {"edit", false, false}, {"zero", false, true},
};

static sdc_qwen_dit *load_model_ex(tws *w, sdc_weight_source *ws, bool layered, bool zero,
                                   sdc_qwen_positions pos, bool ggml) {
    w->hide_add = !layered;
    w->zero_marker = zero;
    sdc_qwen_dit_options opt = {.positions = pos, .ggml_numerics = ggml};
    sdc_qwen_dit *m = NULL;
    sdc_status s = sdc_qwen_dit_load(ws, w->prefix, &opt, &m);
    CHECK(s == SDC_OK, "load (layered %d zero %d): %s", layered, zero, sdc_last_error());
    return m;
}

static sdc_qwen_dit *load_model(tws *w, sdc_weight_source *ws, bool layered, bool zero,
                                sdc_qwen_positions pos) {
    return load_model_ex(w, ws, layered, zero, pos, false);
}

static double max_err_seen, max_err_ggml;

/* Every case with both position rules; with ggml (F16 weights) also sd.cpp's arithmetic. */
static void run_cases(sdc_backend *be, tws *w, sdc_weight_source *ws, sdc_st_file *f,
                      const char *label, double tol, bool ggml) {
    for (size_t i = 0; i < sizeof k_cases / sizeof *k_cases; i++) {
        const case_spec *cs = &k_cases[i];
        ref_case c;
        if (case_load(f, cs->name, &c) != 0) {
            CHECK(0, "case %s missing in cases.safetensors", cs->name);
            case_free(&c);
            continue;
        }
        float *out = malloc((size_t)c.n_out * sizeof(float));
        for (int pass = 0; pass < (ggml ? 3 : 2); pass++) {
            /* sd.cpp's rule; diffusers' where the file has it (else both rules agree); pass 2:
             * sd.cpp's rule and arithmetic */
            int pos = pass == 2 ? SDC_QWEN_POS_SDCPP : pass;
            const float *ref = pass == 2 ? c.out_ggml
                               : pos == SDC_QWEN_POS_SDCPP
                                   ? (c.out_sdcpp ? c.out_sdcpp : c.out_diff)
                                   : c.out_diff;
            if (!ref) {
                CHECK(pass < 2, "%s: no out.ggml", cs->name);
                continue;
            }
            sdc_qwen_dit *m =
                load_model_ex(w, ws, cs->layered, cs->zero, (sdc_qwen_positions)pos, pass == 2);
            if (!m) continue;
            for (long j = 0; j < c.n_out; j++) out[j] = NAN;
            sdc_status s = sdc_qwen_dit_forward(m, be, &c.in, out, NULL, NULL);
            CHECK(s == SDC_OK, "%s forward: %s", cs->name, sdc_last_error());
            char what[96];
            snprintf(what, sizeof what, "%s %s, %s", label, cs->name,
                     pass == 2                   ? "ggml numerics"
                     : pos == SDC_QWEN_POS_SDCPP ? "sd.cpp positions"
                                                 : "diffusers positions");
            if (s == SDC_OK && pass == 2)
                max_err_ggml = fmax(max_err_ggml, compare(what, out, ref, c.n_out, TOL_GGML));
            else if (s == SDC_OK)
                max_err_seen = fmax(max_err_seen, compare(what, out, ref, c.n_out, tol));
            sdc_qwen_dit_free(m);
        }
        free(out);
        case_free(&c);
    }
}

static void test_config(tws *w, sdc_weight_source *ws) {
    w->prefix = PREFIX;
    for (int layered = 0; layered < 2; layered++) {
        sdc_qwen_dit *m = load_model(w, ws, layered, false, SDC_QWEN_POS_SDCPP);
        if (!m) continue;
        const sdc_qwen_dit_config *c = sdc_qwen_dit_get_config(m);
        printf("  config: hidden %d = %d heads x %d, %d layers, in %d out %d, txt %d, mlp %d, "
               "axes %d/%d/%d, layered %d, zero_cond_t %d, %d tensors\n",
               c->hidden, c->heads, c->head_dim, c->n_layers, c->in_channels, c->out_channels,
               c->txt_dim, c->mlp_hidden, c->axes[0], c->axes[1], c->axes[2], c->layered,
               c->zero_cond_t, c->n_tensors);
        int file_tensors = w->base.n - (layered ? 0 : 1);
        CHECK(c->hidden == 64 && c->heads == 2 && c->head_dim == 32 && c->n_layers == 2 &&
                  c->in_channels == 64 && c->out_channels == 16 && c->latent_channels == 16 &&
                  c->txt_dim == 40 && c->mlp_hidden == 256 && c->axes[0] == 4 && c->axes[1] == 14 &&
                  c->axes[2] == 14 && c->layered == layered && !c->zero_cond_t &&
                  c->n_tensors == file_tensors,
              "config (layered %d) differs; %d of %d tensors used", layered, c->n_tensors,
              file_tensors);
        sdc_qwen_dit_free(m);
    }
    sdc_qwen_dit *m = load_model(w, ws, false, true, SDC_QWEN_POS_SDCPP);
    CHECK(m && sdc_qwen_dit_get_config(m)->zero_cond_t, "__index_timestep_zero__ not detected");
    sdc_qwen_dit_free(m);
    CHECK(sdc_qwen_dit_detect(ws, PREFIX) && !sdc_qwen_dit_detect(ws, ""), "detect by prefix");
    w->prefix = "";
}

static void test_errors(tws *w, sdc_weight_source *ws, sdc_backend *be) {
    sdc_qwen_dit *m = NULL;
    w->hide_add = true;
    w->hide = "transformer_blocks.1.attn.norm_added_k.weight";
    sdc_status s = sdc_qwen_dit_load(ws, "", NULL, &m);
    printf("  missing tensor: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_FORMAT && !m && strstr(sdc_last_error(), w->hide), "missing tensor");
    w->hide = NULL;
    w->bad_shape = "transformer_blocks.0.txt_mlp.net.2.weight";
    s = sdc_qwen_dit_load(ws, "", NULL, &m);
    printf("  wrong shape: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_FORMAT && !m && strstr(sdc_last_error(), w->bad_shape), "wrong shape");
    w->bad_shape = NULL;
    s = sdc_qwen_dit_load(ws, PREFIX, NULL, &m);
    CHECK(s == SDC_ERR_FORMAT && !m, "wrong prefix loads");
    m = load_model(w, ws, true, false, SDC_QWEN_POS_SDCPP);
    if (!m) return;
    float x[16 * 4 * 4] = {0}, t[1] = {500}, ctx[40] = {0}, out[16 * 4 * 4];
    int add[1] = {2};
    sdc_qwen_dit_input in = {.x = x,
                             .B = 1,
                             .frames = 1,
                             .w = 4,
                             .h = 4,
                             .t = t,
                             .ctx = ctx,
                             .n_ctx = 1,
                             .addition_t_cond = add};
    s = sdc_qwen_dit_forward(m, be, &in, out, NULL, NULL);
    CHECK(s == SDC_ERR_INVALID_ARG, "addition_t_cond 2 accepted");
    in.addition_t_cond = NULL, in.n_ctx = 0;
    s = sdc_qwen_dit_forward(m, be, &in, out, NULL, NULL);
    CHECK(s == SDC_ERR_INVALID_ARG, "no text accepted");
    in.n_ctx = 1, in.n_refs = 1;
    s = sdc_qwen_dit_forward(m, be, &in, out, NULL, NULL);
    CHECK(s == SDC_ERR_INVALID_ARG, "n_refs without refs accepted");
    sdc_qwen_dit_free(m);
}

/* The position rules written out by hand for a 5x3-token latent (odd), 2 text tokens and a
 * 3x2-token (6x4 latent) reference. */
static void test_positions(tws *w, sdc_weight_source *ws) {
    float dummy = 0;
    sdc_qwen_dit_ref ref = {&dummy, 4, 6};
    sdc_qwen_dit_input in = {.x = &dummy,
                             .B = 1,
                             .frames = 1,
                             .w = 6,
                             .h = 10,
                             .t = &dummy,
                             .ctx = &dummy,
                             .n_ctx = 2,
                             .refs = &ref,
                             .n_refs = 1};
    enum { N = 2 + 15 + 6 };
    int ids[N * 3];
    for (int mode = 0; mode < 4; mode++) {
        bool layered = mode >= 2, diff = mode % 2;
        sdc_qwen_dit *m = load_model(w, ws, layered, false, (sdc_qwen_positions)diff);
        if (!m) continue;
        CHECK(sdc_qwen_dit_positions(m, &in, ids, N) == SDC_OK, "positions");
        /* text: max(5,3)/2 = 2 (diffusers Layered: at least frames + refs - 1 = 1) */
        int t0 = 2, r0 = diff ? -3 : -2, c0 = diff ? -2 : -1, ref_frame = layered ? -1 : 1;
        int rr0 = diff ? -2 : -1, rc0 = -1;
        int bad = 0;
        for (int i = 0; i < N; i++) {
            int e[3];
            if (i < 2) {
                e[0] = e[1] = e[2] = t0 + i;
            } else if (i < 17) {
                int k = i - 2;
                e[0] = 0, e[1] = r0 + k / 3, e[2] = c0 + k % 3;
            } else {
                int k = i - 17;
                e[0] = ref_frame, e[1] = rr0 + k / 2, e[2] = rc0 + k % 2;
            }
            for (int a = 0; a < 3; a++) bad += ids[3 * i + a] != e[a];
        }
        printf("  positions (%s, %s rule): text from %d, rows from %d, cols from %d, ref frame %d: "
               "%d wrong\n",
               layered ? "Layered" : "plain", diff ? "diffusers" : "sd.cpp", ids[0], ids[7], ids[8],
               ids[17 * 3], bad);
        CHECK(bad == 0, "positions mode %d: %d wrong", mode, bad);
        sdc_qwen_dit_free(m);
    }
    /* sd.cpp rule, two references: INCREASE frames 1, 2; DECREASE -1, -2; the text start is the
     * main latent's; a count that does not fit is an error */
    sdc_qwen_dit_ref two[2] = {{&dummy, 4, 6}, {&dummy, 8, 8}};
    in.refs = two, in.n_refs = 2;
    enum { N2 = N + 16 };
    int ids2[N2 * 3];
    sdc_qwen_dit *m = load_model(w, ws, true, false, SDC_QWEN_POS_SDCPP);
    if (!m) return;
    for (int mode = SDC_QWEN_REF_INCREASE; mode <= SDC_QWEN_REF_DECREASE; mode++) {
        in.ref_index = (sdc_qwen_ref_index)mode;
        CHECK(sdc_qwen_dit_positions(m, &in, ids2, N2) == SDC_OK, "positions, 2 refs");
        int f1 = ids2[17 * 3], f2 = ids2[23 * 3], r2 = ids2[23 * 3 + 1], c2 = ids2[23 * 3 + 2];
        int want1 = mode == SDC_QWEN_REF_INCREASE ? 1 : -1, want2 = 2 * want1;
        printf("  two references (%s): frames %d, %d; second from row %d col %d; text from %d\n",
               mode == SDC_QWEN_REF_INCREASE ? "increase" : "decrease", f1, f2, r2, c2, ids2[0]);
        CHECK(f1 == want1 && f2 == want2 && r2 == -2 && c2 == -2 && ids2[0] == 2,
              "two references, mode %d", mode);
    }
    /* FIXED (--ref-image-args ref_index_mode=fixed), sd.cpp's gen_refs_ids worked by hand:
     * every reference at frame 1, from its offset, not centred; ref 1 (h 6 > w 4) starts at
     * (0, 0); then cur = (6, 4), and ref 2 (8 + 6 > 8 + 4) goes right of it: w_off 4 */
    in.ref_index = SDC_QWEN_REF_FIXED;
    CHECK(sdc_qwen_dit_positions(m, &in, ids2, N2) == SDC_OK, "positions, fixed");
    int fbad = 0;
    for (int i = 17; i < N2; i++) {
        int k = i < 23 ? i - 17 : i - 23, cols = i < 23 ? 2 : 4, w_off = i < 23 ? 0 : 4;
        int e[3] = {1, k / cols, w_off + k % cols};
        for (int a = 0; a < 3; a++) fbad += ids2[3 * i + a] != e[a];
    }
    printf("  two references (fixed): first at (%d, %d, %d), second from (%d, %d, %d): %d wrong\n",
           ids2[51], ids2[52], ids2[53], ids2[69], ids2[70], ids2[71], fbad);
    CHECK(fbad == 0, "two references, fixed: %d wrong", fbad);
    CHECK(sdc_qwen_dit_positions(m, &in, ids2, N2 - 1) == SDC_ERR_INVALID_ARG, "wrong count");
    sdc_qwen_dit_free(m);
}

/* The full-width golden checkpoints (F16 as stored) against diffusers in float32. */
static void test_full(sdc_backend *be) {
    const char *dir = getenv("SDC_QWEN_DIT_DIR");
    if (!dir) dir = SDC_SOURCE_DIR "/../qwen_ckpt"; /* beside the checkout, as ../sd1 */
    sdc_st_file *f = NULL;
    if (sdc_st_open(DATA "full_ref.safetensors", &f) != SDC_OK) {
        printf("  full size: no full_ref.safetensors, skipped\n");
        return;
    }
    static const char *files[2] = {"qwen_image_dit_1001.safetensors",
                                   "qwen_image_layered_dit_1001.safetensors"};
    static const char *names[2] = {"plain", "layered"};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        tws w;
        sdc_weight_source ws;
        if (tws_open(&w, path, false, &ws) != 0) {
            printf("  full size: %s not found, skipped\n", path);
            tws_close(&w);
            continue;
        }
        ref_case c;
        if (case_load(f, names[k], &c) != 0) {
            CHECK(0, "full_ref: case %s missing", names[k]);
            case_free(&c);
            tws_close(&w);
            continue;
        }
        const float *ref = c.out_sdcpp;
        sdc_qwen_dit *m = NULL;
        sdc_status s = sdc_qwen_dit_load(&ws, "", NULL, &m);
        CHECK(s == SDC_OK, "full %s load: %s", names[k], sdc_last_error());
        if (s == SDC_OK && ref) {
            const sdc_qwen_dit_config *cf = sdc_qwen_dit_get_config(m);
            printf("  full %s: hidden %d = %d x %d, %d layers, txt %d, axes %d/%d/%d, layered %d\n",
                   names[k], cf->hidden, cf->heads, cf->head_dim, cf->n_layers, cf->txt_dim,
                   cf->axes[0], cf->axes[1], cf->axes[2], cf->layered);
            CHECK(cf->hidden == 3072 && cf->heads == 24 && cf->axes[0] == 16 && cf->axes[1] == 56 &&
                      cf->layered == (k == 1),
                  "full %s config", names[k]);
            float *out = malloc((size_t)c.n_out * sizeof(float));
            clock_t t0 = clock();
            s = sdc_qwen_dit_forward(m, be, &c.in, out, NULL, NULL);
            CHECK(s == SDC_OK, "full %s forward: %s", names[k], sdc_last_error());
            printf("  full %s forward: %.1f s CPU\n", names[k],
                   (double)(clock() - t0) / CLOCKS_PER_SEC);
            char what[64];
            snprintf(what, sizeof what, "full-width %s (F16 weights)", names[k]);
            if (s == SDC_OK) compare(what, out, ref, c.n_out, TOL_FULL);
            free(out);
        }
        sdc_qwen_dit_free(m);
        case_free(&c);
        tws_close(&w);
    }
    sdc_st_close(f);
}

int main(void) {
    sdc_backend *be = sdc_backend_cpu_create(2);
    tws w;
    sdc_weight_source ws;
    sdc_st_file *f = NULL;
    if (tws_open(&w, DATA "weights.safetensors", true, &ws) != 0 ||
        sdc_st_open(DATA "cases.safetensors", &f) != SDC_OK) {
        CHECK(0, "test data: %s", sdc_last_error());
        TEST_MAIN_END();
    }
    printf("F32 weights against diffusers (float64):\n");
    run_cases(be, &w, &ws, f, "f32", TOL_F32, false);
    printf("largest error: %.3g\n", max_err_seen);
    {
        /* the same F16 values as stored: the matmuls read F16 weights */
        tws w16;
        sdc_weight_source ws16;
        max_err_seen = 0;
        printf("F16 weights as stored:\n");
        if (tws_open(&w16, DATA "weights.safetensors", false, &ws16) == 0)
            run_cases(be, &w16, &ws16, f, "f16", TOL_F16, true);
        else
            CHECK(0, "open weights: %s", sdc_last_error());
        tws_close(&w16);
        printf("largest error: %.3g; with ggml numerics: %.3g\n", max_err_seen, max_err_ggml);
    }
    printf("prefixed names (%s):\n", PREFIX);
    w.prefix = PREFIX;
    ref_case c;
    if (case_load(f, "edit", &c) == 0) {
        sdc_qwen_dit *m = load_model(&w, &ws, false, false, SDC_QWEN_POS_DIFFUSERS);
        float *out = malloc((size_t)c.n_out * sizeof(float));
        if (m && sdc_qwen_dit_forward(m, be, &c.in, out, NULL, NULL) == SDC_OK)
            compare("prefixed edit, diffusers positions", out, c.out_diff, c.n_out, TOL_F32);
        else
            CHECK(0, "prefixed forward: %s", sdc_last_error());
        free(out);
        sdc_qwen_dit_free(m);
    }
    case_free(&c);
    w.prefix = "";
    test_config(&w, &ws);
    test_positions(&w, &ws);
    test_errors(&w, &ws, be);
    tws_close(&w);
    sdc_st_close(f);
    test_full(be);
    sdc_backend_free(be);
    TEST_MAIN_END();
}
