/* --auto-fit plans for synthetic device lists equal the plans worked out by hand from the
 * rules in placement/autofit.h (each case's comment shows the arithmetic). */
#include <string.h>

#include "placement/autofit.h"
#include "test_util.h"

#define GiB  1073741824.0
#define G(x) ((uint64_t)((x)*GiB))

enum { CUDA0 = 10, CUDA1 = 11, CPU = 0 };

/* expected placement of one module: devices (-1 ends), params */
typedef struct want {
    sdc_module m;
    int dev[3];
    sdc_params_location params;
} want;

static void check_plan(const char *label, const sdc_autofit_component *c, int nc,
                       const sdc_autofit_device *d, int nd, bool time_share, int n_cpu,
                       const want *w, int nw) {
    sdc_autofit_plan plan;
    sdc_status s = sdc_autofit_make_plan(c, nc, d, nd, CPU, &plan);
    CHECK(s == SDC_OK, "%s: %s", label, sdc_last_error());
    printf("%-34s %s\n", label, plan.text);
    CHECK(plan.time_share == time_share, "%s: time_share %d, want %d", label, plan.time_share,
          time_share);
    CHECK(plan.n_on_cpu == n_cpu, "%s: %d on the CPU, want %d", label, plan.n_on_cpu, n_cpu);
    for (int i = 0; i < nw; i++) {
        const sdc_module_place *pl = &plan.placement.module[w[i].m];
        int n = 0;
        while (n < 3 && w[i].dev[n] >= 0) n++;
        CHECK(pl->n_devices == n, "%s: %s on %d devices, want %d", label, sdc_module_name(w[i].m),
              pl->n_devices, n);
        for (int k = 0; k < n && k < pl->n_devices; k++)
            CHECK(pl->device[k] == w[i].dev[k], "%s: %s device %d is %d, want %d", label,
                  sdc_module_name(w[i].m), k, pl->device[k], w[i].dev[k]);
        CHECK(pl->params == w[i].params, "%s: %s params %d, want %d", label,
              sdc_module_name(w[i].m), pl->params, w[i].params);
        int pdev = w[i].params == SDC_PARAMS_DISK ? -1 : w[i].dev[0];
        CHECK(pl->params_device == pdev, "%s: %s params device %d, want %d", label,
              sdc_module_name(w[i].m), pl->params_device, pdev);
    }
}

static void test_capacity(void) {
    /* no budget: free - 512 MiB; positive: the cap, never above free; negative: free - it */
    const struct {
        double free_gib, gib, want_gib;
    } t[] = {{8, 0, 7.5}, {8, 6, 6}, {8, 12, 8}, {10, -4, 6}, {2, -3, 0}, {0.25, 0, 0}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        sdc_autofit_device d = {1, "cuda0", false, G(t[i].free_gib), t[i].gib};
        uint64_t got = sdc_autofit_capacity(&d), want = G(t[i].want_gib);
        printf("capacity free %.2f GiB, --max-vram %g: %llu bytes (want %llu)\n", t[i].free_gib,
               t[i].gib, (unsigned long long)got, (unsigned long long)want);
        CHECK(got == want, "capacity %zu: %llu, want %llu", i, (unsigned long long)got,
              (unsigned long long)want);
    }
}

