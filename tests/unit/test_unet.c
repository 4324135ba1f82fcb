/* The LDM UNet against diffusers' UNet2DConditionModel (tests/golden/gen_unet_ref.py:
 * tiny random SD1-, SD2- and SDXL-like UNets in the LDM key layout, float64 references for
 * plain math and for sd.cpp's F16 numerics), the structure detected from the weights, the
 * full-size SD1 layout when /work/sd1 has the checkpoint, and bad input.
 * SDC_UNET_BENCH=WxH[xB] times full-size forwards instead (not part of the test; also
 * SDC_UNET_RUNS, SDC_UNET_THREADS, SDC_UNET_PROFILE (per-op times), SDC_UNET_EXACT (plain
 * math), SDC_UNET_COMPARE (sd.cpp numerics vs plain math on the real weights)). */
#include <sys/resource.h>
#include <time.h>

#include "core/backend.h"
#include "core/fp16.h"
#include "models/unet.h"
#include "st_weights.h"
#include "test_util.h"

#define PREFIX  "model.diffusion_model."
#define SD1_BIG SDC_SD1_MODEL /* CMake: ../sd1/sd1_random_1001.safetensors */

/* Tolerances (max abs error over max |ref|), 3-5x the largest error measured with
 * SDC_CPU_ISA = scalar and avx2. exact (f32 math vs float64): 1.05e-6. sdcpp (F16
 * rounding of every matmul/conv input): 1.37e-3, all of it rounding flips -- torch's own
 * float32 run of the same emulation differs from its float64 run by 0.9-1.1e-3, as much as
 * the emulation itself moves the output (exact vs sdcpp references: ~1e-3 rel-L2), so this
 * case checks that the path runs and stays within that noise, not that it beats plain math.
 * bf16 (weights rounded to BF16, reference with the F16 values): 1.09e-2. q8_0 (Linear
 * weights Q8_0, sd.cpp numerics): 1.95e-2. */
#define TOL_EXACT 5e-6
#define TOL_SDCPP 4e-3
#define TOL_BF16  3e-2
#define TOL_Q8    6e-2
#define TOL_FULL  1e-5 /* float32 torch reference: 2.2e-6 measured */

/* A weight source over a test file: names as stored, tensors converted to another type
 * (NULL data = in place), one name hidden or one given a wrong shape for the error tests. */
typedef struct test_ws {
    st_weights base;
    sdc_tensor *t; /* converted copies */
    int n;
    const char *hide, *bad_shape, *hide_prefix;
    bool distilled; /* block indices renumbered as a converted BK-SDM tiny UNet has them */
    sdc_tensor bad;
} test_ws;

/* The 2-level sd1 file under the indices of sd.cpp's tiny-UNet layout: each level keeps
 * the index of its missing second res block free (input 1 res, 3 down, 4 res) and the
 * upsample of level 1 sits alone in output block 2. Returns the stored name or NULL. */
static bool distilled_name(const char *name, char *orig, size_t size) {
    static const char *map[][2] = {
        {"input_blocks.1.", "input_blocks.1."},       {"input_blocks.3.", "input_blocks.2."},
        {"input_blocks.4.", "input_blocks.3."},       {"output_blocks.0.", "output_blocks.0."},
        {"output_blocks.1.0.", "output_blocks.1.0."}, {"output_blocks.2.1.", "output_blocks.1.1."},
        {"output_blocks.3.", "output_blocks.2."},     {"output_blocks.4.", "output_blocks.3."},
    };
    const char *rest = name + strlen(PREFIX);
    if (strncmp(rest, "input_blocks.", 13) && strncmp(rest, "output_blocks.", 14)) {
        snprintf(orig, size, "%s", name);
        return true;
    }
    if (!strncmp(rest, "input_blocks.0.", 15)) {
        snprintf(orig, size, "%s", name);
        return true;
    }
    for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
        size_t n = strlen(map[i][0]);
        if (!strncmp(rest, map[i][0], n)) {
            snprintf(orig, size, "%s%s%s", PREFIX, map[i][1], rest + n);
            return true;
        }
    }
    return false;
}

static sdc_tensor *test_find(void *user, const char *name) {
    test_ws *w = user;
    char orig[256];
    if (w->hide && !strcmp(name, w->hide)) return NULL;
    if (w->hide_prefix && !strncmp(name, w->hide_prefix, strlen(w->hide_prefix))) return NULL;
    if (w->distilled) {
        if (!distilled_name(name, orig, sizeof orig)) return NULL;
        name = orig;
    }
    sdc_tensor *t = NULL;
    if (w->t) {
        for (int i = 0; i < w->n && !t; i++)
            if (!strcmp(w->t[i].name, name)) t = &w->t[i];
    } else {
        t = st_weights_find(&w->base, name);
    }
    if (t && w->bad_shape && !strcmp(name, w->bad_shape)) {
        w->bad = *t;
        w->bad.ne[0] -= 1; /* the data is only read after the shape check */
        sdc_tensor_set_contiguous_strides(&w->bad);
        return &w->bad;
    }
    return t;
}

