/* AutoencoderKL against diffusers (tests/data/vae, made by tests/golden/gen_vae_ref.py): a tiny
 * random VAE in the LDM layout (and renamed to diffusers' layout by diffusers' own name list),
 * decode and encode in exact float32 and in sd.cpp's F16-rounded numerics; missing halves,
 * missing / misshapen tensors and bad sizes must give clear errors. */
#include "core/backend.h"
#include "models/vae_kl.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(name) SDC_SOURCE_DIR "/tests/data/vae/" name
#define PFX        "first_stage_model."

/* Tolerances: about 3x the measured max abs errors: exact decode 4.7e-6 (output std 0.37),
 * exact moments 1.0e-6 (std 0.19); sdcpp decode 3.6e-3, moments 5.7e-4. The sdcpp figures are
 * as large as the F16 rounding noise itself (4.2e-3 between diffusers exact and F16-emulating):
 * a rounding flip caused by F32 sums of different order feeds later roundings, so the noise of
 * two F16-rounding implementations decorrelates over the layers. The first 7 rounding points
 * agree to 1e-5 (checked while writing this test). */
#define TOL_DEC_EXACT 1.5e-5
#define TOL_ENC_EXACT 3e-6
#define TOL_DEC_SDCPP 1.2e-2
#define TOL_ENC_SDCPP 2e-3

static void compare(const char *what, const float *got, const float *ref, long n, double tol) {
    double err = t_max_abs_diff(got, ref, n);
    double *r = malloc((size_t)n * sizeof *r);
    for (long i = 0; i < n; i++) r[i] = ref[i];
    double rel = t_rel_l2(got, r, n);
    free(r);
    printf("%-44s max abs err %.3g, rel L2 %.3g (tolerance %.2g, %ld values)\n", what, err, rel,
           tol, n);
    CHECK(err <= tol, "%s: max abs err %g > %g", what, err, tol);
}

/* ---- weight sources that rename, hide or reshape tensors ---- */

typedef struct wrap {
    const sdc_weight_source *base;
    const char *hide;     /* names starting with prefix+hide are absent */
    const char *misshape; /* this full name gets a wrong shape */
    sdc_tensor bad;       /* its misshapen header */
    char (*ldm)[160];     /* diffusers mode: ldm[i] <-> diff[i] (without prefix) */
    char (*diff)[160];
    int n_names;
    sdc_tensor *lin; /* 2-D headers of the attention weights (diffusers' Linear) */
    int n_lin;
    bool old_attn; /* older diffusers names: query/key/value/proj_attn */
} wrap;

static const char *k_attn_names[][2] = {{".to_q.", ".query."},
                                        {".to_k.", ".key."},
                                        {".to_v.", ".value."},
                                        {".to_out.0.", ".proj_attn."}};

/* name with one attention projection name replaced (from -> to); false if none occurs */
static bool swap_attn(const char *name, int from, char *out, size_t size) {
    for (int i = 0; i < 4; i++) {
        const char *p = strstr(name, k_attn_names[i][from]);
        if (p) {
            snprintf(out, size, "%.*s%s%s", (int)(p - name), name, k_attn_names[i][!from],
                     p + strlen(k_attn_names[i][from]));
            return true;
        }
    }
    return false;
}

