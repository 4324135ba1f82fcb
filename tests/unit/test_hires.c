/* Hires fix (src/pipeline/hires.c):
 * - the latent upscalers against torch's F.interpolate and against a numpy transcription of
 *   sd.cpp's interpolate rule (tests/data/hires, from tests/golden/gen_hires_ref.py);
 * - the second pass's schedule against sd.cpp's formula written out here;
 * - end to end on the golden MiniT2I: a "Nearest" hires run equals an img2img run of the
 *   2x pixel-doubled first-pass image with the same sigmas (same seed, same noise draws),
 *   the second pass runs t_enc + 1 steps, batch item i is the seed + i run, bad values fail;
 * - SD1 runs 128 -> 256 (Latent, Lanczos) when SDC_SD1_MODEL exists (size, not flat). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gen_common.h"
#include "io/safetensors.h"
#include "pipeline/hires.h"
#include "test_util.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/hires/" name

#ifndef SDC_SD1_MODEL
#define SDC_SD1_MODEL "sd1_random_1001.safetensors"
#endif

/* Measured: C vs the double rule <= 1.5e-8 (both round the double sum to float; values are
 * within |4|, half an ulp there is 2.4e-7); C vs torch (float32 arithmetic) <= 1.9e-6. */
#define TOL_RULE  1.2e-7
#define TOL_TORCH 6e-6

static const struct {
    const char *name;
    sdc_resize_filter f;
    bool aa;
} k_modes[] = {
    {"nearest", SDC_RESIZE_NEAREST, false},     {"nearest-exact", SDC_RESIZE_NEAREST_EXACT, false},
    {"bilinear", SDC_RESIZE_BILINEAR, false},   {"bicubic", SDC_RESIZE_BICUBIC, false},
    {"bilinear_aa", SDC_RESIZE_BILINEAR, true}, {"bicubic_aa", SDC_RESIZE_BICUBIC, true},
    {"lanczos", SDC_RESIZE_LANCZOS, false},
};

/* the generator's torch_agrees(): antialiased modes differ from torch at the edges */
static bool torch_agrees(const char *mode, int oh, int ow) {
    if (!strcmp(mode, "lanczos")) return false; /* torch has none */
    if (!strstr(mode, "_aa") || (oh == 6 && ow == 5)) return true;
    return !strcmp(mode, "bilinear_aa") && oh >= 6 && ow >= 5;
}

static void test_resize(void) {
    sdc_st_file *f = NULL;
    CHECK(sdc_st_open(DATA("resize_ref.safetensors"), &f) == SDC_OK, "open: %s", sdc_last_error());
    if (!f) return;
    const sdc_st_tensor *in = sdc_st_find(f, "input");
    CHECK(in && in->dtype == SDC_ST_F32 && in->ndim == 3, "input tensor");
    if (!in) {
        sdc_st_close(f);
        return;
    }
    int c = (int)in->shape[0], h = (int)in->shape[1], w = (int)in->shape[2];
    float *x = malloc(in->nbytes), *ref = malloc(sizeof(float) * 4 * 16 * 16);
    float *out = malloc(sizeof(float) * 4 * 16 * 16);
    memcpy(x, in->data, in->nbytes);
    static const int sizes[][2] = {{12, 10}, {13, 11}, {4, 3}, {6, 5}};
    for (int si = 0; si < 4; si++) {
        int oh = sizes[si][0], ow = sizes[si][1];
        for (size_t mi = 0; mi < sizeof k_modes / sizeof k_modes[0]; mi++) {
            const char *mode = k_modes[mi].name;
            CHECK(sdc_resize_planes(x, w, h, c, out, ow, oh, k_modes[mi].f, k_modes[mi].aa),
                  "resize");
            for (int src = 0; src < 2; src++) {
                char key[64];
                snprintf(key, sizeof key, "%dx%d.%s.%s", oh, ow, src ? "torch" : "rule", mode);
                const sdc_st_tensor *t = sdc_st_find(f, key);
                if (src && !torch_agrees(mode, oh, ow)) continue;
                CHECK(t && t->nbytes == sizeof(float) * (size_t)c * oh * ow, "%s present", key);
                if (!t) continue;
                memcpy(ref, t->data, t->nbytes);
                double err = t_max_abs_diff(out, ref, (long)c * oh * ow);
                double tol = src ? TOL_TORCH : TOL_RULE;
                printf("resize %dx%d -> %-26s max abs err %.3g (tol %.2g)\n", h, w, key, err, tol);
                CHECK(err <= tol, "%s: %g > %g", key, err, tol);
            }
        }
    }
    free(x);
    free(ref);
    free(out);
    sdc_st_close(f);
}

