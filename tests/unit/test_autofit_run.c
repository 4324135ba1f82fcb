/* --auto-fit end to end on the golden tiny MiniT2I over two CPU devices: budgets that let
 * everything stay resident (spread: diffusion and te on different devices), budgets that
 * force a time-share with the DiT split over both, and budgets too small for anything
 * (the CPU fallback) each give the plan worked out by hand and the same images, bit for
 * bit, as one device without auto-fit. */
#include <string.h>

#include "pipeline/context.h"
#include "sdc.h"
#include "gen_common.h"
#include "test_util.h"

enum { W = 64, H = 48, BATCH = 2, STEPS = 3 };

typedef struct variant {
    const char *label;
    int cpu_devices;
    bool auto_fit;
    const char *max_vram, *backend;
    const char *expect_plan; /* in the log and in sdc_context_describe */
    const char *expect_log;  /* a further log line (split partition, warning) */
} variant;

static sdc_image *generate(const variant *v) {
    CHECK(sdc_set_cpu_devices(v->cpu_devices) == SDC_OK, "%s: cpu devices: %s", v->label,
          sdc_last_error());
    sdc_context_params cp;
    t_golden_context_params(&cp);
    cp.max_vram = v->max_vram;
    cp.backend = v->backend;
    cp.auto_fit = v->auto_fit;
    sdc_context *ctx = NULL;
    g_log[0] = '\0';
    sdc_status s = sdc_context_create(&cp, &ctx);
    CHECK(s == SDC_OK, "%s: context: %s", v->label, sdc_last_error());
    if (s != SDC_OK) return NULL;
    if (v->expect_plan) {
        printf("%-40s describe: %s\n", v->label, sdc_context_describe(ctx));
        CHECK(strstr(sdc_context_describe(ctx), v->expect_plan), "%s: describe has '%s'", v->label,
              v->expect_plan);
    }
    sdc_generate_params p;
    t_lighthouse_params(&p, W, H, STEPS, BATCH);
    sdc_image *img = NULL;
    int n = 0;
    s = sdc_generate_image(ctx, &p, &img, &n);
    CHECK(s == SDC_OK && n == BATCH, "%s: generate: %s", v->label, sdc_last_error());
    if (v->expect_plan)
        CHECK(strstr(g_log, v->expect_plan), "%s: the log has '%s' (log: %s)", v->label,
              v->expect_plan, g_log);
    if (v->expect_log)
        CHECK(strstr(g_log, v->expect_log), "%s: the log has '%s' (log: %s)", v->label,
              v->expect_log, g_log);
    sdc_context_free(ctx);
    return s == SDC_OK ? img : NULL;
}

int main(void) {
    sdc_set_log_callback(capture, NULL);
    sdc_set_log_level(SDC_LOG_INFO);
    const variant one = {"one device, no auto-fit", 1, false, NULL, NULL, NULL, NULL};
    sdc_image *ref = generate(&one);
    /* weights as stored (f32): DiT 4.59 MiB, T5 1.74 MiB; reserves a quarter of each (1.15,
     * 0.43 MiB); a CPU device without a budget has half the RAM minus 512 MiB.
     * - no budgets: resident, DiT (largest) to cpu0 (tie), T5 to cpu1 (more room left);
     * - 0.0055 GiB = 5.63 MiB each: the DiT needs 4.59 + 1.15 = 5.74 > 5.63, so time-share;
     *   split room (5.63 - 1.15) x 2 = 8.96 >= 4.59: DiT over cpu0&cpu1; T5 1.74 + 0.43 fits
     *   on either, the first of two equal: cpu0; both disk;
     * - 0.001 GiB = 1.02 MiB each: nothing fits, not even split (2 x (1.02 - 1.15) < 0):
     *   everything on the CPU fallback cpu0, with a warning. */
    const variant cases[] = {
        {"auto-fit, 2 devices, no budgets", 2, true, NULL, NULL,
         "auto-fit plan (resident): te=cpu1 (1.74 MiB) diffusion=cpu0 (4.59 MiB)", NULL},
        {"auto-fit, 2 x 5.63 MiB", 2, true, "cpu0=0.0055,cpu1=0.0055", NULL,
         "te=cpu0 (1.74 MiB, disk) diffusion=cpu0&cpu1 (4.59 MiB, disk)",
         "diffusion: block 0 on cpu0, block 1 on cpu1; 2 cuts"},
        {"auto-fit, 2 x 1.02 MiB", 2, true, "0.001", NULL,
         "te=cpu0 (1.74 MiB) diffusion=cpu0 (4.59 MiB); warning: 2 component(s) fit no device",
         NULL},
        {"auto-fit ignores --backend", 2, true, NULL, "all=cpu1",
         "auto-fit plan (resident): te=cpu1 (1.74 MiB) diffusion=cpu0 (4.59 MiB)",
         "--auto-fit is on: --backend, --params-backend"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sdc_image *got = generate(&cases[i]);
        if (!ref || !got) {
            sdc_free_images(got, BATCH);
            continue;
        }
        long diff = 0;
        for (int b = 0; b < BATCH; b++)
            for (size_t k = 0; k < (size_t)W * H * 3; k++) diff += ref[b].data[k] != got[b].data[k];
        printf("%-40s %ld of %d values differ from one device\n", cases[i].label, diff,
               BATCH * W * H * 3);
        CHECK(diff == 0, "%s: %ld values differ", cases[i].label, diff);
        sdc_free_images(got, BATCH);
    }
    sdc_free_images(ref, BATCH);
    sdc_set_cpu_devices(1);
    TEST_MAIN_END();
}
