/* The sdc program's convert and imatrix flags end to end on the golden tiny MiniT2I:
 * --imat-out during generation writes a file that agrees with a second collection
 * continued through --imat-in (calls add up), -M convert with --imat-in writes a
 * self-contained GGUF (tokenizer embedded) that generates with -m alone, the image from
 * an F16 convert equals the one from --type f16 on load, existing --imat-out files get a
 * warning, and bad inputs fail with one error line. An SD-layout file converts as sd.cpp
 * converts it: its type rule, its dropped tensors, importances of ones (bytes equal to
 * ggml's quantize_q4_K with ones on the golden matrix), the CLIP tokenizer embedded. */
#include <sys/wait.h>
#include <unistd.h>

#include "io/gguf.h"
#include "io/image.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
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

/* A few tensors named as in an SD1 checkpoint; the CLIP fc1 weight is the golden 4x256
 * matrix, so its q4_K bytes can be compared with ggml's uniform-importance bytes. */
static void test_sd_layout(void) {
    sdc_st_file *gold = NULL, *uni = NULL;
    CHECK(sdc_st_open(SDC_GOLDEN_DIR "/gguf/quant_expected.safetensors", &gold) == SDC_OK &&
              sdc_st_open(SDC_SOURCE_DIR "/tests/data/sdconvert/uniform_expected.safetensors",
                          &uni) == SDC_OK,
          "references: %s", sdc_last_error());
    if (!gold || !uni) return;
    static float m[4 * 256], v[256], big[64 * 256], sched[1000];
    sdc_st_to_f32(sdc_st_find(gold, "m4x256.src"), m);
    unsigned long long seed = 11;
    for (int i = 0; i < 64 * 256; i++) big[i] = t_randf(&seed);
    for (int i = 0; i < 256; i++) v[i] = t_randf(&seed);
    for (int i = 0; i < 1000; i++) sched[i] = 1e-3f * (float)i;
    static const struct {
        const char *name;
        int ndim;
        int64_t shape[4];
        const float *data;
        const char *want; /* sd.cpp's type at q4_K, NULL: not written */
    } t[] = {
        {"cond_stage_model.transformer.text_model.encoder.layers.0.mlp.fc1.weight",
         2,
         {4, 256},
         m,
         "q4_K"},
        {"cond_stage_model.transformer.text_model.final_layer_norm.weight", 1, {256}, v, "q4_K"},
        {"cond_stage_model.transformer.text_model.final_layer_norm.bias", 1, {256}, v, "f32"},
        {"cond_stage_model.transformer.text_model.embeddings.token_embedding.weight",
         2,
         {64, 256},
         big,
         "f32"},
        {"model.diffusion_model.time_embed.0.weight", 2, {64, 256}, big, "f32"},
        {"model.diffusion_model.input_blocks.1.1.proj_in.weight", 4, {64, 256, 1, 1}, big, "f32"},
        {"first_stage_model.decoder.conv_out.weight", 4, {4, 64, 8, 8}, big, "f32"},
        {"betas", 1, {1000}, sched, NULL},
        {"alphas_cumprod", 1, {1000}, sched, "f32"},
    };
    int n = (int)(sizeof t / sizeof t[0]);
    char path[600];
    snprintf(path, sizeof path, "%s/sdlike.safetensors", g_dir);
    sdc_st_writer *w;
    CHECK(sdc_st_writer_create(&w) == SDC_OK, "st writer");
    for (int i = 0; i < n; i++)
        sdc_st_writer_add(w, t[i].name, SDC_ST_F32, t[i].ndim, t[i].shape, t[i].data);
    CHECK(sdc_st_writer_write(w, path, NULL, NULL) == SDC_OK, "write: %s", sdc_last_error());
    sdc_st_writer_free(w);
    char err[8192];
    CHECK(run_sdc("-M convert -m sdlike.safetensors --clip-tokenizer " SDC_GOLDEN_DIR
                  "/sd1/tokenizer/vocab.json --type q4_K -o sdlike.gguf",
                  err, sizeof err) == 0,
          "convert sd layout: %s", err);
    CHECK(run_sdc("-M convert -m sdlike.safetensors --clip-tokenizer /nonexistent/vocab.json "
                  "--type q4_K -o bad.gguf",
                  err, sizeof err) == 1 &&
              strstr(err, "nonexistent"),
          "a --clip-tokenizer that fails is the error: %s", err);
    snprintf(path, sizeof path, "%s/sdlike.gguf", g_dir);
    sdc_gguf_file *g = NULL;
    CHECK(sdc_gguf_open(path, &g) == SDC_OK, "open: %s", sdc_last_error());
    if (g) {
        int written = 0;
        for (int i = 0; i < n; i++) {
            const sdc_gguf_tensor *gt = sdc_gguf_find_tensor(g, t[i].name);
            const char *got = gt ? sdc_type_name((sdc_type)gt->type) : NULL;
            written += t[i].want != NULL;
            CHECK(t[i].want ? got && !strcmp(got, t[i].want) : !got, "%s: %s, want %s", t[i].name,
                  got ? got : "absent", t[i].want ? t[i].want : "absent");
        }
        CHECK(sdc_gguf_tensor_count(g) == written, "%d tensors, want %d", sdc_gguf_tensor_count(g),
              written);
        const sdc_gguf_tensor *fc1 = sdc_gguf_find_tensor(g, t[0].name);
        const sdc_st_tensor *want = sdc_st_find(uni, "m4x256.q4_K.ones.q");
        size_t diff = 0;
        for (size_t i = 0; fc1 && want && i < want->nbytes && i < fc1->nbytes; i++)
            diff += ((const uint8_t *)fc1->data)[i] != ((const uint8_t *)want->data)[i];
        CHECK(fc1 && want && fc1->nbytes == want->nbytes && diff == 0,
              "fc1 q4_K: %zu bytes differ from ggml's with importances of ones", diff);
        printf("  sd layout q4_K: %d tensors, fc1 %zu bytes differ from ggml(ones)\n",
               sdc_gguf_tensor_count(g), diff);
        const char *merges = NULL;
        CHECK(sdc_gguf_get_str(g, "tokenizer.clip_l.merges", &merges) == SDC_OK && merges &&
                  !strncmp(merges, "#version: 0.2\n", 14),
              "CLIP merges embedded");
        sdc_gguf_close(g);
    }
    sdc_st_close(gold);
    sdc_st_close(uni);
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

    test_sd_layout();

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    CHECK(system(cmd) == 0, "cleanup");
    TEST_MAIN_END();
}
