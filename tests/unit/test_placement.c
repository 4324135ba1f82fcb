/* The device registry and module placement. References: the machine itself (thread
 * count from sysconf, RAM from /proc/meminfo and the cgroup limit, read here
 * independently) and sd.cpp's docs/backend.md (module table, assignment rules,
 * shorthands), transcribed below by hand with spelling variants. */
#include <ctype.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "placement/devices.h"
#include "placement/placement.h"
#include "test_util.h"

#define GIB 1073741824.0

/* ---- independent machine facts ---- */

static int ref_threads(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

static uint64_t ref_memory(void) {
    uint64_t total = 0;
    FILE *f = fopen("/proc/meminfo", "r");
    if (f) {
        char key[64];
        unsigned long long v;
        char unit[16];
        while (fscanf(f, "%63s %llu %15s", key, &v, unit) == 3) {
            if (!strcmp(key, "MemTotal:")) {
                total = (uint64_t)v * 1024;
                break;
            }
        }
        fclose(f);
    }
    const char *cg[] = {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"};
    for (int i = 0; i < 2; i++) {
        FILE *g = fopen(cg[i], "r");
        unsigned long long lim;
        if (g && fscanf(g, "%llu", &lim) == 1 && lim && lim < total) total = (uint64_t)lim;
        if (g) fclose(g);
    }
    return total;
}

/* ---- device registry ---- */

static void test_default_device(void) {
    sdc_devices_reset();
    int T = ref_threads();
    uint64_t M = ref_memory();
    CHECK(sdc_device_count() == 1 && sdc_devices_count() == 1, "default: one device, got %d",
          sdc_device_count());
    char name[64], desc[512];
    CHECK(sdc_device_info(0, name, sizeof name, desc, sizeof desc) == SDC_OK, "info 0");
    CHECK(!strcmp(name, "cpu"), "default device name '%s', expected 'cpu'", name);
    const sdc_device *d = sdc_devices_get(0);
    CHECK(d && d->n_threads == T, "default device threads %d, expected %d", d ? d->n_threads : -1,
          T);
    uint64_t total = 0, budget = 1;
    CHECK(sdc_device_memory(0, &total, &budget) == SDC_OK, "memory 0");
    CHECK(total == M && budget == 0, "default memory %llu budget %llu, expected %llu and 0",
          (unsigned long long)total, (unsigned long long)budget, (unsigned long long)M);
    char want[64];
    snprintf(want, sizeof want, "%d threads", T);
    CHECK(strstr(desc, want) != NULL, "description '%s' lacks '%s'", desc, want);
    snprintf(want, sizeof want, "%.1f GiB", (double)M / GIB);
    CHECK(strstr(desc, want) != NULL, "description '%s' lacks memory '%s'", desc, want);
    CHECK(sdc_device_info(1, name, sizeof name, NULL, 0) == SDC_ERR_INVALID_ARG &&
              sdc_device_info(-1, NULL, 0, NULL, 0) == SDC_ERR_INVALID_ARG,
          "info out of range is refused");
    CHECK(sdc_device_memory(1, &total, &budget) == SDC_ERR_INVALID_ARG, "memory out of range");
    CHECK(sdc_devices_default() == d, "default device is the only one");
    sdc_backend *b = sdc_device_create_backend(d);
    CHECK(b != NULL, "CPU backend created");
    sdc_backend_free(b);
    printf("default device: cpu, %d threads, %.2f GiB, '%s'\n", T, (double)M / GIB, desc);
}

/* cpu0..cpu{n-1}: names, thread shares (even, >= 1, summing to the cores when n <=
 * cores), memory shares (summing exactly to the RAM), descriptions */
static void check_cpu_devices(int n, int T) {
    uint64_t M = ref_memory();
    CHECK(sdc_set_cpu_devices(n) == SDC_OK, "--cpu-devices %d", n);
    CHECK(sdc_device_count() == n, "--cpu-devices %d gives %d devices", n, sdc_device_count());
    int sum = 0, lo = 1 << 30, hi = 0;
    uint64_t msum = 0, mlo = UINT64_MAX, mhi = 0;
    int bad_names = 0, bad_desc = 0;
    for (int i = 0; i < n; i++) {
        char name[64], desc[512], want[64];
        sdc_device_info(i, name, sizeof name, desc, sizeof desc);
        snprintf(want, sizeof want, "cpu%d", i);
        bad_names += strcmp(name, want) != 0;
        const sdc_device *d = sdc_devices_get(i);
        sum += d->n_threads;
        lo = d->n_threads < lo ? d->n_threads : lo;
        hi = d->n_threads > hi ? d->n_threads : hi;
        uint64_t total, budget;
        sdc_device_memory(i, &total, &budget);
        msum += total;
        mlo = total < mlo ? total : mlo;
        mhi = total > mhi ? total : mhi;
        snprintf(want, sizeof want, "%.1f GiB", (double)total / GIB);
        bad_desc += strstr(desc, want) == NULL;
        if (n <= T) {
            snprintf(want, sizeof want, "%d of %d threads", d->n_threads, T);
            bad_desc += strstr(desc, want) == NULL;
        }
        if (i == 0 && n > 1) printf("  cpu0 of %d: '%s'\n", n, desc);
    }
    CHECK(!bad_names, "--cpu-devices %d: %d names differ from cpuI", n, bad_names);
    CHECK(!bad_desc, "--cpu-devices %d: %d descriptions lack threads or memory", n, bad_desc);
    CHECK(lo >= 1 && hi - lo <= 1, "--cpu-devices %d: thread shares %d..%d", n, lo, hi);
    if (n <= T)
        CHECK(sum == T, "--cpu-devices %d: threads add up to %d, expected %d", n, sum, T);
    else
        CHECK(hi == 1, "--cpu-devices %d > %d cores: 1 thread each, got up to %d", n, T, hi);
    CHECK(msum == M && mhi - mlo <= 1,
          "--cpu-devices %d: memory shares sum %llu (want %llu), "
          "spread %llu bytes",
          n, (unsigned long long)msum, (unsigned long long)M, (unsigned long long)(mhi - mlo));
    printf("--cpu-devices %d: threads %d..%d (sum %d of %d), memory %.3f..%.3f GiB (sum exact: "
           "%s)\n",
           n, lo, hi, sum, T, (double)mlo / GIB, (double)mhi / GIB, msum == M ? "yes" : "no");
}

static void test_cpu_devices(void) {
    int T = ref_threads();
    int ns[] = {1, 2, 3, T, T + 1, 2 * T + 1, SDC_MAX_CPU_DEVICES};
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++)
        if (ns[i] >= 1 && ns[i] <= SDC_MAX_CPU_DEVICES) check_cpu_devices(ns[i], T);
    /* uneven shares need more cores than CI has: pretend 16 and 7 threads */
    int pretend[] = {16, 7};
    for (int k = 0; k < 2; k++) {
        sdc_devices_set_host_threads(pretend[k]);
        int ms[] = {1, 3, 5, pretend[k], pretend[k] + 1};
        for (int i = 0; i < 5; i++) check_cpu_devices(ms[i], pretend[k]);
    }
    sdc_devices_set_host_threads(16);
    sdc_set_cpu_devices(3);
    CHECK(sdc_devices_get(0)->n_threads == 6 && sdc_devices_get(1)->n_threads == 5 &&
              sdc_devices_get(2)->n_threads == 5,
          "16 threads over 3 devices: 6,5,5");
    sdc_set_cpu_devices(1);
    char desc[512];
    sdc_device_info(0, NULL, 0, desc, sizeof desc);
    CHECK(strstr(desc, "16 of 16 threads") != NULL, "cpu0 alone: '%s'", desc);
    sdc_devices_set_host_threads(0);
    sdc_set_cpu_devices(5);
    CHECK(sdc_set_cpu_devices(0) == SDC_ERR_INVALID_ARG, "--cpu-devices 0 refused");
    CHECK(sdc_set_cpu_devices(65) == SDC_ERR_INVALID_ARG, "--cpu-devices 65 refused");
    CHECK(sdc_set_cpu_devices(-3) == SDC_ERR_INVALID_ARG, "--cpu-devices -3 refused");
    CHECK(strstr(sdc_last_error(), "1..64") != NULL, "message names the range: '%s'",
          sdc_last_error());
    CHECK(sdc_device_count() == 5, "a refused call keeps the devices");

    /* name lookup: exact, "cpu" = first CPU device, unique prefix, case */
    sdc_set_cpu_devices(3);
    CHECK(sdc_devices_find("cpu2") == sdc_devices_get(2), "find cpu2");
    CHECK(sdc_devices_find("CPU1") == sdc_devices_get(1), "find is case-insensitive");
    CHECK(sdc_devices_find("cpu") == sdc_devices_get(0), "'cpu' selects cpu0");
    CHECK(sdc_devices_find("cpu7") == NULL && strstr(sdc_last_error(), "cpu7") &&
              strstr(sdc_last_error(), "cpu0, cpu1, cpu2"),
          "unknown device named with the list: '%s'", sdc_last_error());
    CHECK(sdc_devices_find("c") == NULL && strstr(sdc_last_error(), "ambiguous"),
          "ambiguous prefix refused: '%s'", sdc_last_error());
    CHECK(sdc_devices_find("gpu") == NULL && strstr(sdc_last_error(), "GPU"), "no gpu: '%s'",
          sdc_last_error());
    CHECK(sdc_devices_default() == sdc_devices_get(0), "default device cpu0");
    sdc_devices_reset();
    CHECK(sdc_devices_find("c") == sdc_devices_get(0), "unique prefix 'c' selects cpu");
}

static uint64_t budget_of(int i) {
    uint64_t t, b = 12345;
    sdc_device_memory(i, &t, &b);
    return b;
}

static void test_max_vram(void) {
    sdc_set_cpu_devices(3);
    const uint64_t G = 1073741824ull;
    CHECK(sdc_devices_apply_max_vram("cpu0=4,cpu1=2.5") == SDC_OK, "cpu0=4,cpu1=2.5");
    CHECK(budget_of(0) == 4 * G && budget_of(1) == 5 * G / 2 && budget_of(2) == 0,
          "budgets %llu %llu %llu", (unsigned long long)budget_of(0),
          (unsigned long long)budget_of(1), (unsigned long long)budget_of(2));
    char desc[512];
    sdc_device_info(1, NULL, 0, desc, sizeof desc);
    CHECK(strstr(desc, "budget 2.5 GiB") != NULL, "description shows the budget: '%s'", desc);
    CHECK(sdc_devices_apply_max_vram("6") == SDC_OK && budget_of(0) == 6 * G &&
              budget_of(1) == 6 * G && budget_of(2) == 6 * G,
          "a bare value budgets every device");
    CHECK(sdc_devices_apply_max_vram("cpu1=1, all=3") == SDC_OK && budget_of(0) == 3 * G &&
              budget_of(1) == G && budget_of(2) == 3 * G,
          "a named device beats all= placed after it");
    CHECK(sdc_devices_apply_max_vram("*=2,CPU2=0.5,default=1") == SDC_OK && budget_of(0) == G &&
              budget_of(1) == G && budget_of(2) == G / 2,
          "*= and default=, case-insensitive device, later default wins");
    CHECK(sdc_devices_apply_max_vram("cpu0=1,cpu0=2") == SDC_OK && budget_of(0) == 2 * G,
          "later entry for the same device wins");
    CHECK(sdc_devices_apply_max_vram("cpu=1.5") == SDC_OK && budget_of(0) == 3 * G / 2 &&
              budget_of(1) == 0,
          "'cpu' names the first CPU device");
    CHECK(sdc_devices_apply_max_vram("cpu0=-2") == SDC_OK && budget_of(0) == 0,
          "negative on a CPU device: no budget (as sd.cpp)");
    sdc_devices_apply_max_vram("cpu0=4");
    CHECK(sdc_devices_apply_max_vram("") == SDC_OK && budget_of(0) == 0, "'' clears");
    sdc_devices_apply_max_vram("cpu0=4");
    CHECK(sdc_devices_apply_max_vram(NULL) == SDC_OK && budget_of(0) == 0, "NULL clears");

    sdc_devices_apply_max_vram("cpu0=4");
    const char *bad[][2] = {{"cpu9=1", "cpu9"}, {"cpu0=abc", "abc"}, {"cpu0=", "cpu0="},
                            {"=3", "=3"},       {"4GB", "4GB"},      {"cpu0=1,c=2", "c"},
                            {"cpu0=nan", "nan"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        sdc_status s = sdc_devices_apply_max_vram(bad[i][0]);
        CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), bad[i][1]),
              "--max-vram '%s': status %d, message '%s' should name '%s'", bad[i][0], s,
              sdc_last_error(), bad[i][1]);
        CHECK(budget_of(0) == 4 * G, "--max-vram '%s' refused: budgets unchanged", bad[i][0]);
    }
    printf("--max-vram: 7 accepted forms, %zu refused with their bad piece named\n",
           sizeof bad / sizeof bad[0]);
    sdc_set_cpu_devices(2);
    CHECK(budget_of(0) == 0, "re-creating the CPU devices clears their budgets");
    sdc_devices_reset();
}

