/* The Qwen-Image (Wan2.1) VAE against diffusers' AutoencoderKLQwenImage in float64
 * (tests/data/wan_vae, made by tests/golden/gen_wan_vae_ref.py): tiny random RGB (F16 weights) and
 * RGBA (Layered, F32 weights) models in Wan's original names, decode and encode at odd and
 * non-square sizes, posterior sampling and the latent statistics; missing halves, missing or
 * misshapen tensors and bad sizes must give clear errors. With the full-width golden VAEs
 * ($SDC_QWEN_VAE_DIR, default ../qwen_ckpt beside the checkout) also their diffusers outputs
 * (full_ref.safetensors, `gen_wan_vae_ref.py full DIR`), read through the real loader. */
#include <time.h>

#include "core/backend.h"
#include "io/model_loader.h"
#include "models/vae_tiling.h"
#include "models/wan_vae.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/wan_vae/" name

/* Tolerances: about 3x the measured max abs errors of sdc (F32 activations) against the float64
 * reference (outputs have std 0.3 to 0.4): decode 5.2e-6 (rgba; rgb 2.3e-6), moments 9e-7,
 * sampling and latent statistics 4.8e-7 (float rounding of the same formula); full width (F16
 * weights): decode 1.6e-6 (std 0.36), moments 6.9e-6 (std 1.7). */
#define TOL_DEC  1.5e-5
#define TOL_ENC  3e-6
#define TOL_FULL 2e-5

static void compare(const char *what, const float *got, const float *ref, long n, double tol) {
    double err = t_max_abs_diff(got, ref, n);
    double *r = malloc((size_t)n * sizeof *r);
    for (long i = 0; i < n; i++) r[i] = ref[i];
    double rel = t_rel_l2(got, r, n);
    free(r);
    printf("%-40s max abs err %.3g, rel L2 %.3g (tolerance %.2g, %ld values)\n", what, err, rel,
           tol, n);
    CHECK(err <= tol, "%s: max abs err %g > %g", what, err, tol);
}

/* A weight source over st_weights that folds 5-D shapes as the loader does ([O,I,T,H,W] ->
 * ne=[W,H,T,O*I]) and can hide names or misshape one tensor. */
typedef struct wrap {
    st_weights st;
    const char *hide, *misshape;
    sdc_tensor bad;
} wrap;

static sdc_tensor *wrap_find(void *user, const char *name) {
    wrap *w = user;
    if (w->hide && !strncmp(name, w->hide, strlen(w->hide))) return NULL;
    sdc_tensor *t = st_weights_find(&w->st, name);
    if (t && w->misshape && !strcmp(name, w->misshape)) {
        w->bad = *t;
        w->bad.ne[3] += 1;
        return &w->bad;
    }
    return t;
}

static int wrap_open(wrap *w, const char *path, sdc_weight_source *ws) {
    memset(w, 0, sizeof *w);
    sdc_weight_source base;
    if (st_weights_open(&w->st, path, &base) != 0) return -1;
    for (int i = 0; i < w->st.n; i++) {
        const sdc_st_tensor *e = sdc_st_at(w->st.f, i);
        if (e->ndim == 5) {
            w->st.t[i].ne[3] = e->shape[0] * e->shape[1];
            sdc_tensor_set_contiguous_strides(&w->st.t[i]);
        }
    }
    ws->find = wrap_find;
    ws->user = w;
    return 0;
}

static float *get(sdc_st_file *f, const char *k, const char *what, int64_t *n) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", k, what);
    float *p = st_read_f32(f, name, n);
    CHECK(p != NULL, "reference tensor %s missing", name);
    return p;
}

