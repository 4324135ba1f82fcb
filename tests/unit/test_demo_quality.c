/* The shipped demo model draws what the prompt says (issue 14): held-back captions (triples
 * never seen in training, tools/demo/make_data.py's split) generated through the public API
 * with `-m demo`, each picture scored by plain image analysis (tools/demo/score.c, itself
 * checked against ground truth in test_demo_score). Fails below 90% for shape colour AND
 * background AND shape. Then the same weights as GGUF (converted here with sdc_convert,
 * keeping the stored types) must give the same pictures, and q8_0 must score within 2
 * points of F16. Skipped (77) when models/demo/ is not there; under the sanitizers fewer
 * prompts and a looser bound (a small sample; the point there is memory errors). */
#include "score.h"
#include "test_util.h"

#include "args.h"
#include "core/types.h"
#include "sdc.h"

#include <stdint.h>

#ifdef SDC_SANITIZED
#define N_PROMPTS 16
#define MIN_CSB   75.0
#define N_GGUF    4
#else
#define N_PROMPTS 120
#define MIN_CSB   90.0
#define N_GGUF    16
#endif
#define SIDE 64

static demo_spec g_specs[N_PROMPTS];
static int g_n;

/* Generates prompts [0, n) on the model the params name; pixels into pix (n * 64*64*3),
 * scores into *t. Returns false (and records a failure) when loading or generating fails. */
static bool run_set(const char *label, const sdc_context_params *cp, const sdc_demo_model *d, int n,
                    uint8_t *pix, demo_tally *t) {
    sdc_context *ctx = NULL;
    if (sdc_context_create(cp, &ctx) != SDC_OK) {
        CHECK(0, "%s: %s", label, sdc_last_error());
        return false;
    }
    printf("%s: %s\n", label, sdc_context_describe(ctx));
    sdc_generate_params gp;
    sdc_generate_params_init(&gp);
    gp.width = d->width, gp.height = d->height, gp.steps = d->steps;
    gp.cfg_scale = d->cfg_scale;
    gp.sampling_method = d->sampling_method;
    gp.scheduler = d->scheduler;
    gp.rng = "cpu";
    memset(t, 0, sizeof *t);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        char caption[160];
        demo_caption(&g_specs[i], caption, sizeof caption);
        gp.prompt = caption;
        gp.seed = 1 + i;
        sdc_image *img = NULL;
        int count = 0;
        ok = sdc_generate_image(ctx, &gp, &img, &count) == SDC_OK && count == 1 &&
             img[0].width == SIDE && img[0].height == SIDE;
        CHECK(ok, "%s: '%s': %s", label, caption, sdc_last_error());
        if (!ok) break;
        memcpy(pix + (size_t)i * SIDE * SIDE * 3, img[0].data, SIDE * SIDE * 3);
        demo_reading r;
        demo_score_image(img[0].data, SIDE, SIDE, &g_specs[i], &r);
        demo_tally_add(t, &r);
        if (!(r.ok[0] && r.ok[1] && r.ok[2]))
            printf("  miss %3d '%s': read %s %s on %s\n", i, caption,
                   r.found.colour >= 0 ? demo_colour_names[r.found.colour] : "-",
                   r.found.shape >= 0 ? demo_shape_names[r.found.shape] : "-",
                   demo_colour_names[r.found.bg]);
        sdc_free_images(img, count);
    }
    sdc_context_free(ctx);
    char line[512];
    if (ok) printf("%s: %s\n", label, demo_tally_line(t, line, sizeof line));
    return ok;
}

static double psnr(const uint8_t *a, const uint8_t *b, size_t n, int *max_diff) {
    double sq = 0;
    int m = 0;
    for (size_t k = 0; k < n; k++) {
        int d = abs((int)a[k] - (int)b[k]);
        sq += (double)d * d;
        if (d > m) m = d;
    }
    *max_diff = m;
    return demo_psnr(sq, (double)n);
}

static bool convert_to(const sdc_demo_model *d, int type, const char *out) {
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    bool pair = d->diffusion_model_path[0] != '\0';
    p.model_path = pair ? NULL : d->model_path;
    p.diffusion_model_path = pair ? d->diffusion_model_path : NULL;
    p.t5xxl_path = pair ? d->t5xxl_path : NULL;
    p.output_path = out;
    p.type = type;
    sdc_status s = sdc_convert(&p);
    CHECK(s == SDC_OK, "convert to %s: %s", out, sdc_last_error());
    return s == SDC_OK;
}

/* `sdc -m demo`: the flags parser puts the demo's files in place of -m and its settings in
 * place of the defaults of the flags not given; given flags win. */
