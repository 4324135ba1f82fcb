/* Qwen-Image-Edit end to end through the public API against sd.cpp's own PNGs
 * (tests/data/qwen_edit: sd-cli 97d29908 on random-weight checkpoints; README there).
 * e1: Edit (2509-style: the plain DiT) with one 240x180 -r image; e2: Edit 2511 (the DiT with
 * __index_timestep_zero__, so zero_cond_t) with two -r images and a negative prompt; e3: e1's
 * setup with --img-cfg-scale 1.6 (the reference-free third branch); e4: two -r images with
 * --ref-image-args (fixed reference index, longest-side vision resize, a smaller VAE input);
 * e2m: e2 from the plain DiT with --model-args qwen_image_zero_cond_t=true (same image); e1v: e1
 * with --llm_vision as llama.cpp's mmproj GGUF (tests/golden/make_qwen_mmproj.py; same image). The
 * checkpoints are not stored: the test looks in $SDC_QWEN_IMAGE_DIR (default ../qwen_ckpt
 * beside the checkout) for make_qwen_image_random.py's DiT and VAE and make_qwen_edit_random.py's
 * LLM with vision tower and 2511 DiT, and is skipped without them. Every pixel and channel
 * must be within 3/255. A case takes two to five minutes on 2 cores: $SDC_QWEN_EDIT_CASES
 * picks them ("e1,e2", "all"; default e1). */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/image.h"
#include "sdc.h"
#include "qwen_ckpt.h"
#include "sdcpp_png.h"
#include "test_util.h"

#define DATA SDC_SOURCE_DIR "/tests/data/qwen_edit"

static bool wanted(const char *id) {
    return qwen_case_wanted("SDC_QWEN_EDIT_CASES", "e1", id);
}

static bool have(const char *dir, const char *file, char *buf, size_t n) {
    return qwen_find_ckpt(dir, file, buf, n);
}

/* One case: its own context (the DiT differs between cases), every -r image as sd-cli
 * loads it (RGB), the image compared with png/ID.png. dit_file / model_args (NULL: the
 * run's / none) and label (NULL: the id) make variants of a run. Returns 1 when it ran. */
static int run_case(const cJSON *run, const char *dir, const char *llm, const char *dit_file,
                    const char *model_args, const char *llm_vision, const char *label) {
    const char *id = label ? label : jstr(run, "id");
    char dit[1024], vae[1024];
    if (!have(dir, dit_file ? dit_file : jstr(run, "dit"), dit, sizeof dit) ||
        !have(dir, jstr(run, "vae"), vae, sizeof vae)) {
        CHECK(false, "%s: checkpoints missing in %s", id, dir);
        return 0;
    }
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.llm_path = llm;
    cp.vae_path = vae;
    cp.n_threads = 2;
    cp.flow_shift = (float)jnum(run, "flow_shift");
    cp.model_args = model_args;
    cp.llm_vision_path = llm_vision;
    sdc_context *ctx = NULL;
    CHECK(sdc_context_create(&cp, &ctx) == SDC_OK, "%s: context: %s", id, sdc_last_error());
    if (!ctx) return 0;
    printf("loaded: %s\n", sdc_context_describe(ctx));
    sdc_image refs[8] = {{0}};
    const cJSON *names = cJSON_GetObjectItemCaseSensitive(run, "ref_images");
    int n_refs = cJSON_GetArraySize(names), ok = n_refs > 0 && n_refs <= 8;
    for (int i = 0; ok && i < n_refs; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", DATA, cJSON_GetArrayItem(names, i)->valuestring);
        ok = sdc_image_load(path, &refs[i]) == SDC_OK;
        CHECK(ok, "%s: load %s: %s", id, path, sdc_last_error());
    }
    sdc_generate_params p;
    sdcpp_params_from_run(run, &p);
    p.ref_images = refs;
    p.n_ref_images = n_refs;
    sdc_image *img = NULL;
    int n = 0;
    sdc_status s = ok ? sdc_generate_image(ctx, &p, &img, &n) : SDC_ERR_INVALID_ARG;
    CHECK(!ok || (s == SDC_OK && n == 1), "%s: generate: %s", id, sdc_last_error());
    if (ok && s == SDC_OK && n == 1) {
        char png[1024];
        snprintf(png, sizeof png, "%s/png/%s.png", DATA, jstr(run, "id"));
        printf("%s (%s, %d -r, %d steps, seed %lld, cfg %.1f, img cfg %.1f, ref args '%s'): ", id,
               jstr(run, "variant"), n_refs, p.steps, (long long)p.seed, (double)p.cfg_scale,
               (double)p.img_cfg_scale, p.ref_image_args);
        compare(id, img, png, 3, 0);
    }
    sdc_free_images(img, n);
    for (int i = 0; i < n_refs && i < 8; i++) sdc_image_free(&refs[i]);
    sdc_context_free(ctx);
    return ok && s == SDC_OK;
}

