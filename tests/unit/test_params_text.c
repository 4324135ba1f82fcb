/* The A1111 "parameters" text. Reference: the text sd-cli itself wrote into the golden
 * PNGs (golden/minit2i/png, commands in runs.tsv). Every field we write must
 * appear there with the same value and in the same order; fields sd-cli writes that we
 * do not (the SDCPP json) are listed. Then the fields the golden runs do not exercise
 * (custom sigmas, img2img, inpainting, --type, --flow-shift, clip skip, further model
 * files), against sd-cli's rules (examples/common/common.cpp get_image_params) and A1111's
 * names written out by hand, and the text of a real context. */
#include <math.h>
#include <png.h>

#include "pipeline/params_text.h"
#include "test_util.h"

#define MAX_FIELDS 64

typedef struct fields {
    char prompt[512], negative[512];
    bool has_negative;
    int n;
    char key[MAX_FIELDS][64], value[MAX_FIELDS][512];
} fields;

/* Splits "prompt\n[Negative prompt: x\n]k: v, k: v, ..." (an SDCPP json tail is cut off). */
static bool split_fields(const char *text, fields *f) {
    memset(f, 0, sizeof *f);
    const char *nl = strchr(text, '\n');
    if (!nl) return false;
    snprintf(f->prompt, sizeof f->prompt, "%.*s", (int)(nl - text), text);
    const char *rest = nl + 1;
    if (!strncmp(rest, "Negative prompt: ", 17)) {
        nl = strchr(rest, '\n');
        if (!nl) return false;
        snprintf(f->negative, sizeof f->negative, "%.*s", (int)(nl - rest - 17), rest + 17);
        f->has_negative = true;
        rest = nl + 1;
    }
    char line[4096];
    snprintf(line, sizeof line, "%s", rest);
    char *json = strstr(line, ", SDCPP: ");
    if (json) *json = '\0';
    for (char *p = line; p && *p && f->n < MAX_FIELDS;) {
        char *next = strstr(p, ", ");
        if (next) *next = '\0';
        char *colon = strstr(p, ": ");
        if (!colon) return false;
        snprintf(f->key[f->n], sizeof f->key[0], "%.*s", (int)(colon - p), p);
        snprintf(f->value[f->n], sizeof f->value[0], "%s", colon + 2);
        f->n++;
        p = next ? next + 2 : NULL;
    }
    return true;
}