/* Decode and encode cases of one model file against its references. */
static void run_cases(sdc_backend *be, sdc_wan_vae *m, sdc_st_file *f, const char *label) {
    const sdc_wan_vae_config *c = sdc_wan_vae_get_config(m);
    char what[96];
    static const char *dk[2] = {"d0", "d1"};
    static const int dw[2] = {5, 4}, dh[2] = {3, 7};
    for (int i = 0; i < 2; i++) {
        int64_t nz = 0, ni = 0;
        float *z = get(f, dk[i], "z", &nz), *ref = get(f, dk[i], "img", &ni);
        if (!z || !ref || nz != 16 * dw[i] * dh[i] ||
            ni != (int64_t)c->image_channels * nz / 16 * 64) {
            CHECK(0, "%s %s: reference sizes", label, dk[i]);
            free(z), free(ref);
            continue;
        }
        float *img = malloc((size_t)ni * sizeof(float));
        sdc_status s = sdc_wan_vae_decode(m, be, z, dw[i], dh[i], img, NULL, NULL);
        CHECK(s == SDC_OK, "%s decode: %s", label, sdc_last_error());
        snprintf(what, sizeof what, "%s decode %dx%d", label, dw[i], dh[i]);
        if (s == SDC_OK) compare(what, img, ref, (long)ni, TOL_DEC);
        free(z), free(ref), free(img);
    }
    static const char *ek[2] = {"e0", "e1"};
    static const int ew[2] = {48, 24}, eh[2] = {40, 56};
    for (int i = 0; i < 2; i++) {
        int64_t nx = 0, nm = 0, nn = 0;
        float *x = get(f, ek[i], "x", &nx), *ref = get(f, ek[i], "moments", &nm);
        float *noise = get(f, ek[i], "noise", &nn), *rs = get(f, ek[i], "sample", NULL);
        float *rn = get(f, ek[i], "norm", NULL);
        int64_t cells = (int64_t)(ew[i] / 8) * (eh[i] / 8);
        if (!x || !ref || !noise || !rs || !rn || nm != 32 * cells || nn != 16 * cells ||
            nx != (int64_t)c->image_channels * ew[i] * eh[i]) {
            CHECK(0, "%s %s: reference sizes", label, ek[i]);
            free(x), free(ref), free(noise), free(rs), free(rn);
            continue;
        }
        float *mom = malloc((size_t)nm * sizeof(float)), *smp = malloc((size_t)nn * sizeof(float));
        sdc_status s = sdc_wan_vae_encode(m, be, x, ew[i], eh[i], mom, NULL, NULL);
        CHECK(s == SDC_OK, "%s encode: %s", label, sdc_last_error());
        if (s == SDC_OK) {
            snprintf(what, sizeof what, "%s encode %dx%d moments", label, ew[i], eh[i]);
            compare(what, mom, ref, (long)nm, TOL_ENC);
            /* sampling and normalisation from the reference moments: exact but for rounding */
            sdc_wan_vae_sample(ref, noise, 16, cells, smp);
            snprintf(what, sizeof what, "%s sample %dx%d", label, ew[i], eh[i]);
            compare(what, smp, rs, (long)nn, 1.5e-6);
            sdc_wan_vae_latents_from_vae(smp, cells);
            snprintf(what, sizeof what, "%s (sample-mean)/std %dx%d", label, ew[i], eh[i]);
            compare(what, smp, rn, (long)nn, 1.5e-6);
            sdc_wan_vae_latents_to_vae(smp, cells);
            snprintf(what, sizeof what, "%s latent stats round trip", label);
            compare(what, smp, rs, (long)nn, 1.5e-6);
        }
        free(x), free(ref), free(noise), free(rs), free(rn), free(mom), free(smp);
    }
}

typedef struct tile_ctx {
    sdc_wan_vae *m;
    sdc_backend *be;
    int calls;
} tile_ctx;

static sdc_status tile_decode(void *user, const float *in, int tw, int th, float *out) {
    tile_ctx *t = user;
    t->calls++;
    return sdc_wan_vae_decode(t->m, t->be, in, tw, th, out, NULL, NULL);
}

