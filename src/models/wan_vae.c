/* Wan2.1's VAE as Qwen-Image uses it: every image is one frame. On a single frame the model
 * reduces exactly to a 2-D network (checked against diffusers' AutoencoderKLQwenImage, which runs
 * frame 0 with empty feature caches):
 * - a CausalConv3d with kernel t=3 pads two zero frames in front (no cache on the first chunk), so
 *   only its last temporal slice W[:, :, 2] meets data: a 2-D conv with that slice; 1x1x1 convs
 *   are 1x1 convs;
 * - upsample3d's time_conv is skipped on the first chunk (its cache slot is set to "Rep"), and
 *   downsample3d's time_conv too (its slot just stores the frame): both are 2-D resamples then;
 * - RMS_norm is F.normalize over channels * sqrt(C) * gamma: x / sqrt(mean_c(x^2)) * gamma;
 * - the middle attention is per frame: single head over the h*w positions.
 * So only the last temporal slice of each conv weight is kept; the time_conv weights are unused.
 * The decoder's upsample + conv runs as four 2x2 convs on the low-resolution input. */
#include "models/wan_vae.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ops.h"

#define WAN_EPS       1e-12f
#define WAN_MAX_LAYER 64
#define WAN_MAX_SIDE  16384 /* pixels: keeps sizes far from overflow */

const float sdc_wan_vae_latents_mean[16] = {
    -0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,  -0.1517f, 1.5508f,
    0.4134f,  -0.0715f, 0.5517f,  -0.3632f, -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
const float sdc_wan_vae_latents_std[16] = {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f,
                                           2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f, 1.5579f,
                                           1.6382f, 1.1253f, 2.8251f, 1.9160f};

typedef struct conv {
    sdc_tensor *w, *b; /* w ne=[k, k, cin, cout] (2-D; a 3-D conv's last time slice), b F32 */
} conv;

typedef struct resblock {
    sdc_tensor *g1, *g2; /* RMS gammas, F32 [C] */
    conv c1, c2, skip;   /* skip.w NULL when the width does not change */
} resblock;

enum { L_RES, L_DOWN, L_UP };

typedef struct layer {
    int kind;
    resblock r; /* L_RES */
    conv c;     /* L_DOWN: pad right/bottom + stride-2 3x3; L_UP: 2x nearest + 3x3 (halves C) */
    /* L_UP: the upsample + 3x3 conv as four 2x2 convs on the low-resolution input, one per output
     * parity (dy, dx), with the taps that see the same upsampled pixel summed: 4/9 of the
     * multiply-adds. F32 [2, 2, cin, cout], index 2*dy + dx. */
    sdc_tensor *phase[4];
} layer;

typedef struct half {
    conv in, head;
    layer l[WAN_MAX_LAYER];
    int n;
    resblock m0, m2;
    sdc_tensor *attn_g; /* F32 [C] */
    conv qkv, proj;     /* qkv.w ne=[1, 1, C, 3C], proj.w ne=[1, 1, C, C] */
    sdc_tensor *head_g;
} half;

struct sdc_wan_vae {
    sdc_wan_vae_config cfg;
    half enc, dec;
    conv quant, post_quant; /* Wan names conv1 (2z -> 2z), conv2 (z -> z) */
    sdc_weight_copies owned;
};

/* ---- loading ---- */

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    sdc_wan_vae *m;
    sdc_status s;
} loader;

static const char *fmt_name(char *buf, size_t size, const char *fmt, va_list ap) {
    vsnprintf(buf, size, fmt, ap);
    return buf;
}

static sdc_tensor *findf(loader *ld, const char *fmt, ...) {
    char name[200];
    va_list ap;
    va_start(ap, fmt);
    fmt_name(name, sizeof name, fmt, ap);
    va_end(ap);
    return sdc_weight_find(ld->ws, ld->prefix, name);
}