/* type: SDC_TYPE_F16 (as stored), F32 or BF16 copies of every tensor under PREFIX */
static int test_ws_open(test_ws *w, const char *path, sdc_type type, sdc_weight_source *ws) {
    memset(w, 0, sizeof *w);
    sdc_weight_source base_ws;
    if (st_weights_open(&w->base, path, &base_ws) != 0) return -1;
    ws->find = test_find;
    ws->user = w;
    if (type == SDC_TYPE_F16) return 0;
    w->n = w->base.n;
    w->t = calloc((size_t)w->n, sizeof(sdc_tensor));
    const sdc_type_traits *tr = sdc_type_get(type);
    for (int i = 0; i < w->n; i++) {
        sdc_tensor *s = &w->base.t[i], *d = &w->t[i];
        *d = *s;
        if (s->type != SDC_TYPE_F16) continue;
        int64_t cnt = sdc_tensor_nelements(s), row = s->ne[0];
        /* quantised: the Linear matrices whose rows fill whole blocks (as in GGUF files;
         * conv weights stay F16 there, ne[0] = kw); norms and biases F32 */
        sdc_type t = type;
        if (tr->is_quantized) {
            bool matrix = s->ne[1] > 1 && s->ne[2] == 1 && s->ne[3] == 1;
            t = !matrix ? SDC_TYPE_F32 : row % tr->block_size ? SDC_TYPE_F16 : type;
            if (t == SDC_TYPE_F16) continue;
        }
        d->type = t;
        sdc_tensor_set_contiguous_strides(d);
        d->data = malloc(sdc_tensor_nbytes(d));
        float *f = malloc((size_t)cnt * sizeof(float));
        const sdc_fp16 *src = s->data;
        for (int64_t j = 0; j < cnt; j++) f[j] = sdc_fp16_to_f32(src[j]);
        if (t == SDC_TYPE_F32) {
            memcpy(d->data, f, (size_t)cnt * sizeof(float));
        } else {
            const sdc_type_traits *dt = sdc_type_get(t);
            size_t row_bytes = (size_t)(row / dt->block_size) * dt->block_bytes;
            for (int64_t r = 0; r < cnt / row; r++)
                dt->from_float(f + r * row, (char *)d->data + r * row_bytes, row, NULL);
        }
        free(f);
    }
    return 0;
}

static void test_ws_close(test_ws *w) {
    for (int i = 0; i < w->n; i++)
        if (w->t[i].data != w->base.t[i].data) free(w->t[i].data);
    free(w->t);
    st_weights_close(&w->base);
}

typedef struct ref_data {
    float *x, *t, *ctx, *y, *exact, *sdcpp;
    int n_ctx, ctx_dim, adm;
    long n_out;
} ref_data;

static int ref_load(sdc_st_file *f, ref_data *r) {
    memset(r, 0, sizeof *r);
    int64_t n = 0;
    r->x = st_read_f32(f, "x", NULL);
    r->t = st_read_f32(f, "t", NULL);
    r->ctx = st_read_f32(f, "ctx", &n);
    r->y = st_read_f32(f, "y", NULL);
    r->exact = st_read_f32(f, "out.exact", &n);
    r->n_out = (long)n;
    r->sdcpp = st_read_f32(f, "out.sdcpp", NULL);
    const sdc_st_tensor *c = sdc_st_find(f, "ctx"), *y = sdc_st_find(f, "y");
    if (!r->x || !r->t || !c || !r->exact || !r->sdcpp) return -1;
    r->n_ctx = (int)c->shape[1];
    r->ctx_dim = (int)c->shape[2];
    r->adm = y ? (int)y->shape[1] : 0;
    return 0;
}

static void ref_free(ref_data *r) {
    free(r->x), free(r->t), free(r->ctx), free(r->y), free(r->exact), free(r->sdcpp);
}

/* max |got - ref| / max |ref| */
static double scaled_err(const float *got, const float *ref, long n) {
    double scale = 0;
    for (long i = 0; i < n; i++) scale = fmax(scale, fabs((double)ref[i]));
    return t_max_abs_diff(got, ref, n) / (scale > 0 ? scale : 1);
}