/* The decoder as a tile function of models/vae_tiling (what --vae-tiling runs): a tile as large
 * as the latent is one plain decode, bit for bit; 4-cell tiles on 9x6 run 3x2 tiles. */
static void test_tiling(sdc_backend *be, sdc_wan_vae *m) {
    const int w = 9, h = 6, C = sdc_wan_vae_get_config(m)->image_channels;
    size_t nz = (size_t)16 * w * h, ni = (size_t)C * 64 * w * h;
    float *z = malloc(nz * sizeof(float)), *a = malloc(ni * sizeof(float));
    float *b = malloc(ni * sizeof(float));
    unsigned long long seed = 99;
    for (size_t i = 0; i < nz; i++) z[i] = t_randf(&seed);
    sdc_status s = sdc_wan_vae_decode(m, be, z, w, h, a, NULL, NULL);
    CHECK(s == SDC_OK, "decode 9x6: %s", sdc_last_error());
    tile_ctx tc = {m, be, 0};
    sdc_tiling t;
    s = sdc_tiling_from_flags("32", NULL, 0.5f, w, h, &t);
    if (s == SDC_OK) s = sdc_tiled_apply(z, 16, w, h, C, 8, 1, &t, tile_decode, &tc, b);
    CHECK(s == SDC_OK && tc.calls == 1, "one-tile decode: %s (%d calls)", sdc_last_error(),
          tc.calls);
    double d = t_max_abs_diff(a, b, (long)ni);
    printf("tiled decode, one tile vs plain: max abs diff %.3g\n", d);
    CHECK(d == 0, "one-tile decode differs by %g", d);
    tc.calls = 0;
    s = sdc_tiling_from_flags("4", NULL, 0.5f, w, h, &t);
    if (s == SDC_OK) s = sdc_tiled_apply(z, 16, w, h, C, 8, 1, &t, tile_decode, &tc, b);
    CHECK(s == SDC_OK && tc.calls > 1, "4-cell tiles: %s (%d calls)", sdc_last_error(), tc.calls);
    bool finite = true;
    for (size_t i = 0; i < ni; i++) finite = finite && isfinite(b[i]);
    printf("tiled decode, %d tiles of 4 cells: max abs diff from plain %.3g (seams; not checked)\n",
           tc.calls, t_max_abs_diff(a, b, (long)ni));
    CHECK(finite, "tiled decode finite");
    free(z), free(a), free(b);
}