/* a pretend accelerator through the registration hook */
static int g_fake_created;
static sdc_backend *fake_create(const sdc_device *d, int n) {
    g_fake_created++;
    return NULL;
}
static uint64_t fake_free(const sdc_device *d) {
    return 8ull << 30;
}

static void test_register(void) {
    sdc_set_cpu_devices(2);
    sdc_device acc;
    memset(&acc, 0, sizeof acc);
    acc.kind = SDC_DEVICE_ACCEL;
    snprintf(acc.name, sizeof acc.name, "cuda0");
    snprintf(acc.registry, sizeof acc.registry, "cuda");
    snprintf(acc.description, sizeof acc.description, "Fake GPU (16.0 GiB)");
    acc.total_bytes = 16ull << 30;
    static const sdc_device_ops ops = {fake_create, fake_free};
    int idx = sdc_devices_register(&acc, &ops, NULL);
    CHECK(idx == 2 && sdc_device_count() == 3, "accelerator after the CPU devices: %d", idx);
    CHECK(sdc_devices_register(&acc, &ops, NULL) < 0 && strstr(sdc_last_error(), "cuda0"),
          "duplicate name refused");
    CHECK(sdc_devices_default() == sdc_devices_get(2), "an accelerator is the default");
    CHECK(sdc_devices_find("gpu") == sdc_devices_get(2) &&
              sdc_devices_find("CUDA") == sdc_devices_get(2),
          "'gpu' and the registry name find it");
    CHECK(sdc_devices_apply_max_vram("-2") == SDC_OK && budget_of(2) == 6ull << 30 &&
              budget_of(0) == 0,
          "negative budget = free (8) - 2 GiB on the accelerator, none on CPUs");
    sdc_device_create_backend(sdc_devices_get(2));
    CHECK(g_fake_created == 1, "backend creation goes through the device's hook");
    sdc_placement pl;
    CHECK(sdc_placement_parse_specs(NULL, NULL, true, false, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_DIFFUSION].device[0] == 2 &&
              pl.module[SDC_MODULE_TE].device[0] == 0,
          "with a GPU: default on it, --clip-on-cpu puts te on cpu0");
    CHECK(sdc_placement_parse_specs("te=cpu1", "te=cuda0", false, false, false, &pl) ==
              SDC_ERR_UNSUPPORTED,
          "weights on a GPU while running on a CPU: unsupported");
    CHECK(sdc_placement_parse_specs(NULL, "cpu", false, false, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_VAE].params == SDC_PARAMS_CPU &&
              pl.module[SDC_MODULE_VAE].params_device == 0,
          "--params-backend cpu with a GPU: weights in host RAM");
    sdc_set_cpu_devices(3);
    CHECK(sdc_device_count() == 4 && sdc_devices_find("cuda0") == sdc_devices_get(3) &&
              sdc_devices_get(3)->index == 3,
          "registration survives --cpu-devices, re-indexed");
    sdc_devices_unregister_all();
    CHECK(sdc_device_count() == 3, "unregistered");
    sdc_devices_reset();
    printf("registration hook: accelerator index, default, lookup, negative budget checked\n");
}