/* sd.cpp make_hires_sigma_schedule, restated: scheduler_steps = max(1, int(steps / s)),
 * t_enc = min(int(scheduler_steps * s), scheduler_steps - 1), sigmas[scheduler_steps - t_enc
 * - 1 ..] are kept. */
static void test_schedule(void) {
    static const float strengths[] = {0.0001f, 0.1f, 0.3f, 0.35f, 0.5f, 0.7f, 0.75f, 0.9f, 1.0f};
    int bad = 0, cases = 0;
    for (int steps = 1; steps <= 40; steps++)
        for (size_t k = 0; k < sizeof strengths / sizeof strengths[0]; k++) {
            float s = strengths[k];
            if ((float)steps / s > 100000.0f) continue;
            int want_ss = (int)floorf((float)steps / s);
            if (want_ss < 1) want_ss = 1;
            int ss = sdc_hires_scheduler_steps(steps, s);
            int t_enc = (int)floorf((float)want_ss * s);
            if (t_enc > want_ss - 1) t_enc = want_ss - 1;
            float *sg = malloc(sizeof(float) * (size_t)(want_ss + 1));
            for (int i = 0; i <= want_ss; i++) sg[i] = (float)(want_ss - i); /* sigma_i labels i */
            int n = ss == want_ss ? sdc_hires_trim_sigmas(sg, ss, s) : -1;
            bool ok = ss == want_ss && n == t_enc + 2;
            for (int i = 0; ok && i < n; i++) ok = sg[i] == (float)(t_enc + 1 - i);
            bad += !ok;
            cases++;
            free(sg);
        }
    printf("hires schedule: %d of %d (steps, strength) cases differ from sd.cpp's formula\n", bad,
           cases);
    fflush(stdout);
    CHECK(bad == 0, "schedule cases differ");
    /* sd-webui's promise: steps 10 at strength 0.7 schedules 14 and runs exactly 10 */
    float sg[15];
    for (int i = 0; i < 15; i++) sg[i] = (float)i;
    int ss = sdc_hires_scheduler_steps(10, 0.7f), n = sdc_hires_trim_sigmas(sg, 14, 0.7f);
    printf("hires schedule 10 steps at 0.7: %d scheduler steps, %d sigmas from index %g\n", ss, n,
           (double)sg[0]);
    CHECK(ss == 14 && n == 11 && sg[0] == 4.0f, "10 @ 0.7");
}

static int g_steps_seen;
static void count_steps(int step, int steps, double sec, void *user) {
    (void)step, (void)steps, (void)sec, (void)user;
    g_steps_seen++;
}

static sdc_image *gen(sdc_context *ctx, const sdc_generate_params *p, int *count) {
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = sdc_generate_image(ctx, p, &img, &n);
    CHECK(s == SDC_OK, "generate: %s", sdc_last_error());
    if (count) *count = n;
    return s == SDC_OK ? img : NULL;
}

static int max_diff(const sdc_image *a, const sdc_image *b) {
    if (!a || !b || a->width != b->width || a->height != b->height) return 999;
    int m = 0;
    for (size_t i = 0; i < (size_t)a->width * a->height * 3; i++) {
        int d = abs((int)a->data[i] - (int)b->data[i]);
        if (d > m) m = d;
    }
    return m;
}

static void expect_fail(sdc_context *ctx, const sdc_generate_params *p, const char *needle,
                        const char *what) {
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = sdc_generate_image(ctx, p, &img, &n);
    printf("%-36s -> %s\n", what, s == SDC_OK ? "(no error)" : sdc_last_error());
    CHECK(s != SDC_OK && strstr(sdc_last_error(), needle), "%s: want '%s'", what, needle);
    sdc_free_images(img, n);
}