static sdc_tensor *wrap_find(void *user, const char *name) {
    wrap *w = user;
    if (w->hide && !strncmp(name, w->hide, strlen(w->hide))) return NULL;
    if (w->misshape && !strcmp(name, w->misshape)) {
        sdc_tensor *t = w->base->find(w->base->user, name);
        if (!t) return NULL;
        w->bad = *t;
        w->bad.ne[3] += 1; /* one output channel too many */
        return &w->bad;
    }
    if (!w->n_names) return w->base->find(w->base->user, name);
    const char *pf = "vae.";
    if (strncmp(name, pf, 4)) return NULL;
    const char *q = name + 4;
    char tmp[200];
    if (w->old_attn) { /* the new names are absent, the old ones answer */
        if (swap_attn(q, 0, tmp, sizeof tmp)) return NULL;
        if (swap_attn(q, 1, tmp, sizeof tmp)) q = tmp;
    }
    for (int i = 0; i < w->n_names; i++)
        if (!strcmp(q, w->diff[i])) {
            char full[200];
            snprintf(full, sizeof full, PFX "%s", w->ldm[i]);
            sdc_tensor *t = w->base->find(w->base->user, full);
            if (t && t->ne[0] == 1 && t->ne[1] == 1 && strstr(w->diff[i], "attentions") &&
                strstr(w->diff[i], "weight")) {
                sdc_tensor *l = &w->lin[w->n_lin++]; /* Linear [C,C]: same bytes, 2-D */
                *l = *t;
                l->ne[0] = t->ne[2], l->ne[1] = t->ne[3], l->ne[2] = l->ne[3] = 1;
                sdc_tensor_set_contiguous_strides(l);
                return l;
            }
            return t;
        }
    return NULL;
}

static int load_names(wrap *w) {
    FILE *f = fopen(DATA("vae_kl_diffusers_names.txt"), "r");
    if (!f) return -1;
    w->ldm = calloc(512, sizeof *w->ldm);
    w->diff = calloc(512, sizeof *w->diff);
    w->lin = calloc(4096, sizeof *w->lin);
    while (w->n_names < 512 &&
           fscanf(f, "%159s %159s", w->ldm[w->n_names], w->diff[w->n_names]) == 2)
        w->n_names++;
    fclose(f);
    return w->n_names;
}

typedef struct golden {
    float *z, *dec_exact, *dec_sdcpp, *img, *mom_exact, *mom_sdcpp;
    int64_t nz, ndec, nimg, nmom;
} golden;

static void run_checks(sdc_backend *be, sdc_vae *m, const golden *gd, const char *tag,
                       float *dec_out) {
    float *dec = malloc((size_t)gd->ndec * sizeof(float));
    float *mom = malloc((size_t)gd->nmom * sizeof(float));
    char what[96];
    for (int mode = 0; mode < 2; mode++) {
        CHECK(sdc_vae_set_numerics(m, mode ? SDC_VAE_EXACT : SDC_VAE_SDCPP) == SDC_OK, "mode");
        const char *mn = mode ? "exact" : "sdcpp";
        sdc_status s = sdc_vae_decode(m, be, gd->z, 6, 5, dec, NULL, NULL);
        CHECK(s == SDC_OK, "decode: %s", sdc_last_error());
        snprintf(what, sizeof what, "%s decode 6x5 -> 48x40 (%s)", tag, mn);
        compare(what, dec, mode ? gd->dec_exact : gd->dec_sdcpp, (long)gd->ndec,
                mode ? TOL_DEC_EXACT : TOL_DEC_SDCPP);
        if (mode && dec_out) memcpy(dec_out, dec, (size_t)gd->ndec * sizeof(float));
        s = sdc_vae_encode(m, be, gd->img, 48, 40, mom, NULL, NULL);
        CHECK(s == SDC_OK, "encode: %s", sdc_last_error());
        snprintf(what, sizeof what, "%s encode moments 48x40 (%s)", tag, mn);
        compare(what, mom, mode ? gd->mom_exact : gd->mom_sdcpp, (long)gd->nmom,
                mode ? TOL_ENC_EXACT : TOL_ENC_SDCPP);
    }
    free(dec);
    free(mom);
}

static void expect_error(sdc_status s, const char *needle, const char *what) {
    const char *msg = sdc_last_error();
    printf("%-44s -> %s\n", what, s == SDC_OK ? "(no error)" : msg);
    CHECK(s != SDC_OK && strstr(msg, needle), "%s: want an error with '%s', got %d '%s'", what,
          needle, s, msg);
}