/* ---- placement ---- */

/* sd.cpp docs/backend.md "Modules" table, plus spellings the normalisation must accept */
static const struct {
    sdc_module m;
    const char *name;
} k_aliases[] = {
    {SDC_MODULE_DIFFUSION, "diffusion"},
    {SDC_MODULE_DIFFUSION, "model"},
    {SDC_MODULE_DIFFUSION, "unet"},
    {SDC_MODULE_DIFFUSION, "dit"},
    {SDC_MODULE_DIFFUSION, "Diffusion"},
    {SDC_MODULE_DIFFUSION, "U-Net"},
    {SDC_MODULE_TE, "te"},
    {SDC_MODULE_TE, "clip"},
    {SDC_MODULE_TE, "text"},
    {SDC_MODULE_TE, "textencoder"},
    {SDC_MODULE_TE, "textencoders"},
    {SDC_MODULE_TE, "conditioner"},
    {SDC_MODULE_TE, "cond"},
    {SDC_MODULE_TE, "llm"},
    {SDC_MODULE_TE, "t5"},
    {SDC_MODULE_TE, "t5xxl"},
    {SDC_MODULE_TE, "text_encoder"},
    {SDC_MODULE_TE, "Text-Encoders"},
    {SDC_MODULE_TE, "T5XXL"},
    {SDC_MODULE_CLIP_VISION, "clip_vision"},
    {SDC_MODULE_CLIP_VISION, "clipvision"},
    {SDC_MODULE_CLIP_VISION, "clip-vision"},
    {SDC_MODULE_CLIP_VISION, "vision"},
    {SDC_MODULE_VAE, "vae"},
    {SDC_MODULE_VAE, "firststage"},
    {SDC_MODULE_VAE, "first_stage"},
    {SDC_MODULE_VAE, "autoencoder"},
    {SDC_MODULE_VAE, "tae"},
    {SDC_MODULE_VAE, "VAE"},
    {SDC_MODULE_CONTROL_NET, "controlnet"},
    {SDC_MODULE_CONTROL_NET, "control_net"},
    {SDC_MODULE_CONTROL_NET, "control"},
    {SDC_MODULE_PHOTOMAKER, "photomaker"},
    {SDC_MODULE_PHOTOMAKER, "photo_maker"},
    {SDC_MODULE_PHOTOMAKER, "photomakerid"},
    {SDC_MODULE_PHOTOMAKER, "pmid"},
    {SDC_MODULE_PHOTOMAKER, "photo"},
    {SDC_MODULE_UPSCALER, "upscaler"},
    {SDC_MODULE_UPSCALER, "esrgan"},
    {SDC_MODULE_UPSCALER, "hires"},
    {SDC_MODULE_DETECTOR, "detector"},
    {SDC_MODULE_DETECTOR, "adetailer"},
    {SDC_MODULE_DETECTOR, "yolo"},
};

