/* ESRGAN upscaler against spandrel (tests/golden/gen_esrgan_ref.py): tiny random RRDBNets in
 * the Real-ESRGAN (F16), old ESRGAN (F32) and pixel-unshuffle x2plus layouts, untiled and
 * with sd.cpp's tiling rule (re-implemented in the generator), through the model API
 * (floats) and the public API (8-bit images); the BSRGAN names of the same weights; plus
 * detection and error messages. */
#include <unistd.h>

#include "core/backend.h"
#include "io/model_loader.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "models/esrgan.h"
#include "sdc.h"
#include "test_util.h"

#define DATA SDC_SOURCE_DIR "/tests/data/esrgan/"

/* Measured on x86-64 AVX2. Exact arithmetic (F16 weights convert exactly; only summation
 * order differs): max-abs <= 3.1e-6, rel-L2 <= 6.2e-7 on outputs of magnitude ~2. sd.cpp's
 * arithmetic (F16-rounded conv inputs): a last-bit difference before a rounding flips an F16
 * value now and then, max-abs <= 1.6e-3, rel-L2 <= 4.6e-5, while the two arithmetics are
 * 6e-4..8e-4 apart in rel-L2. A few times the measured error: */
#define TOL_ABS       1e-5
#define TOL_REL       3e-6
#define TOL_ABS_SDCPP 4e-3
#define TOL_REL_SDCPP 1.5e-4

static sdc_tensor *loader_find(void *user, const char *name) {
    return sdc_loader_find(user, name);
}

typedef struct model {
    sdc_loader *l;
    sdc_esrgan *m;
} model;

static bool model_open(model *md, const char *file) {
    memset(md, 0, sizeof *md);
    if (sdc_loader_create(&md->l) != SDC_OK || sdc_loader_add_file(md->l, file, NULL) != SDC_OK) {
        fprintf(stderr, "cannot load %s: %s\n", file, sdc_last_error());
        return false;
    }
    sdc_weight_source ws = {loader_find, md->l};
    if (sdc_esrgan_load(&ws, "", &md->m) != SDC_OK) {
        fprintf(stderr, "esrgan load %s: %s\n", file, sdc_last_error());
        return false;
    }
    return true;
}

static void model_close(model *md) {
    sdc_esrgan_free(md->m);
    sdc_loader_free(md->l);
}

static float *st_read_f32(sdc_st_file *f, const char *name, int64_t *numel) {
    const sdc_st_tensor *t = sdc_st_find(f, name);
    *numel = sdc_st_numel(t);
    float *out = malloc((size_t)*numel * sizeof(float));
    if (out && sdc_st_to_f32(t, out) != SDC_OK) {
        free(out);
        out = NULL;
    }
    return out;
}

/* [H, W, 3] reference tensor -> planar [3][H][W] (scaled by mul) */
static float *planar(sdc_st_file *f, const char *name, int *w, int *h, float mul) {
    const sdc_st_tensor *t = sdc_st_find(f, name);
    if (!t || t->ndim != 3 || t->shape[2] != 3) return NULL;
    int64_t n;
    float *hwc = st_read_f32(f, name, &n);
    if (!hwc) return NULL;
    *h = (int)t->shape[0], *w = (int)t->shape[1];
    size_t px = (size_t)*w * *h;
    float *p = malloc(px * 3 * sizeof(float));
    for (size_t i = 0; i < px; i++)
        for (int c = 0; c < 3; c++) p[c * px + i] = hwc[i * 3 + c] * mul;
    free(hwc);
    return p;
}

static double compare(const char *what, const float *got, const float *ref, size_t n,
                      double tol_abs, double tol_rel) {
    double *r = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) r[i] = ref[i];
    double ma = t_max_abs_diff(got, ref, (long)n), rl = t_rel_l2(got, r, (long)n);
    printf("%-34s max-abs %.3g  rel-L2 %.3g  (%zu values)\n", what, ma, rl, n);
    if (tol_abs > 0)
        CHECK(ma <= tol_abs && rl <= tol_rel, "%s: max-abs %g rel-L2 %g", what, ma, rl);
    free(r);
    return rl;
}

