/* Progress, latent and preview callbacks of sdc_generate_image on the golden tiny
 * MiniT2I: how often each is called, with which steps, and that the last preview (the
 * final x0 prediction) is the generated image up to float rounding. */
#include <stdlib.h>
#include <string.h>

#include "sdc.h"
#include "gen_common.h"
#include "test_util.h"

typedef struct seen {
    int progress, latent, preview;
    int last_latent_step, preview_steps[16];
    sdc_image last_preview;
} seen;

static void on_progress(int step, int steps, double secs, void *user) {
    seen *s = user;
    CHECK(step == s->progress + 1 && steps == 6 && secs >= 0, "progress step %d of %d", step,
          steps);
    s->progress++;
}

static void on_latent(int step, int steps, const float *x, int c, int w, int h, void *user) {
    seen *s = user;
    CHECK(step == s->latent && steps == 6 && c == 3 && w == 32 && h == 32 && x,
          "latent step %d of %d, %dx%dx%d", step, steps, c, w, h);
    s->latent++;
    s->last_latent_step = step;
}

static void on_preview(int step, int steps, const sdc_image *img, void *user) {
    seen *s = user;
    CHECK(img && img->width == 32 && img->height == 32 && img->channels == 3 && img->data,
          "preview image at step %d", step);
    if (s->preview < 16) s->preview_steps[s->preview] = step;
    s->preview++;
    free(s->last_preview.data);
    s->last_preview = *img;
    s->last_preview.data = malloc((size_t)32 * 32 * 3);
    memcpy(s->last_preview.data, img->data, (size_t)32 * 32 * 3);
    (void)steps;
}

int main(void) {
    sdc_context_params cp;
    t_golden_context_params(&cp);
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) TEST_MAIN_END();
    seen s = {0};
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a boat";
    p.width = p.height = 32;
    p.steps = 6;
    p.cfg_scale = 4;
    p.rng = "cpu";
    p.sampling_method = "euler";
    p.progress = on_progress;
    p.progress_user = &s;
    p.latent = on_latent;
    p.latent_user = &s;
    p.preview = on_preview;
    p.preview_user = &s;
    p.preview_interval = 4;
    sdc_image *img = NULL;
    int n = 0;
    CHECK(sdc_generate_image(ctx, &p, &img, &n) == SDC_OK && n == 1, "generate: %s",
          sdc_last_error());
    printf("progress %d, latent %d (last step %d), preview %d (steps %d, %d)\n", s.progress,
           s.latent, s.last_latent_step, s.preview, s.preview_steps[0], s.preview_steps[1]);
    CHECK(s.progress == 6, "6 progress calls");
    CHECK(s.latent == 7 && s.last_latent_step == 6, "latent: step 0 and after each step");
    CHECK(s.preview == 2 && s.preview_steps[0] == 4 && s.preview_steps[1] == 6,
          "preview every 4 steps and at the last");
    if (img && s.last_preview.data) {
        int worst = 0;
        for (size_t i = 0; i < (size_t)32 * 32 * 3; i++) {
            int d = abs((int)img->data[i] - (int)s.last_preview.data[i]);
            if (d > worst) worst = d;
        }
        printf("last preview vs image: max %d/255\n", worst);
        CHECK(worst <= 1, "the last preview is the image (max diff %d)", worst);
    }
    free(s.last_preview.data);
    sdc_free_images(img, n);
    sdc_context_free(ctx);
    TEST_MAIN_END();
}