static int find_key(const fields *f, const char *key) {
    for (int i = 0; i < f->n; i++)
        if (!strcmp(f->key[i], key)) return i;
    return -1;
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

/* Value of `--flag X` in a shell command (no quoting needed for these). */
static void command_value(const char *cmd, const char *flag, char *out, size_t n) {
    out[0] = '\0';
    const char *p = strstr(cmd, flag);
    if (!p) return;
    p += strlen(flag);
    while (*p == ' ') p++;
    size_t k = strcspn(p, " ");
    snprintf(out, n, "%.*s", (int)k, p);
}

static void test_against_sdcli(void) {
    FILE *f = fopen(GOLDEN("minit2i/runs.tsv"), "r");
    CHECK(f != NULL, "cannot open runs.tsv");
    if (!f) return;
    char line[4096];
    int runs = 0, fields_compared = 0;
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (header) {
            header = false;
            continue;
        }
        line[strcspn(line, "\r\n")] = '\0';
        char *col[13];
        int nc = 0;
        for (char *p = line; nc < 13;) {
            col[nc++] = p;
            char *tab = strchr(p, '\t');
            if (!tab) break;
            *tab = '\0';
            p = tab + 1;
        }
        if (nc < 13 || strcmp(col[10], "0") != 0) continue; /* runs without a PNG */
        char prompt[512];
        snprintf(prompt, sizeof prompt, "%s", col[1] + (col[1][0] == '"'));
        size_t pl = strlen(prompt);
        if (pl && prompt[pl - 1] == '"') prompt[pl - 1] = '\0';

        sdc_generate_params p;
        sdc_generate_params_init(&p); /* guidance unset: sd-cli writes its 3.5 */
        p.prompt = prompt;
        p.negative_prompt = "";
        p.width = atoi(col[2]);
        p.height = atoi(col[3]);
        p.steps = atoi(col[4]);
        p.cfg_scale = strtof(col[5], NULL);
        p.sampling_method = col[6];
        p.scheduler = "discrete"; /* sd-cli's resolved default for this model */
        p.rng = col[8];
        p.eta = (runs % 2) ? INFINITY : NAN; /* both mean "not set" (sd-cli: inf) */
        p.batch_count = 1;
        char dit[256], t5[256];
        command_value(col[12], "--diffusion-model", dit, sizeof dit);
        command_value(col[12], "--t5xxl", t5, sizeof t5);
        sdc_params_text_models models;
        memset(&models, 0, sizeof models);
        models.model = "";
        models.t5xxl = t5;
        models.diffusion_model = dit;
        char *ours = sdc_params_text_format_models(&models, &p, strtoll(col[7], NULL, 10));

        char png_path[512];
        snprintf(png_path, sizeof png_path, "%s/%.16s.png", GOLDEN("minit2i/png"), col[0]);
        char *theirs = png_parameters(png_path);
        CHECK(ours && theirs, "%s: texts missing", col[0]);
        if (!ours || !theirs) {
            free(ours);
            free(theirs);
            continue;
        }
        fields a, b;
        CHECK(split_fields(ours, &a), "%s: cannot split our text: %s", col[0], ours);
        CHECK(split_fields(theirs, &b), "%s: cannot split sd-cli text", col[0]);
        CHECK(!strcmp(a.prompt, b.prompt), "%s: prompt '%s' vs '%s'", col[0], a.prompt, b.prompt);
        CHECK(a.has_negative == b.has_negative, "%s: negative prompt line", col[0]);
        int last_pos = -1;
        for (int i = 0; i < a.n; i++) {
            if (!strcmp(a.key[i], "Version")) {
                CHECK(!strncmp(a.value[i], "sdc ", 4) && i == a.n - 1, "Version field: %s",
                      a.value[i]);
                continue;
            }
            int j = find_key(&b, a.key[i]);
            CHECK(j >= 0, "%s: sd-cli has no field '%s'", col[0], a.key[i]);
            if (j < 0) continue;
            CHECK(!strcmp(a.value[i], b.value[j]), "%s: %s = '%s', sd-cli '%s'", col[0], a.key[i],
                  a.value[i], b.value[j]);
            CHECK(j > last_pos, "%s: field '%s' out of sd-cli's order", col[0], a.key[i]);
            last_pos = j;
            fields_compared++;
        }
        if (runs == 0) {
            printf("sd-cli fields we leave out:");
            for (int j = 0; j < b.n; j++)
                if (find_key(&a, b.key[j]) < 0) printf(" %s", b.key[j]);
            printf(" (and the SDCPP json)\nours (%s): %s\n", col[0], ours);
        }
        runs++;
        free(ours);
        free(theirs);
    }
    fclose(f);
    CHECK(runs >= 12, "only %d golden runs compared", runs);
    printf("compared with sd-cli's PNG text: %d runs, %d fields, all equal in value and order\n",
           runs, fields_compared);
}

/* Fields that the golden runs do not exercise, against sd-cli's rules written out. */
static void test_optional_fields(void) {
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a dog";
    p.negative_prompt = "blurry, dark";
    p.width = 512;
    p.height = 256;
    p.steps = 20;
    p.cfg_scale = 7.5f;
    p.sampling_method = "euler_a";
    p.scheduler = NULL;
    p.rng = NULL;
    p.sampler_rng = "cpu";
    p.eta = 1.0f;
    char *t = sdc_params_text_format("model.safetensors", &p, -5);
    char want[512];
    snprintf(want, sizeof want,
             "a dog\nNegative prompt: blurry, dark\nSteps: 20, CFG scale: 7.500000, Guidance: "
             "3.500000, Eta: "
             "1.000000, Seed: -5, Size: 512x256, Model: model.safetensors, RNG: cuda, Sampler "
             "RNG: cpu, Sampler: euler_a, Version: sdc %s",
             sdc_version());
    CHECK(t && !strcmp(t, want), "optional fields:\n got: %s\nwant: %s", t ? t : "(null)", want);
    free(t);

    /* no sampler known: no Sampler field; NULL prompt is an empty line */
    p.prompt = NULL;
    p.negative_prompt = NULL;
    p.sampling_method = NULL;
    p.sampler_rng = NULL;
    p.rng = "cpu";
    t = sdc_params_text_format(NULL, &p, 1);
    snprintf(want, sizeof want,
             "\nSteps: 20, CFG scale: 7.500000, Guidance: 3.500000, Eta: 1.000000, Seed: 1, Size: "
             "512x256, Model: , "
             "RNG: cpu, Version: sdc %s",
             sdc_version());
    CHECK(t && !strcmp(t, want), "defaults:\n got: %s\nwant: %s", t ? t : "(null)", want);
    free(t);
    CHECK(sdc_params_text_format("m", NULL, 0) == NULL, "NULL params must give NULL");

    /* a long prompt grows the buffer */
    char *big = malloc(100001);
    memset(big, 'x', 100000);
    big[100000] = '\0';
    p.prompt = big;
    t = sdc_params_text_format("m", &p, 1);
    CHECK(t && strlen(t) > 100000 && !strncmp(t, big, 100000) && t[100000] == '\n', "long prompt");
    free(t);
    free(big);
}