/* Untiled and tiled runs in one numerics mode against the reference names + suffix. */
static void check_mode(sdc_backend *be, sdc_st_file *ref, model *md, sdc_esrgan_numerics mode,
                       const char *input, const char *full_name, const char *tiled_name, int tile) {
    const char *suffix = mode == SDC_ESRGAN_SDCPP ? "_sdcpp" : "";
    const char *other = mode == SDC_ESRGAN_SDCPP ? "" : "_sdcpp";
    char fname[64], tname[64], oname[64];
    snprintf(fname, sizeof fname, "%s%s", full_name, suffix);
    snprintf(oname, sizeof oname, "%s%s", full_name, other);
    sdc_esrgan_set_numerics(md->m, mode);
    const bool sdcpp = mode == SDC_ESRGAN_SDCPP;
    const double ta = sdcpp ? TOL_ABS_SDCPP : TOL_ABS, tr = sdcpp ? TOL_REL_SDCPP : TOL_REL;
    const int s = sdc_esrgan_get_config(md->m)->scale;
    int w, h, rw, rh;
    float *x = planar(ref, input, &w, &h, 1.0f / 255.0f);
    float *want = planar(ref, fname, &rw, &rh, 1.0f);
    float *want_other = planar(ref, oname, &rw, &rh, 1.0f);
    CHECK(x && want && want_other && rw == w * s && rh == h * s, "%s: reference shapes", fname);
    if (!x || !want || !want_other) goto done;
    size_t n = (size_t)rw * rh * 3;
    float *out = malloc(n * sizeof(float));
    sdc_status st = sdc_esrgan_upscale(md->m, be, x, w, h, 0, out);
    CHECK(st == SDC_OK, "%s: run: %s", fname, sdc_last_error());
    if (st == SDC_OK) compare(fname, out, want, n, ta, tr);
    /* the other arithmetic's reference is far off: the comparison tells the two apart */
    char what[96];
    snprintf(what, sizeof what, "  (vs %s)", oname);
    double gap = compare(what, out, want_other, n, 0, 0);
    CHECK(gap > 3 * tr, "%s: as close to %s (rel-L2 %g)", fname, oname, gap);
    /* a tile as large as the image is one pass: the same floats */
    float *same = malloc(n * sizeof(float));
    st = sdc_esrgan_upscale(md->m, be, x, w, h, w > h ? w : h, same);
    CHECK(st == SDC_OK && !memcmp(same, out, n * sizeof(float)),
          "%s: tile >= image size must be the untiled pass", fname);
    free(same);
    if (tiled_name) {
        snprintf(tname, sizeof tname, "%s%s", tiled_name, suffix);
        float *wt = planar(ref, tname, &rw, &rh, 1.0f);
        CHECK(wt != NULL, "%s missing", tname);
        if (wt) {
            st = sdc_esrgan_upscale(md->m, be, x, w, h, tile, out);
            CHECK(st == SDC_OK, "%s: tiled run: %s", tname, sdc_last_error());
            if (st == SDC_OK) compare(tname, out, wt, n, ta, tr);
            double seam = t_max_abs_diff(wt, want, (long)n);
            printf("%-34s differs from untiled by up to %.3g (tile seams)\n", tname, seam);
            CHECK(seam > 1e-2, "%s: tiling should change the result", tname);
            free(wt);
        }
    }
    free(out);
done:
    free(x);
    free(want);
    free(want_other);
}

/* One model on one reference input, in both arithmetics, untiled and tiled (tile > 0). */
static void check_model(sdc_backend *be, sdc_st_file *ref, const char *file, const char *input,
                        const char *full_name, const char *tiled_name, int tile, int want_scale,
                        int want_blocks, int want_unshuffle) {
    model md;
    if (!model_open(&md, file)) {
        CHECK(0, "%s: could not open", file);
        model_close(&md);
        return;
    }
    const sdc_esrgan_config *c = sdc_esrgan_get_config(md.m);
    printf("%s: scale %d, %d blocks, %d features, %d growth, in %d, unshuffle %d\n", file, c->scale,
           c->num_block, c->num_feat, c->num_grow, c->in_ch, c->unshuffle);
    CHECK(c->scale == want_scale && c->num_block == want_blocks && c->num_feat == 8 &&
              c->num_grow == 32 && c->unshuffle == want_unshuffle,
          "%s: detected config", file);
    check_mode(be, ref, &md, SDC_ESRGAN_EXACT, input, full_name, tiled_name, tile);
    check_mode(be, ref, &md, SDC_ESRGAN_SDCPP, input, full_name, tiled_name, tile);
    if (want_unshuffle > 1) { /* a 1-pixel side cannot be reflect-padded to even */
        float x[3] = {0};
        float out[3 * 4];
        sdc_status st = sdc_esrgan_run(md.m, be, x, 1, 1, out);
        printf("1x1 image: %s\n", sdc_last_error());
        CHECK(st == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "too small"),
              "%s: a 1x1 image is refused", file);
    }
    model_close(&md);
}