static const char *k_canonical[SDC_MODULE_COUNT] = {
    [SDC_MODULE_TE] = "te",
    [SDC_MODULE_DIFFUSION] = "diffusion",
    [SDC_MODULE_VAE] = "vae",
    [SDC_MODULE_CLIP_VISION] = "clip_vision",
    [SDC_MODULE_CONTROL_NET] = "controlnet",
    [SDC_MODULE_PHOTOMAKER] = "photomaker",
    [SDC_MODULE_UPSCALER] = "upscaler",
    [SDC_MODULE_DETECTOR] = "detector",
};

/* every module's main device equals want[m] (one device each) */
static bool places(const sdc_placement *pl, const int want[SDC_MODULE_COUNT]) {
    for (int m = 0; m < SDC_MODULE_COUNT; m++)
        if (pl->module[m].n_devices != 1 || pl->module[m].device[0] != want[m]) return false;
    return true;
}

static void all_on(int *want, int dev) {
    for (int m = 0; m < SDC_MODULE_COUNT; m++) want[m] = dev;
}

static void test_module_names(void) {
    sdc_set_cpu_devices(3);
    int bad = 0;
    for (int m = 0; m < SDC_MODULE_COUNT; m++) {
        CHECK(!strcmp(sdc_module_name((sdc_module)m), k_canonical[m]), "module %d name '%s'", m,
              sdc_module_name((sdc_module)m));
        CHECK(sdc_module_from_name(k_canonical[m]) == m, "canonical '%s'", k_canonical[m]);
    }
    size_t n = sizeof k_aliases / sizeof k_aliases[0];
    for (size_t i = 0; i < n; i++) {
        char spec[96];
        snprintf(spec, sizeof spec, "%s=cpu1", k_aliases[i].name);
        sdc_placement pl;
        int want[SDC_MODULE_COUNT];
        all_on(want, 0);
        want[k_aliases[i].m] = 1;
        sdc_status s = sdc_placement_parse_specs(spec, NULL, false, false, false, &pl);
        bool ok = s == SDC_OK && places(&pl, want) &&
                  sdc_module_from_name(k_aliases[i].name) == (int)k_aliases[i].m;
        CHECK(ok, "--backend %s: status %d '%s'", spec, s, sdc_last_error());
        bad += !ok;
    }
    CHECK(sdc_module_from_name("unknown") < 0 && sdc_module_from_name("") < 0 &&
              sdc_module_from_name("clip vision") < 0,
          "not module names");
    printf("module names: %d canonical, %zu aliases/spellings, %d wrong\n", SDC_MODULE_COUNT, n,
           bad);
}

