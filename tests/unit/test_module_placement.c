/* Module placement end to end on the golden tiny MiniT2I: the text encoder and the
 * diffusion model on two CPU devices, and weights kept on disk between phases, give
 * the same image bit for bit as one device with everything resident. */
#include <string.h>

#include "sdc.h"
#include "gen_common.h"
#include "test_util.h"

typedef struct variant {
    const char *label;
    int cpu_devices;
    const char *backend, *params_backend;
    int weight_type;
    const char *expect_log; /* a line the load must log (the placement really applied) */
} variant;

static sdc_image *generate(const variant *v) {
    CHECK(sdc_set_cpu_devices(v->cpu_devices) == SDC_OK, "%s: cpu devices: %s", v->label,
          sdc_last_error());
    sdc_context_params cp;
    t_golden_context_params(&cp);
    cp.backend = v->backend;
    cp.params_backend = v->params_backend;
    cp.weight_type = v->weight_type;
    sdc_context *ctx = NULL;
    g_log[0] = '\0';
    sdc_status s = sdc_context_create(&cp, &ctx);
    CHECK(s == SDC_OK, "%s: context: %s", v->label, sdc_last_error());
    if (v->expect_log)
        CHECK(strstr(g_log, v->expect_log) ||
                  (ctx && strstr(sdc_context_describe(ctx), v->expect_log)),
              "%s: the load logs or describes '%s' (log: %s; described: %s)", v->label,
              v->expect_log, g_log, ctx ? sdc_context_describe(ctx) : "");
    if (s != SDC_OK) return NULL;
    sdc_generate_params p;
    t_lighthouse_params(&p, 64, 48, 4, 2);
    p.sampling_method = "heun";
    sdc_image *img = NULL;
    int n = 0;
    s = sdc_generate_image(ctx, &p, &img, &n);
    CHECK(s == SDC_OK && n == 2, "%s: generate: %s", v->label, sdc_last_error());
    sdc_context_free(ctx);
    return s == SDC_OK ? img : NULL;
}

static void compare(const variant *v, const sdc_image *ref, const sdc_image *got) {
    if (!ref || !got) return;
    long diff = 0;
    for (int b = 0; b < 2; b++)
        for (size_t i = 0; i < (size_t)64 * 48 * 3; i++) diff += ref[b].data[i] != got[b].data[i];
    printf("%-40s %ld of %d values differ from one device\n", v->label, diff, 2 * 64 * 48 * 3);
    CHECK(diff == 0, "%s: %ld values differ", v->label, diff);
}

int main(void) {
    sdc_set_log_callback(capture, NULL);
    sdc_set_log_level(SDC_LOG_INFO);
    const variant one = {"one device, resident", 1, NULL, "te=cpu,diffusion=cpu", -1, NULL};
    const variant cases[] = {
        {"te=cpu0,diffusion=cpu1", 2, "te=cpu0,diffusion=cpu1", NULL, -1,
         "; te=cpu0 diffusion=cpu1"},
        {"diffusion=cpu0,te=cpu1,vae=cpu1", 2, "diffusion=cpu0,te=cpu1,vae=cpu1", NULL, -1,
         "; te=cpu1 diffusion=cpu0 vae=cpu1"},
        {"3 devices, all=cpu2", 3, "all=cpu2", NULL, -1, "te=cpu2 diffusion=cpu2 vae=cpu2"},
        {"params te=disk", 1, NULL, "te=disk", -1, "params: te=disk"},
        {"params all=disk", 1, NULL, "all=disk", -1, "te=disk"},
    };
    sdc_image *ref = generate(&one);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sdc_image *got = generate(&cases[i]);
        compare(&cases[i], ref, got);
        sdc_free_images(got, 2);
    }
    /* converted on load (--type q8_0): resident vs kept in the spill file */
    const variant q8 = {"q8_0 resident", 1, NULL, "te=cpu,diffusion=cpu", 8, "0 kept on disk"};
    const variant q8_disk = {"q8_0, params all=disk (spill file)",
                             2,
                             "te=cpu1,diffusion=cpu0",
                             "all=disk",
                             8,
                             "36 kept on disk"};
    sdc_image *rq = generate(&q8), *gq = generate(&q8_disk);
    compare(&q8_disk, rq, gq);
    sdc_free_images(rq, 2);
    sdc_free_images(gq, 2);

    /* bad placements are refused with the bad piece named */
    sdc_set_cpu_devices(2);
    sdc_context_params cp;
    t_golden_context_params(&cp);
    cp.backend = "diffusion=cpu7";
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    printf("--backend diffusion=cpu7: %s\n", sdc_last_error());
    CHECK(s != SDC_OK && !ctx && strstr(sdc_last_error(), "cpu7"), "unknown device refused");
    cp.backend = "diffusion=cpu0&cpu1";
    s = sdc_context_create(&cp, &ctx);
    CHECK(s == SDC_OK && ctx, "a split module loads (tests/unit/test_split_run.c runs it): %s",
          sdc_last_error());
    sdc_context_free(ctx);
    sdc_set_cpu_devices(1);
    sdc_set_log_callback(NULL, NULL);
    sdc_free_images(ref, 2);
    TEST_MAIN_END();
}