/* The x4 file seen through BSRGAN/RealSR names (RRDB_trunk.N.RDBk, trunk_conv, upconvN,
 * HRconv): the stored Real-ESRGAN names are hidden, so only the BSRGAN table can find them. */
static sdc_tensor *bsrgan_find(void *user, const char *name) {
    static const char *const map[][2] = {{"RRDB_trunk.", "body."}, {"trunk_conv.", "conv_body."},
                                         {"upconv", "conv_up"},    {"HRconv.", "conv_hr."},
                                         {"conv_first.", NULL},    {"conv_last.", NULL}};
    char buf[160];
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        size_t n = strlen(map[i][0]);
        if (strncmp(name, map[i][0], n)) continue;
        snprintf(buf, sizeof buf, "%s%s", map[i][1] ? map[i][1] : map[i][0], name + n);
        char *rdb = strstr(buf, ".RDB");
        if (rdb) memcpy(rdb, ".rdb", 4);
        return sdc_loader_find(user, buf);
    }
    return NULL;
}

static void check_bsrgan_names(sdc_backend *be, sdc_st_file *ref) {
    sdc_loader *l = NULL;
    sdc_esrgan *m = NULL;
    sdc_weight_source ws = {bsrgan_find, NULL};
    bool ok = sdc_loader_create(&l) == SDC_OK &&
              sdc_loader_add_file(l, DATA "x4.safetensors", NULL) == SDC_OK;
    ws.user = l;
    ok = ok && sdc_esrgan_load(&ws, "", &m) == SDC_OK;
    if (ok) sdc_esrgan_set_numerics(m, SDC_ESRGAN_EXACT);
    CHECK(ok && sdc_esrgan_get_config(m)->scale == 4 && sdc_esrgan_get_config(m)->num_block == 2,
          "BSRGAN layout: %s", sdc_last_error());
    int w, h, rw, rh;
    float *x = planar(ref, "in_a", &w, &h, 1.0f / 255.0f);
    float *want = planar(ref, "x4.full", &rw, &rh, 1.0f);
    if (ok && x && want) {
        size_t n = (size_t)rw * rh * 3;
        float *out = malloc(n * sizeof(float));
        CHECK(sdc_esrgan_run(m, be, x, w, h, out) == SDC_OK, "BSRGAN run: %s", sdc_last_error());
        compare("x4.full via BSRGAN names", out, want, n, TOL_ABS, TOL_REL);
        free(out);
    }
    free(x);
    free(want);
    sdc_esrgan_free(m);
    sdc_loader_free(l);
}

/* The public API on 8-bit pixels: sd.cpp's conversions around the tiled model. */
static void check_public(sdc_st_file *ref) {
    sdc_upscaler *u = NULL;
    sdc_status st = sdc_upscaler_create(DATA "x4.safetensors", 2, 16, &u);
    CHECK(st == SDC_OK && sdc_upscaler_scale(u) == 4, "sdc_upscaler_create x4: %s",
          sdc_last_error());
    if (st != SDC_OK) return;
    int w, h, rw, rh;
    float *in = planar(ref, "in_a", &w, &h, 1.0f);
    float *want = planar(ref, "x4.tiled16_sdcpp", &rw, &rh, 1.0f); /* the default numerics */
    sdc_image img = {(uint32_t)w, (uint32_t)h, 3, malloc((size_t)w * h * 3), 42};
    size_t px = (size_t)w * h;
    for (size_t i = 0; i < px; i++)
        for (int c = 0; c < 3; c++) img.data[i * 3 + c] = (uint8_t)in[c * px + i];
    sdc_image out = {0};
    st = sdc_upscale_image(u, &img, &out);
    CHECK(st == SDC_OK && (int)out.width == rw && (int)out.height == rh && out.channels == 3 &&
              out.seed == 42,
          "sdc_upscale_image: %s, %ux%u", sdc_last_error(), out.width, out.height);
    if (st == SDC_OK) {
        /* reference pixels: clamp to [0, 1], v*255 + 0.5 truncated (sd.cpp). In sd.cpp's
         * arithmetic the floats are within TOL_ABS_SDCPP (~1 level): a byte may be one off
         * (measured: 16 of 48000), never more */
        size_t on = (size_t)rw * rh, off1 = 0, bad = 0;
        for (size_t i = 0; i < on; i++)
            for (int c = 0; c < 3; c++) {
                float v = want[c * on + i];
                int r = v <= 0 ? 0 : v >= 1 ? 255 : (int)(v * 255.0f + 0.5f);
                int d = abs((int)out.data[i * 3 + c] - r);
                off1 += d == 1;
                bad += d > 1;
            }
        printf("public API x4, tile 16: %ux%u -> %ux%u; %zu of %zu bytes one off, %zu more\n",
               img.width, img.height, out.width, out.height, off1, on * 3, bad);
        CHECK(off1 * 500 <= on * 3, "public API: %zu bytes one off (more than 0.2%%)", off1);
        CHECK(bad == 0, "public API: %zu bytes off", bad);
    }
    sdc_image_free(&out);
    sdc_image gray = {(uint32_t)w, (uint32_t)h, 1, img.data, 0};
    st = sdc_upscale_image(u, &gray, &out);
    printf("1-channel image: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "1 channel"),
          "a gray image is refused");
    sdc_image huge = {20000, 4, 3, img.data, 0};
    st = sdc_upscale_image(u, &huge, &out);
    printf("20000x4 image: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "exceeds"),
          "an output over the size limit is refused");
    free(img.data);
    free(in);
    free(want);
    sdc_upscaler_free(u);
    CHECK(sdc_upscaler_scale(NULL) == 0, "scale of NULL");
}

