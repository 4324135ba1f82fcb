/* The sdc program's convert and imatrix flags end to end on the golden tiny MiniT2I:
 * --imat-out during generation writes a file that agrees with a second collection
 * continued through --imat-in (calls add up), -M convert with --imat-in writes a
 * self-contained GGUF (tokenizer embedded) that generates with -m alone, the image from
 * an F16 convert equals the one from --type f16 on load, existing --imat-out files get a
 * warning, and bad inputs fail with one error line. */
#include <sys/wait.h>
#include <unistd.h>

#include "io/image.h"
#include "pipeline/imatrix.h"
#include "sdc.h"
#include "test_util.h"

#define MINIT2I SDC_GOLDEN_DIR "/minit2i"
#define MODELS                                                                                     \
    "--diffusion-model " MINIT2I "/minit2i_a_dit_f32.safetensors --t5xxl " MINIT2I                 \
    "/minit2i_a_t5_f32.safetensors --t5-tokenizer " MINIT2I "/tokenizer_sdcpp_compat.json"
#define GEN "-p 'a cat' -W 64 -H 64 --steps 2 --cfg-scale 6 -s 42 --rng cpu -t 2 "

static char g_dir[512];

/* Runs sdc with args (stderr captured into err, at most n bytes); returns the exit code. */
static int run_sdc(const char *args, char *err, size_t n) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && '%s/sdc' %s 2>&1 >/dev/null", g_dir, SDC_BINARY_DIR,
             args);
    FILE *p = popen(cmd, "r");
    if (!p) return -1;
    size_t len = fread(err, 1, n - 1, p);
    err[len] = '\0';
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int same_png(const char *a, const char *b) {
    uint8_t *pa = NULL, *pb = NULL;
    int wa, ha, wb, hb, same = 0;
    char pa_path[600], pb_path[600];
    snprintf(pa_path, sizeof pa_path, "%s/%s", g_dir, a);
    snprintf(pb_path, sizeof pb_path, "%s/%s", g_dir, b);
    if (sdc_png_read(pa_path, &pa, &wa, &ha) == SDC_OK &&
        sdc_png_read(pb_path, &pb, &wb, &hb) == SDC_OK && wa == wb && ha == hb)
        same = !memcmp(pa, pb, (size_t)wa * ha * 3);
    free(pa);
    free(pb);
    return same;
}

static sdc_imatrix *load(const char *name) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", g_dir, name);
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    CHECK(sdc_imatrix_load(im, path) == SDC_OK, "load %s: %s", name, sdc_last_error());
    return im;
}

int main(void) {
    snprintf(g_dir, sizeof g_dir, "%s/test_cli_convert_tmp", SDC_BINARY_DIR);
    char cmd[2048], err[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", g_dir, g_dir);
    CHECK(system(cmd) == 0, "make %s", g_dir);

    /* collect, then continue collecting into a second file */
    CHECK(run_sdc(MODELS " " GEN "-o a.png --imat-out a.dat", err, sizeof err) == 0, "imat-out: %s",
          err);
    CHECK(run_sdc(MODELS " " GEN "-o b.png --imat-in a.dat --imat-out b.dat", err, sizeof err) == 0,
          "imat-in + imat-out: %s", err);
    CHECK(!strstr(err, "overwritten"), "no warning for a new file");
    CHECK(same_png("a.png", "b.png"), "collecting does not change the image");
    sdc_imatrix *a = load("a.dat"), *b = load("b.dat");
    int na = sdc_imatrix_entry_count(a);
    CHECK(na == 37 && sdc_imatrix_entry_count(b) == na, "entries %d / %d", na,
          sdc_imatrix_entry_count(b));
    double m = 0;
    for (int i = 0; i < na; i++) {
        int j = sdc_imatrix_find(b, sdc_imatrix_name(a, i));
        CHECK(j >= 0 && sdc_imatrix_ncall(b, j) == 2 * sdc_imatrix_ncall(a, i), "%s: calls add up",
              sdc_imatrix_name(a, i));
        float va[344], vb[344];
        sdc_imatrix_values(a, i, va);
        if (j >= 0) sdc_imatrix_values(b, j, vb);
        for (int64_t k = 0; j >= 0 && k < sdc_imatrix_nval(a, i); k++)
            m = fmax(m, fabs(vb[k] - 2.0 * va[k]) / (2.0 * va[k]));
    }
    CHECK(m < 1e-5, "continued collection = 2x (same run twice): max rel %.2e", m);
    printf("  continued collection: %d entries, values x2 within %.2e\n", na, m);
    sdc_imatrix_free(a);
    sdc_imatrix_free(b);
    CHECK(run_sdc(MODELS " " GEN "-o a.png --imat-out a.dat", err, sizeof err) == 0, "again: %s",
          err);
    CHECK(strstr(err, "already exists and will be overwritten") != NULL, "overwrite warning: %s",
          err);

    /* convert with the imatrix; the GGUF alone generates */
    CHECK(run_sdc("-M convert " MODELS " --type q4_0 --imat-in a.dat -o q4.gguf -v", err,
                  sizeof err) == 0,
          "convert q4_0: %s", err);
    CHECK(strstr(err, "with importances") != NULL, "imatrix used: %s", err);
    CHECK(run_sdc("-m q4.gguf " GEN "-o q4.png", err, sizeof err) == 0, "generate from GGUF: %s",
          err);
    /* F16 convert == --type f16 on load */
    CHECK(run_sdc("-M convert " MODELS " --type f16 -o f16.gguf", err, sizeof err) == 0,
          "convert f16: %s", err);
    CHECK(run_sdc("-m f16.gguf " GEN "-o f16.png", err, sizeof err) == 0, "gen f16: %s", err);
    CHECK(run_sdc(MODELS " --type f16 " GEN "-o f16_load.png", err, sizeof err) == 0,
          "gen --type f16: %s", err);
    CHECK(same_png("f16.png", "f16_load.png"), "converted file == converted on load");
    CHECK(run_sdc("-M convert " MODELS " --type f16 -o f16.safetensors", err, sizeof err) == 0,
          "convert to safetensors: %s", err);

    /* errors: one line each */
    CHECK(run_sdc("-M convert " MODELS " --type q4_0 -o x.safetensors", err, sizeof err) == 1 &&
              strstr(err, "safetensors cannot hold"),
          "quantised safetensors refused: %s", err);
    CHECK(run_sdc("-M convert " MODELS " --tensor-type-rules 'a(=q4_0' -o x.gguf", err,
                  sizeof err) == 1 &&
              strstr(err, "bad regex"),
          "bad regex: %s", err);
    snprintf(cmd, sizeof cmd, "printf 'junk' > '%s/bad.dat'", g_dir);
    CHECK(system(cmd) == 0, "write bad.dat");
    CHECK(run_sdc("-M convert " MODELS " --type q4_0 --imat-in bad.dat -o x.gguf", err,
                  sizeof err) == 1 &&
              strstr(err, "bad.dat"),
          "malformed imatrix: %s", err);
    CHECK(run_sdc("-M convert -o x.gguf", err, sizeof err) == 1, "no input: %s", err);

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0, "cleanup");
    TEST_MAIN_END();
}
