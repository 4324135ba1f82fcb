/* End to end through the public API against sd.cpp's own PNGs (../shared/golden/minit2i/png,
 * made by sd-cli at commit 97d29908 with the set-A tiny models). sd.cpp tokenises without
 * normalisation or </s>; tokenizer_sdcpp_compat.json reproduces that for plain prompts, so
 * runs with an empty prompt are skipped here (their ids are covered by the tokenizer tests).
 * Tolerances, from the errors measured with every CPU kernel set (SDC_CPU_ISA = scalar, avx,
 * avx2, avx512): F32 weights max 1/255 (measured 1: the float error, about 7e-4 in x after
 * 10 steps, is a tenth of a u8 step, so 2/255 would need 10x that) and mean |diff| 0.05
 * (measured <= 0.017, 3x); F16 weights max 4/255 (measured 3) and mean |diff| 0.5 (measured
 * <= 0.358: ggml's f16 activation rounding is the floor of an independent implementation,
 * golden minit2i/README.md). */
#include <cjson/cJSON.h>

#include "io/image.h"
#include "sdc.h"
#include "test_util.h"

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = 0;
    fclose(f);
    return buf;
}

static const char *jstr(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : "";
}
static double jnum(const cJSON *o, const char *k) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

int main(void) {
    char *text = read_file(GOLDEN("minit2i/runs.json"));
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *runs = cJSON_Parse(text);
    sdc_context *ctx[2] = {NULL, NULL}; /* f32, f16 */
    const char *wnames[2] = {"f32", "f16"};
    for (int w = 0; w < 2; w++) {
        char dit[512], t5[512];
        snprintf(dit, sizeof dit, "%s/minit2i/minit2i_a_dit_%s.safetensors", SDC_GOLDEN_DIR,
                 wnames[w]);
        snprintf(t5, sizeof t5, "%s/minit2i/minit2i_a_t5_%s.safetensors", SDC_GOLDEN_DIR,
                 wnames[w]);
        sdc_context_params cp;
        sdc_context_params_init(&cp);
        cp.diffusion_model_path = dit;
        cp.t5xxl_path = t5;
        cp.t5_tokenizer_path = GOLDEN("minit2i/tokenizer_sdcpp_compat.json");
        cp.n_threads = 2;
        CHECK(sdc_context_create(&cp, &ctx[w]) == SDC_OK, "context %s: %s", wnames[w],
              sdc_last_error());
    }
    const cJSON *run;
    int compared = 0;
    cJSON_ArrayForEach(run, runs) {
        const char *id = jstr(run, "id"), *prompt = jstr(run, "prompt");
        if (!*prompt || jnum(run, "rc") != 0) continue;
        int w = !strcmp(jstr(run, "weights"), "f16");
        if (!ctx[w]) continue;
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        p.prompt = prompt;
        p.width = (int)jnum(run, "width");
        p.height = (int)jnum(run, "height");
        p.steps = (int)jnum(run, "steps");
        p.cfg_scale = (float)jnum(run, "cfg");
        p.seed = (int64_t)jnum(run, "seed");
        p.sampling_method = jstr(run, "sampler");
        p.rng = jstr(run, "rng");
        sdc_image *img = NULL;
        int n = 0;
        sdc_status s = sdc_generate_image(ctx[w], &p, &img, &n);
        CHECK(s == SDC_OK && n == 1, "%s: generate: %s", id, sdc_last_error());
        if (s != SDC_OK) continue;
        char png[512];
        snprintf(png, sizeof png, "%s/minit2i/%s", SDC_GOLDEN_DIR, jstr(run, "png"));
        uint8_t *ref = NULL;
        int rw = 0, rh = 0;
        CHECK(sdc_png_read(png, &ref, &rw, &rh) == SDC_OK, "read %s", png);
        if (ref && rw == (int)img->width && rh == (int)img->height) {
            int maxd = 0;
            long differ = 0, total = (long)rw * rh * 3;
            double sum = 0;
            for (long i = 0; i < total; i++) {
                int d = abs((int)img->data[i] - (int)ref[i]);
                if (d > maxd) maxd = d;
                differ += d != 0;
                sum += d;
            }
            int tol = w ? 4 : 1;
            double mean = sum / total, mean_tol = w ? 0.5 : 0.05;
            printf(
                "%s %-30s %3dx%-3d %-8s %-4s %s: max |diff| %d/255 (tolerance %d), %.2f%% differ, "
                "mean %.3f (tolerance %.2f)\n",
                id, prompt, rw, rh, p.sampling_method, p.rng, wnames[w], maxd, tol,
                100.0 * differ / total, mean, mean_tol);
            CHECK(maxd <= tol, "%s: max pixel difference %d > %d", id, maxd, tol);
            CHECK(mean <= mean_tol, "%s: mean pixel difference %.3f > %.2f", id, mean, mean_tol);
            compared++;
        } else {
            CHECK(0, "%s: size mismatch", id);
        }
        free(ref);
        sdc_free_images(img, n);
    }
    CHECK(compared >= 10, "compared %d runs", compared);
    sdc_context_free(ctx[0]);
    sdc_context_free(ctx[1]);
    cJSON_Delete(runs);
    free(text);
    TEST_MAIN_END();
}