static void compare(const char *what, const float *got, const float *ref, long n, double tol) {
    double e = scaled_err(got, ref, n), num = 0, den = 0;
    for (long i = 0; i < n; i++) {
        double d = (double)got[i] - ref[i];
        num += d * d, den += (double)ref[i] * ref[i];
    }
    printf("  %-46s max err / max|ref| %.3g (tolerance %.2g), rel-L2 %.3g, %ld values\n", what, e,
           tol, sqrt(num / (den > 0 ? den : 1)), n);
    CHECK(e <= tol, "%s: error %g > %g", what, e, tol);
}

typedef struct expect_cfg {
    const char *name;
    int mult1, depth0, depth1, mid_depth, heads_opt, head_dim_opt;
    bool linear;
} expect_cfg;

static void check_config(const sdc_unet *m, const expect_cfg *e, const ref_data *r,
                         const st_weights *w) {
    const sdc_unet_config *c = sdc_unet_get_config(m);
    printf("  config: in %d out %d mc %d levels %d mult %d,%d res %d depth %d,%d mid %d ctx %d "
           "adm %d linear %d heads %d/%d tensors %d\n",
           c->in_channels, c->out_channels, c->model_channels, c->n_levels, c->channel_mult[0],
           c->channel_mult[1], c->num_res_blocks, c->transformer_depth[0], c->transformer_depth[1],
           c->mid_depth, c->context_dim, c->adm_in_channels, c->linear_proj, c->n_heads,
           c->head_dim, c->n_tensors);
    CHECK(c->in_channels == 4 && c->out_channels == 4 && c->model_channels == 32 &&
              c->n_levels == 2 && c->channel_mult[0] == 1 && c->channel_mult[1] == e->mult1 &&
              c->num_res_blocks == 1 && c->transformer_depth[0] == e->depth0 &&
              c->transformer_depth[1] == e->depth1 && c->mid_depth == e->mid_depth &&
              c->context_dim == r->ctx_dim && c->adm_in_channels == r->adm &&
              c->linear_proj == e->linear && c->time_embed_dim == 128,
          "%s: detected config differs", e->name);
    int n_prefixed = 0, unused = 0;
    for (int i = 0; i < w->n; i++) {
        if (strncmp(w->t[i].name, PREFIX, strlen(PREFIX))) continue;
        n_prefixed++;
        if (!sdc_unet_uses(m, w->t[i].name)) {
            if (unused++ < 5) printf("  unused tensor %s\n", w->t[i].name);
        }
    }
    printf("  %d of %d tensors under the prefix used, %d unused\n", c->n_tensors, n_prefixed,
           unused);
    CHECK(unused == 0 && c->n_tensors == n_prefixed, "%s: %d tensors unused, %d used of %d",
          e->name, unused, c->n_tensors, n_prefixed);
}

static void run_case(sdc_backend *be, const char *file, const expect_cfg *e, sdc_type wtype,
                     bool exact, const ref_data *r, const char *label, double tol) {
    test_ws tw;
    sdc_weight_source ws;
    if (test_ws_open(&tw, file, wtype, &ws) != 0) {
        CHECK(0, "open %s: %s", file, sdc_last_error());
        return;
    }
    tw.distilled = strstr(label, "tiny-UNet") != NULL;
    sdc_unet_options opt = {.n_heads = e->heads_opt, .head_dim = e->head_dim_opt, .exact = exact};
    sdc_unet *m = NULL;
    sdc_status s = sdc_unet_load_ex(&ws, PREFIX, &opt, &m);
    CHECK(s == SDC_OK, "%s load: %s", e->name, sdc_last_error());
    if (s != SDC_OK) {
        test_ws_close(&tw);
        return;
    }
    if (wtype == SDC_TYPE_F16 && exact && !tw.distilled) check_config(m, e, r, &tw.base);
    const float *ref = exact ? r->exact : r->sdcpp;
    float *out = malloc((size_t)r->n_out * sizeof(float));
    long half = r->n_out / 2;
    s = sdc_unet_forward(m, be, r->x, 2, 16, 8, r->t, r->ctx, r->n_ctx, r->y, out, NULL, NULL);
    CHECK(s == SDC_OK, "%s forward: %s", e->name, sdc_last_error());
    char what[96];
    snprintf(what, sizeof what, "%s %s B=2", e->name, label);
    if (s == SDC_OK) compare(what, out, ref, r->n_out, tol);
    /* item 1 alone: its own t, context (and y) */
    s = sdc_unet_forward(m, be, r->x + half, 1, 16, 8, r->t + 1,
                         r->ctx + (size_t)r->n_ctx * r->ctx_dim, r->n_ctx,
                         r->y ? r->y + r->adm : NULL, out, NULL, NULL);
    CHECK(s == SDC_OK, "%s forward B=1: %s", e->name, sdc_last_error());
    snprintf(what, sizeof what, "%s %s B=1 (item 1)", e->name, label);
    if (s == SDC_OK) compare(what, out, ref + half, half, tol);
    free(out);
    sdc_unet_free(m);
    test_ws_close(&tw);
}

