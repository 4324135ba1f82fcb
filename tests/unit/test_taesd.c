/* TAESD against diffusers' AutoencoderTiny (tests/data/vae, from tests/golden/gen_vae_ref.py):
 * a random TAESD-architecture model with 32 channels in diffusers' names (what sd.cpp's --taesd
 * loads), decode and encode in exact float32 and sd.cpp's F16 numerics; taesd.py's own names;
 * halves, missing / misshapen tensors and bad sizes. */
#include "core/backend.h"
#include "models/taesd.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/vae/" name

/* ~3x the measured max abs errors: exact decode 3.8e-6 (output std 0.93), exact encode 5.4e-7
 * (std 0.29); sdcpp decode 3.7e-3 and encode 3.5e-4: F16 rounding noise that decorrelates over
 * the layers (see test_vae_kl.c), as large as the sdcpp-exact distance itself (3.2e-3 / 4.7e-4). */
#define TOL_DEC_EXACT 1.2e-5
#define TOL_ENC_EXACT 1.6e-6
#define TOL_DEC_SDCPP 1.1e-2
#define TOL_ENC_SDCPP 1.1e-3

static void compare(const char *what, const float *got, const float *ref, long n, double tol) {
    double err = t_max_abs_diff(got, ref, n);
    printf("%-44s max abs err %.3g (tolerance %.2g, %ld values)\n", what, err, tol, n);
    CHECK(err <= tol, "%s: max abs err %g > %g", what, err, tol);
}

static void expect_error(sdc_status s, const char *needle, const char *what) {
    const char *msg = sdc_last_error();
    printf("%-44s -> %s\n", what, s == SDC_OK ? "(no error)" : msg);
    CHECK(s != SDC_OK && strstr(msg, needle), "%s: want an error with '%s', got %d '%s'", what,
          needle, s, msg);
}

/* Renames / hides / misshapes tensors of the base source. orig: 0 as stored, 1 taesd.py's
 * decoder file ("N.x" = decoder.layers.(N-1).x), 2 its encoder file ("N.x" = encoder.layers.N.x) */
typedef struct wrap {
    const sdc_weight_source *base;
    int orig;
    const char *hide, *misshape;
    sdc_tensor bad;
} wrap;

static sdc_tensor *wrap_find(void *user, const char *name) {
    wrap *w = user;
    if (w->hide && !strncmp(name, w->hide, strlen(w->hide))) return NULL;
    char mapped[200];
    const char *n = name;
    if (w->orig) {
        int idx, pos = 0;
        if (sscanf(name, "%d.%n", &idx, &pos) < 1 || !pos) return NULL;
        snprintf(mapped, sizeof mapped, "%s.layers.%d.%s", w->orig == 1 ? "decoder" : "encoder",
                 w->orig == 1 ? idx - 1 : idx, name + pos);
        n = mapped;
    }
    sdc_tensor *t = w->base->find(w->base->user, n);
    if (t && w->misshape && !strcmp(name, w->misshape)) {
        w->bad = *t;
        w->bad.ne[2] += 1;
        return &w->bad;
    }
    return t;
}

