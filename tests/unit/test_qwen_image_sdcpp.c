/* Qwen-Image end to end through the public API against sd.cpp's own PNGs (golden
 * qwen_image/: sd-cli 97d29908 on the random-weight checkpoints of
 * ../shared/tools/make_qwen_image_random.py, seed 1001; README there). The checkpoints (5.4
 * GB) are not stored and not generated here: the test looks for them in
 * $SDC_QWEN_IMAGE_DIR (DiT + VAE; default ../qwen_ckpt beside the checkout) and
 * $SDC_QWEN_LLM_DIR (the LLM; default ../qwen_llm_ckpt, or $SDC_QWEN_IMAGE_DIR when that is
 * set) and is skipped without them. The golden stand-in Qwen2 tokenizer is linked next to the LLM
 * (the family reads tokenizer/ beside the --llm file). Every case must be within 3/255 per
 * pixel and channel. The Layered cases (l1: 1 layer, l2: 3 layers with a negative prompt and a
 * 320x240 -r image) compare every RGBA image sd-cli wrote (OUT_0..OUT_N), alpha included. Each
 * case takes one to four minutes on 2 cores: $SDC_QWEN_CASES picks them ("a2,l1,l2", "all";
 * default a1). */
#include <cjson/cJSON.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/image.h"
#include "sdc.h"
#include "qwen_ckpt.h"
#include "sdcpp_png.h"
#include "test_util.h"

static bool find_ckpt(const char *dir, const char *file, char *buf, size_t n) {
    return qwen_find_ckpt(dir, file, buf, n);
}

static bool wanted(const char *id) {
    return qwen_case_wanted("SDC_QWEN_CASES", "a1", id);
}

static int run_plain(const cJSON *runs, const char *dit, const char *llm, const char *vae) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.llm_path = llm;
    cp.vae_path = vae;
    cp.n_threads = 2;
    cp.flow_shift = 3.0f; /* every run's --flow-shift */
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "context: %s", sdc_last_error());
    if (!ctx) return 0;
    printf("loaded: %s\n", sdc_context_describe(ctx));
    int compared = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) {
        const char *id = jstr(run, "id");
        if (strcmp(jstr(run, "variant"), "plain") || jnum(run, "rc") != 0 || !wanted(id)) continue;
        sdc_generate_params p;
        sdcpp_params_from_run(run, &p);
        sdc_image *img = NULL;
        int n = 0;
        sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
        CHECK(s == SDC_OK && n == 1, "%s: generate: %s", id, sdc_last_error());
        if (s == SDC_OK) {
            char png[1024];
            snprintf(png, sizeof png, "%s", GOLDEN("qwen_image/png/"));
            strncat(png, id, sizeof png - strlen(png) - 5);
            strcat(png, ".png");
            printf("%s (plain, %d steps, seed %lld, cfg %.1f): ", id, p.steps, (long long)p.seed,
                   (double)p.cfg_scale);
            compare(id, img, png, 3, 0);
            compared++;
        }
        sdc_free_images(img, n);
    }
    sdc_context_free(ctx);
    return compared;
}

/* sd-cli's RGBA PNG against ours: every channel within tol; the alpha must vary (a constant
 * alpha would mean the 4th channel was dropped or faked). */
static void compare_rgba(const char *id, const sdc_image *img, const char *png_path, int tol) {
    png_image pi;
    memset(&pi, 0, sizeof pi);
    pi.version = PNG_IMAGE_VERSION;
    uint8_t *ref = NULL;
    if (png_image_begin_read_from_file(&pi, png_path)) {
        pi.format = PNG_FORMAT_RGBA;
        ref = malloc(PNG_IMAGE_SIZE(pi));
        if (ref && !png_image_finish_read(&pi, NULL, ref, 0, NULL)) {
            free(ref);
            ref = NULL;
        }
    }
    CHECK(ref != NULL, "read %s as RGBA", png_path);
    if (!ref) return;
    CHECK(img->channels == 4, "%s: %u channels, sd.cpp's Layered images are RGBA", id,
          img->channels);
    CHECK(pi.width == img->width && pi.height == img->height, "%s: %ux%u, sd.cpp's is %ux%u", id,
          img->width, img->height, pi.width, pi.height);
    if (img->channels == 4 && pi.width == img->width && pi.height == img->height) {
        long total = (long)pi.width * pi.height * 4;
        int maxd = 0, amin = 255, amax = 0;
        double sum = 0;
        for (long i = 0; i < total; i++) {
            int d = abs((int)img->data[i] - (int)ref[i]);
            maxd = d > maxd ? d : maxd;
            sum += d;
            if (i % 4 == 3) {
                amin = img->data[i] < amin ? img->data[i] : amin;
                amax = img->data[i] > amax ? img->data[i] : amax;
            }
        }
        printf("%s %ux%u RGBA: max |diff| %d/255 (tolerance %d), mean %.3f; alpha %d..%d\n", id,
               pi.width, pi.height, maxd, tol, sum / total, amin, amax);
        CHECK(maxd <= tol, "%s: max pixel difference %d > %d", id, maxd, tol);
        CHECK(amax > amin, "%s: the alpha channel is constant (%d)", id, amin);
    }
    free(ref);
}

/* One Layered case: sd-cli's -r image (RGB: its alpha dropped, as sd-cli's loader does),
 * every output image compared. Returns 1 when it ran. */