static void test_model(sdc_backend *be, const char *file, int base, int nrb, int channels) {
    char path[512];
    snprintf(path, sizeof path, DATA("%s"), file);
    wrap w;
    sdc_weight_source ws;
    CHECK(wrap_open(&w, path, &ws) == 0, "open %s: %s", path, sdc_last_error());
    sdc_st_file *f = w.st.f;
    CHECK(sdc_wan_vae_detect(&ws, "") && !sdc_wan_vae_detect(&ws, "vae."), "detect");
    sdc_wan_vae *m = NULL;
    sdc_status s = sdc_wan_vae_load(&ws, "", &m);
    CHECK(s == SDC_OK, "load %s: %s", file, sdc_last_error());
    if (s != SDC_OK) {
        st_weights_close(&w.st);
        return;
    }
    const sdc_wan_vae_config *c = sdc_wan_vae_get_config(m);
    printf("%s: base %d levels %d res %d z %d image channels %d scale %d enc dims %d,%d,%d,%d "
           "dec dims %d,%d,%d,%d\n",
           file, c->base_dim, c->n_levels, c->num_res_blocks, c->z_channels, c->image_channels,
           c->scale, c->enc_dims[0], c->enc_dims[1], c->enc_dims[2], c->enc_dims[3], c->dec_dims[0],
           c->dec_dims[1], c->dec_dims[2], c->dec_dims[3]);
    CHECK(c->base_dim == base && c->n_levels == 4 && c->num_res_blocks == nrb &&
              c->z_channels == 16 && c->image_channels == channels && c->scale == 8 &&
              c->enc_dims[0] == base && c->enc_dims[3] == 4 * base && c->dec_dims[0] == 4 * base &&
              c->dec_dims[3] == base && c->has_encoder && c->has_decoder,
          "%s config detected", file);
    run_cases(be, m, f, channels == 4 ? "rgba" : "rgb");
    if (channels == 3) test_tiling(be, m);

    /* bad sizes */
    float dummy[64] = {0};
    CHECK(sdc_wan_vae_encode(m, be, dummy, 20, 16, dummy, NULL, NULL) == SDC_ERR_INVALID_ARG,
          "encode 20x16 refused");
    CHECK(sdc_wan_vae_decode(m, be, dummy, 0, 4, dummy, NULL, NULL) == SDC_ERR_INVALID_ARG,
          "decode 0x4 refused");
    printf("bad size message: %s\n", sdc_last_error());
    int64_t nz = 0;
    float *z = st_read_f32(f, "d0.z", &nz);
    size_t ni = z ? (size_t)nz / 16 * 64 * channels : 1;
    float *full = malloc(ni * sizeof(float)), *dec = malloc(ni * sizeof(float));
    CHECK(z && sdc_wan_vae_decode(m, be, z, 5, 3, full, NULL, NULL) == SDC_OK, "decode d0");
    sdc_wan_vae_free(m);

    /* decoder only: decode works, encode says why not */
    w.hide = "encoder.";
    m = NULL;
    s = sdc_wan_vae_load(&ws, "", &m);
    CHECK(s == SDC_OK && m && !sdc_wan_vae_get_config(m)->has_encoder, "decoder-only load: %s",
          sdc_last_error());
    if (m) {
        CHECK(sdc_wan_vae_encode(m, be, dummy, 8, 8, dummy, NULL, NULL) == SDC_ERR_UNSUPPORTED,
              "encode without encoder");
        printf("no encoder message: %s\n", sdc_last_error());
        CHECK(z && sdc_wan_vae_decode(m, be, z, 5, 3, dec, NULL, NULL) == SDC_OK, "decode");
        double d = z ? t_max_abs_diff(full, dec, (long)ni) : 1;
        printf("decoder-only model vs full model decode: max abs diff %.3g\n", d);
        CHECK(d == 0, "decoder-only decode differs by %g", d);
        sdc_wan_vae_free(m);
    }
    /* a missing tensor, a misshapen tensor */
    w.hide = "decoder.upsamples.1.residual.6.weight";
    m = NULL;
    s = sdc_wan_vae_load(&ws, "", &m);
    CHECK(s != SDC_OK && !m && strstr(sdc_last_error(), "decoder.upsamples.1.residual.6.weight"),
          "missing tensor named: %s", sdc_last_error());
    printf("missing tensor message: %s\n", sdc_last_error());
    w.hide = NULL;
    w.misshape = "encoder.middle.1.to_qkv.weight";
    s = sdc_wan_vae_load(&ws, "", &m);
    CHECK(s != SDC_OK && !m && strstr(sdc_last_error(), "encoder.middle.1.to_qkv.weight"),
          "misshapen tensor named: %s", sdc_last_error());
    printf("misshapen tensor message: %s\n", sdc_last_error());
    w.misshape = NULL;
    free(z), free(full), free(dec);
    st_weights_close(&w.st);
}

static sdc_tensor *loader_find(void *user, const char *name) {
    return sdc_loader_find(user, name);
}

