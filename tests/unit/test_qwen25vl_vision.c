/* Qwen2.5-VL vision tower (src/models/qwen25vl_vision.c) against tests/data/qwen_vision (made by
 * tests/golden/gen_qwen25vl_vision_ref.py): transformers' Qwen2_5_VisionTransformerPretrainedModel
 * in float64 on a small random tower (hidden 64, 4 heads of 16, 3 blocks with block 1 full
 * attention and 0, 2 windowed, window 56 px = 2x2 merged units, merger to 80), patches laid
 * out by transformers' Qwen2VLImageProcessor, for two images (112x84: 4 ragged windows;
 * 140x56: 3 windows):
 *  - the merged patches (what replaces the image pads), in row-major grid order;
 *  - the same with every layer full attention (must differ: the windows matter);
 *  - sd.cpp's resize rule for Edit reference images and its clip_preprocess, against values
 *    worked out by hand from sd.cpp's formulas;
 *  - bad input (size not a multiple of 28, a misshapen tensor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "models/qwen25vl_vision.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(f) SDC_SOURCE_DIR "/tests/data/qwen_vision/" f

/* Max abs error against float64 (outputs |max| 2.4 .. 2.8): F32 rounding only; measured
 * 1.7e-6 / 2.0e-6, ~5x that. Every layer full attention instead is 1.2 away. */
#define TOL 1e-5

static sdc_st_file *ref;

/* The test helper keeps 4 dims; fold the Conv3d's [O, C, T, P, P] as the model loader does. */
static void fold_5d(st_weights *w) {
    for (int i = 0; i < w->n; i++) {
        const sdc_st_tensor *e = sdc_st_at(w->f, i);
        if (e->ndim == 5) {
            w->t[i].ne[3] = e->shape[0] * e->shape[1];
            sdc_tensor_set_contiguous_strides(&w->t[i]);
        }
    }
}

static double run_case(sdc_qwen25vl_vision *m, sdc_backend *be, const char *c, int w, int h,
                       double tol, const char *label) {
    char name[64];
    snprintf(name, sizeof name, "image.%s", c);
    int64_t ni = 0, nr = 0;
    float *img = st_read_f32(ref, name, &ni);
    snprintf(name, sizeof name, "merged.%s", c);
    float *r = st_read_f32(ref, name, &nr);
    const sdc_qwen25vl_vision_config *cf = sdc_qwen25vl_vision_get_config(m);
    int nt = sdc_qwen25vl_vision_tokens(m, w, h);
    CHECK(img && r && ni == 3LL * w * h && nr == (int64_t)nt * cf->out_hidden,
          "%s: reference missing or of the wrong size", c);
    double err = INFINITY;
    if (img && r && ni == 3LL * w * h && nr == (int64_t)nt * cf->out_hidden) {
        float *out = malloc((size_t)nr * sizeof *out);
        sdc_status s = sdc_qwen25vl_vision_encode(m, be, img, w, h, out, NULL, NULL);
        CHECK(s == SDC_OK, "%s: %s", c, sdc_last_error());
        if (s == SDC_OK) {
            err = t_max_abs_diff(out, r, (long)nr);
            printf("  %-28s %s (%dx%d, %d tokens): max abs err %.3g (tol %.2g)\n", label, c, w, h,
                   nt, err, tol);
            if (tol > 0) CHECK(err <= tol, "%s %s: max abs err %g > %g", label, c, err, tol);
        }
        free(out);
    }
    free(img);
    free(r);
    return err;
}

/* Sizes from sd.cpp's rule (conditioner.hpp, QwenImageEditPlusPipeline, AREA mode) worked out
 * in Python doubles: {w, h, min, max, expected w, expected h}; min = max: a fixed area. */
static void resize_rule(void) {
    static const int cases[][6] = {{1024, 1024, 0, 0, 560, 560},      {1920, 1080, 0, 0, 728, 392},
                                   {300, 200, 0, 0, 476, 336},        {512, 768, 0, 0, 448, 672},
                                   {448, 448, 0, 0, 448, 448},        {1000, 30, 0, 0, 2240, 84},
                                   {100, 100, 40000, 40000, 196, 196}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int *c = cases[i];
        int w = 0, h = 0;
        sdc_qwen25vl_vision_resize_dims(c[0], c[1], 28, c[2], c[3], &w, &h);
        printf("  resize %4dx%-4d (min %d, max %d) -> %dx%d (expected %dx%d)\n", c[0], c[1], c[2],
               c[3], w, h, c[4], c[5]);
        CHECK(w == c[4] && h == c[5], "resize %dx%d: %dx%d, expected %dx%d", c[0], c[1], w, h, c[4],
              c[5]);
    }
}