static sdc_tensor *req(loader *ld, const char *name, int ndims, const int64_t *ne) {
    if (ld->s != SDC_OK) return NULL;
    sdc_tensor *t = NULL;
    ld->s = sdc_weight_require(ld->ws, ld->prefix, name, ndims, ne, &t);
    if (ld->s != SDC_OK) sdc_fail_prefix(ld->s, "wan vae: ");
    return t;
}

static sdc_tensor *own(loader *ld, const sdc_tensor *w, sdc_type type, const int64_t *ne) {
    if (ld->s != SDC_OK) return NULL;
    sdc_tensor *t = NULL;
    ld->s = sdc_weight_copies_add(&ld->m->owned, w, type, ne, &t);
    return t;
}

/* A vector of c values stored with any trailing unit dims ([C], gamma [C,1,1(,1)]), as F32 [C]. */
static sdc_tensor *vec(loader *ld, const char *base, const char *suffix, int64_t c) {
    if (ld->s != SDC_OK) return NULL;
    char name[200];
    snprintf(name, sizeof name, "%.150s%.40s", base, suffix);
    sdc_tensor *t = sdc_weight_find(ld->ws, ld->prefix, name);
    int64_t n = t ? t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3] : 0;
    if (!t || n != c) {
        ld->s = t ? sdc_fail(SDC_ERR_FORMAT, "wan vae: '%s%s' has %lld values, expected %lld",
                             ld->prefix, name, (long long)n, (long long)c)
                  : sdc_fail(SDC_ERR_FORMAT, "wan vae: missing tensor '%s%s'", ld->prefix, name);
        return NULL;
    }
    int64_t ne[4] = {c, 1, 1, 1};
    return own(ld, t, SDC_TYPE_F32, ne);
}

/* A CausalConv3d "base" with cubic kernel k (1 or 3) as the 2-D conv of its last time slice.
 * cin < 0: any (derived from the weight). Returns the input width (or -1). */
static int64_t load_conv3d(loader *ld, conv *cv, const char *base, int k, int64_t cin) {
    if (ld->s != SDC_OK) return -1;
    char name[200];
    snprintf(name, sizeof name, "%.180s.bias", base);
    sdc_tensor *b = sdc_weight_find(ld->ws, ld->prefix, name);
    if (!b || b->ne[1] != 1 || b->ne[2] != 1 || b->ne[3] != 1) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: missing or non-vector tensor '%s%s'", ld->prefix,
                         name);
        return -1;
    }
    int64_t cout = b->ne[0];
    snprintf(name, sizeof name, "%.180s.weight", base);
    sdc_tensor *t = sdc_weight_find(ld->ws, ld->prefix, name);
    if (t && cin < 0 && t->ne[3] % cout == 0) cin = t->ne[3] / cout;
    int64_t ne[4] = {k, k, k, cin * cout};
    sdc_tensor *w = req(ld, name, 4, ne);
    cv->b = vec(ld, base, ".bias", cout);
    if (ld->s != SDC_OK) return -1;
    /* [O, I, T, H, W] -> the slice t = k-1 as ne=[W, H, I, O], in the stored float type */
    int64_t kk = (int64_t)k * k, n = cin * cout;
    float *all = malloc((size_t)(n * k * kk) * sizeof(float));
    float *sl = malloc((size_t)(n * kk) * sizeof(float));
    if (!all || !sl) ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "wan vae: out of memory");
    if (ld->s == SDC_OK) ld->s = sdc_weight_to_f32(w, all);
    if (ld->s == SDC_OK) {
        for (int64_t oi = 0; oi < n; oi++)
            memcpy(sl + oi * kk, all + (oi * k + (k - 1)) * kk, (size_t)kk * sizeof(float));
        sdc_tensor tmp = {0};
        tmp.type = SDC_TYPE_F32;
        tmp.ne[0] = k, tmp.ne[1] = k, tmp.ne[2] = cin, tmp.ne[3] = cout;
        sdc_tensor_set_contiguous_strides(&tmp);
        tmp.data = sl;
        tmp.flags = SDC_TENSOR_PARAM;
        snprintf(tmp.name, sizeof tmp.name, "%.100s#t%d", w->name, k - 1);
        cv->w = own(ld, &tmp, w->type == SDC_TYPE_F16 ? SDC_TYPE_F16 : SDC_TYPE_F32, NULL);
    }
    free(all);
    free(sl);
    return ld->s == SDC_OK ? cin : -1;
}