/* The full-width golden VAEs (F16 as stored) through the real loader, against diffusers. */
static void test_full(sdc_backend *be) {
    const char *dir = getenv("SDC_QWEN_VAE_DIR");
    if (!dir) dir = SDC_SOURCE_DIR "/../qwen_ckpt"; /* beside the checkout, as ../sd1 */
    sdc_st_file *f = NULL;
    if (sdc_st_open(DATA("full_ref.safetensors"), &f) != SDC_OK) {
        printf("full size: no full_ref.safetensors, skipped\n");
        return;
    }
    static const char *files[2] = {"qwen_image_vae_1001.safetensors",
                                   "qwen_image_layered_vae_1001.safetensors"};
    static const char *names[2] = {"rgb", "rgba"};
    for (int k = 0; k < 2; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[k]);
        FILE *fp = fopen(path, "rb");
        if (!fp) {
            printf("full size: %s not found, skipped\n", path);
            continue;
        }
        fclose(fp);
        sdc_loader *l = NULL;
        CHECK(sdc_loader_create(&l) == SDC_OK, "loader");
        sdc_status s = sdc_loader_add_file(l, path, "first_stage_model.");
        CHECK(s == SDC_OK, "full %s: %s", names[k], sdc_last_error());
        sdc_weight_source ws = {loader_find, l};
        sdc_wan_vae *m = NULL;
        if (s == SDC_OK) s = sdc_wan_vae_load(&ws, "first_stage_model.", &m);
        CHECK(s == SDC_OK, "full %s load: %s", names[k], sdc_last_error());
        if (s == SDC_OK) {
            const sdc_wan_vae_config *c = sdc_wan_vae_get_config(m);
            printf("full %s: base %d levels %d res %d z %d image channels %d\n", names[k],
                   c->base_dim, c->n_levels, c->num_res_blocks, c->z_channels, c->image_channels);
            CHECK(c->base_dim == 96 && c->n_levels == 4 && c->num_res_blocks == 2 &&
                      c->z_channels == 16 && c->image_channels == 3 + k,
                  "full %s config", names[k]);
            int64_t nz = 0, ni = 0, nx = 0, nm = 0;
            float *z = get(f, names[k], "z", &nz), *ref = get(f, names[k], "img", &ni);
            float *x = get(f, names[k], "x", &nx), *rm = get(f, names[k], "moments", &nm);
            /* latent 6x4 -> 48x32 image; image 32x24 -> moments 4x3 */
            if (z && ref && x && rm && nz == 16 * 6 * 4 && ni == (3 + k) * 48 * 32 &&
                nx == (3 + k) * 32 * 24 && nm == 32 * 4 * 3) {
                float *img = malloc((size_t)ni * sizeof(float)), mom[32 * 12];
                clock_t t0 = clock();
                s = sdc_wan_vae_decode(m, be, z, 6, 4, img, NULL, NULL);
                CHECK(s == SDC_OK, "full decode: %s", sdc_last_error());
                char what[64];
                snprintf(what, sizeof what, "full-width %s decode 6x4", names[k]);
                if (s == SDC_OK) compare(what, img, ref, (long)ni, TOL_FULL);
                s = sdc_wan_vae_encode(m, be, x, 32, 24, mom, NULL, NULL);
                CHECK(s == SDC_OK, "full encode: %s", sdc_last_error());
                snprintf(what, sizeof what, "full-width %s encode 32x24", names[k]);
                if (s == SDC_OK) compare(what, mom, rm, (long)nm, TOL_FULL);
                printf("full %s decode + encode: %.1f s CPU\n", names[k],
                       (double)(clock() - t0) / CLOCKS_PER_SEC);
                free(img);
            } else {
                CHECK(0, "full_ref %s: sizes", names[k]);
            }
            free(z), free(ref), free(x), free(rm);
        }
        sdc_wan_vae_free(m);
        sdc_loader_free(l);
    }
    sdc_st_close(f);
}

int main(void) {
    sdc_backend *be = sdc_backend_cpu_create(2);
    test_model(be, "rgb.safetensors", 8, 1, 3);
    test_model(be, "rgba.safetensors", 4, 2, 4);
    test_full(be);
    sdc_backend_free(be);
    TEST_MAIN_END();
}