/* What reproducing an image needs beyond the golden runs' fields. */
static void test_reproduction_fields(void) {
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = "a cat";
    p.width = p.height = 64;
    p.steps = 2;
    p.cfg_scale = 6.0f;
    p.seed = 7;
    p.sampling_method = "euler";
    p.scheduler = "karras";
    p.rng = "cpu";
    p.guidance = 4.0f;
    p.clip_skip = 2;
    float sig[3] = {1.0f, 0.53125f, 0.0f};
    p.sigmas = sig;
    p.n_sigmas = 3;
    uint8_t px[3] = {0};
    sdc_image img = {1, 1, 3, px, 0};
    p.init_image = &img;
    p.mask_image = &img;
    p.strength = 0.6f;
    sdc_params_text_models m;
    memset(&m, 0, sizeof m);
    m.model = "full.gguf";
    m.clip_l = "clip_l.st";
    m.t5xxl = "t5.st";
    m.llm = "qwen.gguf";
    m.diffusion_model = "dit.st";
    m.vae = "vae.st";
    m.weight_type = "q8_0";
    m.has_flow_shift = true;
    m.flow_shift = 3.0f;
    char *t = sdc_params_text_format_models(&m, &p, 7);
    char want[1024];
    /* sd-cli: custom sigmas replace the scheduler, "%.4f" each; TE files in the order
     * clip_l, clip_g, t5xxl, llm, llm_vision; VAE after Unet; Clip skip after that */
    snprintf(want, sizeof want,
             "a cat\nSteps: 2, CFG scale: 6.000000, Guidance: 4.000000, Eta: inf, Seed: 7, Size: "
             "64x64, Model: full.gguf, RNG: cpu, Sampler: euler, Custom Sigmas: [1.0000, "
             "0.5312, 0.0000], TE: clip_l.st, TE: t5.st, TE: qwen.gguf, Unet: dit.st, VAE: "
             "vae.st, Clip skip: 2, Denoising strength: 0.600000, Mask: yes, Weight type: q8_0, "
             "Flow shift: 3.000000, Version: sdc %s",
             sdc_version());
    CHECK(t && !strcmp(t, want), "reproduction fields:\n got: %s\nwant: %s", t ? t : "(null)",
          want);
    printf("all fields: %s\n", t ? t : "(null)");
    free(t);
    /* not set: no Custom Sigmas (the scheduler instead), no img2img fields, no type/shift */
    p.sigmas = NULL;
    p.n_sigmas = 0;
    p.init_image = p.mask_image = NULL;
    p.clip_skip = -1;
    memset(&m, 0, sizeof m);
    t = sdc_params_text_format_models(&m, &p, 7);
    CHECK(t && strstr(t, "Sampler: euler karras, Version") && !strstr(t, "Denoising") &&
              !strstr(t, "Mask") && !strstr(t, "Weight type") && !strstr(t, "Flow shift") &&
              !strstr(t, "Clip skip"),
          "unset fields left out: %s", t ? t : "(null)");
    free(t);
}

/* A real context records --type and --flow-shift. */
static void test_context_text(void) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = GOLDEN("minit2i/minit2i_a_dit_f32.safetensors");
    cp.t5xxl_path = GOLDEN("minit2i/minit2i_a_t5_f32.safetensors");
    cp.weight_type = sdc_weight_type_from_name("f16");
    cp.flow_shift = 3.0f;
    cp.n_threads = 1;
    sdc_context *ctx = NULL;
    sdc_status st = sdc_context_create(&cp, &ctx);
    CHECK(st == SDC_OK, "context: %s", sdc_last_error());
    if (st != SDC_OK) return;
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    char *t = sdc_generation_parameters_text(ctx, &p, 42);
    CHECK(t && strstr(t, ", Weight type: f16, Flow shift: 3.000000, Version: sdc ") &&
              strstr(t, "Unet: minit2i_a_dit_f32.safetensors"),
          "context text: %s", t ? t : "(null)");
    printf("context text: %s\n", t ? t : "(null)");
    free(t);
    p.flow_shift = 2.5f; /* a request's own shift (the server's sample_params.flow_shift) */
    t = sdc_generation_parameters_text(ctx, &p, 42);
    CHECK(t && strstr(t, ", Flow shift: 2.500000, "), "the request's flow shift: %s",
          t ? t : "(null)");
    free(t);
    sdc_context_free(ctx);
}

int main(void) {
    test_against_sdcli();
    test_optional_fields();
    test_reproduction_fields();
    test_context_text();
    TEST_MAIN_END();
}
