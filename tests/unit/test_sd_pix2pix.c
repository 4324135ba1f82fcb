/* InstructPix2Pix (8-channel SD 1.x UNet, the image to edit given with -r) and
 * --img-cfg-scale end to end through the public API against diffusers'
 * StableDiffusionInstructPix2PixPipeline (tests/golden/gen_sd_pix2pix_ref.py, PNGs in
 * tests/data/sd_pix2pix) on the reduced random checkpoint that
 * tests/golden/make_sd_reduced.py sd1pix2pix makes (found or generated as the sd.cpp
 * comparisons do; skipped without it). Cases: image guidance 1.5 (three passes), not given
 * (sd.cpp: 1, two passes), equal to the text guidance (two passes, the other pair) and
 * another pair (3, 2). Every image within 3/255 per pixel and channel; the image-unconditional
 * pass must matter (1.5 against the unset reference differs by more). Refused: no -r. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/image.h"
#include "sdc.h"
#include "sdcpp_png.h"
#include "test_util.h"

#define DATA SDC_SOURCE_DIR "/tests/data/sd_pix2pix"

static sdc_image *run(sdc_context *ctx, const sdc_image *ref, float cfg, float img_cfg) {
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "turn the cat into a painting";
    p.negative_prompt = "";
    p.width = p.height = 128;
    p.steps = 4;
    p.sampling_method = "euler";
    p.rng = "cpu";
    p.seed = 42;
    p.cfg_scale = cfg;
    p.img_cfg_scale = img_cfg;
    p.ref_images = ref;
    p.n_ref_images = ref ? 1 : 0;
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
    CHECK((s == SDC_OK && n == 1) || !ref, "generate (cfg %g, img cfg %g): %s", (double)cfg,
          (double)img_cfg, sdc_last_error());
    return s == SDC_OK ? img : NULL;
}

int main(void) {
#ifdef SDC_SANITIZED
    printf("SKIP: the SD1 runs (full CLIP and VAE) are too slow under the sanitizers\n");
    return 77;
#endif
    char model[1024];
    if (!sdcpp_reduced_checkpoint("sd1pix2pix", "sd1pix2pix_reduced_1108.safetensors", model,
                                  sizeof model)) {
        printf("SKIP: no checkpoint could be found or generated\n");
        return 77;
    }
    sdc_image ref = {0};
    CHECK(sdc_image_load(DATA "/ref.png", &ref) == SDC_OK, "ref.png: %s", sdc_last_error());
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.model_path = model;
    cp.clip_tokenizer_path = GOLDEN("sd1/tokenizer/vocab.json");
    cp.n_threads = 2;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx || !ref.data) TEST_MAIN_END();
    static const struct {
        const char *id;
        float cfg, img_cfg;
    } cases[] = {{"g7_i1.5", 7.0f, 1.5f},
                 {"g7_unset", 7.0f, NAN},
                 {"g5_i5", 5.0f, 5.0f},
                 {"g3_i2", 3.0f, 2.0f}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sdc_image *img = run(ctx, &ref, cases[i].cfg, cases[i].img_cfg);
        if (!img) continue;
        char png[512];
        snprintf(png, sizeof png, "%s/%s.png", DATA, cases[i].id);
        compare(cases[i].id, img, png, 3, 0);
        if (i == 0) { /* without the third pass the image is another one */
            uint8_t *other = NULL;
            int w = 0, h = 0, maxd = 0;
            if (sdc_png_read(DATA "/g7_unset.png", &other, &w, &h) == SDC_OK)
                for (long k = 0; k < (long)w * h * 3; k++)
                    maxd =
                        abs(other[k] - img->data[k]) > maxd ? abs(other[k] - img->data[k]) : maxd;
            printf("g7_i1.5 against the img-cfg-unset reference: max |diff| %d/255\n", maxd);
            CHECK(maxd > 10, "the image-unconditional pass changes nothing (%d)", maxd);
            free(other);
        }
        sdc_free_images(img, 1);
    }
    CHECK(run(ctx, NULL, 7.0f, 1.5f) == NULL && strstr(sdc_last_error(), "-r/--ref-image"),
          "no reference image: %s", sdc_last_error());
    printf("no -r: %s\n", sdc_last_error());
    sdc_context_free(ctx);
    sdc_image_free(&ref);
    TEST_MAIN_END();
}