static void test_minit2i(void) {
    sdc_context_params cp;
    t_golden_context_params(&cp);
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) return;
    static const float hs[] = {0.9f, 0.5f, 0.2f, 0.0f};

    /* first pass alone, then doubled by pixel repetition (what "Nearest" does at 2x) */
    sdc_generate_params p;
    t_lighthouse_params(&p, 32, 32, 3, 1);
    sdc_image *base = gen(ctx, &p, NULL);
    sdc_image init = {64, 64, 3, malloc(64 * 64 * 3), 0};
    for (int y = 0; y < 64 && base; y++)
        for (int x = 0; x < 64; x++)
            memcpy(init.data + ((size_t)y * 64 + x) * 3,
                   base->data + ((size_t)(y / 2) * 32 + x / 2) * 3, 3);
    t_lighthouse_params(&p, 64, 64, 3, 1);
    p.init_image = &init;
    p.strength = 1.0f;
    p.sigmas = hs;
    p.n_sigmas = 4;
    sdc_image *i2i = gen(ctx, &p, NULL);

    t_lighthouse_params(&p, 32, 32, 3, 1);
    p.hires = true;
    p.hires_upscaler = "Nearest";
    p.hires_sigmas = hs;
    p.n_hires_sigmas = 4;
    sdc_image *hr = gen(ctx, &p, NULL);
    CHECK(hr && hr->width == 64 && hr->height == 64, "hires size");
    int d = max_diff(hr, i2i);
    printf("MiniT2I hires Nearest 32->64 vs img2img of the doubled first pass: max |diff| %d/255 "
           "(want 0)\n",
           d);
    CHECK(d == 0, "hires Nearest != img2img composition (%d)", d);

    /* default Latent upscaler: the second pass runs hires_steps steps (t_enc + 1) */
    t_lighthouse_params(&p, 32, 32, 3, 2);
    p.hires = true;
    p.hires_steps = 4;
    p.hires_denoising_strength = 0.6f;
    p.progress = count_steps;
    g_steps_seen = 0;
    int n = 0;
    sdc_image *b2 = gen(ctx, &p, &n);
    int want = 2 * (3 + 4); /* 4 / 0.6 -> 6 scheduled, t_enc 3: 4 steps */
    printf("MiniT2I hires Latent, batch 2: %d images, %d sampling steps (want %d)\n", n,
           g_steps_seen, want);
    CHECK(n == 2 && g_steps_seen == want, "steps");
    p.seed = 12;
    p.batch_count = 1;
    sdc_image *one = gen(ctx, &p, NULL);
    d = b2 && n == 2 ? max_diff(&b2[1], one) : 999;
    printf("batch item 1 vs a seed+1 run: max |diff| %d/255 (want 0)\n", d);
    CHECK(d == 0, "batch item 1 differs from seed 12 (%d)", d);
    d = b2 ? max_diff(&b2[0], hr) : 999;
    CHECK(d > 0 && d != 999, "Latent and Nearest runs should differ");
    p.progress = NULL;

    /* "None" turns it off; scale and explicit sizes */
    t_lighthouse_params(&p, 32, 32, 2, 1);
    p.hires = true;
    p.hires_upscaler = "None";
    sdc_image *none = gen(ctx, &p, NULL);
    CHECK(none && none->width == 32, "None: base size");
    p.hires_upscaler = "Latent (bicubic antialiased)";
    p.hires_width = 48; /* height follows it */
    p.hires_steps = 1;
    sdc_image *sq = gen(ctx, &p, NULL);
    CHECK(sq && sq->width == 48 && sq->height == 48, "48x48");
    p.hires_width = 40; /* aligned up to the patch size 16 */
    p.hires_height = 20;
    sdc_image *al = gen(ctx, &p, NULL);
    CHECK(al && al->width == 48 && al->height == 32, "aligned 48x32, got %ux%u", al ? al->width : 0,
          al ? al->height : 0);

    /* bad values */
    t_lighthouse_params(&p, 32, 32, 2, 1);
    p.hires = true;
    p.hires_denoising_strength = 0.0f;
    expect_fail(ctx, &p, "denoising strength", "strength 0");
    p.hires_denoising_strength = 0.7f;
    p.hires_steps = -1;
    expect_fail(ctx, &p, "hires steps", "steps -1");
    p.hires_steps = 0;
    p.hires_scale = 0.0f;
    expect_fail(ctx, &p, "hires scale", "scale 0");
    p.hires_scale = 2.0f;
    p.hires_upscaler = "RealESRGAN_x4plus";
    expect_fail(ctx, &p, "--hires-upscalers-dir", "model name without a dir");
    p.hires_upscalers_dir = SDC_SOURCE_DIR "/tests/data/esrgan";
    p.hires_upscaler = "x4.safetensors";
    expect_fail(ctx, &p, "without path or extension", "model name with extension");
    p.hires_upscaler = "no_such_model";
    expect_fail(ctx, &p, "cannot find", "missing model");
    p.hires_upscaler = "Latent";
    float bad_sig[] = {1.0f};
    p.hires_sigmas = bad_sig;
    p.n_hires_sigmas = 1;
    expect_fail(ctx, &p, "at least 2", "one hires sigma");

    /* an ESRGAN model from the folder (tests/data/esrgan/x4: a tiny x4 RRDBNet) */
    p.hires_sigmas = NULL;
    p.n_hires_sigmas = 0;
    p.hires_upscaler = "x4";
    p.hires_steps = 1;
    sdc_image *es = gen(ctx, &p, NULL);
    CHECK(es && es->width == 64 && es->height == 64, "ESRGAN hires 64x64");
    printf("MiniT2I hires with the x4 ESRGAN model: %ux%u\n", es ? es->width : 0,
           es ? es->height : 0);

    sdc_free_images(base, 1);
    sdc_free_images(i2i, 1);
    sdc_free_images(hr, 1);
    sdc_free_images(b2, n);
    sdc_free_images(one, 1);
    sdc_free_images(none, 1);
    sdc_free_images(sq, 1);
    sdc_free_images(al, 1);
    sdc_free_images(es, 1);
    free(init.data);
    sdc_context_free(ctx);
}