static int run_layered_case(sdc_context *ctx, const cJSON *run) {
    const char *id = jstr(run, "id");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", GOLDEN("qwen_image"), jstr(run, "ref_image"));
    sdc_image ref = {0};
    CHECK(sdc_image_load(path, &ref) == SDC_OK, "%s: load %s: %s", id, path, sdc_last_error());
    if (!ref.data) return 0;
    sdc_generate_params p;
    sdcpp_params_from_run(run, &p);
    p.qwen_image_layers = (int)jnum(run, "qwen_image_layers");
    p.ref_images = &ref;
    p.n_ref_images = 1;
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(run, "outputs");
    int expected = cJSON_GetArraySize(outs);
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = sdc_generate_image(ctx, &p, &img, &n);
    CHECK(s == SDC_OK && n == expected, "%s: generate: %d images (sd.cpp: %d): %s", id, n, expected,
          s == SDC_OK ? "" : sdc_last_error());
    printf("%s (Layered, %d layers, %d steps, seed %lld, cfg %.1f, ref %ux%u):\n", id,
           p.qwen_image_layers, p.steps, (long long)p.seed, (double)p.cfg_scale, ref.width,
           ref.height);
    for (int i = 0; s == SDC_OK && i < n && i < expected; i++) {
        char png[1024], name[64];
        snprintf(png, sizeof png, "%s/%s", GOLDEN("qwen_image"),
                 jstr(cJSON_GetArrayItem(outs, i), "file"));
        snprintf(name, sizeof name, "%s_%d", id, i);
        compare_rgba(name, &img[i], png, 3);
    }
    sdc_free_images(img, n);
    sdc_image_free(&ref);
    return s == SDC_OK;
}

static int run_layered(const cJSON *runs, const char *dir, const char *llm) {
    int want = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) want +=
        !strcmp(jstr(run, "variant"), "layered") && jnum(run, "rc") == 0 && wanted(jstr(run, "id"));
    if (!want) return 0;
    char dit[1024], vae[1024];
    if (!find_ckpt(dir, "qwen_image_layered_dit_1001.safetensors", dit, sizeof dit) ||
        !find_ckpt(dir, "qwen_image_layered_vae_1001.safetensors", vae, sizeof vae)) {
        CHECK(false, "the Layered checkpoints are missing in %s", dir);
        return 0;
    }
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.llm_path = llm;
    cp.vae_path = vae;
    cp.n_threads = 2;
    cp.flow_shift = 3.0f;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "Layered context: %s", sdc_last_error());
    if (!ctx) return 0;
    printf("loaded: %s\n", sdc_context_describe(ctx));
    int compared = 0;
    cJSON_ArrayForEach(run, runs) {
        if (strcmp(jstr(run, "variant"), "layered") || jnum(run, "rc") != 0 ||
            !wanted(jstr(run, "id")))
            continue;
        compared += run_layered_case(ctx, run);
    }
    sdc_context_free(ctx);
    return compared;
}

int main(void) {
#ifdef SDC_SANITIZED
    printf("SKIP: Qwen-Image runs with full-width text encoder and DiT are too slow under the "
           "sanitizers\n");
    return 77;
#endif
    const char *dir = getenv("SDC_QWEN_IMAGE_DIR");
    const char *llm_dir = getenv("SDC_QWEN_LLM_DIR");
    if (!dir) dir = SDC_SOURCE_DIR "/../qwen_ckpt"; /* beside the checkout, as test_wan_vae */
    if (!llm_dir && !getenv("SDC_QWEN_IMAGE_DIR")) llm_dir = SDC_SOURCE_DIR "/../qwen_llm_ckpt";
    if (!llm_dir) llm_dir = dir;
    char dit[1024], vae[1024], llm_file[1024], llm[1024];
    if (!find_ckpt(dir, "qwen_image_dit_1001.safetensors", dit, sizeof dit) ||
        !find_ckpt(dir, "qwen_image_vae_1001.safetensors", vae, sizeof vae) ||
        !find_ckpt(llm_dir, "qwen25vl_llm_1001.safetensors", llm_file, sizeof llm_file)) {
        printf("SKIP: the Qwen-Image checkpoints are not there (make_qwen_image_random.py "
               "weights --seed 1001 --out-dir DIR; SDC_QWEN_IMAGE_DIR=DIR)\n");
        return 77;
    }
    if (!qwen_llm_with_tokenizer("qwen_image_llm", GOLDEN("qwen_image/tokenizer"), llm_file, llm,
                                 sizeof llm))
        return 77;
    char *text = (char *)t_read_file(GOLDEN("qwen_image/runs.json"), NULL);
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *root = cJSON_Parse(text);
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(root, "runs");
    int expected = 0;
    const cJSON *run;
    cJSON_ArrayForEach(run, runs) expected +=
        !strcmp(jstr(run, "variant"), "plain") && jnum(run, "rc") == 0 && wanted(jstr(run, "id"));
    int layered = 0;
    cJSON_ArrayForEach(run, runs) layered +=
        !strcmp(jstr(run, "variant"), "layered") && jnum(run, "rc") == 0 && wanted(jstr(run, "id"));
    int compared = expected ? run_plain(runs, dit, llm, vae) : 0;
    CHECK(compared == expected, "compared %d of %d plain runs", compared, expected);
    int compared_l = run_layered(runs, dir, llm);
    CHECK(compared_l == layered, "compared %d of %d Layered runs", compared_l, layered);
    CHECK(expected + layered > 0, "no case picked by SDC_QWEN_CASES");
    cJSON_Delete(root);
    free(text);
    TEST_MAIN_END();
}