/* A file with the first convs only, one of them with a wrong shape. */
static bool write_bad(const char *path, int64_t bad_cin, bool with_rdb) {
    sdc_st_writer *w;
    if (sdc_st_writer_create(&w) != SDC_OK) return false;
    static float zeros[32 * 40 * 9];
    int64_t s_first[4] = {8, 3, 3, 3}, s_b8[1] = {8}, s_rdb[4] = {32, bad_cin, 3, 3},
            s_b32[1] = {32};
    sdc_st_writer_add(w, "params_ema.conv_first.weight", SDC_ST_F32, 4, s_first, zeros);
    sdc_st_writer_add(w, "params_ema.conv_first.bias", SDC_ST_F32, 1, s_b8, zeros);
    if (with_rdb) {
        sdc_st_writer_add(w, "params_ema.body.0.rdb1.conv1.weight", SDC_ST_F32, 4, s_rdb, zeros);
        sdc_st_writer_add(w, "params_ema.body.0.rdb1.conv1.bias", SDC_ST_F32, 1, s_b32, zeros);
    }
    sdc_status st = sdc_st_writer_write(w, path, NULL, NULL);
    sdc_st_writer_free(w);
    return st == SDC_OK;
}

/* A .pth-like wrapper: the x4 weights under "params." (zeroed: the non-EMA copy) and
 * "params_ema." (the real ones), non-EMA first; the EMA weights must be the ones used. */
static void check_wrapper_prefix(void) {
    char dir[] = "/tmp/sdc_esrgan_w_XXXXXX", path[128];
    sdc_st_file *f = NULL;
    sdc_st_writer *wr = NULL;
    if (!mkdtemp(dir) || sdc_st_open(DATA "x4.safetensors", &f) != SDC_OK ||
        sdc_st_writer_create(&wr) != SDC_OK) {
        CHECK(0, "wrapper setup: %s", sdc_last_error());
        sdc_st_close(f);
        return;
    }
    snprintf(path, sizeof path, "%s/wrapped.safetensors", dir);
    static char zeros[1 << 20];
    char name[160];
    const char *pre[2] = {"params.", "params_ema."};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < sdc_st_count(f); i++) {
            const sdc_st_tensor *t = sdc_st_at(f, i);
            snprintf(name, sizeof name, "%s%s", pre[k], t->name);
            sdc_st_writer_add(wr, name, t->dtype, t->ndim, t->shape, k ? t->data : zeros);
        }
    CHECK(sdc_st_writer_write(wr, path, NULL, NULL) == SDC_OK, "writing %s", path);
    sdc_st_writer_free(wr);
    sdc_st_close(f);
    sdc_upscaler *a = NULL, *b = NULL;
    sdc_status sa = sdc_upscaler_create(DATA "x4.safetensors", 1, 16, &a);
    sdc_status sb = sdc_upscaler_create(path, 1, 16, &b);
    CHECK(sa == SDC_OK && sb == SDC_OK, "wrapped file: %s", sdc_last_error());
    if (sa == SDC_OK && sb == SDC_OK) {
        sdc_image in = {24, 20, 3, malloc(24 * 20 * 3), 0}, oa = {0}, ob = {0};
        for (int i = 0; i < 24 * 20 * 3; i++) in.data[i] = (uint8_t)(i * 37 % 251);
        bool same = sdc_upscale_image(a, &in, &oa) == SDC_OK &&
                    sdc_upscale_image(b, &in, &ob) == SDC_OK && oa.width == ob.width &&
                    !memcmp(oa.data, ob.data, (size_t)oa.width * oa.height * 3);
        printf("params / params_ema wrapper: the EMA weights are used: %s\n", same ? "yes" : "no");
        CHECK(same, "the params_ema. weights must be picked");
        sdc_image_free(&oa);
        sdc_image_free(&ob);
        free(in.data);
    }
    sdc_upscaler_free(a);
    sdc_upscaler_free(b);
    unlink(path);
    rmdir(dir);
}