static void test_sd1(void) {
#ifdef SDC_SANITIZED
    printf("SKIP SD1 hires run: too slow under the sanitizers\n");
    return;
#endif
    const char *model = getenv("SDC_SD1_MODEL") ? getenv("SDC_SD1_MODEL") : SDC_SD1_MODEL;
    struct stat st;
    if (stat(model, &st) != 0) {
        printf("SKIP SD1 hires run: %s not found\n", model);
        return;
    }
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "SD1 context: %s", sdc_last_error());
    if (!ctx) return;
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 128;
    p.steps = 1;
    p.cfg_scale = 1.0f;
    p.seed = 42;
    p.hires = true;
    p.hires_steps = 1;
    /* the latent path, and the pixel path (decode, Lanczos, VAE re-encode) */
    static const char *const ups[] = {"Latent", "Lanczos"};
    for (int u = 0; u < 2; u++) {
        p.hires_upscaler = ups[u];
        sdc_image *img = gen(ctx, &p, NULL);
        long lo = 255, hi = 0;
        for (size_t i = 0; img && i < (size_t)img->width * img->height * 3; i++) {
            if (img->data[i] < lo) lo = img->data[i];
            if (img->data[i] > hi) hi = img->data[i];
        }
        printf("SD1 hires %s 128 -> 256: %ux%u, pixel range %ld..%ld\n", ups[u],
               img ? img->width : 0, img ? img->height : 0, lo, hi);
        CHECK(img && img->width == 256 && img->height == 256 && hi > lo, "SD1 hires %s", ups[u]);
        sdc_free_images(img, 1);
    }
    sdc_context_free(ctx);
}

int main(void) {
    test_resize();
    test_schedule();
    test_minit2i();
    test_sd1();
    TEST_MAIN_END();
}
