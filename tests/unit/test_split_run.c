/* Layer split end to end: MiniT2I's DiT (and its text blocks) and the T5 encoder split
 * over 2 and 3 CPU devices give the same images bit for bit as one device, on the golden
 * tiny model (2 double blocks, 2 T5 layers) and on a deeper generated one (sdc-genmodel
 * --preset deep: 6 double blocks, 2 text blocks, 6 T5 layers); under --max-vram budgets
 * each device's weights + peak planned scratch + imported tensors stay inside its budget
 * (the CPU allocator's figures). */
#include <string.h>

#include "core/clock.h"
#include "pipeline/context.h"
#include "placement/split.h"
#include "sdc.h"
#include "gen_common.h"
#include "test_util.h"

typedef struct model_files {
    const char *dit, *t5, *tok;
} model_files;

typedef struct variant {
    const char *label;
    int cpu_devices;
    const char *backend, *max_vram;
    const char *expect_log; /* the partition line the split must log */
    const char *split_mode; /* --split-mode */
} variant;

enum { W = 64, H = 48, BATCH = 2, STEPS = 3 };

static void check_budgets(const variant *v, const sdc_backend *be, const char *module) {
    sdc_split_stats st;
    if (!sdc_split_backend_stats(be, &st)) return;
    printf("  %s: %d segments, %llu bytes copied in %.2f ms per forward\n", module, st.n_segments,
           (unsigned long long)st.bytes_copied, st.seconds_copying * 1e3);
    for (int d = 0; d < st.n_devices; d++) {
        const sdc_split_device_stats *ds = &st.dev[d];
        uint64_t used = ds->weights + ds->scratch_peak + ds->transit;
        printf("    device %d: blocks %d+%d (headroom %llu), weights %llu + scratch peak %llu + "
               "transit %llu = %llu of budget %llu\n",
               d, ds->first_block, ds->n_blocks, (unsigned long long)ds->headroom,
               (unsigned long long)ds->weights, (unsigned long long)ds->scratch_peak,
               (unsigned long long)ds->transit, (unsigned long long)used,
               (unsigned long long)ds->budget);
        CHECK(used <= ds->budget, "%s: %s device %d uses %llu of its budget %llu", v->label, module,
              d, (unsigned long long)used, (unsigned long long)ds->budget);
    }
}

static sdc_image *generate(const model_files *m, const variant *v, double *secs) {
    CHECK(sdc_set_cpu_devices(v->cpu_devices) == SDC_OK, "%s: cpu devices: %s", v->label,
          sdc_last_error());
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = m->dit;
    cp.t5xxl_path = m->t5;
    cp.t5_tokenizer_path = m->tok;
    cp.backend = v->backend;
    cp.max_vram = v->max_vram;
    cp.split_mode = v->split_mode;
    sdc_context *ctx = NULL;
    g_log[0] = '\0';
    sdc_status s = sdc_context_create(&cp, &ctx);
    CHECK(s == SDC_OK, "%s: context: %s", v->label, sdc_last_error());
    if (s != SDC_OK) return NULL;
    sdc_generate_params p;
    t_lighthouse_params(&p, W, H, STEPS, BATCH);
    sdc_image *img = NULL;
    int n = 0;
    double t0 = sdc_now_seconds();
    s = sdc_generate_image(ctx, &p, &img, &n);
    *secs = sdc_now_seconds() - t0;
    CHECK(s == SDC_OK && n == BATCH, "%s: generate: %s", v->label, sdc_last_error());
    if (v->expect_log)
        CHECK(strstr(g_log, v->expect_log), "%s: the split logs '%s' (log: %s)", v->label,
              v->expect_log, g_log);
    check_budgets(v, ctx->env_diffusion.backend, "diffusion");
    check_budgets(v, ctx->env_cond.backend, "te");
    sdc_context_free(ctx);
    return s == SDC_OK ? img : NULL;
}

static void compare(const variant *v, const sdc_image *ref, const sdc_image *got, double secs,
                    double ref_secs) {
    if (!ref || !got) return;
    long diff = 0;
    for (int b = 0; b < BATCH; b++)
        for (size_t i = 0; i < (size_t)W * H * 3; i++) diff += ref[b].data[i] != got[b].data[i];
    printf("%-44s %ld of %d values differ from one device; %.1f ms per step (one device %.1f)\n",
           v->label, diff, BATCH * W * H * 3, secs * 1e3 / (BATCH * STEPS),
           ref_secs * 1e3 / (BATCH * STEPS));
    CHECK(diff == 0, "%s: %ld values differ", v->label, diff);
}

static void run_set(const model_files *m, const variant *cases, size_t n) {
    const variant one = {"one device", 1, NULL, NULL, NULL, NULL};
    double ref_secs = 0, secs = 0;
    sdc_image *ref = generate(m, &one, &ref_secs);
    for (size_t i = 0; i < n; i++) {
        sdc_image *got = generate(m, &cases[i], &secs);
        compare(&cases[i], ref, got, secs, ref_secs);
        sdc_free_images(got, BATCH);
    }
    sdc_free_images(ref, BATCH);
}

