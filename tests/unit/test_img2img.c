/* img2img and inpainting through the public API on the golden tiny MiniT2I:
 * strength 1 equals text-to-image; an all-black mask keeps the init image exactly; a half
 * mask keeps exactly the black half and changes the other; bad inputs are refused. */
#include "sdc.h"
#include "test_util.h"

static sdc_context *ctx;

static sdc_image *gen(sdc_generate_params *p) {
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = sdc_generate_image(ctx, p, &img, &n);
    CHECK(s == SDC_OK && n == 1, "generate: %s", sdc_last_error());
    return s == SDC_OK ? img : NULL;
}

static long count_diff(const sdc_image *a, const sdc_image *b, int x0, int x1) {
    long d = 0;
    for (uint32_t y = 0; y < a->height; y++)
        for (int x = x0; x < x1; x++)
            for (int c = 0; c < 3; c++) {
                size_t i = ((size_t)y * a->width + (size_t)x) * 3 + (size_t)c;
                d += a->data[i] != b->data[i];
            }
    return d;
}

int main(void) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = GOLDEN("minit2i/minit2i_a_dit_f32.safetensors");
    cp.t5xxl_path = GOLDEN("minit2i/minit2i_a_t5_f32.safetensors");
    cp.t5_tokenizer_path = GOLDEN("tokenizer/tokenizer.json");
    cp.n_threads = 2;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) TEST_MAIN_END();
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a cat";
    p.width = p.height = 64;
    p.steps = 4;
    p.cfg_scale = 6;
    p.seed = 3;
    p.rng = "cpu";
    sdc_image *base = gen(&p); /* text-to-image */
    p.seed = 9;
    sdc_image *init = gen(&p); /* another picture to start from */
    if (!base || !init) TEST_MAIN_END();

    p.seed = 3;
    p.init_image = init;
    p.strength = 1.0f;
    sdc_image *s1 = gen(&p);
    long d = s1 ? count_diff(s1, base, 0, 64) : -1;
    printf("img2img strength 1 vs text-to-image: %ld values differ\n", d);
    CHECK(d == 0, "strength 1 must equal text-to-image (%ld differ)", d);

    p.strength = 0.5f;
    sdc_image *s5 = gen(&p);
    d = s5 ? count_diff(s5, init, 0, 64) : -1;
    long d2 = s5 ? count_diff(s5, base, 0, 64) : -1;
    printf("img2img strength 0.5: %ld values differ from the init image, %ld from txt2img\n", d,
           d2);
    CHECK(d > 0 && d2 > 0, "strength 0.5 gives a new picture");

    /* masks: black keeps, white regenerates */
    uint8_t *mdata = calloc(64 * 64 * 3, 1);
    sdc_image mask = {64, 64, 3, mdata, 0};
    p.mask_image = &mask;
    p.strength = 1.0f;
    sdc_image *k = gen(&p);
    d = k ? count_diff(k, init, 0, 64) : -1;
    printf("all-black mask: %ld values differ from the init image\n", d);
    CHECK(d == 0, "an all-black mask keeps the init image (%ld differ)", d);
    for (int y = 0; y < 64; y++)
        for (int x = 32; x < 64; x++) memset(mdata + ((size_t)y * 64 + (size_t)x) * 3, 255, 3);
    sdc_image *h = gen(&p);
    long left = h ? count_diff(h, init, 0, 32) : -1, right = h ? count_diff(h, init, 32, 64) : -1;
    printf("half mask: left (kept) %ld values differ, right (regenerated) %ld differ\n", left,
           right);
    CHECK(left == 0 && right > 1000, "half mask keeps the left half only");

    /* refused inputs */
    sdc_image small = {32, 32, 3, mdata, 0};
    p.mask_image = NULL;
    p.init_image = &small;
    sdc_image *bad = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG &&
              strstr(sdc_last_error(), "sizes must match"),
          "init image of another size refused: %s", sdc_last_error());
    p.init_image = init;
    p.strength = 0.0f;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG, "strength 0 refused");
    p.init_image = NULL;
    p.mask_image = &mask;
    p.strength = 0.5f;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG,
          "mask without init refused");

    free(mdata);
    sdc_free_images(base, 1), sdc_free_images(init, 1), sdc_free_images(s1, 1);
    sdc_free_images(s5, 1), sdc_free_images(k, 1), sdc_free_images(h, 1);
    sdc_context_free(ctx);
    TEST_MAIN_END();
}
