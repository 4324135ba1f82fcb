/* --sigmas through the public API on the golden tiny MiniT2I: the list {1, 0.5, 0} gives the
 * same image as the model's own 2-step schedule; a different list a different image; bad lists
 * are refused with a message. */
#include "sdc.h"
#include "test_util.h"

int main(void) {
    sdc_context *ctx = NULL;
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
    p.cfg_scale = 6;
    p.rng = "cuda";
    p.steps = 2;
    sdc_image *a = NULL, *b = NULL, *c = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &a, &n) == SDC_OK, "2 steps: %s", sdc_last_error());
    const float same[3] = {1.0f, 0.5f, 0.0f}, other[4] = {1.0f, 0.8f, 0.3f, 0.0f};
    p.steps = 20; /* ignored: the list sets the steps */
    p.sigmas = same;
    p.n_sigmas = 3;
    CHECK(sdc_generate_image(ctx, &p, &b, &n) == SDC_OK, "custom: %s", sdc_last_error());
    p.sigmas = other;
    p.n_sigmas = 4;
    CHECK(sdc_generate_image(ctx, &p, &c, &n) == SDC_OK, "custom 2: %s", sdc_last_error());
    if (a && b && c) {
        long d_same = 0, d_other = 0;
        for (size_t i = 0; i < 64 * 64 * 3; i++) {
            d_same += a->data[i] != b->data[i];
            d_other += a->data[i] != c->data[i];
        }
        printf("sigmas {1,0.5,0} vs 2 steps: %ld values differ; {1,0.8,0.3,0}: %ld differ\n",
               d_same, d_other);
        CHECK(d_same == 0, "the model's own schedule given as a list must match");
        CHECK(d_other > 1000, "another schedule gives another image");
    }
    sdc_image *bad = NULL;
    const float one[1] = {1.0f}, zero_mid[3] = {1.0f, 0.0f, 0.0f}, neg[2] = {1.0f, -0.5f};
    p.sigmas = one;
    p.n_sigmas = 1;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG &&
              strstr(sdc_last_error(), "at least 2"),
          "a single sigma refused: %s", sdc_last_error());
    p.sigmas = zero_mid;
    p.n_sigmas = 3;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG,
          "a 0 before the end refused");
    p.sigmas = neg;
    p.n_sigmas = 2;
    CHECK(sdc_generate_image(ctx, &p, &bad, &n) == SDC_ERR_INVALID_ARG, "a negative sigma refused");
    sdc_free_images(a, 1), sdc_free_images(b, 1), sdc_free_images(c, 1);
    sdc_context_free(ctx);
    TEST_MAIN_END();
}