int main(void) {
#ifdef SDC_SANITIZED
    printf("SKIP: Qwen-Image-Edit runs with full-width models are too slow under the "
           "sanitizers\n");
    return 77;
#endif
    const char *dir = getenv("SDC_QWEN_IMAGE_DIR");
    if (!dir) dir = SDC_SOURCE_DIR "/../qwen_ckpt";
    char llm_file[1024], llm[1024];
    if (!have(dir, "qwen25vl_vl_llm_1001.safetensors", llm_file, sizeof llm_file)) {
        printf("SKIP: the Qwen-Image-Edit checkpoints are not there (make_qwen_image_random.py and "
               "tests/golden/make_qwen_edit_random.py weights --seed 1001 --out-dir DIR; "
               "SDC_QWEN_IMAGE_DIR=DIR)\n");
        return 77;
    }
    /* the golden set's stand-in tokenizer plus the 3 merges that make "Picture" one token
     * as in Qwen2's */
    if (!qwen_llm_with_tokenizer("qwen_edit_llm", DATA "/tokenizer", llm_file, llm, sizeof llm))
        return 77;
    char *text = (char *)t_read_file(DATA "/runs.json", NULL);
    CHECK(text != NULL, "runs.json readable");
    if (!text) TEST_MAIN_END();
    cJSON *root = cJSON_Parse(text);
    const cJSON *run;
    int expected = 0, compared = 0;
    cJSON_ArrayForEach(run, cJSON_GetObjectItemCaseSensitive(root, "runs")) {
        if (jnum(run, "rc") != 0) continue;
        if (wanted(jstr(run, "id"))) {
            expected++;
            compared += run_case(run, dir, llm, NULL, NULL, NULL, NULL);
        }
        /* e2m: e2 with the plain DiT (the 2511 file's tensors without its marker) and
         * --model-args qwen_image_zero_cond_t=true, sd.cpp's way for such files: e2's image */
        if (!strcmp(jstr(run, "id"), "e2") && wanted("e2m")) {
            expected++;
            compared += run_case(run, dir, llm, "qwen_image_dit_1001.safetensors",
                                 "qwen_image_zero_cond_t=true", NULL, "e2m");
        }
        /* e1v: e1 with the language model alone (--llm) and the vision tower as llama.cpp's
         * mmproj GGUF (--llm_vision), tests/golden/make_qwen_mmproj.py's split of the same
         * weights: e1's image */
        if (!strcmp(jstr(run, "id"), "e1") && wanted("e1v")) {
            char only[1024], mmproj[1024], llm2[1024];
            expected++;
            if (!have(dir, "qwen25vl_llm_only_1001.safetensors", only, sizeof only) ||
                !have(dir, "qwen25vl_mmproj_1001.gguf", mmproj, sizeof mmproj) ||
                !qwen_llm_with_tokenizer("qwen_edit_llm_only", DATA "/tokenizer", only, llm2,
                                         sizeof llm2)) {
                CHECK(false, "e1v: run tests/golden/make_qwen_mmproj.py --ckpt-dir %s first", dir);
                continue;
            }
            compared += run_case(run, dir, llm2, NULL, NULL, mmproj, "e1v");
        }
    }
    CHECK(expected > 0, "no case picked by SDC_QWEN_EDIT_CASES");
    CHECK(compared == expected, "compared %d of %d Edit runs", compared, expected);
    cJSON_Delete(root);
    free(text);
    TEST_MAIN_END();
}
