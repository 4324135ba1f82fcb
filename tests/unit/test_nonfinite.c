/* Never a silent wrong picture: weights that produce NaN, and a CFG scale that overflows,
 * stop the generation with an error naming the step and the pass (no image). The
 * golden tiny MiniT2I is copied with one NaN poked into a weight. */
#include <math.h>
#include <string.h>

#include "io/safetensors.h"
#include "sdc.h"
#include "test_util.h"

#define DIT GOLDEN("minit2i/minit2i_a_dit_f32.safetensors")
#define T5  GOLDEN("minit2i/minit2i_a_t5_f32.safetensors")
#define TOK GOLDEN("tokenizer/tokenizer.json")

/* Writes a copy of `src` to `dst` with element `index` of tensor `name` set to v. */
static int poke(const char *src, const char *dst, const char *name, long index, float v) {
    size_t size;
    unsigned char *buf = t_read_file(src, &size);
    if (!buf) return -1;
    sdc_st_file *st = NULL;
    int rc = -1;
    if (sdc_st_open_memory(buf, size, src, &st) == SDC_OK) {
        const sdc_st_tensor *t = sdc_st_find(st, name);
        if (t && t->dtype == SDC_ST_F32 && (size_t)(index + 1) * 4 <= t->nbytes) {
            size_t off = (size_t)((const unsigned char *)t->data - buf) + (size_t)index * 4;
            memcpy(buf + off, &v, 4);
            FILE *f = fopen(dst, "wb");
            rc = f && fwrite(buf, 1, size, f) == size ? 0 : -1;
            if (f) fclose(f);
        }
        sdc_st_close(st);
    }
    free(buf);
    return rc;
}

/* Generates with the given files; returns the status and copies the error message. */
static sdc_status run(const char *dit, const char *t5, float cfg, char *msg, size_t msg_size) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.t5xxl_path = t5;
    cp.t5_tokenizer_path = TOK;
    cp.n_threads = 1;
    sdc_context *ctx = NULL;
    sdc_status s = sdc_context_create(&cp, &ctx);
    sdc_image *img = NULL;
    int n = -1;
    if (s == SDC_OK) {
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        p.prompt = "a cat";
        p.width = p.height = 32;
        p.steps = 3;
        p.cfg_scale = cfg;
        p.rng = "cpu";
        s = sdc_generate_image(ctx, &p, &img, &n);
        CHECK(s == SDC_OK ? (img && n == 1) : (!img && n == 0),
              "on failure no image is returned (n = %d)", n);
    }
    snprintf(msg, msg_size, "%s", sdc_last_error());
    sdc_free_images(img, n);
    sdc_context_free(ctx);
    return s;
}

static void expect_error(const char *what, sdc_status s, const char *msg, const char *needle) {
    printf("%s: status %s, message: %s\n", what, sdc_status_string(s), msg);
    CHECK(s == SDC_ERR_FORMAT, "%s: expected a format error, got %s", what, sdc_status_string(s));
    CHECK(strstr(msg, needle) != NULL, "%s: message lacks '%s'", what, needle);
    CHECK(strstr(msg, "non-finite") != NULL, "%s: message lacks 'non-finite'", what);
}

int main(void) {
    char msg[1024];
    sdc_status s = run(DIT, T5, 6.0f, msg, sizeof msg);
    CHECK(s == SDC_OK, "the unmodified model generates: %s", msg);

    const char *dit_nan = SDC_BINARY_DIR "/nonfinite_dit.safetensors";
    CHECK(poke(DIT, dit_nan, "model.net.final_layer.linear.weight", 5, NAN) == 0, "write %s",
          dit_nan);
    s = run(dit_nan, T5, 6.0f, msg, sizeof msg);
    expect_error("NaN in the DiT's final layer", s, msg, "step 1 of 3");
    CHECK(strstr(msg, "diffusion model's output") != NULL, "names the model pass");

    const char *t5_nan = SDC_BINARY_DIR "/nonfinite_t5.safetensors";
    CHECK(poke(T5, t5_nan, "encoder.final_layer_norm.weight", 3, INFINITY) == 0, "write %s",
          t5_nan);
    s = run(DIT, t5_nan, 6.0f, msg, sizeof msg);
    expect_error("Inf in the T5's final norm", s, msg, "conditioning");

    s = run(DIT, T5, 1e30f, msg, sizeof msg);
    expect_error("cfg scale 1e30", s, msg, "step ");
    remove(dit_nan);
    remove(t5_nan);
    TEST_MAIN_END();
}