/* A 2-D conv "base" (k x k) with cin inputs; returns its output width (or -1). */
static int64_t load_conv2d(loader *ld, conv *cv, const char *base, int k, int64_t cin) {
    if (ld->s != SDC_OK) return -1;
    char name[200];
    snprintf(name, sizeof name, "%.180s.weight", base);
    int64_t ne[4] = {k, k, cin, -1};
    cv->w = req(ld, name, 4, ne);
    if (ld->s != SDC_OK) return -1;
    cv->b = vec(ld, base, ".bias", cv->w->ne[3]);
    return ld->s == SDC_OK ? cv->w->ne[3] : -1;
}

/* The four 2x2 kernels of an upsample conv (see layer.phase). Output row 2i+dy of
 * conv3x3(upsample2(x)) reads upsampled rows 2i+dy-1 .. 2i+dy+1: low-res rows (i-1, i) with taps
 * ({0}, {1,2}) for dy = 0 and (i, i+1) with taps ({0,1}, {2}) for dy = 1; columns alike. */
static void make_phases(loader *ld, const conv *cv, sdc_tensor **out) {
    if (ld->s != SDC_OK) return;
    const sdc_tensor *w = cv->w;
    int64_t n = w->ne[2] * w->ne[3];
    float *w9 = malloc((size_t)n * 9 * sizeof(float)), *k4 = malloc((size_t)n * 4 * sizeof(float));
    if (!w9 || !k4) ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "wan vae: out of memory");
    if (ld->s == SDC_OK) ld->s = sdc_weight_to_f32(w, w9);
    static const int lo[2][2] = {{0, 1}, {0, 2}}, hi[2][2] = {{1, 3}, {2, 3}}; /* [d][b] taps */
    for (int p = 0; p < 4 && ld->s == SDC_OK; p++) {
        int dy = p / 2, dx = p % 2;
        for (int64_t i = 0; i < n; i++)
            for (int b = 0; b < 2; b++)
                for (int a = 0; a < 2; a++) {
                    float sum = 0;
                    for (int ky = lo[dy][b]; ky < hi[dy][b]; ky++)
                        for (int kx = lo[dx][a]; kx < hi[dx][a]; kx++)
                            sum += w9[9 * i + 3 * ky + kx];
                    k4[4 * i + 2 * b + a] = sum;
                }
        sdc_tensor t = {0};
        t.type = SDC_TYPE_F32;
        t.ne[0] = 2, t.ne[1] = 2, t.ne[2] = w->ne[2], t.ne[3] = w->ne[3];
        sdc_tensor_set_contiguous_strides(&t);
        t.data = k4;
        t.flags = SDC_TENSOR_PARAM;
        snprintf(t.name, sizeof t.name, "%.100s#phase%d%d", w->name, dy, dx);
        out[p] = own(ld, &t, SDC_TYPE_F32, NULL);
    }
    free(w9);
    free(k4);
}