static void check_errors(void) {
    sdc_upscaler *u = NULL;
    sdc_status st = sdc_upscaler_create("/nonexistent/esrgan.safetensors", 1, 128, &u);
    printf("missing file: %s\n", sdc_last_error());
    CHECK(st != SDC_OK && !u && strstr(sdc_last_error(), "/nonexistent/esrgan.safetensors"),
          "a missing file is named");
    st = sdc_upscaler_create(DATA "ref.safetensors", 1, 128, &u);
    printf("not a model: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "not an ESRGAN model") &&
              strstr(sdc_last_error(), "ref.safetensors"),
          "a file without ESRGAN tensors");
    char dir[] = "/tmp/sdc_esrgan_XXXXXX", path[128];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    /* a dense conv taking 9 channels where the 8 features go in; under a wrapper prefix */
    CHECK(write_bad(path, 9, true), "writing %s", path);
    st = sdc_upscaler_create(path, 1, 128, &u);
    printf("wrong shape: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "bad.safetensors") &&
              strstr(sdc_last_error(), "params_ema.body.0.rdb1.conv1.weight"),
          "a wrong shape names the file and tensor");
    /* the right shape, but the rest of the model is missing */
    CHECK(write_bad(path, 8, true), "writing %s", path);
    st = sdc_upscaler_create(path, 1, 128, &u);
    printf("truncated model: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "params_ema.body.0.rdb1.conv2.weight"),
          "a missing tensor is named");
    CHECK(write_bad(path, 8, false), "writing %s", path);
    st = sdc_upscaler_create(path, 1, 128, &u);
    printf("no dense blocks: %s\n", sdc_last_error());
    CHECK(st == SDC_ERR_FORMAT && strstr(sdc_last_error(), "not an ESRGAN model"),
          "no dense blocks");
    unlink(path);
    rmdir(dir);
}

/* sd.cpp's tile counts, worked out by hand from its rule for a few sides (tile 16, 0.25). */
static void check_calc_tiles(void) {
    const struct {
        int small, tile, n;
        float f;
    } cases[] = {
        {24, 16, 2, 0.5f},     /* (24-4)/12 = 1, overshoot 4 <= 4: 2 tiles */
        {20, 16, 2, 0.75f},    /* overshoot 8 > 4: still 2 (n <= 2 rule), f = 12/16 */
        {16, 16, 1, 0.0f},     /* fits */
        {50, 16, 4, 14 / 48.f} /* (50-4)/12 = 3, overshoot 2: 4 tiles, f = 14/48 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int n;
        float f;
        sdc_esrgan_calc_tiles(cases[i].small, cases[i].tile, 0.25f, &n, &f);
        CHECK(n == cases[i].n && fabsf(f - cases[i].f) < 1e-6f, "calc_tiles(%d, %d): %d %g",
              cases[i].small, cases[i].tile, n, f);
    }
    printf("tile counts: 4 cases as sd.cpp's rule gives them\n");
}

int main(void) {
    sdc_st_file *ref = NULL;
    if (sdc_st_open(DATA "ref.safetensors", &ref) != SDC_OK) {
        fprintf(stderr, "cannot open reference: %s\n", sdc_last_error());
        return 1;
    }
    sdc_backend *be = sdc_backend_cpu_create(2);
    check_calc_tiles();
    check_model(be, ref, DATA "x4.safetensors", "in_a", "x4.full", "x4.tiled16", 16, 4, 2, 1);
    check_model(be, ref, DATA "x2_old.safetensors", "in_a", "x2_old.full", NULL, 0, 2, 1, 1);
    check_model(be, ref, DATA "x2_unshuffle.safetensors", "in_b", "x2_unshuffle.full",
                "x2_unshuffle.tiled8", 8, 2, 1, 2);
    check_bsrgan_names(be, ref);
    check_public(ref);
    check_wrapper_prefix();
    check_errors();
    sdc_backend_free(be);
    sdc_st_close(ref);
    TEST_MAIN_END();
}