/* clip_preprocess on two tiny images: 3x2 -> 6x4 (nearest upscale by 2, every source pixel
 * twice) and 6x2 -> 2x2 (scale 1, centre crop of columns 2..3); out = (clamp(v) - mean)/std. */
static void preprocess(void) {
    static const double mean[3] = {0.48145466, 0.4578275, 0.40821073};
    static const double sd[3] = {0.26862954, 0.26130258, 0.27577711};
    float rgb[6 * 2 * 3], out[3 * 6 * 4];
    for (int i = 0; i < 36; i++)
        rgb[i] = (float)((i * 7) % 13) / 10.0f - 0.1f; /* some out of [0,1] */
    double err = 0;
    CHECK(sdc_qwen25vl_vision_preprocess(rgb, 3, 2, 6, 4, out) == SDC_OK, "preprocess up");
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 6; x++) {
                double v = rgb[((y / 2) * 3 + x / 2) * 3 + c];
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                err = fmax(err, fabs((v - mean[c]) / sd[c] - out[(c * 4 + y) * 6 + x]));
            }
    CHECK(sdc_qwen25vl_vision_preprocess(rgb, 6, 2, 2, 2, out) == SDC_OK, "preprocess crop");
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++) {
                double v = rgb[(y * 6 + x + 2) * 3 + c];
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                err = fmax(err, fabs((v - mean[c]) / sd[c] - out[(c * 2 + y) * 2 + x]));
            }
    printf("  clip_preprocess (upscale, crop): max abs err %.3g (tol 1e-5)\n", err);
    CHECK(err <= 1e-5, "clip_preprocess: max abs err %g", err);
}

int main(void) {
    resize_rule();
    preprocess();
    if (sdc_st_open(DATA("qwen25vl_vision_ref.safetensors"), &ref) != SDC_OK) {
        fprintf(stderr, "cannot open the reference: %s\n", sdc_last_error());
        return 1;
    }
    sdc_backend *be = sdc_backend_cpu_create(2);
    st_weights sw;
    sdc_weight_source ws;
    CHECK(st_weights_open(&sw, DATA("qwen25vl_vision_tiny.safetensors"), &ws) == 0, "weights");
    fold_5d(&sw);
    CHECK(sdc_qwen25vl_vision_detect(&ws, ""), "vision tower not detected");
    CHECK(!sdc_qwen25vl_vision_detect(&ws, "model."), "detected under a wrong prefix");
    sdc_qwen25vl_vision *m = NULL, *mf = NULL;
    CHECK(sdc_qwen25vl_vision_load(&ws, "", 16, 56, 1u << 1, &m) == SDC_OK, "load: %s",
          sdc_last_error());
    CHECK(sdc_qwen25vl_vision_load(&ws, "", 16, 56, 7u, &mf) == SDC_OK, "load: %s",
          sdc_last_error());
    if (m && mf) {
        const sdc_qwen25vl_vision_config *c = sdc_qwen25vl_vision_get_config(m);
        printf("config: %d layers, hidden %d, %d heads of %d, mlp %d, out %d, patch %d x %d, "
               "merge %d, window %d\n",
               c->n_layers, c->hidden, c->n_heads, c->head_dim, c->mlp, c->out_hidden,
               c->temporal_patch, c->patch, c->merge, c->window);
        CHECK(c->n_layers == 3 && c->hidden == 64 && c->n_heads == 4 && c->mlp == 96 &&
                  c->out_hidden == 80 && c->patch == 14 && c->temporal_patch == 2,
              "tiny config");
        run_case(m, be, "img0", 112, 84, TOL, "window attention");
        run_case(m, be, "img1", 140, 56, TOL, "window attention");
        /* all layers full: the windows must make a difference the test can see */
        double e = run_case(mf, be, "img0", 112, 84, 0, "all full attention (wrong)");
        CHECK(e > 100 * TOL, "full attention everywhere matches the reference (%g)", e);
        float img[28 * 28 * 3] = {0}, out[80];
        CHECK(sdc_qwen25vl_vision_encode(m, be, img, 28, 27, out, NULL, NULL) != SDC_OK,
              "27 rows accepted");
        CHECK(sdc_qwen25vl_vision_encode(m, be, img, 28, 28, out, NULL, NULL) == SDC_OK,
              "one 28x28 image: %s", sdc_last_error());
    }
    sdc_qwen25vl_vision_free(m);
    sdc_qwen25vl_vision_free(mf);
    st_weights_close(&sw);
    sdc_st_close(ref);
    sdc_backend_free(be);
    TEST_MAIN_END();
}