/* A residual block "base" with cin inputs; returns its output width (or -1). */
static int64_t load_res(loader *ld, resblock *r, const char *base, int64_t cin) {
    char b[200];
    snprintf(b, sizeof b, "%s.residual.2", base);
    int64_t ci = load_conv3d(ld, &r->c1, b, 3, cin);
    if (ci < 0) return -1;
    int64_t cout = r->c1.b->ne[0];
    r->g1 = vec(ld, base, ".residual.0.gamma", cin);
    r->g2 = vec(ld, base, ".residual.3.gamma", cout);
    snprintf(b, sizeof b, "%s.residual.6", base);
    load_conv3d(ld, &r->c2, b, 3, cout);
    if (ld->s == SDC_OK && r->c2.b->ne[0] != cout)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: '%s%s.residual.6' changes the width", ld->prefix,
                         base);
    snprintf(b, sizeof b, "%s.shortcut", base);
    if (cin != cout) load_conv3d(ld, &r->skip, b, 1, cin);
    if (ld->s == SDC_OK && r->skip.w && r->skip.b->ne[0] != cout)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: '%s%s' has the wrong width", ld->prefix, b);
    return ld->s == SDC_OK ? cout : -1;
}

/* middle.0 (res), middle.1 (attention), middle.2 (res) of width c. */
static void load_middle(loader *ld, half *hf, const char *hn, int64_t c) {
    char b[200];
    snprintf(b, sizeof b, "%s.middle.0", hn);
    if (load_res(ld, &hf->m0, b, c) != c && ld->s == SDC_OK)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: '%s%s' changes the width", ld->prefix, b);
    snprintf(b, sizeof b, "%s.middle.1", hn);
    hf->attn_g = vec(ld, b, ".norm.gamma", c);
    snprintf(b, sizeof b, "%s.middle.1.to_qkv", hn);
    int64_t ne[4] = {1, 1, c, 3 * c};
    char name[220];
    snprintf(name, sizeof name, "%s.weight", b);
    hf->qkv.w = req(ld, name, 4, ne);
    hf->qkv.b = vec(ld, b, ".bias", 3 * c);
    snprintf(b, sizeof b, "%s.middle.1.proj", hn);
    snprintf(name, sizeof name, "%s.weight", b);
    ne[3] = c;
    hf->proj.w = req(ld, name, 4, ne);
    hf->proj.b = vec(ld, b, ".bias", c);
    snprintf(b, sizeof b, "%s.middle.2", hn);
    if (load_res(ld, &hf->m2, b, c) != c && ld->s == SDC_OK)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: '%s%s' changes the width", ld->prefix, b);
}

/* The flat layer list "hn.downsamples.N" / "hn.upsamples.N" (residual blocks and resamples);
 * returns the final width. Fills the level widths and the block count of the config. */
static int64_t load_layers(loader *ld, half *hf, bool enc, int64_t c) {
    sdc_wan_vae_config *cf = &ld->m->cfg;
    const char *hn = enc ? "encoder" : "decoder", *list = enc ? "downsamples" : "upsamples";
    int *dims = enc ? cf->enc_dims : cf->dec_dims, lvl = 0, nrb = 0;
    char b[200];
    for (hf->n = 0; ld->s == SDC_OK; hf->n++) {
        int i = hf->n;
        bool res = findf(ld, "%s.%s.%d.residual.2.weight", hn, list, i) != NULL;
        bool rs = findf(ld, "%s.%s.%d.resample.1.weight", hn, list, i) != NULL;
        if (!res && !rs) break;
        if (i == WAN_MAX_LAYER || (rs && lvl + 1 == SDC_WAN_VAE_MAX_LVL)) {
            ld->s = sdc_fail(SDC_ERR_UNSUPPORTED, "wan vae: %s has too many layers", hn);
            break;
        }
        layer *l = &hf->l[i];
        if (res) {
            l->kind = L_RES;
            snprintf(b, sizeof b, "%s.%s.%d", hn, list, i);
            c = load_res(ld, &l->r, b, c);
            if (lvl == 0) nrb++;
            dims[lvl] = (int)c;
        } else {
            l->kind = enc ? L_DOWN : L_UP;
            snprintf(b, sizeof b, "%s.%s.%d.resample.1", hn, list, i);
            c = load_conv2d(ld, &l->c, b, 3, c);
            if (!enc) make_phases(ld, &l->c, l->phase);
            lvl++;
        }
    }
    if (ld->s != SDC_OK) return -1;
    if (!enc) nrb--;
    if (lvl == 0 || nrb < 1 ||
        (cf->n_levels && (cf->n_levels != lvl + 1 || cf->num_res_blocks != nrb)))
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: %s has %d levels and %d blocks per level%s", hn,
                         lvl + 1, nrb, cf->n_levels ? " (the encoder's differ)" : "");
    cf->n_levels = lvl + 1, cf->num_res_blocks = nrb, cf->scale = 1 << lvl;
    return ld->s == SDC_OK ? c : -1;
}

