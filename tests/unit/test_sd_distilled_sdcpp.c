/* SD-Turbo / SDXL-Turbo (one euler_a step at --cfg-scale 1), LCM (--sampling-method lcm) and
 * an LCM-LoRA (<lora:lcm:w>, a random LoRA in the LCM-LoRA key layout,
 * tests/golden/gen_sd_distilled_lora.py) end to end through the public API against
 * sd.cpp's own PNGs (tests/data/sd_distilled: sd-cli on the reduced random SD 2.x / SDXL
 * checkpoints of tests/golden/make_sd_reduced.py, found in $SDC_SD_REDUCED_DIR or
 * <build>/sd_reduced, generated there when missing, as test_sd2_sdxl_sdcpp does). Every run
 * within 3/255 per pixel and channel. And: at --cfg-scale 1 the negative prompt is never
 * encoded, so t02 (t01 with a negative prompt) must be t01's image bit for bit; the default
 * size is sd-cli's 512x512 (SDXL-Turbo's). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image.h"
#include "sdc.h"
#include "sdcpp_png.h"
#include "test_util.h"

/* t01's image, kept to check t02 against it */
static sdc_image *g_t01;

static int run_kind(const cJSON *runs, const char *kind, const char *model) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.lora_model_dir = SDC_SOURCE_DIR "/tests/data/sd_distilled/lora";
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "%s context: %s", kind, sdc_last_error());
    if (!ctx) return 0;
    int compared = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) {
        const char *id = jstr(run, "id");
        if (strcmp(jstr(run, "model"), kind) || jnum(run, "rc") != 0) continue;
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        p.prompt = jstr(run, "prompt");
        p.negative_prompt = jstr(run, "negative_prompt");
        if (jnum(run, "W") > 0) { /* 0: the default size, as sd-cli without -W/-H */
            p.width = (int)jnum(run, "W");
            p.height = (int)jnum(run, "H");
        }
        p.steps = (int)jnum(run, "steps");
        p.cfg_scale = (float)jnum(run, "cfg");
        p.seed = (int64_t)jnum(run, "seed");
        p.sampling_method = jstr(run, "sampler");
        p.rng = jstr(run, "rng");
        sdc_image *img = NULL;
        int n = 0;
        sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
        CHECK(s == SDC_OK && n == 1, "%s: generate: %s", id, sdc_last_error());
        if (s == SDC_OK) {
            char png[512];
            snprintf(png, sizeof png, "%s/tests/data/sd_distilled/png/%s.png", SDC_SOURCE_DIR, id);
            printf("%s (%s; %s): ", id, kind, jstr(run, "note"));
            compare(id, img, png, 3, 0);
            compared++;
            if (!strcmp(id, "t01")) {
                g_t01 = img, img = NULL, n = 0;
            } else if (!strcmp(id, "t02") && g_t01) {
                size_t bytes = (size_t)img->width * img->height * 3, same = 0;
                bool size_ok = img->width == g_t01->width && img->height == g_t01->height;
                for (size_t i = 0; size_ok && i < bytes; i++)
                    same += img->data[i] == g_t01->data[i];
                printf("t02 vs t01 (negative prompt at cfg 1): %zu of %zu bytes equal\n", same,
                       bytes);
                CHECK(size_ok && same == bytes, "t02 differs from t01: the negative prompt "
                                                "changed a cfg-1 image");
            }
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
    /* SD-Turbo and SDXL-Turbo are 512 models: without -W/-H sd-cli makes 512x512 for every
     * family (get_resolved_width), and so must the API's defaults */
    sdc_generate_params d;
    sdc_generate_params_init(&d);
    printf("default size %dx%d (sd-cli: 512x512)\n", d.width, d.height);
    CHECK(d.width == 512 && d.height == 512, "default size %dx%d", d.width, d.height);
    char *text = (char *)t_read_file(SDC_SOURCE_DIR "/tests/data/sd_distilled/runs.json", NULL);
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *root = cJSON_Parse(text);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    static const struct {
        const char *kind, *file;
    } kinds[] = {{"sd2", "sd2_reduced_2002.safetensors"},
                 {"sdxl", "sdxl_reduced_3003.safetensors"}};
    int compared = 0, expected = 0, have = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) expected += jnum(run, "rc") == 0;
    for (int k = 0; k < 2; k++) {
        char model[1024];
        if (!sdcpp_reduced_checkpoint(kinds[k].kind, kinds[k].file, model, sizeof model)) continue;
        have++;
        compared += run_kind(runs, kinds[k].kind, model);
    }
    sdc_free_images(g_t01, g_t01 ? 1 : 0);
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