static void test_cli(const sdc_demo_model *d) {
    char *argv1[] = {"sdc", "-m", "demo", "-p", "a red circle on a blue background", NULL};
    char *argv2[] = {"sdc",  "-m",      "demo", "-p",          "x", "-W",
                     "128",  "--steps", "3",    "--cfg-scale", "2", "--sampling-method",
                     "heun", NULL};
    sdc_cli_args a;
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 5, argv1) == SDC_CLI_PARSE_RUN, "parse: %s",
          a.error);
    bool pair = d->diffusion_model_path[0] != '\0';
    CHECK(pair ? a.ctx.diffusion_model_path &&
                     !strcmp(a.ctx.diffusion_model_path, d->diffusion_model_path) &&
                     !a.ctx.model_path
               : a.ctx.model_path && !strcmp(a.ctx.model_path, d->model_path),
          "-m demo resolves to the demo's files");
    CHECK(a.gen.width == d->width && a.gen.height == d->height && a.gen.steps == d->steps &&
              a.gen.cfg_scale == d->cfg_scale && a.gen.sampling_method &&
              !strcmp(a.gen.sampling_method, d->sampling_method),
          "-m demo sets the demo's settings (%dx%d, %d steps)", a.gen.width, a.gen.height,
          a.gen.steps);
    sdc_cli_args_free(&a);
    CHECK(sdc_cli_parse(&a, SDC_CLI_PROGRAM_SDC, 13, argv2) == SDC_CLI_PARSE_RUN, "parse: %s",
          a.error);
    CHECK(a.gen.width == 128 && a.gen.height == d->height && a.gen.steps == 3 &&
              a.gen.cfg_scale == 2.0f && !strcmp(a.gen.sampling_method, "heun"),
          "given flags win over the demo's settings");
    sdc_cli_args_free(&a);
    printf("cli: -m demo -> %s, %dx%d, %d steps, cfg %.1f, %s\n",
           pair ? d->diffusion_model_path : d->model_path, d->width, d->height, d->steps,
           d->cfg_scale, d->sampling_method);
}

int main(void) {
    sdc_demo_model d;
    if (sdc_demo_model_find("demo", &d) != SDC_OK) {
        printf("skipped: %s\n", sdc_last_error());
        return 77;
    }
    printf("demo model in %s: %dx%d, %d steps, cfg %.1f, %s\n", d.dir, d.width, d.height, d.steps,
           d.cfg_scale, d.sampling_method ? d.sampling_method : "default sampler");
    test_cli(&d);
    g_n = demo_pick_specs(true, N_PROMPTS, g_specs);
    CHECK(g_n == N_PROMPTS && g_n <= demo_split_specs(true, NULL, 0), "%d prompts", g_n);
    size_t img_bytes = SIDE * SIDE * 3;
    uint8_t *f16 = malloc(g_n * img_bytes), *other = malloc(g_n * img_bytes);
    demo_tally t16, tq;

    /* 1. the shipped files through -m demo */
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = "demo";
    if (!run_set("shipped (-m demo)", &cp, &d, g_n, f16, &t16)) goto done;
    printf("shape colour + background + shape right for %.1f%% of %d held-back prompts "
           "(bar %.0f%%)\n",
           demo_tally_percent(&t16, 5), g_n, MIN_CSB);
    CHECK(demo_tally_percent(&t16, 5) >= MIN_CSB, "the shipped model scores %.1f%% (bar %.0f%%)",
          demo_tally_percent(&t16, 5), MIN_CSB);

    /* 2. the same weights as GGUF (types kept): the same pictures. A shipped GGUF is that
     * file; else one converted here. */
    char gguf[1400];
    snprintf(gguf, sizeof gguf, "%s/test_demo_quality.gguf", SDC_BINARY_DIR);
    int max_diff = 0;
    bool shipped_gguf = d.model_path[0] && d.diffusion_model_path[0];
    if (shipped_gguf) snprintf(gguf, sizeof gguf, "%s", d.model_path);
    bool have = shipped_gguf || convert_to(&d, -1, gguf);
    if (have) {
        sdc_context_params_init(&cp);
        cp.model_path = gguf;
        if (run_set("GGUF, stored types", &cp, &d, N_GGUF, other, &tq)) {
            double p = psnr(f16, other, N_GGUF * img_bytes, &max_diff);
            printf("GGUF vs safetensors over %d pictures: max |diff| %d/255, PSNR %.1f dB\n",
                   N_GGUF, max_diff, p);
            CHECK(max_diff == 0, "the GGUF's pictures differ from the safetensors' (max %d/255)",
                  max_diff);
        }
    }

    /* 3. q8_0 within 2 points of F16 (the demo's table of types: docs/quantization.md) */
    snprintf(gguf, sizeof gguf, "%s/test_demo_quality_q8_0.gguf", SDC_BINARY_DIR);
    if (convert_to(&d, SDC_TYPE_Q8_0, gguf)) {
        sdc_context_params_init(&cp);
        cp.model_path = gguf;
        if (run_set("q8_0", &cp, &d, g_n, other, &tq)) {
            double p = psnr(f16, other, g_n * img_bytes, &max_diff);
            double gap = demo_tally_percent(&t16, 5) - demo_tally_percent(&tq, 5);
            printf("q8_0 vs F16: PSNR %.1f dB (max |diff| %d/255), csb %.1f%% vs %.1f%%\n", p,
                   max_diff, demo_tally_percent(&tq, 5), demo_tally_percent(&t16, 5));
            CHECK(gap <= 2.0, "q8_0 scores %.1f points below F16", gap);
        }
        remove(gguf);
    }
done:
    snprintf(gguf, sizeof gguf, "%s/test_demo_quality.gguf", SDC_BINARY_DIR);
    remove(gguf);
    free(f16);
    free(other);
    TEST_MAIN_END();
}
