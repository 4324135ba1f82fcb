/* SD inpainting end to end through the public API against sd.cpp's own PNGs
 * (tests/data/sd_inpaint: sd-cli 97d29908 on reduced random-weight checkpoints that
 * tests/golden/make_sd_reduced.py regenerates bit for bit, kinds sd1, sd1inpaint,
 * sd2inpaint, sdxlinpaint: full text encoders and VAE, narrow UNet). The 9-channel SD1
 * inpainting UNet with init image + mask at strength 0.75 and 1, without a mask and
 * without any image (sd.cpp's default mask and zero latent); the SD2 and SDXL inpainting
 * UNets once each; the plain 4-channel SD1 UNet with a mask (sd.cpp's x0 blend). The
 * checkpoints (SD1 0.49 GB each, SD2 / SDXL 0.95 / 1.9 GB) are looked for in
 * $SDC_SD_REDUCED_DIR or <build>/sd_reduced and generated there with python3 + numpy when
 * missing; without them the comparisons are skipped. Every image must be within 3/255 per
 * pixel and channel. Bad inputs (mask of another size, mask without init image) must be
 * refused with a message saying so. */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/image.h"
#include "sdc.h"
#include "sdcpp_png.h"
#include "test_util.h"

#define DATA SDC_SOURCE_DIR "/tests/data/sd_inpaint"

static sdc_context *open_ctx(const char *model) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "%s: context: %s", model, sdc_last_error());
    return ctx;
}

static bool load_png(const char *name, sdc_image *img) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", DATA, name);
    sdc_status s = sdc_image_load(path, img);
    CHECK(s == SDC_OK, "load %s: %s", path, sdc_last_error());
    return s == SDC_OK;
}

/* All runs of one model kind in one context; returns how many were compared. */
static int run_kind(sdc_context *ctx, const cJSON *runs, const char *kind, const sdc_image *init,
                    const sdc_image *mask) {
    int compared = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) {
        const char *id = jstr(run, "id");
        if (strcmp(jstr(run, "model"), kind) || jnum(run, "rc") != 0) continue;
        sdc_generate_params p;
        sdcpp_params_from_run(run, &p);
        p.scheduler = jstr(run, "scheduler");
        p.rng = jstr(run, "rng");
        p.strength = (float)jnum(run, "strength");
        p.init_image = *jstr(run, "init") ? init : NULL;
        p.mask_image = *jstr(run, "mask") ? mask : NULL;
        sdc_image *img = NULL;
        int n = 0;
        sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
        CHECK(s == SDC_OK && n == 1, "%s: generate: %s", id, sdc_last_error());
        if (s == SDC_OK) {
            char png[512];
            snprintf(png, sizeof png, "%s/png/%s.png", DATA, id);
            printf("%s (%s, init %s, mask %s, strength %g): ", id, kind,
                   p.init_image ? "yes" : "no", p.mask_image ? "yes" : "no", (double)p.strength);
            compare(id, img, png, 3, 0);
            compared++;
        }
        sdc_free_images(img, n);
    }
    return compared;
}

/* Refused inputs: the message must say what is wrong. */
static void bad_inputs(sdc_context *ctx, const sdc_image *init, const sdc_image *mask) {
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a lovely cat";
    p.width = p.height = 128;
    p.steps = 2;
    sdc_image *img = NULL;
    int n = 0;
    uint8_t small_px[64 * 64 * 3] = {0};
    sdc_image small = {64, 64, 3, small_px, 0};
    p.init_image = init;
    p.mask_image = &small;
    sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
    printf("mask 64x64 for a 128x128 image: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "mask image is 64x64") &&
              strstr(sdc_last_error(), "sizes must match"),
          "a mask of another size is refused: %s", sdc_last_error());
    p.init_image = NULL;
    p.mask_image = mask;
    s = sdc_generate_image(ctx, &p, &img, &n);
    printf("mask without init image: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), "mask needs an init image"),
          "a mask without an init image is refused: %s", sdc_last_error());
    CHECK(n == 0 && !img, "nothing returned for refused inputs");
}

int main(void) {
#ifdef SDC_SANITIZED
    printf("SKIP: the SD1 inpainting runs (full CLIP and VAE) are too slow under the sanitizers\n");
    return 77;
#endif
    char *text = (char *)t_read_file(DATA "/runs.json", NULL);
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *root = cJSON_Parse(text);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    sdc_image init = {0}, mask = {0};
    if (!load_png("init.png", &init) || !load_png("mask.png", &mask)) TEST_MAIN_END();
    static const struct {
        const char *kind, *file;
    } kinds[] = {{"sd1inpaint", "sd1inpaint_reduced_1109.safetensors"},
                 {"sd1", "sd1_reduced_1101.safetensors"},
                 {"sd2inpaint", "sd2inpaint_reduced_2009.safetensors"},
                 {"sdxlinpaint", "sdxlinpaint_reduced_3009.safetensors"}};
    int compared = 0, expected = cJSON_GetArraySize(runs), have = 0;
    for (int k = 0; k < 4; k++) {
        char model[1024];
        if (!sdcpp_reduced_checkpoint(kinds[k].kind, kinds[k].file, model, sizeof model)) continue;
        have++;
        sdc_context *ctx = open_ctx(model);
        if (!ctx) continue;
        compared += run_kind(ctx, runs, kinds[k].kind, &init, &mask);
        if (k == 0) bad_inputs(ctx, &init, &mask);
        sdc_context_free(ctx);
    }
    sdc_image_free(&init);
    sdc_image_free(&mask);
    cJSON_Delete(root);
    free(text);
    if (!have) {
        printf("SKIP: no checkpoint could be found or generated\n");
        return 77;
    }
    if (have == 4) CHECK(compared == expected, "compared %d of %d runs", compared, expected);
    TEST_MAIN_END();
}