static void load_half(loader *ld, bool enc) {
    sdc_wan_vae *m = ld->m;
    sdc_wan_vae_config *cf = &m->cfg;
    half *hf = enc ? &m->enc : &m->dec;
    const char *hn = enc ? "encoder" : "decoder";
    char b[200];
    snprintf(b, sizeof b, "%s.conv1", hn);
    int64_t cin = load_conv3d(ld, &hf->in, b, 3, -1);
    if (ld->s != SDC_OK) return;
    if (enc) {
        cf->image_channels = (int)cin;
    } else if (cf->z_channels && cf->z_channels != cin) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "wan vae: decoder takes %lld latent channels, encoder %d",
                         (long long)cin, cf->z_channels);
        return;
    }
    cf->z_channels = enc ? cf->z_channels : (int)cin;
    int64_t c = hf->in.b->ne[0];
    if (!enc) load_middle(ld, hf, hn, c);
    c = load_layers(ld, hf, enc, c);
    if (c < 0) return;
    if (enc) load_middle(ld, hf, hn, c);
    hf->head_g = vec(ld, hn, ".head.0.gamma", c);
    snprintf(b, sizeof b, "%s.head.2", hn);
    load_conv3d(ld, &hf->head, b, 3, c);
    if (ld->s != SDC_OK) return;
    int64_t cout = hf->head.b->ne[0];
    if (enc) {
        cf->base_dim = (int)hf->in.b->ne[0];
        if (cout % 2 || (cf->z_channels && cf->z_channels != cout / 2)) {
            ld->s =
                sdc_fail(SDC_ERR_FORMAT, "wan vae: encoder gives %lld moments", (long long)cout);
            return;
        }
        cf->z_channels = (int)cout / 2;
        load_conv3d(ld, &m->quant, "conv1", 1, cout);
    } else {
        if (cf->image_channels && cf->image_channels != cout)
            ld->s =
                sdc_fail(SDC_ERR_FORMAT, "wan vae: decoder gives %lld channels, encoder takes %d",
                         (long long)cout, cf->image_channels);
        cf->image_channels = (int)cout;
        if (!cf->base_dim) cf->base_dim = (int)c;
        load_conv3d(ld, &m->post_quant, "conv2", 1, cf->z_channels);
    }
}

bool sdc_wan_vae_detect(const sdc_weight_source *ws, const char *prefix) {
    return sdc_weight_find(ws, prefix ? prefix : "", "decoder.middle.0.residual.0.gamma") ||
           sdc_weight_find(ws, prefix ? prefix : "", "encoder.middle.0.residual.0.gamma");
}