int main(void) {
    st_weights stw;
    sdc_weight_source ws;
    if (st_weights_open(&stw, DATA("taesd_tiny.safetensors"), &ws) != 0) {
        fprintf(stderr, "cannot open the tiny TAESD: %s\n", sdc_last_error());
        return 1;
    }
    sdc_st_file *ref;
    CHECK(sdc_st_open(DATA("taesd_ref.safetensors"), &ref) == SDC_OK, "ref: %s", sdc_last_error());
    int64_t nl, nd, ni, ne;
    float *lat = st_read_f32(ref, "latent", &nl), *img = st_read_f32(ref, "image", &ni);
    float *dec_e = st_read_f32(ref, "decode.exact", &nd),
          *dec_s = st_read_f32(ref, "decode.sdcpp", NULL);
    float *enc_e = st_read_f32(ref, "encode.exact", &ne),
          *enc_s = st_read_f32(ref, "encode.sdcpp", NULL);
    CHECK(nl == 4 * 5 * 6 && nd == 3 * 40 * 48 && ni == nd && ne == nl, "golden sizes");
    float *dec = malloc((size_t)nd * sizeof(float)), *enc = malloc((size_t)ne * sizeof(float));
    sdc_backend *be = sdc_backend_cpu_create(2);

    CHECK(sdc_taesd_detect(&ws, "") && !sdc_taesd_detect(&ws, "tae."), "detect");
    sdc_taesd *m = NULL;
    sdc_status s = sdc_taesd_load(&ws, "", &m);
    CHECK(s == SDC_OK, "load: %s", sdc_last_error());
    if (!m) return 1;
    const sdc_taesd_config *c = sdc_taesd_get_config(m);
    printf("config: channels %d z %d encoder %d decoder %d original names %d\n", c->channels,
           c->z_channels, c->has_encoder, c->has_decoder, c->original_names);
    CHECK(c->channels == 32 && c->z_channels == 4 && c->has_encoder && c->has_decoder &&
              !c->original_names,
          "config");
    for (int mode = 0; mode < 2; mode++) {
        CHECK(sdc_taesd_set_numerics(m, mode ? SDC_VAE_SDCPP : SDC_VAE_EXACT) == SDC_OK, "mode");
        const char *mn = mode ? "sdcpp" : "exact";
        char what[96];
        CHECK(sdc_taesd_decode(m, be, lat, 6, 5, dec, NULL, NULL) == SDC_OK, "decode: %s",
              sdc_last_error());
        snprintf(what, sizeof what, "decode 6x5 -> 48x40 (%s)", mn);
        compare(what, dec, mode ? dec_s : dec_e, (long)nd, mode ? TOL_DEC_SDCPP : TOL_DEC_EXACT);
        CHECK(sdc_taesd_encode(m, be, img, 48, 40, enc, NULL, NULL) == SDC_OK, "encode: %s",
              sdc_last_error());
        snprintf(what, sizeof what, "encode 48x40 -> 6x5 (%s)", mn);
        compare(what, enc, mode ? enc_s : enc_e, (long)ne, mode ? TOL_ENC_SDCPP : TOL_ENC_EXACT);
    }

    /* taesd.py's own single-half files */
    for (int o = 1; o <= 2; o++) {
        wrap w = {.base = &ws, .orig = o};
        sdc_weight_source ows = {wrap_find, &w};
        sdc_taesd *mo = NULL;
        s = sdc_taesd_load(&ows, "", &mo);
        CHECK(s == SDC_OK && mo, "load taesd.py %s names: %s", o == 1 ? "decoder" : "encoder",
              sdc_last_error());
        if (!mo) continue;
        const sdc_taesd_config *co = sdc_taesd_get_config(mo);
        CHECK(co->original_names && co->has_decoder == (o == 1) && co->has_encoder == (o == 2),
              "original config");
        if (o == 1) {
            CHECK(sdc_taesd_decode(mo, be, lat, 6, 5, dec, NULL, NULL) == SDC_OK, "decode");
            compare("taesd_decoder.safetensors names: decode", dec, dec_e, (long)nd, TOL_DEC_EXACT);
            expect_error(sdc_taesd_encode(mo, be, img, 48, 40, enc, NULL, NULL), "no encoder",
                         "encode with a decoder-only file");
        } else {
            CHECK(sdc_taesd_encode(mo, be, img, 48, 40, enc, NULL, NULL) == SDC_OK, "encode");
            compare("taesd_encoder.safetensors names: encode", enc, enc_e, (long)ne, TOL_ENC_EXACT);
            expect_error(sdc_taesd_decode(mo, be, lat, 6, 5, dec, NULL, NULL), "no decoder",
                         "decode with an encoder-only file");
        }
        sdc_taesd_free(mo);
    }

    /* missing and misshapen tensors, wrong prefix, bad sizes */
    wrap w = {.base = &ws, .hide = "decoder.layers.8.conv.2.weight"};
    sdc_weight_source bws = {wrap_find, &w};
    sdc_taesd *mb = NULL;
    expect_error(sdc_taesd_load(&bws, "", &mb), "decoder.layers.8.conv.2.weight",
                 "load without one block conv");
    CHECK(mb == NULL, "no model on error");
    w.hide = "encoder.layers.6.";
    expect_error(sdc_taesd_load(&bws, "", &mb), "encoder.layers.6.weight",
                 "load without an encoder downsampler");
    w.hide = NULL;
    w.misshape = "encoder.layers.3.conv.4.weight";
    expect_error(sdc_taesd_load(&bws, "", &mb), "has shape", "load with a misshapen conv");
    expect_error(sdc_taesd_load(&ws, "tae.", &mb), "no 'tae.decoder.layers.0.weight'",
                 "load a wrong prefix");
    expect_error(sdc_taesd_encode(m, be, img, 44, 40, enc, NULL, NULL), "multiples of 8",
                 "encode 44x40");
    expect_error(sdc_taesd_decode(m, be, lat, 6, 0, dec, NULL, NULL), "latent 6x0", "decode 6x0");

    sdc_taesd_free(m);
    sdc_backend_free(be);
    free(lat), free(img), free(dec_e), free(dec_s), free(enc_e), free(enc_s), free(dec), free(enc);
    sdc_st_close(ref);
    st_weights_close(&stw);
    TEST_MAIN_END();
}