int main(void) {
    st_weights stw;
    sdc_weight_source ws;
    if (st_weights_open(&stw, DATA("vae_kl_tiny.safetensors"), &ws) != 0) {
        fprintf(stderr, "cannot open the tiny VAE: %s\n", sdc_last_error());
        return 1;
    }
    sdc_st_file *ref;
    CHECK(sdc_st_open(DATA("vae_kl_ref.safetensors"), &ref) == SDC_OK, "ref: %s", sdc_last_error());
    golden gd;
    gd.z = st_read_f32(ref, "z", &gd.nz);
    gd.dec_exact = st_read_f32(ref, "decode.exact", &gd.ndec);
    gd.dec_sdcpp = st_read_f32(ref, "decode.sdcpp", NULL);
    gd.img = st_read_f32(ref, "image", &gd.nimg);
    gd.mom_exact = st_read_f32(ref, "moments.exact", &gd.nmom);
    gd.mom_sdcpp = st_read_f32(ref, "moments.sdcpp", NULL);
    CHECK(gd.nz == 4 * 5 * 6 && gd.ndec == 3 * 40 * 48 && gd.nmom == 8 * 5 * 6, "golden sizes");
    sdc_backend *be = sdc_backend_cpu_create(2);

    CHECK(sdc_vae_detect(&ws, PFX) && !sdc_vae_detect(&ws, "vae."), "detect");
    sdc_vae *m = NULL;
    sdc_status s = sdc_vae_load(&ws, PFX, &m);
    CHECK(s == SDC_OK, "load: %s", sdc_last_error());
    if (s != SDC_OK) return 1;
    const sdc_vae_config *c = sdc_vae_get_config(m);
    printf("config: ch %d levels %d mult %d,%d,%d,%d res %d z %d embed %d enc %d dec %d quant %d "
           "linear %d scale %d\n",
           c->ch, c->n_levels, c->ch_mult[0], c->ch_mult[1], c->ch_mult[2], c->ch_mult[3],
           c->num_res_blocks, c->z_channels, c->embed_dim, c->has_encoder, c->has_decoder,
           c->has_quant_conv, c->attn_linear, c->scale);
    CHECK(c->ch == 32 && c->n_levels == 4 && c->ch_mult[0] == 1 && c->ch_mult[1] == 1 &&
              c->ch_mult[2] == 2 && c->ch_mult[3] == 2 && c->num_res_blocks == 1 &&
              c->z_channels == 4 && c->embed_dim == 4 && c->has_encoder && c->has_decoder &&
              c->has_quant_conv && !c->attn_linear && !c->diffusers_names && c->scale == 8,
          "config detected");
    float *dec_ldm = malloc((size_t)gd.ndec * sizeof(float));
    run_checks(be, m, &gd, "ldm", dec_ldm);

    /* the same weights under diffusers' names (from diffusers' converter), prefix "vae." */
    wrap dw = {.base = &ws};
    CHECK(load_names(&dw) > 100, "name list");
    sdc_weight_source dws = {wrap_find, &dw};
    sdc_vae *md = NULL;
    s = sdc_vae_load(&dws, "vae.", &md);
    CHECK(s == SDC_OK, "load diffusers names: %s", sdc_last_error());
    if (md) {
        const sdc_vae_config *cd = sdc_vae_get_config(md);
        CHECK(cd->diffusers_names && cd->attn_linear && cd->n_levels == 4 &&
                  cd->num_res_blocks == 1 && cd->has_quant_conv,
              "diffusers config: names %d linear %d", cd->diffusers_names, cd->attn_linear);
        float *dec_d = malloc((size_t)gd.ndec * sizeof(float));
        run_checks(be, md, &gd, "diffusers", dec_d);
        double d = t_max_abs_diff(dec_d, dec_ldm, (long)gd.ndec);
        printf("diffusers layout vs LDM layout decode (exact): max abs diff %.3g\n", d);
        CHECK(d == 0, "layouts differ by %g", d);
        sdc_vae_free(md);
        /* older diffusers attention names */
        dw.old_attn = true;
        dw.n_lin = 0;
        md = NULL;
        s = sdc_vae_load(&dws, "vae.", &md);
        CHECK(s == SDC_OK && md, "load old diffusers attention names: %s", sdc_last_error());
        if (md) {
            CHECK(sdc_vae_decode(md, be, gd.z, 6, 5, dec_d, NULL, NULL) == SDC_OK, "decode");
            d = t_max_abs_diff(dec_d, dec_ldm, (long)gd.ndec);
            printf("query/key/value/proj_attn names vs LDM layout decode: max abs diff %.3g\n", d);
            CHECK(d == 0, "old names differ by %g", d);
            sdc_vae_free(md);
        }
        free(dec_d);
    }

    /* halves: decoder only, encoder only */
    wrap hw = {.base = &ws, .hide = PFX "encoder."};
    sdc_weight_source hws = {wrap_find, &hw};
    sdc_vae *mh = NULL;
    s = sdc_vae_load(&hws, PFX, &mh);
    CHECK(s == SDC_OK && mh, "decoder-only load: %s", sdc_last_error());
    if (mh) {
        float *dec = malloc((size_t)gd.ndec * sizeof(float));
        float mom[8 * 30];
        CHECK(sdc_vae_set_numerics(mh, SDC_VAE_EXACT) == SDC_OK, "mode");
        s = sdc_vae_decode(mh, be, gd.z, 6, 5, dec, NULL, NULL);
        CHECK(s == SDC_OK, "decoder-only decode: %s", sdc_last_error());
        compare("decoder-only model decode (exact)", dec, gd.dec_exact, (long)gd.ndec,
                TOL_DEC_EXACT);
        expect_error(sdc_vae_encode(mh, be, gd.img, 48, 40, mom, NULL, NULL), "no encoder",
                     "encode with a decoder-only model");
        free(dec);
        sdc_vae_free(mh);
    }
    hw.hide = PFX "decoder.";
    mh = NULL;
    s = sdc_vae_load(&hws, PFX, &mh);
    CHECK(s == SDC_OK && mh, "encoder-only load: %s", sdc_last_error());
    if (mh) {
        float dec[16];
        expect_error(sdc_vae_decode(mh, be, gd.z, 6, 5, dec, NULL, NULL), "no decoder",
                     "decode with an encoder-only model");
        sdc_vae_free(mh);
    }

    /* missing and misshapen tensors */
    hw.hide = PFX "decoder.up.2.block.1.conv2.weight";
    mh = NULL;
    expect_error(sdc_vae_load(&hws, PFX, &mh), "decoder.up.2.block.1.conv2.weight",
                 "load without one decoder conv");
    CHECK(mh == NULL, "no model on error");
    hw.hide = NULL;
    hw.misshape = PFX "encoder.down.1.block.0.conv2.weight";
    expect_error(sdc_vae_load(&hws, PFX, &mh), "encoder.down.1.block.0.conv2.weight",
                 "load with a misshapen encoder conv");
    hw.misshape = PFX "decoder.mid.attn_1.q.weight";
    expect_error(sdc_vae_load(&hws, PFX, &mh), "has shape", "load with a misshapen attention q");
    expect_error(sdc_vae_load(&ws, "nothing.", &mh), "no AutoencoderKL", "load a wrong prefix");

    /* bad sizes */
    float out[8 * 30];
    expect_error(sdc_vae_encode(m, be, gd.img, 44, 40, out, NULL, NULL), "multiples of 8",
                 "encode 44x40");
    expect_error(sdc_vae_encode(m, be, gd.img, 48, 36, out, NULL, NULL), "multiples of 8",
                 "encode 48x36");
    expect_error(sdc_vae_decode(m, be, gd.z, 0, 5, out, NULL, NULL), "latent 0x5", "decode 0x5");

    sdc_vae_free(m);
    sdc_backend_free(be);
    free(dec_ldm);
    free(gd.z), free(gd.dec_exact), free(gd.dec_sdcpp), free(gd.img), free(gd.mom_exact),
        free(gd.mom_sdcpp);
    free(dw.ldm), free(dw.diff), free(dw.lin);
    sdc_st_close(ref);
    st_weights_close(&stw);
    TEST_MAIN_END();
}