sdc_status sdc_wan_vae_load(const sdc_weight_source *ws, const char *prefix, sdc_wan_vae **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    if (!sdc_wan_vae_detect(ws, prefix))
        return sdc_fail(SDC_ERR_FORMAT,
                        "wan vae: no Wan VAE tensors under '%s' (looked for "
                        "'%sdecoder.middle.0.residual.0.gamma' and the encoder's)",
                        prefix, prefix);
    sdc_wan_vae *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "wan vae: out of memory");
    loader ld = {.ws = ws, .prefix = prefix, .m = m, .s = SDC_OK};
    m->cfg.has_encoder = sdc_weight_find(ws, prefix, "encoder.conv1.weight") != NULL;
    m->cfg.has_decoder = sdc_weight_find(ws, prefix, "decoder.conv1.weight") != NULL;
    if (!m->cfg.has_encoder && !m->cfg.has_decoder)
        ld.s = sdc_fail(SDC_ERR_FORMAT,
                        "wan vae: neither '%sencoder.conv1.weight' nor '%sdecoder.conv1.weight' "
                        "found",
                        prefix, prefix);
    if (m->cfg.has_encoder) load_half(&ld, true);
    if (m->cfg.has_decoder) load_half(&ld, false);
    if (ld.s != SDC_OK) {
        sdc_wan_vae_free(m);
        return ld.s;
    }
    *out = m;
    return SDC_OK;
}

void sdc_wan_vae_free(sdc_wan_vae *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->owned);
    free(m);
}

const sdc_wan_vae_config *sdc_wan_vae_get_config(const sdc_wan_vae *m) {
    return &m->cfg;
}

/* ---- graph ---- */

typedef struct gctx {
    sdc_graph *g;
    int block;
} gctx;

static sdc_tensor *apply_conv(gctx *c, const conv *cv, sdc_tensor *x, int stride, int pad) {
    return sdc_conv2d(c->g, x, cv->w, cv->b, stride, stride, pad, pad, 1, 1, 1);
}

/* RMS norm over the channels of x ne=[W, H, C, 1]; out ne=[C, W, H, 1] (tokens). */
static sdc_tensor *rms_tokens(gctx *c, sdc_tensor *x, sdc_tensor *gamma) {
    sdc_tensor *t = sdc_cont(c->g, sdc_permute(c->g, x, 2, 0, 1, 3));
    return sdc_rms_norm(c->g, t, gamma, WAN_EPS);
}

/* RMS norm + SiLU, back in the image layout. */
static sdc_tensor *rms_silu(gctx *c, sdc_tensor *x, sdc_tensor *gamma) {
    sdc_tensor *t = sdc_silu(c->g, rms_tokens(c, x, gamma));
    return sdc_cont(c->g, sdc_permute(c->g, t, 1, 2, 0, 3));
}

static sdc_tensor *apply_res(gctx *c, const resblock *r, sdc_tensor *x) {
    sdc_graph_set_block(c->g, c->block++);
    sdc_tensor *skip = r->skip.w ? apply_conv(c, &r->skip, x, 1, 0) : x;
    sdc_tensor *h = apply_conv(c, &r->c1, rms_silu(c, x, r->g1), 1, 1);
    h = apply_conv(c, &r->c2, rms_silu(c, h, r->g2), 1, 1);
    return sdc_add(c->g, h, skip);
}

/* Single-head self-attention over the W*H positions of one frame, residual added. */
static sdc_tensor *apply_attn(gctx *c, const half *hf, sdc_tensor *x) {
    if (!x) return NULL;
    sdc_graph *g = c->g;
    sdc_graph_set_block(g, c->block++);
    int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], L = W * H;
    sdc_tensor *t = sdc_reshape_2d(g, rms_tokens(c, x, hf->attn_g), C, L);
    sdc_tensor *wq = sdc_reshape_2d(g, hf->qkv.w, C, 3 * C);
    sdc_tensor *qkv = sdc_add(g, sdc_matmul(g, wq, t), hf->qkv.b); /* [3C, L]: q, k, v rows */
    sdc_tensor *p[3];
    for (int i = 0; i < 3; i++) {
        int64_t ne[4] = {C, L, 1, 1}, off[4] = {i * C, 0, 0, 0};
        p[i] = sdc_reshape_4d(g, sdc_cont(g, sdc_slice(g, qkv, ne, off)), C, L, 1, 1);
    }
    sdc_tensor *o = sdc_attention(g, p[0], p[1], p[2], NULL, 1.0f / sqrtf((float)C));
    sdc_tensor *wp = sdc_reshape_2d(g, hf->proj.w, C, C);
    o = sdc_add(g, sdc_matmul(g, wp, sdc_reshape_2d(g, o, C, L)), hf->proj.b);
    o = sdc_reshape_4d(g, sdc_cont(g, sdc_transpose(g, o)), W, H, C, 1);
    return sdc_add(g, o, x);
}