static void test_tiny(sdc_backend *be, const expect_cfg *e) {
    char file[512];
    snprintf(file, sizeof file, "%s/tests/data/unet/%s.safetensors", SDC_SOURCE_DIR, e->name);
    sdc_st_file *f = NULL;
    if (sdc_st_open(file, &f) != SDC_OK) {
        CHECK(0, "open %s: %s", file, sdc_last_error());
        return;
    }
    ref_data r;
    CHECK(ref_load(f, &r) == 0, "%s: reference tensors missing", file);
    printf("%s (context %d x %d, adm %d)\n", e->name, r.n_ctx, r.ctx_dim, r.adm);
    run_case(be, file, e, SDC_TYPE_F16, true, &r, "f16 weights, exact", TOL_EXACT);
    run_case(be, file, e, SDC_TYPE_F32, true, &r, "f32 weights, exact", TOL_EXACT);
    run_case(be, file, e, SDC_TYPE_F16, false, &r, "f16 weights, sd.cpp numerics", TOL_SDCPP);
    run_case(be, file, e, SDC_TYPE_BF16, true, &r, "bf16 weights, exact", TOL_BF16);
    run_case(be, file, e, SDC_TYPE_Q8_0, false, &r, "q8_0 weights, sd.cpp numerics", TOL_Q8);
    if (!strcmp(e->name, "sd1"))
        run_case(be, file, e, SDC_TYPE_F16, true, &r, "tiny-UNet block indices, exact", TOL_EXACT);
    ref_free(&r);
    sdc_st_close(f);
}

static void test_bad_input(sdc_backend *be) {
    char file[512];
    snprintf(file, sizeof file, "%s/tests/data/unet/sdxl.safetensors", SDC_SOURCE_DIR);
    sdc_unet_options opt = {.head_dim = 8, .exact = true};
    test_ws tw;
    sdc_weight_source ws;
    if (test_ws_open(&tw, file, SDC_TYPE_F16, &ws) != 0) {
        CHECK(0, "open %s", file);
        return;
    }
    sdc_unet *m = NULL;
    const char *hidden = PREFIX "output_blocks.1.1.transformer_blocks.1.attn2.to_v.weight";
    tw.hide = hidden;
    sdc_status s = sdc_unet_load_ex(&ws, PREFIX, &opt, &m);
    printf("missing tensor: %s\n", sdc_last_error());
    CHECK(s != SDC_OK && !m && strstr(sdc_last_error(), hidden), "missing tensor not reported");
    tw.hide = NULL;
    tw.bad_shape = PREFIX "input_blocks.3.0.out_layers.3.weight";
    s = sdc_unet_load_ex(&ws, PREFIX, &opt, &m);
    printf("wrong shape: %s\n", sdc_last_error());
    CHECK(s != SDC_OK && !m && strstr(sdc_last_error(), "input_blocks.3.0.out_layers.3.weight") &&
              strstr(sdc_last_error(), "shape"),
          "wrong shape not reported");
    tw.bad_shape = NULL;
    tw.hide = PREFIX "input_blocks.0.0.weight";
    CHECK(!sdc_unet_detect(&ws, PREFIX), "detected without input_blocks.0.0");
    tw.hide = NULL;
    CHECK(sdc_unet_detect(&ws, PREFIX) && !sdc_unet_detect(&ws, "first_stage_model."), "detection");
    s = sdc_unet_load_ex(&ws, PREFIX, &opt, &m);
    CHECK(s == SDC_OK, "load: %s", sdc_last_error());
    if (s == SDC_OK) {
        float x[4 * 16 * 12] = {0}, t = 10, ctx[5 * 16] = {0}, y[24] = {0}, out[4 * 16 * 12];
        s = sdc_unet_forward(m, be, x, 1, 16, 12, &t, ctx, 5, y, out, NULL, NULL);
        printf("h 12: %s\n", sdc_last_error());
        CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "16x12"), "h=12 accepted");
        s = sdc_unet_forward(m, be, x, 1, 12, 8, &t, ctx, 5, y, out, NULL, NULL);
        CHECK(s == SDC_ERR_INVALID_ARG, "w=12 accepted");
        s = sdc_unet_forward(m, be, x, 1, 8, 8, &t, ctx, 0, y, out, NULL, NULL);
        printf("n_ctx 0: %s\n", sdc_last_error());
        CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "context"), "n_ctx 0 accepted");
        s = sdc_unet_forward(m, be, x, 1, 8, 8, &t, ctx, 5, NULL, out, NULL, NULL);
        printf("no y: %s\n", sdc_last_error());
        CHECK(s == SDC_ERR_INVALID_ARG, "missing y accepted");
        sdc_unet_free(m);
        m = NULL;
    }
    /* SSD-1B/Vega-style: only middle_block.0, or (tiny UNets) no middle block at all */
    const char *mids[] = {PREFIX "middle_block.1.", PREFIX "middle_block."};
    for (int i = 0; i < 2; i++) {
        tw.hide_prefix = mids[i];
        s = sdc_unet_load_ex(&ws, PREFIX, &opt, &m);
        CHECK(s == SDC_OK, "load without %s: %s", mids[i], sdc_last_error());
        if (s != SDC_OK) continue;
        const sdc_unet_config *c = sdc_unet_get_config(m);
        float x[4 * 64], t = 10, ctx[5 * 16], y[24], out[4 * 64];
        unsigned long long seed = 9;
        for (int j = 0; j < 4 * 64; j++) x[j] = t_randf(&seed);
        for (int j = 0; j < 5 * 16; j++) ctx[j] = t_randf(&seed);
        for (int j = 0; j < 24; j++) y[j] = t_randf(&seed);
        s = sdc_unet_forward(m, be, x, 1, 8, 8, &t, ctx, 5, y, out, NULL, NULL);
        int finite = 0;
        for (int j = 0; j < 4 * 64; j++) finite += isfinite(out[j]);
        printf("without %s: mid_depth %d, %d tensors, forward %s, %d of 256 finite\n", mids[i],
               c->mid_depth, c->n_tensors, s == SDC_OK ? "ok" : sdc_last_error(), finite);
        CHECK(c->mid_depth == (i == 0 ? 0 : -1) && s == SDC_OK && finite == 256,
              "without %s: mid_depth %d", mids[i], c->mid_depth);
        sdc_unet_free(m);
        m = NULL;
    }
    tw.hide_prefix = NULL;
    test_ws_close(&tw);
}