int main(void) {
    sdc_set_log_callback(capture, NULL);
    sdc_set_log_level(SDC_LOG_INFO);
    const model_files golden = {GOLDEN("minit2i/minit2i_a_dit_f32.safetensors"),
                                GOLDEN("minit2i/minit2i_a_t5_f32.safetensors"),
                                GOLDEN("tokenizer/tokenizer.json")};
    printf("golden tiny MiniT2I (2 double blocks, 1 text block, 2 T5 layers):\n");
    const variant gcases[] = {
        {"diffusion=cpu0&cpu1", 2, "diffusion=cpu0&cpu1", NULL,
         "diffusion: block 0 on cpu0, block 1 on cpu1; 2 cuts", NULL},
        {"te=cpu0&cpu1", 2, "te=cpu0&cpu1", NULL, "te: block 0 on cpu0, block 1 on cpu1", NULL},
        {"te=cpu1&cpu0,diffusion=cpu1&cpu2&cpu0", 3, "te=cpu1&cpu0,diffusion=cpu1&cpu2&cpu0", NULL,
         "diffusion: block 0 on cpu1, no blocks on cpu2, block 1 on cpu0", NULL},
    };
    run_set(&golden, gcases, sizeof gcases / sizeof *gcases);

    char dir[] = "/tmp/sdc_split_run_XXXXXX", cmd[1024];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(cmd, sizeof cmd, "'%s/sdc-genmodel' --preset deep -o '%s' >/dev/null", SDC_BINARY_DIR,
             dir);
    CHECK(system(cmd) == 0, "sdc-genmodel --preset deep failed");
    char dit[512], t5[512], tok[512];
    snprintf(dit, sizeof dit, "%s/minit2i.safetensors", dir);
    snprintf(t5, sizeof t5, "%s/t5/model.safetensors", dir);
    snprintf(tok, sizeof tok, "%s/t5/tokenizer.json", dir);
    const model_files deep = {dit, t5, tok};
    printf("deep tiny MiniT2I (6 double blocks, 2 text blocks, 6 T5 layers):\n");
    /* budgets: the DiT's blocks are 1.47 MB each (f32; block 0 1.59 MB: it also counts the
     * weights every block reads), its other weights 0.45 MB, the
     * headroom (the one-device plan at 64x48 on 1 thread) 3.45 MB (printed above as the
     * devices' headroom). cpu0 = 0.0055 GiB = 5.91 MB leaves cap 2.0 MB, cpu1 = 0.0195 GiB
     * = 20.94 MB leaves 17.49 MB; the share of cpu0 is 8.93 * 2.0 / 19.49 = 0.92 MB: block
     * 0 (middle 0.79 MB) on cpu0, the rest on cpu1 */
    const variant dcases[] = {
        {"diffusion=cpu0&cpu1", 2, "diffusion=cpu0&cpu1", NULL,
         "diffusion: blocks 0-2 on cpu0, blocks 3-5 on cpu1; 2 cuts", NULL},
        {"all=cpu0&cpu1&cpu2", 3, "all=cpu0&cpu1&cpu2", NULL,
         "diffusion: blocks 0-1 on cpu0, blocks 2-3 on cpu1, blocks 4-5 on cpu2; 3 cuts", NULL},
        {"te=cpu2&cpu0&cpu1", 3, "te=cpu2&cpu0&cpu1", NULL,
         "te: blocks 0-1 on cpu2, blocks 2-3 on cpu0, blocks 4-5 on cpu1; 3 cuts", NULL},
        {"diffusion=cpu0&cpu1, budgets 5.9 + 20.9 MB", 2, "diffusion=cpu0&cpu1",
         "cpu0=0.0055,cpu1=0.0195", "diffusion: block 0 on cpu0, blocks 1-5 on cpu1; 2 cuts",
         false},
    };
    run_set(&deep, dcases, sizeof dcases / sizeof *dcases);
    /* row split: every block matmul sliced over the devices by rows */
    const variant rcases[] = {
        {"row: diffusion=cpu0&cpu1", 2, "diffusion=cpu0&cpu1", NULL,
         "diffusion: 56 matmuls split by rows, 50% on cpu0 50% on cpu1; 112 cuts", "row"},
        {"row: all=cpu0&cpu1&cpu2", 3, "all=cpu0&cpu1&cpu2", NULL,
         "diffusion: 56 matmuls split by rows, 33% on cpu0 33% on cpu1 33% on cpu2; 168 cuts",
         "diffusion=row,te=layer"},
        /* T5: q, k, v, o, wi_0, wi_1, wo in each of 6 layers; 2 cuts each */
        {"row: te=cpu1&cpu0", 2, "te=cpu1&cpu0", NULL,
         "te: 42 matmuls split by rows, 50% on cpu1 50% on cpu0; 84 cuts", "te=row"},
    };
    run_set(&deep, rcases, sizeof rcases / sizeof *rcases);
    /* budgets too small for the blocks: refused at the first forward with the sizes */
    sdc_set_cpu_devices(2);
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.t5xxl_path = t5;
    cp.t5_tokenizer_path = tok;
    cp.backend = "diffusion=cpu0&cpu1";
    cp.max_vram = "0.004";
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    if (s == SDC_OK) {
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        p.prompt = "x";
        p.width = W;
        p.height = H;
        p.steps = 1;
        sdc_image *img = NULL;
        int n = 0;
        s = sdc_generate_image(ctx, &p, &img, &n);
        sdc_free_images(img, n);
    }
    printf("budgets 4 MiB each: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_NO_MEMORY && strstr(sdc_last_error(), "do not fit"),
          "tight budgets refused: %d '%s'", s, sdc_last_error());
    sdc_context_free(ctx);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "cleanup");
    sdc_set_cpu_devices(1);
    sdc_set_log_callback(NULL, NULL);
    TEST_MAIN_END();
}