static sdc_tensor *apply_middle(gctx *c, const half *hf, sdc_tensor *h) {
    h = apply_res(c, &hf->m0, h);
    h = apply_attn(c, hf, h);
    return apply_res(c, &hf->m2, h);
}

/* 2x nearest upsample + 3x3 conv as four 2x2 convs on the input (padded by 1, each phase's
 * window cut out), interleaved as out[2x+dx, 2y+dy] = phase(dy, dx). */
static sdc_tensor *apply_upsample(gctx *c, const layer *l, sdc_tensor *h) {
    sdc_graph *g = c->g;
    if (!h) return NULL;
    int64_t W = h->ne[0], H = h->ne[1], C = l->c.w->ne[3];
    sdc_tensor *rows[2];
    for (int dy = 0; dy < 2; dy++) {
        sdc_tensor *q = NULL; /* [W, H, C, dx] */
        for (int dx = 0; dx < 2; dx++) {
            sdc_tensor *o = sdc_conv2d(g, h, l->phase[2 * dy + dx], l->c.b, 1, 1, 1, 1, 1, 1, 1);
            int64_t ne[4] = {W, H, C, 1}, off[4] = {dx, dy, 0, 0};
            o = o ? sdc_slice(g, o, ne, off) : NULL;
            q = q ? sdc_concat(g, q, o, 3) : o;
        }
        sdc_tensor *r = sdc_cont(g, sdc_permute(g, q, 3, 0, 1, 2)); /* [dx, W, H, C] */
        rows[dy] = r ? sdc_reshape_4d(g, r, 2 * W, 1, H, C) : NULL;
    }
    sdc_tensor *out = sdc_concat(g, rows[0], rows[1], 1); /* [2W, dy, H, C] */
    return out ? sdc_reshape_4d(g, out, 2 * W, 2 * H, C, 1) : NULL;
}

static sdc_tensor *apply_layers(gctx *c, const half *hf, sdc_tensor *h) {
    for (int i = 0; i < hf->n; i++) {
        const layer *l = &hf->l[i];
        if (l->kind == L_RES)
            h = apply_res(c, &l->r, h);
        else if (l->kind == L_DOWN) /* ZeroPad2d((0, 1, 0, 1)) + stride-2 conv */
            h = apply_conv(c, &l->c, sdc_pad(c->g, h, 1, 1, 0, 0), 2, 0);
        else
            h = apply_upsample(c, l, h);
    }
    return h;
}

static sdc_tensor *apply_head(gctx *c, const half *hf, sdc_tensor *h) {
    sdc_graph_set_block(c->g, -1);
    return apply_conv(c, &hf->head, rms_silu(c, h, hf->head_g), 1, 1);
}

static sdc_tensor *build_encoder(gctx *c, const sdc_wan_vae *m, sdc_tensor *x) {
    sdc_tensor *h = apply_conv(c, &m->enc.in, x, 1, 1);
    h = apply_middle(c, &m->enc, apply_layers(c, &m->enc, h));
    return apply_conv(c, &m->quant, apply_head(c, &m->enc, h), 1, 0);
}

static sdc_tensor *build_decoder(gctx *c, const sdc_wan_vae *m, sdc_tensor *z) {
    sdc_tensor *h = apply_conv(c, &m->post_quant, z, 1, 0);
    h = apply_middle(c, &m->dec, apply_conv(c, &m->dec.in, h, 1, 1));
    return apply_head(c, &m->dec, apply_layers(c, &m->dec, h));
}