/* The real SD 1.5 layout: configuration, every tensor used, one small forward finite. */
static void test_full_size(sdc_backend *be) {
    st_weights w;
    sdc_weight_source ws;
    FILE *probe = fopen(SD1_BIG, "rb");
    if (!probe) {
        printf("full size: %s absent, skipped\n", SD1_BIG);
        return;
    }
    fclose(probe);
    if (st_weights_open(&w, SD1_BIG, &ws) != 0) {
        CHECK(0, "open %s: %s", SD1_BIG, sdc_last_error());
        return;
    }
    CHECK(sdc_unet_detect(&ws, PREFIX), "full size: not detected");
    sdc_unet *m = NULL;
    sdc_status s = sdc_unet_load(&ws, PREFIX, &m);
    CHECK(s == SDC_OK, "full size load: %s", sdc_last_error());
    if (s != SDC_OK) {
        st_weights_close(&w);
        return;
    }
    const sdc_unet_config *c = sdc_unet_get_config(m);
    int n_prefixed = 0, unused = 0;
    for (int i = 0; i < w.n; i++) {
        if (strncmp(w.t[i].name, PREFIX, strlen(PREFIX))) continue;
        n_prefixed++;
        if (!sdc_unet_uses(m, w.t[i].name) && unused++ < 5) printf("  unused %s\n", w.t[i].name);
    }
    printf("full size: mc %d mult %d,%d,%d,%d res %d depth %d,%d,%d,%d mid %d heads %d ctx %d "
           "adm %d linear %d; %d of %d tensors used\n",
           c->model_channels, c->channel_mult[0], c->channel_mult[1], c->channel_mult[2],
           c->channel_mult[3], c->num_res_blocks, c->transformer_depth[0], c->transformer_depth[1],
           c->transformer_depth[2], c->transformer_depth[3], c->mid_depth, c->n_heads,
           c->context_dim, c->adm_in_channels, c->linear_proj, c->n_tensors, n_prefixed);
    CHECK(c->in_channels == 4 && c->out_channels == 4 && c->model_channels == 320 &&
              c->n_levels == 4 && c->channel_mult[0] == 1 && c->channel_mult[1] == 2 &&
              c->channel_mult[2] == 4 && c->channel_mult[3] == 4 && c->num_res_blocks == 2 &&
              c->transformer_depth[0] == 1 && c->transformer_depth[1] == 1 &&
              c->transformer_depth[2] == 1 && c->transformer_depth[3] == 0 && c->mid_depth == 1 &&
              c->n_heads == 8 && c->context_dim == 768 && c->adm_in_channels == 0 &&
              !c->linear_proj && c->time_embed_dim == 1280,
          "full size: config differs from SD 1.5's");
    CHECK(n_prefixed == 686 && c->n_tensors == 686 && unused == 0,
          "full size: %d tensors, %d used, %d unused (want 686)", n_prefixed, c->n_tensors, unused);
    /* diffusers' float32 forward of the same weights (gen_unet_ref.py --full) */
    char file[512];
    snprintf(file, sizeof file, "%s/tests/data/unet/sd1_full_ref.safetensors", SDC_SOURCE_DIR);
    sdc_st_file *f = NULL;
    if (sdc_st_open(file, &f) != SDC_OK) {
        CHECK(0, "open %s: %s", file, sdc_last_error());
    } else {
        float *x = st_read_f32(f, "x", NULL), *t = st_read_f32(f, "t", NULL);
        float *ctx = st_read_f32(f, "ctx", NULL), *ref_e = st_read_f32(f, "out.exact", NULL);
        float *ref_s = st_read_f32(f, "out.sdcpp", NULL), out[4 * 8 * 8];
        s = sdc_unet_forward(m, be, x, 1, 8, 8, t, ctx, 77, NULL, out, NULL, NULL);
        CHECK(s == SDC_OK, "full size forward: %s", sdc_last_error());
        int finite = 0;
        for (int i = 0; i < 4 * 64; i++) finite += isfinite(out[i]);
        CHECK(finite == 256, "full size forward: %d of 256 finite", finite);
        if (s == SDC_OK) compare("full size 8x8, sd.cpp numerics", out, ref_s, 256, TOL_SDCPP);
        sdc_unet *me = NULL;
        sdc_unet_options o = {.exact = true};
        s = sdc_unet_load_ex(&ws, PREFIX, &o, &me);
        if (s == SDC_OK)
            s = sdc_unet_forward(me, be, x, 1, 8, 8, t, ctx, 77, NULL, out, NULL, NULL);
        CHECK(s == SDC_OK, "full size exact forward: %s", sdc_last_error());
        if (s == SDC_OK)
            compare("full size 8x8, exact (vs torch float32)", out, ref_e, 256, TOL_FULL);
        sdc_unet_free(me);
        free(x), free(t), free(ctx), free(ref_e), free(ref_s);
        sdc_st_close(f);
    }
    sdc_unet_free(m);
    st_weights_close(&w);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Per-op time of one forward (eval callback), for the profile printed by the bench. */
typedef struct prof {
    double t0, op_s[SDC_OP_COUNT], flop[SDC_OP_COUNT];
    int count[SDC_OP_COUNT];
} prof;

static bool prof_cb(sdc_tensor *t, bool ask, void *user) {
    prof *p = user;
    if (ask) {
        p->t0 = now_s();
        return true;
    }
    p->op_s[t->op] += now_s() - p->t0;
    const sdc_tensor *a = t->src[0], *b = t->src[1];
    if (t->op == SDC_OP_MATMUL)
        p->flop[t->op] += 2.0 * (double)a->ne[0] * (double)sdc_tensor_nelements(t);
    else if (t->op == SDC_OP_CONV2D)
        p->flop[t->op] +=
            2.0 * (double)(b->ne[0] * b->ne[1] * b->ne[2]) * (double)sdc_tensor_nelements(t);
    else if (t->op == SDC_OP_ATTENTION) /* q k^T and p v */
        p->flop[t->op] +=
            4.0 * (double)a->ne[0] * (double)(a->ne[1] * a->ne[2] * a->ne[3]) * (double)b->ne[1];
    p->count[t->op]++;
    return true;
}

static int bench(const char *spec) {
    int w = 64, h = 64, B = 1, threads = 2;
    sscanf(spec, "%dx%dx%d", &w, &h, &B);
    const char *th = getenv("SDC_UNET_THREADS");
    if (th) threads = atoi(th);
    st_weights sw;
    sdc_weight_source ws;
    if (st_weights_open(&sw, SD1_BIG, &ws) != 0) {
        printf("bench: %s absent\n", SD1_BIG);
        return 0;
    }
    sdc_backend *be = sdc_backend_cpu_create(threads);
    sdc_unet *m = NULL;
    sdc_unet_options bopt = {.exact = getenv("SDC_UNET_EXACT") != NULL};
    if (sdc_unet_load_ex(&ws, PREFIX, &bopt, &m) != SDC_OK) {
        printf("bench: %s\n", sdc_last_error());
        return 1;
    }
    size_t nx = (size_t)4 * w * h * B, nc = (size_t)77 * 768 * B;
    float *x = calloc(nx, sizeof(float)), *out = calloc(nx, sizeof(float));
    float *ctx = calloc(nc, sizeof(float)), t[2] = {999, 999};
    unsigned long long seed = 3;
    for (size_t i = 0; i < nx; i++) x[i] = t_randf(&seed);
    for (size_t i = 0; i < nc; i++) ctx[i] = t_randf(&seed);
    bool profile = getenv("SDC_UNET_PROFILE") != NULL;
    if (getenv("SDC_UNET_COMPARE")) { /* sd.cpp numerics vs plain math on the real weights */
        sdc_unet *me = NULL;
        sdc_unet_options o = {.exact = true};
        float *oe = calloc(nx, sizeof(float));
        if (sdc_unet_load_ex(&ws, PREFIX, &o, &me) != SDC_OK ||
            sdc_unet_forward(m, be, x, B, w, h, t, ctx, 77, NULL, out, NULL, NULL) != SDC_OK ||
            sdc_unet_forward(me, be, x, B, w, h, t, ctx, 77, NULL, oe, NULL, NULL) != SDC_OK) {
            printf("compare: %s\n", sdc_last_error());
            return 1;
        }
        double num = 0, den = 0, mx = 0, scale = 0;
        for (size_t i = 0; i < nx; i++) {
            double d = (double)out[i] - oe[i];
            num += d * d, den += (double)oe[i] * oe[i];
            mx = fmax(mx, fabs(d)), scale = fmax(scale, fabs((double)oe[i]));
        }
        printf(
            "compare %dx%d B=%d: sd.cpp numerics vs exact: rel-L2 %.3g, max %.3g (max|out| %.3g, "
            "rms %.3g)\n",
            w, h, B, sqrt(num / den), mx, scale, sqrt(den / (double)nx));
        sdc_unet_free(me);
        free(oe);
    }
    const char *runs_env = getenv("SDC_UNET_RUNS");
    int runs = runs_env ? atoi(runs_env) : 2;
    for (int rep = 0; rep < runs; rep++) { /* the first run pages the weights in */
        prof p = {0};
        struct rusage r0, ru;
        getrusage(RUSAGE_SELF, &r0);
        double t0 = now_s();
        sdc_status s = sdc_unet_forward(m, be, x, B, w, h, t, ctx, 77, NULL, out,
                                        profile ? prof_cb : NULL, &p);
        double dt = now_s() - t0;
        getrusage(RUSAGE_SELF, &ru);
        /* CPU seconds over the thread count: the wall time on an idle machine, roughly */
        double cpu = (double)(ru.ru_utime.tv_sec - r0.ru_utime.tv_sec) +
                     1e-6 * (double)(ru.ru_utime.tv_usec - r0.ru_utime.tv_usec) +
                     (double)(ru.ru_stime.tv_sec - r0.ru_stime.tv_sec) +
                     1e-6 * (double)(ru.ru_stime.tv_usec - r0.ru_stime.tv_usec);
        printf("bench %dx%d B=%d threads %d run %d: %.2f s (cpu %.2f s = %.2f s x %d), peak RSS "
               "%.0f MiB, scratch %.0f MiB (%s)\n",
               w, h, B, threads, rep, dt, cpu, cpu / threads, threads, ru.ru_maxrss / 1024.0,
               sdc_backend_cpu_last_plan(be).scratch_bytes / 1048576.0,
               s == SDC_OK ? "ok" : sdc_last_error());
        if (profile && rep == runs - 1)
            for (int op = 0; op < SDC_OP_COUNT; op++)
                if (p.count[op])
                    printf("  %-16s %5d nodes %8.3f s %8.1f GFLOP %6.1f GFLOP/s\n", sdc_op_name(op),
                           p.count[op], p.op_s[op], p.flop[op] * 1e-9,
                           p.flop[op] * 1e-9 / (p.op_s[op] > 0 ? p.op_s[op] : 1));
    }
    free(x), free(out), free(ctx);
    sdc_unet_free(m);
    sdc_backend_free(be);
    st_weights_close(&sw);
    return 0;
}

/* LCM's w embedding (tests/golden/gen_unet_tcond_ref.py: the sd1 layout plus
 * time_embedding.cond_proj, diffusers' UNet2DConditionModel with time_cond_proj_dim 16 and
 * its LCM pipeline's embedding of guidance 8.5). */
static void test_tcond(sdc_backend *be) {
    char file[512];
    snprintf(file, sizeof file, "%s/tests/data/unet/sd1_tcond.safetensors", SDC_SOURCE_DIR);
    sdc_st_file *f = NULL;
    if (sdc_st_open(file, &f) != SDC_OK) {
        CHECK(0, "open %s: %s", file, sdc_last_error());
        return;
    }
    int64_t n = 0, ne = 0;
    float *x = st_read_f32(f, "x", NULL), *t = st_read_f32(f, "t", NULL);
    float *ctx = st_read_f32(f, "ctx", NULL), *wref = st_read_f32(f, "w_emb", &ne);
    float *tc_exact = st_read_f32(f, "out.tcond.exact", &n);
    float *tc_sdcpp = st_read_f32(f, "out.tcond.sdcpp", NULL);
    float *nocond = st_read_f32(f, "out.nocond.exact", NULL);
    float *out = malloc((size_t)n * sizeof(float)), wemb[16];
    CHECK(x && t && ctx && wref && ne == 32 && tc_exact && tc_sdcpp && nocond && out,
          "%s: reference tensors missing", file);
    printf("sd1 + time_cond_proj (LCM w embedding)\n");
    sdc_unet_guidance_embedding(8.5f - 1.0f, 16, wemb);
    /* arguments up to 7500 in float32: one rounding step there moves sin by ~5e-4 */
    double we = t_max_abs_diff(wemb, wref, 16);
    printf("  w embedding vs diffusers' get_guidance_scale_embedding: max abs %.3g\n", we);
    CHECK(we <= 2e-3, "w embedding off by %g", we);
    for (int k = 0; k < 3 && x && wref && out; k++) {
        bool exact = k != 1;
        test_ws tw;
        sdc_weight_source ws;
        if (test_ws_open(&tw, file, SDC_TYPE_F16, &ws) != 0) break;
        sdc_unet_options opt = {.n_heads = 8, .exact = exact};
        sdc_unet *m = NULL;
        CHECK(sdc_unet_load_ex(&ws, PREFIX, &opt, &m) == SDC_OK, "load: %s", sdc_last_error());
        if (m) {
            const sdc_unet_config *c = sdc_unet_get_config(m);
            CHECK(c->time_cond_proj_dim == 16 &&
                      sdc_unet_uses(m, PREFIX "time_embedding.cond_proj.weight"),
                  "time_cond_proj_dim %d", c->time_cond_proj_dim);
            /* k 0, 1: the reference embedding; 2: none (sd.cpp drops the weight) */
            CHECK(sdc_unet_set_time_cond(m, k < 2 ? wref : NULL) == SDC_OK, "set: %s",
                  sdc_last_error());
            CHECK(sdc_unet_forward(m, be, x, 2, 16, 8, t, ctx, 5, NULL, out, NULL, NULL) == SDC_OK,
                  "forward: %s", sdc_last_error());
            const char *what[] = {"tcond, exact B=2", "tcond, sd.cpp numerics B=2",
                                  "no w embedding (sd.cpp), exact B=2"};
            const float *ref[] = {tc_exact, tc_sdcpp, nocond};
            compare(what[k], out, ref[k], (long)n, k == 1 ? TOL_SDCPP : TOL_EXACT);
            if (k == 0) { /* the pipeline's path: sdc's own embedding */
                sdc_unet_set_time_cond(m, wemb);
                sdc_unet_forward(m, be, x, 2, 16, 8, t, ctx, 5, NULL, out, NULL, NULL);
                compare("tcond with sdc's w embedding, exact B=2", out, tc_exact, (long)n,
                        TOL_EXACT);
                /* the term matters: without it the output is far off */
                CHECK(scaled_err(nocond, tc_exact, (long)n) > 1e-2, "w embedding has no effect");
            }
            sdc_unet_free(m);
        }
        test_ws_close(&tw);
    }
    /* a UNet without cond_proj refuses an embedding */
    snprintf(file, sizeof file, "%s/tests/data/unet/sd1.safetensors", SDC_SOURCE_DIR);
    test_ws tw;
    sdc_weight_source ws;
    sdc_unet *m = NULL;
    if (test_ws_open(&tw, file, SDC_TYPE_F16, &ws) == 0) {
        if (sdc_unet_load(&ws, PREFIX, &m) == SDC_OK)
            CHECK(sdc_unet_set_time_cond(m, wemb) == SDC_ERR_UNSUPPORTED,
                  "set_time_cond on a plain UNet accepted");
        sdc_unet_free(m);
        test_ws_close(&tw);
    }
    free(x), free(t), free(ctx), free(wref), free(tc_exact), free(tc_sdcpp), free(nocond);
    free(out);
    sdc_st_close(f);
}

int main(void) {
    const char *b = getenv("SDC_UNET_BENCH");
    if (b) return bench(b);
    sdc_backend *be = sdc_backend_cpu_create(2);
    static const expect_cfg cfgs[] = {
        {"sd1", 2, 1, 0, 1, 8, 0, false},
        {"sd2", 1, 1, 1, 1, 0, 8, true},
        {"sdxl", 1, 0, 2, 2, 0, 8, true},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof *cfgs; i++) test_tiny(be, &cfgs[i]);
    test_tcond(be);
    test_bad_input(be);
    test_full_size(be);
    sdc_backend_free(be);
    TEST_MAIN_END();
}
