/* SD 2.x and SDXL end to end through the public API against sd.cpp's own PNGs
 * (tests/data/sd_reduced: sd-cli 97d29908 on random-weight checkpoints that
 * tests/golden/make_sd_reduced.py regenerates bit for bit: full-size text encoders, narrow
 * UNet and VAE). The checkpoints (0.8 / 1.7 GB) are not stored: the test looks for them in
 * $SDC_SD_REDUCED_DIR or <build>/sd_reduced and generates them there with python3 + numpy
 * when missing; without them it is skipped. Every case must be within 3/255 per pixel and
 * channel (the bar). Cases without --prediction also check that the SD2 v probe
 * decides as sd.cpp did (eps vs v gives entirely different images). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image.h"
#include "sdc.h"
#include "sdcpp_png.h"
#include "test_util.h"

/* The checkpoint of one kind ("sd2", "sdxl"): found or generated; false if neither. */
static bool checkpoint(const char *kind, const char *file, char *path, size_t n) {
    const char *dir = getenv("SDC_SD_REDUCED_DIR");
    char def[512];
    snprintf(def, sizeof def, "%s/sd_reduced", SDC_BINARY_DIR);
    if (!dir) dir = def;
    snprintf(path, n, "%s/%s", dir, file);
    struct stat st;
    if (stat(path, &st) == 0) return true;
    char cmd[8192];
    snprintf(cmd, sizeof cmd,
             "mkdir -p '%s' && python3 '%s/tests/golden/make_sd_reduced.py' %s '%s.part' "
             ">/dev/null && mv '%s.part' '%s'",
             dir, SDC_SOURCE_DIR, kind, path, path, path); /* never a half-written file */
    printf("generating %s: %s\n", path, cmd);
    fflush(stdout);
    if (system(cmd) != 0 || stat(path, &st) != 0) {
        printf("could not generate %s (needs python3 with numpy)\n", path);
        return false;
    }
    return true;
}

/* All runs of one (model, prediction) group in one context. */
static int run_group(const cJSON *runs, const char *kind, const char *model, const char *pred) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.n_threads = 2;
    cp.prediction = *pred ? pred : NULL;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "%s context: %s", kind, sdc_last_error());
    if (!ctx) return 0;
    int compared = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) {
        const char *id = jstr(run, "id");
        if (strcmp(jstr(run, "model"), kind) || strcmp(jstr(run, "prediction"), pred) ||
            jnum(run, "rc") != 0)
            continue;
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        p.prompt = jstr(run, "prompt");
        p.negative_prompt = jstr(run, "negative_prompt");
        p.width = (int)jnum(run, "W");
        p.height = (int)jnum(run, "H");
        p.steps = (int)jnum(run, "steps");
        p.cfg_scale = (float)jnum(run, "cfg");
        p.seed = (int64_t)jnum(run, "seed");
        p.sampling_method = jstr(run, "sampler");
        p.scheduler = jstr(run, "scheduler");
        p.rng = jstr(run, "rng");
        sdc_image *img = NULL;
        int n = 0;
        sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
        CHECK(s == SDC_OK && n == 1, "%s: generate: %s", id, sdc_last_error());
        if (s == SDC_OK) {
            char png[512];
            snprintf(png, sizeof png, "%s/tests/data/sd_reduced/png/%s.png", SDC_SOURCE_DIR, id);
            printf("%s (%s, prediction %s, sd.cpp ran in %s mode): ", id, kind,
                   *pred ? pred : "auto", jstr(run, "sdcpp_mode"));
            int tol = jnum(run, "max_tol") > 0 ? (int)jnum(run, "max_tol") : 3;
            if (tol != 3) printf("(known gap: %s) ", jstr(run, "tol_note"));
            compare(id, img, png, tol, jnum(run, "mean_tol"));
            compared++;
        }
        sdc_free_images(img, n);
    }
    sdc_context_free(ctx);
    return compared;
}

int main(void) {
#ifdef SDC_SANITIZED
    printf("SKIP: SD2/SDXL runs with full-size text encoders are too slow under the sanitizers\n");
    return 77;
#endif
    char *text = (char *)t_read_file(SDC_SOURCE_DIR "/tests/data/sd_reduced/runs.json", NULL);
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *root = cJSON_Parse(text);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    static const struct {
        const char *kind, *file;
    } kinds[] = {{"sd2", "sd2_reduced_2002.safetensors"},
                 {"sdxl", "sdxl_reduced_3003.safetensors"}};
    int compared = 0, expected = cJSON_GetArraySize(runs), have = 0;
    for (int k = 0; k < 2; k++) {
        char model[1024];
        if (!checkpoint(kinds[k].kind, kinds[k].file, model, sizeof model)) continue;
        have++;
        /* one context per --prediction value the runs use */
        const char *preds[8];
        int n_preds = 0;
        const cJSON *run;
        cJSON_ArrayForEach(run, runs) {
            if (strcmp(jstr(run, "model"), kinds[k].kind)) continue;
            const char *pr = jstr(run, "prediction");
            bool seen = false;
            for (int i = 0; i < n_preds; i++) seen |= !strcmp(preds[i], pr);
            if (!seen && n_preds < 8) preds[n_preds++] = pr;
        }
        for (int i = 0; i < n_preds; i++)
            compared += run_group(runs, kinds[k].kind, model, preds[i]);
    }
    if (!have) {
        printf("SKIP: no checkpoint could be found or generated\n");
        cJSON_Delete(root);
        free(text);
        return 77;
    }
    if (have == 2) CHECK(compared == expected, "compared %d of %d runs", compared, expected);
    cJSON_Delete(root);
    free(text);
    TEST_MAIN_END();
}