/* Builds and runs one half on in ne=[w, h, c_in] and copies its output to out. */
static sdc_status run(sdc_wan_vae *m, sdc_backend *be, bool decode, const float *in, int w, int h,
                      int c_in, float *out, sdc_eval_fn cb, void *cb_user) {
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "wan vae: out of memory");
    gctx c = {.g = g};
    int64_t ne[4] = {w, h, c_in, 1};
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 4, ne);
    sdc_tensor *y = decode ? build_decoder(&c, m, x) : build_encoder(&c, m, x);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "wan vae: building the %s graph: %s", decode ? "decoder" : "encoder",
                     sdc_graph_error(g));
    } else {
        sdc_graph_mark_output(g, y);
        const sdc_input_data inputs[] = {{x, in, (size_t)w * h * c_in * sizeof(float)}};
        s = sdc_backend_set_inputs(be, g, inputs, 1);
        if (s == SDC_OK) s = sdc_backend_compute(be, g, cb, cb_user);
        if (s == SDC_OK) s = sdc_backend_tensor_get(be, y, out, 0, sdc_tensor_nbytes(y));
    }
    sdc_graph_free(g);
    return s;
}

sdc_status sdc_wan_vae_decode(sdc_wan_vae *m, sdc_backend *be, const float *z, int w, int h,
                              float *img, sdc_eval_fn cb, void *cb_user) {
    const sdc_wan_vae_config *c = &m->cfg;
    if (!c->has_decoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "wan vae: this model has no decoder (no 'decoder.*' tensors were loaded)");
    if (!z || !img || w < 1 || h < 1 || (int64_t)w * c->scale > WAN_MAX_SIDE ||
        (int64_t)h * c->scale > WAN_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG, "wan vae decode: latent %dx%d (1 to %d cells a side)",
                        w, h, WAN_MAX_SIDE / c->scale);
    return run(m, be, true, z, w, h, c->z_channels, img, cb, cb_user);
}

sdc_status sdc_wan_vae_encode(sdc_wan_vae *m, sdc_backend *be, const float *img, int W, int H,
                              float *moments, sdc_eval_fn cb, void *cb_user) {
    const sdc_wan_vae_config *c = &m->cfg;
    if (!c->has_encoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "wan vae: this model has no encoder (no 'encoder.*' tensors were loaded)");
    if (!img || !moments || W < c->scale || H < c->scale || W % c->scale || H % c->scale ||
        W > WAN_MAX_SIDE || H > WAN_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "wan vae encode: image %dx%d must be positive multiples of %d (at most %d)",
                        W, H, c->scale, WAN_MAX_SIDE);
    return run(m, be, false, img, W, H, c->image_channels, moments, cb, cb_user);
}

void sdc_wan_vae_sample(const float *moments, const float *noise, int c, int64_t n, float *out) {
    for (int64_t i = 0; i < (int64_t)c * n; i++) {
        float lv = moments[(int64_t)c * n + i];
        lv = lv < -30.0f ? -30.0f : lv > 20.0f ? 20.0f : lv;
        out[i] = moments[i] + expf(0.5f * lv) * noise[i];
    }
}

void sdc_wan_vae_latents_to_vae(float *x, int64_t n) {
    for (int ch = 0; ch < 16; ch++)
        for (int64_t i = 0; i < n; i++)
            x[ch * n + i] =
                x[ch * n + i] * sdc_wan_vae_latents_std[ch] + sdc_wan_vae_latents_mean[ch];
}

void sdc_wan_vae_latents_from_vae(float *x, int64_t n) {
    for (int ch = 0; ch < 16; ch++)
        for (int64_t i = 0; i < n; i++)
            x[ch * n + i] =
                (x[ch * n + i] - sdc_wan_vae_latents_mean[ch]) / sdc_wan_vae_latents_std[ch];
}
