/* A VAE decode that runs out of memory retries once with tiling (the multi-device issue's
 * auto-fit rule; sdc_tiled_retry, used by the SD first stage). A CPU backend given a scratch
 * budget below what the whole decode plans (but above one tile's) stands for a device short of
 * memory: the plain decode fails with SDC_ERR_NO_MEMORY naming the budget, the retry succeeds
 * and equals the tiled decode on an unbudgeted backend bit for bit, and a budget too small for
 * even a tile still fails with the memory error. Model: the small VAE of tests/data/vae. */
#include "core/backend.h"
#include "models/vae_kl.h"
#include "models/vae_tiling.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(f) SDC_SOURCE_DIR "/tests/data/vae/" f
#define PFX     "first_stage_model."

typedef struct job {
    sdc_vae *m;
    sdc_backend *be;
} job;

static sdc_status decode_fn(void *user, const float *in, int tw, int th, float *out) {
    job *j = user;
    return sdc_vae_decode(j->m, j->be, in, tw, th, out, NULL, NULL);
}

int main(void) {
    (void)st_read_f32;
    st_weights stw;
    sdc_weight_source ws;
    if (st_weights_open(&stw, DATA("vae_kl_tiny.safetensors"), &ws) != 0) {
        fprintf(stderr, "cannot open the tiny VAE: %s\n", sdc_last_error());
        return 1;
    }
    sdc_vae *m = NULL;
    CHECK(sdc_vae_load(&ws, PFX, &m) == SDC_OK, "load: %s", sdc_last_error());
    if (!m) return 1;
    const int zc = sdc_vae_get_config(m)->z_channels, w = 24, h = 16;
    const size_t nz = (size_t)zc * w * h, npx = (size_t)3 * w * 8 * h * 8;
    float *z = malloc(nz * sizeof(float)), *ref = malloc(npx * sizeof(float)),
          *got = malloc(npx * sizeof(float));
    uint32_t seed = 5;
    for (size_t i = 0; i < nz; i++) {
        seed = seed * 1664525u + 1013904223u;
        z[i] = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    sdc_tiling t = {8, 8, 0.25f};
    sdc_backend *free_be = sdc_backend_cpu_create(2), *tight = sdc_backend_cpu_create(2);
    job jf = {m, free_be}, jt = {m, tight};
    CHECK(sdc_tiled_apply(z, zc, w, h, 3, 8, 1, &t, decode_fn, &jf, ref) == SDC_OK,
          "tiled reference decode: %s", sdc_last_error());
    /* the whole decode's scratch, measured on the unbudgeted backend */
    CHECK(decode_fn(&jf, z, w, h, got) == SDC_OK, "whole decode: %s", sdc_last_error());
    size_t whole = sdc_backend_cpu_last_plan(free_be).scratch_bytes;
    CHECK(decode_fn(&jf, z, 8, 8, got) == SDC_OK, "one tile: %s", sdc_last_error());
    size_t tile = sdc_backend_cpu_last_plan(free_be).scratch_bytes +
                  sdc_backend_cpu_last_plan(free_be).work_bytes + 4096;
    printf("scratch: whole %dx%d latent %.2f MiB, one 8x8 tile %.2f MiB\n", w, h, whole / 1048576.0,
           tile / 1048576.0);
    CHECK(tile < whole, "a tile plans less scratch than the whole decode");

    sdc_backend_cpu_set_budget(tight, "cpu0", tile);
    sdc_status s = decode_fn(&jt, z, w, h, got);
    CHECK(s == SDC_ERR_NO_MEMORY && strstr(sdc_last_error(), "budget"),
          "the whole decode under the budget fails for memory: %d '%s'", s, sdc_last_error());
    s = sdc_tiled_retry(z, zc, w, h, 3, 8, 1, &t, decode_fn, &jt, got, "vae decode");
    CHECK(s == SDC_OK, "the retry with tiling succeeds: %s", sdc_last_error());
    if (s == SDC_OK) {
        size_t diff = 0;
        for (size_t i = 0; i < npx; i++) diff += memcmp(&got[i], &ref[i], 4) != 0;
        printf("retry under a %.2f MiB budget: %zu of %zu values differ from the tiled decode\n",
               tile / 1048576.0, diff, npx);
        CHECK(diff == 0, "retry equals the tiled decode");
    }
    sdc_backend_cpu_set_budget(tight, "cpu0", 4096);
    s = sdc_tiled_retry(z, zc, w, h, 3, 8, 1, &t, decode_fn, &jt, got, "vae decode");
    CHECK(s == SDC_ERR_NO_MEMORY, "a budget below one tile still fails for memory: %d '%s'", s,
          sdc_last_error());
    sdc_backend_free(free_be), sdc_backend_free(tight);
    free(z), free(ref), free(got);
    sdc_vae_free(m);
    st_weights_close(&stw);
    TEST_MAIN_END();
}
