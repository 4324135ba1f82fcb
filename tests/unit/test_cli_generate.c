/* The sdc program end to end on the golden MiniT2I model: the images it writes must match
 * the PNGs sd-cli wrote for the same command lines (golden/minit2i/runs.tsv), batches must
 * be named and seeded as sd-cli does, and the parameters text and summary line must be
 * there. Runs the built program from SDC_BINARY_DIR. */
#include <png.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/image.h"
#include "test_util.h"

#define MINIT2I SDC_GOLDEN_DIR "/minit2i"

static char g_dir[512];

/* Runs sdc with `args`; stdout goes to out (at most n bytes), stderr to the console. */
static int run_sdc(const char *args, char *out, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/sdc' %s", SDC_BINARY_DIR, args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(out, 1, n - 1, p);
    out[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Max |a - b| over two PNG files' RGB pixels; -1 if unreadable or different sizes. */
static int png_max_diff(const char *a, const char *b) {
    uint8_t *pa = NULL, *pb = NULL;
    int wa, ha, wb, hb, maxd = -1;
    if (sdc_png_read(a, &pa, &wa, &ha) == SDC_OK && sdc_png_read(b, &pb, &wb, &hb) == SDC_OK &&
        wa == wb && ha == hb) {
        maxd = 0;
        for (size_t i = 0; i < (size_t)wa * ha * 3; i++) {
            int d = abs((int)pa[i] - pb[i]);
            if (d > maxd) maxd = d;
        }
    } else {
        fprintf(stderr, "png_max_diff: %s\n", sdc_last_error());
    }
    free(pa);
    free(pb);
    return maxd;
}

static char *png_parameters(const char *path) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    char *out = NULL;
    if (!setjmp(png_jmpbuf(png))) {
        png_init_io(png, fp);
        png_read_info(png, info);
        png_textp t;
        int n = png_get_text(png, info, &t, NULL);
        for (int i = 0; i < n; i++)
            if (!strcmp(t[i].key, "parameters")) out = strdup(t[i].text);
    }
    png_destroy_read_struct(&png, &info, NULL);
    fclose(fp);
    return out;
}

static bool summary_ok(const char *out, int images) {
    const char *s = strstr(out, "generated ");
    int n = 0;
    double secs = -1, per_step = -1, mib = -1;
    char tail[8] = "";
    if (!s || sscanf(s, "generated %d image(s) in %lfs (%lfs/step), peak memory %lf %3s", &n, &secs,
                     &per_step, &mib, tail) != 5)
        return false;
    return n == images && secs >= 0 && per_step >= 0 && mib > 0 && !strcmp(tail, "MiB");
}

#define MODEL_ARGS(w)                                                                              \
    "--diffusion-model " MINIT2I "/minit2i_a_dit_" w ".safetensors --t5xxl " MINIT2I               \
    "/minit2i_a_t5_" w ".safetensors --t5-tokenizer " MINIT2I "/tokenizer_sdcpp_compat.json -t 2 "

/* One golden run: same flags as sd-cli's command, then compare the PNG. */
static void check_run(const char *id, const char *flags, const char *weights, int tol) {
    char args[2048], out[4096], png[600], golden[600];
    snprintf(png, sizeof png, "%s/%s.png", g_dir, id);
    snprintf(golden, sizeof golden, "%s/png/%s.png", MINIT2I, id);
    snprintf(args, sizeof args, "%s %s -o '%s'",
             !strcmp(weights, "f16") ? MODEL_ARGS("f16") : MODEL_ARGS("f32"), flags, png);
    int rc = run_sdc(args, out, sizeof out);
    CHECK(rc == 0, "%s: sdc exit status %d", id, rc);
    char saved[700];
    snprintf(saved, sizeof saved, "saved %s\n", png);
    CHECK(strstr(out, saved) != NULL, "%s: no '%s' in stdout: %s", id, saved, out);
    CHECK(summary_ok(out, 1), "%s: summary line missing or malformed: %s", id, out);
    int d = png_max_diff(png, golden);
    CHECK(d >= 0 && d <= tol, "%s: max |diff| vs sd-cli %d (tolerance %d)", id, d, tol);
    printf("%s (%s): sdc vs sd-cli PNG max |diff| %d/255 (tolerance %d)\n", id, flags, d, tol);
}

static void test_golden_runs(void) {
    check_run("a01",
              "-p 'a cat' -W 64 -H 64 --steps 4 --cfg-scale 6 --sampling-method euler "
              "-s 42 --rng cpu",
              "f32", 2);
    /* (a04 and a10, the empty prompt, are left out: "" encodes to 0 tokens in sdc and to
     * one "▁" token in sd-cli, a tokenizer matter) */
    check_run("a08",
              "-p 'a red car on a hill, sunset' -W 64 -H 64 --steps 10 --cfg-scale 1 "
              "--sampling-method euler_a -s 7 --rng cuda",
              "f32", 2);
    check_run("a07",
              "-p 'a cat' -W 64 -H 64 --steps 4 --cfg-scale 6 --sampling-method euler_a "
              "-s 42 --rng cpu",
              "f32", 2);

    /* the parameters text of a01, in sd-cli's field order with the resolved sampler and
     * scheduler names as sd-cli writes them (see test_params_text) */
    char png[600], want[1024];
    snprintf(png, sizeof png, "%s/a01.png", g_dir);
    snprintf(want, sizeof want,
             "a cat\nSteps: 4, CFG scale: 6.000000, Guidance: 3.500000, Eta: inf, Seed: 42, Size: "
             "64x64, Model: , "
             "RNG: cpu, Sampler: euler discrete, TE: minit2i_a_t5_f32.safetensors, Unet: "
             "minit2i_a_dit_f32.safetensors, Version: sdc %s",
             sdc_version());
    char *text = png_parameters(png);
    CHECK(text && !strcmp(text, want), "a01 parameters:\n got: %s\nwant: %s",
          text ? text : "(none)", want);
    free(text);
}

/* -b 2: output_0.png (seed 42 = run a01) and output_1.png (seed 43), in a new folder. */
static void test_batch(void) {
    char args[2048], out[4096], p0[600], p1[600], golden[600];
    snprintf(args, sizeof args,
             MODEL_ARGS("f32") "-p 'a cat' -W 64 -H 64 --steps 4 --cfg-scale 6 -s 42 --rng cpu "
                               "-b 2 -o '%s/new/dir/out.png'",
             g_dir);
    int rc = run_sdc(args, out, sizeof out);
    CHECK(rc == 0, "batch: exit status %d", rc);
    CHECK(summary_ok(out, 2), "batch: summary: %s", out);
    snprintf(p0, sizeof p0, "%s/new/dir/out_0.png", g_dir);
    snprintf(p1, sizeof p1, "%s/new/dir/out_1.png", g_dir);
    snprintf(golden, sizeof golden, "%s/png/a01.png", MINIT2I);
    int d0 = png_max_diff(p0, golden), d01 = png_max_diff(p0, p1);
    CHECK(d0 >= 0 && d0 <= 2, "batch image 0 vs a01: %d", d0);
    CHECK(d01 > 16, "batch images 0 and 1 should differ (seeds 42, 43): max |diff| %d", d01);
    char *t0 = png_parameters(p0), *t1 = png_parameters(p1);
    CHECK(t0 && strstr(t0, "Seed: 42,"), "batch 0 seed: %s", t0 ? t0 : "(none)");
    CHECK(t1 && strstr(t1, "Seed: 43,"), "batch 1 seed: %s", t1 ? t1 : "(none)");
    printf("batch of 2: out_0 vs a01 %d/255, out_0 vs out_1 %d/255, seeds 42/43 in the text\n", d0,
           d01);
    free(t0);
    free(t1);
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_cli_generate_tmp", SDC_BINARY_DIR);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot create %s\n", g_dir);
    test_golden_runs();
    test_batch();
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) fprintf(stderr, "cannot remove %s\n", g_dir);
    TEST_MAIN_END();
}