int main(void) {
    test_capacity();
    const sdc_autofit_device cpu = {CPU, "cpu", true, G(64), 0};
    /* 2 x 8 GiB, no budgets: 7.5 GiB each. diffusion 5 (+1 reserve) -> cuda0 (tie: first);
     * te 4 (+1): room cuda0 2.5, cuda1 7.5 -> cuda1 (needs 5); vae 0.2 (+0.5): room 2.5 vs
     * 3.5 -> cuda1 (4 + 0.2 + max(1, 0.5) = 5.2 <= 7.5). All resident. */
    {
        sdc_autofit_device d[] = {
            cpu, {CUDA0, "cuda0", false, G(8), 0}, {CUDA1, "cuda1", false, G(8), 0}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(4), G(1)},
                                     {SDC_MODULE_DIFFUSION, G(5), G(1)},
                                     {SDC_MODULE_VAE, G(0.2), G(0.5)}};
        want w[] = {{SDC_MODULE_DIFFUSION, {CUDA0, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_TE, {CUDA1, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_VAE, {CUDA1, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_CLIP_VISION, {CUDA0, -1}, SDC_PARAMS_DEVICE}};
        check_plan("2 x 8 GiB", c, 3, d, 3, false, 0, w, 4);
    }
    /* 4 GiB + CPU: 3.5 GiB. diffusion 5 (+1) fits nowhere, one GPU: no split -> cpu;
     * time-share: te 2 (+1) = 3 and vae 0.2 (+0.5) each fit alone on cuda0, disk. */
    {
        sdc_autofit_device d[] = {cpu, {CUDA0, "cuda0", false, G(4), 0}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(2), G(1)},
                                     {SDC_MODULE_DIFFUSION, G(5), G(1)},
                                     {SDC_MODULE_VAE, G(0.2), G(0.5)}};
        want w[] = {{SDC_MODULE_DIFFUSION, {CPU, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_TE, {CUDA0, -1}, SDC_PARAMS_DISK},
                    {SDC_MODULE_VAE, {CUDA0, -1}, SDC_PARAMS_DISK}};
        check_plan("4 GiB + CPU", c, 3, d, 2, true, 1, w, 3);
    }
    /* one device too small for any component: --max-vram 1 on 2 GiB free = 1 GiB; vae 0.8
     * + 0.5 > 1, so all three run on the CPU */
    {
        sdc_autofit_device d[] = {cpu, {CUDA0, "cuda0", false, G(2), 1}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(2), G(1)},
                                     {SDC_MODULE_DIFFUSION, G(5), G(1)},
                                     {SDC_MODULE_VAE, G(0.8), G(0.5)}};
        want w[] = {{SDC_MODULE_DIFFUSION, {CPU, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_TE, {CPU, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_VAE, {CPU, -1}, SDC_PARAMS_DEVICE}};
        check_plan("1 GiB: too small for any", c, 3, d, 2, true, 3, w, 3);
    }
    /* everything fits on one: 24 GiB free = 23.5; 5 + 4 + 0.2 + max reserve 1 = 10.2 */
    {
        sdc_autofit_device d[] = {cpu, {CUDA0, "cuda0", false, G(24), 0}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(4), G(1)},
                                     {SDC_MODULE_DIFFUSION, G(5), G(1)},
                                     {SDC_MODULE_VAE, G(0.2), G(0.5)}};
        want w[] = {{SDC_MODULE_DIFFUSION, {CUDA0, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_TE, {CUDA0, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_VAE, {CUDA0, -1}, SDC_PARAMS_DEVICE}};
        check_plan("24 GiB: all on one", c, 3, d, 2, false, 0, w, 3);
    }
    /* negative budgets: 10 GiB free, --max-vram -4 -> 6 each. diffusion 8 (+1) fits on
     * neither: time-share; split room (6-1) + (6-1) = 10 >= 8 -> cuda0&cuda1; te 3 (+1) on
     * the first of two equal (cuda0); vae 0.2 (+0.5) likewise; all disk */
    {
        sdc_autofit_device d[] = {
            cpu, {CUDA0, "cuda0", false, G(10), -4}, {CUDA1, "cuda1", false, G(10), -4}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(3), G(1)},
                                     {SDC_MODULE_DIFFUSION, G(8), G(1)},
                                     {SDC_MODULE_VAE, G(0.2), G(0.5)}};
        want w[] = {{SDC_MODULE_DIFFUSION, {CUDA0, CUDA1, -1}, SDC_PARAMS_DISK},
                    {SDC_MODULE_TE, {CUDA0, -1}, SDC_PARAMS_DISK},
                    {SDC_MODULE_VAE, {CUDA0, -1}, SDC_PARAMS_DISK}};
        check_plan("2 x (10 GiB - 4): split", c, 3, d, 3, true, 0, w, 3);
    }
    /* CPU devices only (--cpu-devices 2): both are targets. 3 GiB each, --max-vram 3:
     * diffusion 2.5 (+0.25) -> cpu0; te 1 (+0.25): room 0.5 vs 3 -> cpu1; absent vae -> cpu0 */
    {
        sdc_autofit_device d[] = {{0, "cpu0", true, G(32), 3}, {1, "cpu1", true, G(32), 3}};
        sdc_autofit_component c[] = {{SDC_MODULE_TE, G(1), G(0.25)},
                                     {SDC_MODULE_DIFFUSION, G(2.5), G(0.25)},
                                     {SDC_MODULE_VAE, 0, 0}};
        want w[] = {{SDC_MODULE_DIFFUSION, {0, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_TE, {1, -1}, SDC_PARAMS_DEVICE},
                    {SDC_MODULE_VAE, {0, -1}, SDC_PARAMS_DEVICE}};
        check_plan("cpu0 + cpu1, 3 GiB each", c, 3, d, 2, false, 0, w, 3);
    }
    sdc_autofit_plan plan;
    CHECK(sdc_autofit_make_plan(NULL, 0, NULL, 0, CPU, &plan) != SDC_OK, "no devices: refused");
    TEST_MAIN_END();
}