static void test_assignments(void) {
    sdc_set_cpu_devices(3);
    sdc_placement pl;
    int want[SDC_MODULE_COUNT];
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    CHECK(sdc_placement_parse(&cp, &pl) == SDC_OK, "defaults parse");
    all_on(want, 0);
    bool params_ok = true;
    for (int m = 0; m < SDC_MODULE_COUNT; m++)
        params_ok &= pl.module[m].params == SDC_PARAMS_DEVICE && pl.module[m].params_device == 0;
    CHECK(places(&pl, want) && params_ok, "nothing given: every module on cpu0, weights there");

    struct {
        const char *spec;
        int def, te, diffusion, vae; /* expected devices; def for the other modules */
    } cases[] = {
        {"cpu2", 2, 2, 2, 2},
        {"all=cpu1", 1, 1, 1, 1},
        {"ALL=cpu1", 1, 1, 1, 1},
        {"default=cpu2", 2, 2, 2, 2},
        {"*=cpu1", 1, 1, 1, 1},
        {"te=cpu1,diffusion=cpu2", 0, 1, 2, 0},
        {" te = cpu1 , , vae=CPU2 ", 0, 1, 0, 2},
        {"te=cpu1,te=cpu2", 0, 2, 0, 0},
        {"te=cpu1,all=cpu2", 2, 1, 2, 2},
        {"all=cpu2,te=cpu1", 2, 1, 2, 2},
        {"cpu1,cpu2", 2, 2, 2, 2},
        {"te=auto,cpu2", 2, 0, 2, 2},
        {"te=default,vae=cpu", 0, 0, 0, 0},
        {"vae=cpu0&cpu1", 0, 0, 0, 0},
        {"te=cpu1&cpu1", 0, 1, 0, 0},
        {"", 0, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        all_on(want, cases[i].def);
        want[SDC_MODULE_TE] = cases[i].te;
        want[SDC_MODULE_DIFFUSION] = cases[i].diffusion;
        want[SDC_MODULE_VAE] = cases[i].vae;
        sdc_status s = sdc_placement_parse_specs(cases[i].spec, NULL, false, false, false, &pl);
        char d[256];
        sdc_placement_describe(&pl, d, sizeof d);
        CHECK(s == SDC_OK && places(&pl, want), "--backend '%s': status %d '%s', got %s",
              cases[i].spec, s, sdc_last_error(), d);
    }
    printf("--backend: %zu assignments (defaults, aliases of all, overrides, order)\n",
           sizeof cases / sizeof cases[0]);

    /* shorthands: prepended, so explicit entries win; "cpu" = the first CPU device */
    CHECK(sdc_placement_parse_specs("cpu2", NULL, true, false, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_TE].device[0] == 0 &&
              pl.module[SDC_MODULE_DIFFUSION].device[0] == 2 &&
              pl.module[SDC_MODULE_VAE].device[0] == 2,
          "--clip-on-cpu --backend cpu2: te on cpu0, the rest on cpu2");
    CHECK(sdc_placement_parse_specs("cpu2", NULL, false, true, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_VAE].device[0] == 0 && pl.module[SDC_MODULE_TE].device[0] == 2,
          "--vae-on-cpu");
    CHECK(sdc_placement_parse_specs("te=cpu1", NULL, true, true, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_TE].device[0] == 1 && pl.module[SDC_MODULE_VAE].device[0] == 0,
          "--clip-on-cpu loses to an explicit te=cpu1");
    cp.backend = "cpu1";
    cp.offload_to_cpu = true;
    CHECK(sdc_placement_parse(&cp, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_DIFFUSION].params == SDC_PARAMS_CPU &&
              pl.module[SDC_MODULE_DIFFUSION].params_device == 0 &&
              pl.module[SDC_MODULE_DIFFUSION].device[0] == 1,
          "--offload-to-cpu: weights on cpu (cpu0) for modules running on cpu1");
    sdc_context_params old = cp;
    old.struct_size = offsetof(sdc_context_params, backend); /* a header without placement */
    CHECK(sdc_placement_parse(&old, &pl) == SDC_OK && pl.module[SDC_MODULE_VAE].device[0] == 0 &&
              pl.module[SDC_MODULE_VAE].params == SDC_PARAMS_DEVICE,
          "fields beyond struct_size are not read");
    cp.params_backend = "te=disk";
    CHECK(sdc_placement_parse(&cp, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_TE].params == SDC_PARAMS_DISK &&
              pl.module[SDC_MODULE_TE].params_device == -1 &&
              pl.module[SDC_MODULE_VAE].params == SDC_PARAMS_CPU,
          "--offload-to-cpu --params-backend te=disk: te from disk, others in RAM");

    /* --params-backend */
    CHECK(sdc_placement_parse_specs(NULL, "disk", false, false, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_DETECTOR].params == SDC_PARAMS_DISK &&
              pl.module[SDC_MODULE_TE].params == SDC_PARAMS_DISK,
          "--params-backend disk");
    CHECK(sdc_placement_parse_specs("diffusion=cpu1", "diffusion=cpu1,vae=cpu2,te=Disk", false,
                                    false, false, &pl) == SDC_OK &&
              pl.module[SDC_MODULE_DIFFUSION].params == SDC_PARAMS_DEVICE &&
              pl.module[SDC_MODULE_VAE].params == SDC_PARAMS_CPU &&
              pl.module[SDC_MODULE_VAE].params_device == 2 &&
              pl.module[SDC_MODULE_TE].params == SDC_PARAMS_DISK,
          "--params-backend: own device, another CPU device, disk");
    char d[256];
    sdc_placement_parse_specs("diffusion=cpu1", "te=disk", false, false, false, &pl);
    sdc_placement_describe(&pl, d, sizeof d);
    CHECK(!strcmp(d, "te=cpu0 diffusion=cpu1 vae=cpu0 (params: te=disk)"), "describe: '%s'", d);
    printf("describe: '%s'\n", d);
    sdc_placement_parse_specs("upscaler=cpu2", "vae=cpu1", false, false, false, &pl);
    sdc_placement_describe(&pl, d, sizeof d);
    CHECK(!strcmp(d, "te=cpu0 diffusion=cpu0 vae=cpu0 upscaler=cpu2 (params: vae=cpu1)"),
          "describe shows modules off the default: '%s'", d);
    sdc_placement_describe_modules(&pl, SDC_MODULE_BIT(SDC_MODULE_DIFFUSION), d, sizeof d);
    CHECK(!strcmp(d, "diffusion=cpu0"), "describe one module: '%s'", d);
    char small[12];
    sdc_placement_describe(&pl, small, sizeof small);
    CHECK(strlen(small) == sizeof small - 1 && !strncmp(small, "te=cpu0 dif", 11),
          "describe truncates safely: '%s'", small);
}

static void test_errors(void) {
    sdc_set_cpu_devices(2);
    struct {
        const char *backend, *params;
        sdc_status code;
        const char *must[3]; /* pieces the message must contain */
    } bad[] = {
        {"foo=cpu0", NULL, SDC_ERR_INVALID_ARG, {"'foo'", "te (", "detector ("}},
        {"te=cuda0", NULL, SDC_ERR_INVALID_ARG, {"cuda0", "cpu0, cpu1", "--backend"}},
        {"cuda0", NULL, SDC_ERR_INVALID_ARG, {"cuda0", "cpu0, cpu1", NULL}},
        {"te=", NULL, SDC_ERR_INVALID_ARG, {"te=", "MODULE=DEVICE", NULL}},
        {"=cpu0", NULL, SDC_ERR_INVALID_ARG, {"=cpu0", "MODULE=DEVICE", NULL}},
        {"disk", NULL, SDC_ERR_INVALID_ARG, {"disk", "--params-backend", NULL}},
        {"te=auto&cpu1", NULL, SDC_ERR_INVALID_ARG, {"auto", "device list", NULL}},
        {"te=&", NULL, SDC_ERR_INVALID_ARG, {"empty device list", NULL, NULL}},
        {"te=cpu0&cpu9", NULL, SDC_ERR_INVALID_ARG, {"cpu9", NULL, NULL}},
        {NULL, "te=cpu0&cpu1", SDC_ERR_INVALID_ARG, {"--params-backend", "cpu0&cpu1", NULL}},
        {NULL, "vae=floppy", SDC_ERR_INVALID_ARG, {"--params-backend", "floppy", "cpu0"}},
        {NULL, "bogus=disk", SDC_ERR_INVALID_ARG, {"--params-backend", "bogus", "vae ("}},
    };
    size_t n = sizeof bad / sizeof bad[0];
    for (size_t i = 0; i < n; i++) {
        sdc_placement pl;
        sdc_status s =
            sdc_placement_parse_specs(bad[i].backend, bad[i].params, false, false, false, &pl);
        const char *msg = sdc_last_error();
        bool ok = s == bad[i].code;
        for (int k = 0; k < 3; k++) ok &= !bad[i].must[k] || strstr(msg, bad[i].must[k]) != NULL;
        CHECK(ok, "backend '%s' params '%s': status %d (want %d), message '%s'",
              bad[i].backend ? bad[i].backend : "", bad[i].params ? bad[i].params : "", s,
              bad[i].code, msg);
        if (i == 0) printf("example error: %s\n", msg);
    }
    /* a split is accepted (placement/split.h runs it), main device first */
    sdc_placement pl;
    CHECK(sdc_placement_parse_specs("diffusion=cpu1&cpu0", NULL, false, false, false, &pl) ==
              SDC_OK,
          "split accepted: %s", sdc_last_error());
    CHECK(pl.module[SDC_MODULE_DIFFUSION].n_devices == 2 &&
              pl.module[SDC_MODULE_DIFFUSION].device[0] == 1 &&
              pl.module[SDC_MODULE_DIFFUSION].device[1] == 0,
          "split parsed: main device first");
    printf("errors: %zu malformed specs refused with the bad piece and the valid names\n", n);
    sdc_devices_reset();
}

int main(void) {
    test_default_device();
    test_cpu_devices();
    test_max_vram();
    test_register();
    test_module_names();
    test_assignments();
    test_errors();
    TEST_MAIN_END();
}
