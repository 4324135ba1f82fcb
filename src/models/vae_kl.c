/* AutoencoderKL as ldm.modules.diffusionmodules.model builds it (and sd.cpp runs it):
 * ResNet blocks (GroupNorm32 eps 1e-6, SiLU, 3x3 convs, 1x1 shortcut when the width changes),
 * one single-head attention block in the middle, 2x nearest upsampling + conv in the decoder,
 * right/bottom zero pad + stride-2 conv in the encoder. */
#include "models/vae_kl.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

#define VAE_GROUPS  32
#define VAE_EPS     1e-6f
#define VAE_MAX_LVL 4

typedef struct conv {
    sdc_tensor *w, *w16, *b; /* w as stored, w16 its F16 version (sd.cpp numerics), b F32 */
} conv;

typedef struct norm {
    sdc_tensor *w, *b; /* F32 */
} norm;

typedef struct resblock {
    norm n1, n2;
    conv c1, c2, skip; /* skip.w NULL when the width does not change */
} resblock;

typedef struct attnblock {
    norm n;
    conv q, k, v, proj; /* weights as matmul matrices ne=[C, C] (views made in the graph) */
} attnblock;

typedef struct mid {
    resblock b1, b2;
    attnblock attn;
} mid;

struct sdc_vae {
    sdc_vae_config cfg;
    sdc_vae_numerics mode;
    int chans[VAE_MAX_LVL]; /* channels of each level */
    /* encoder */
    conv e_in, e_out, quant;
    resblock *e_res; /* [n_levels][num_res_blocks] */
    conv e_down[VAE_MAX_LVL];
    mid e_mid;
    norm e_norm;
    /* decoder */
    conv d_in, d_out, post_quant;
    resblock *d_res; /* [n_levels][num_res_blocks + 1] */
    conv d_up[VAE_MAX_LVL];
    /* upsample + 3x3 conv as four 2x2 convs on the low-resolution input, one per output
     * parity (dy, dx): kernel taps that see the same nearest-upsampled pixel are summed.
     * 4/9 of the multiply-adds; F32 kernels [2,2,C,C] (exact numerics only) */
    sdc_tensor *d_up_phase[VAE_MAX_LVL][4];
    mid d_mid;
    norm d_norm;
    /* converted copies (F32 norms and biases, F16 conv weights), freed with the model */
    sdc_weight_copies owned; /* converted weights (F32 norms, F16 convs) */
};

/* ---- names ---- */

/* The diffusers name of an LDM VAE tensor name (both without the prefix). */
static void ldm_to_diffusers(const char *in, int n_levels, char *out, size_t size) {
    int i = 0, j = 0, pos = 0;
    bool enc = !strncmp(in, "encoder.", 8), dec = !strncmp(in, "decoder.", 8);
    if (!enc && !dec) {
        snprintf(out, size, "%s", in);
        return;
    }
    const char *half = enc ? "encoder" : "decoder", *r = in + 8;
    const char *rest;
    char res_rest[160];
#define MATCH(fmt, ...) (pos = 0, sscanf(r, fmt "%n", __VA_ARGS__, &pos) >= 0 && pos > 0)
    if (MATCH("down.%d.block.%d.", &i, &j) || MATCH("up.%d.block.%d.", &i, &j) ||
        MATCH("mid.block_%d.", &i)) {
        rest = r + pos;
        /* resnet: nin_shortcut -> conv_shortcut */
        if (!strncmp(rest, "nin_shortcut.", 13))
            snprintf(res_rest, sizeof res_rest, "conv_shortcut.%s", rest + 13);
        else
            snprintf(res_rest, sizeof res_rest, "%s", rest);
        if (r[0] == 'd')
            snprintf(out, size, "%s.down_blocks.%d.resnets.%d.%s", half, i, j, res_rest);
        else if (r[0] == 'u')
            snprintf(out, size, "%s.up_blocks.%d.resnets.%d.%s", half, n_levels - 1 - i, j,
                     res_rest);
        else
            snprintf(out, size, "%s.mid_block.resnets.%d.%s", half, i - 1, res_rest);
        return;
    }
    if (MATCH("down.%d.downsample.", &i)) {
        snprintf(out, size, "%s.down_blocks.%d.downsamplers.0.%s", half, i, r + pos);
        return;
    }
    if (MATCH("up.%d.upsample.", &i)) {
        snprintf(out, size, "%s.up_blocks.%d.upsamplers.0.%s", half, n_levels - 1 - i, r + pos);
        return;
    }
#undef MATCH
    static const char *attn_map[][2] = {{"mid.attn_1.norm.", "group_norm."},
                                        {"mid.attn_1.q.", "to_q."},
                                        {"mid.attn_1.k.", "to_k."},
                                        {"mid.attn_1.v.", "to_v."},
                                        {"mid.attn_1.proj_out.", "to_out.0."}};
    for (size_t a = 0; a < sizeof attn_map / sizeof *attn_map; a++) {
        size_t n = strlen(attn_map[a][0]);
        if (!strncmp(r, attn_map[a][0], n)) {
            snprintf(out, size, "%s.mid_block.attentions.0.%s%s", half, attn_map[a][1], r + n);
            return;
        }
    }
    if (!strncmp(r, "norm_out.", 9)) {
        snprintf(out, size, "%s.conv_norm_out.%s", half, r + 9);
        return;
    }
    snprintf(out, size, "%s", in);
}

static bool has_diffusers_names(const sdc_weight_source *ws, const char *prefix) {
    return sdc_weight_find(ws, prefix, "decoder.mid_block.resnets.0.conv1.weight") ||
           sdc_weight_find(ws, prefix, "encoder.mid_block.resnets.0.conv1.weight");
}

bool sdc_vae_detect(const sdc_weight_source *ws, const char *prefix) {
    static const char *probe[] = {
        "decoder.mid.block_1.conv1.weight", "encoder.mid.block_1.conv1.weight",
        "decoder.mid_block.resnets.0.conv1.weight", "encoder.mid_block.resnets.0.conv1.weight"};
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++)
        if (sdc_weight_find(ws, prefix, probe[i])) return true;
    return false;
}

/* ---- loading ---- */

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    sdc_vae *m;
    sdc_status s;
    int map_levels; /* levels, for diffusers names */
} loader;

/* The file's name of an LDM name: itself, or its diffusers name (older diffusers files name the
 * attention projections query/key/value/proj_attn: used when the new name is absent). */
static void resolve(loader *ld, const char *ldm_name, char *out, size_t size) {
    if (!ld->m->cfg.diffusers_names) {
        snprintf(out, size, "%s", ldm_name);
        return;
    }
    ldm_to_diffusers(ldm_name, ld->map_levels, out, size);
    static const char *old[][2] = {{".to_q.", ".query."},
                                   {".to_k.", ".key."},
                                   {".to_v.", ".value."},
                                   {".to_out.0.", ".proj_attn."}};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++) {
        char *p = strstr(out, old[i][0]);
        if (!p || sdc_weight_find(ld->ws, ld->prefix, out)) continue;
        char alt[256];
        snprintf(alt, sizeof alt, "%.*s%s%s", (int)(p - out), out, old[i][1],
                 p + strlen(old[i][0]));
        if (sdc_weight_find(ld->ws, ld->prefix, alt)) snprintf(out, size, "%s", alt);
    }
}

static sdc_tensor *find(loader *ld, const char *ldm_name) {
    char name[256];
    resolve(ld, ldm_name, name, sizeof name);
    return sdc_weight_find(ld->ws, ld->prefix, name);
}

static const char *full_name(loader *ld, const char *ldm_name, char *buf, size_t size) {
    char name[256];
    resolve(ld, ldm_name, name, sizeof name);
    snprintf(buf, size, "%s%s", ld->prefix, name);
    return buf;
}

/* The tensor `name` with ne (ne[i] < 0: any), or NULL and an error naming it. */
static sdc_tensor *req(loader *ld, const char *name, int ndims, const int64_t *ne) {
    if (ld->s != SDC_OK) return NULL;
    char mapped[256];
    resolve(ld, name, mapped, sizeof mapped);
    sdc_tensor *t;
    ld->s = sdc_weight_require(ld->ws, ld->prefix, mapped, ndims, ne, &t);
    if (ld->s != SDC_OK) sdc_fail_prefix(ld->s, "vae: ");
    return t;
}

static sdc_tensor *own(loader *ld, sdc_tensor *w, sdc_type type, const int64_t *ne) {
    if (ld->s != SDC_OK) return NULL;
    sdc_tensor *t = NULL;
    ld->s = sdc_weight_copies_add(&ld->m->owned, w, type, ne, &t);
    return t;
}

/* Norm weights and biases feed F32 kernels. */
static sdc_tensor *as_f32(loader *ld, sdc_tensor *w) {
    if (!w || ld->s != SDC_OK || w->type == SDC_TYPE_F32) return w;
    return own(ld, w, SDC_TYPE_F32, NULL);
}

static sdc_tensor *vec(loader *ld, const char *fmt, int64_t n, ...) {
    char name[200];
    va_list ap;
    va_start(ap, n);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int64_t ne[1] = {n};
    return as_f32(ld, req(ld, name, 1, ne));
}

static void load_norm(loader *ld, norm *nm, const char *base, int64_t c) {
    nm->w = vec(ld, "%s.weight", c, base);
    nm->b = vec(ld, "%s.bias", c, base);
    if (ld->s == SDC_OK && c % VAE_GROUPS)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "vae: '%s%s' has %lld channels, not a multiple of %d",
                         ld->prefix, base, (long long)c, VAE_GROUPS);
}

/* A k x k conv (k = 0: an attention projection, stored as [C,C,1,1] or Linear [C,C]). */
static void load_conv(loader *ld, conv *cv, const char *base, int k, int64_t cin, int64_t cout) {
    if (ld->s != SDC_OK) return;
    char name[200];
    snprintf(name, sizeof name, "%s.weight", base);
    if (k == 0) {
        sdc_tensor *t = find(ld, name);
        bool lin = t && t->ne[2] == 1 && t->ne[3] == 1 && !(t->ne[0] == 1 && t->ne[1] == 1);
        int64_t ne4[4] = {1, 1, cin, cout}, ne2[2] = {cin, cout};
        cv->w = lin ? req(ld, name, 2, ne2) : req(ld, name, 4, ne4);
        if (ld->s == SDC_OK) ld->m->cfg.attn_linear = lin;
    } else {
        int64_t ne[4] = {k, k, cin, cout};
        cv->w = req(ld, name, 4, ne);
    }
    cv->b = vec(ld, "%s.bias", cout, base);
    if (ld->s == SDC_OK && cv->w->type == SDC_TYPE_F16) cv->w16 = cv->w;
}

static void load_res(loader *ld, resblock *r, const char *base, int64_t cin, int64_t cout) {
    char b[160];
    snprintf(b, sizeof b, "%s.norm1", base);
    load_norm(ld, &r->n1, b, cin);
    snprintf(b, sizeof b, "%s.conv1", base);
    load_conv(ld, &r->c1, b, 3, cin, cout);
    snprintf(b, sizeof b, "%s.norm2", base);
    load_norm(ld, &r->n2, b, cout);
    snprintf(b, sizeof b, "%s.conv2", base);
    load_conv(ld, &r->c2, b, 3, cout, cout);
    if (cin != cout) {
        snprintf(b, sizeof b, "%s.nin_shortcut", base);
        load_conv(ld, &r->skip, b, 1, cin, cout);
    }
}

static void load_mid(loader *ld, mid *md, const char *half, int64_t c) {
    char b[160];
    snprintf(b, sizeof b, "%s.mid.block_1", half);
    load_res(ld, &md->b1, b, c, c);
    snprintf(b, sizeof b, "%s.mid.attn_1.norm", half);
    load_norm(ld, &md->attn.n, b, c);
    static const char *proj[4] = {"q", "k", "v", "proj_out"};
    conv *cv[4] = {&md->attn.q, &md->attn.k, &md->attn.v, &md->attn.proj};
    for (int i = 0; i < 4; i++) {
        snprintf(b, sizeof b, "%s.mid.attn_1.%s", half, proj[i]);
        load_conv(ld, cv[i], b, 0, c, c);
    }
    snprintf(b, sizeof b, "%s.mid.block_2", half);
    load_res(ld, &md->b2, b, c, c);
}

/* Out channels of a conv weight, or -1 if absent. */
static int64_t conv_out_ch(loader *ld, const char *name) {
    sdc_tensor *t = find(ld, name);
    return t ? t->ne[3] : -1;
}

/* Levels, widths and block counts from the names and shapes of one half. */
static sdc_status detect_half(loader *ld, bool enc) {
    sdc_vae_config *c = &ld->m->cfg;
    const char *half = enc ? "encoder" : "decoder";
    char name[200];
    int n = 0, nrb = 0;
    for (;; n++) {
        snprintf(name, sizeof name, "%s.%s.%d.block.0.conv1.weight", half, enc ? "down" : "up", n);
        if (!find(ld, name)) break;
    }
    if (n < 1 || n > VAE_MAX_LVL)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "vae: %s has %d levels (1 to %d supported)", half, n,
                        VAE_MAX_LVL);
    for (;; nrb++) {
        snprintf(name, sizeof name, "%s.%s.0.block.%d.conv1.weight", half, enc ? "down" : "up",
                 nrb);
        if (!find(ld, name)) break;
    }
    if (!enc) nrb--; /* the decoder has one more block per level */
    if (nrb < 1) return sdc_fail(SDC_ERR_FORMAT, "vae: %s has no resnet blocks at level 0", half);
    if (c->n_levels && (c->n_levels != n || c->num_res_blocks != nrb))
        return sdc_fail(SDC_ERR_FORMAT,
                        "vae: encoder (%d levels, %d blocks) and decoder (%d levels, %d blocks) "
                        "differ",
                        c->n_levels, c->num_res_blocks, n, nrb);
    c->n_levels = n, c->num_res_blocks = nrb;
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, "%s.%s.%d.block.0.conv1.weight", half, enc ? "down" : "up", i);
        int64_t co = conv_out_ch(ld, name);
        if (co < VAE_GROUPS)
            return sdc_fail(SDC_ERR_FORMAT, "vae: '%s%s' has %lld output channels", ld->prefix,
                            name, (long long)co);
        if (ld->m->chans[i] && ld->m->chans[i] != co)
            return sdc_fail(SDC_ERR_FORMAT,
                            "vae: '%s%s' has %lld output channels, the encoder's level %d has %d",
                            ld->prefix, name, (long long)co, i, ld->m->chans[i]);
        ld->m->chans[i] = (int)co;
    }
    c->ch = ld->m->chans[0];
    for (int i = 0; i < n; i++) c->ch_mult[i] = ld->m->chans[i] / c->ch;
    c->scale = 1 << (n - 1);
    return SDC_OK;
}

static void load_encoder(loader *ld) {
    sdc_vae *m = ld->m;
    sdc_vae_config *c = &m->cfg;
    int n = c->n_levels, nrb = c->num_res_blocks;
    char b[160];
    int64_t zc2 = conv_out_ch(ld, "encoder.conv_out.weight");
    if (zc2 < 2 || zc2 % 2) {
        char fn[300];
        ld->s = sdc_fail(SDC_ERR_FORMAT, "vae: '%s' missing or not 2*z_channels wide",
                         full_name(ld, "encoder.conv_out.weight", fn, sizeof fn));
        return;
    }
    if (c->z_channels && c->z_channels != zc2 / 2) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "vae: encoder has %lld latent channels, decoder %d",
                         (long long)zc2 / 2, c->z_channels);
        return;
    }
    c->z_channels = (int)zc2 / 2;
    m->e_res = calloc((size_t)n * nrb, sizeof(resblock));
    if (!m->e_res) {
        ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
        return;
    }
    load_conv(ld, &m->e_in, "encoder.conv_in", 3, 3, m->chans[0]);
    int64_t cin = m->chans[0];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < nrb; j++) {
            snprintf(b, sizeof b, "encoder.down.%d.block.%d", i, j);
            load_res(ld, &m->e_res[i * nrb + j], b, cin, m->chans[i]);
            cin = m->chans[i];
        }
        if (i != n - 1) {
            snprintf(b, sizeof b, "encoder.down.%d.downsample.conv", i);
            load_conv(ld, &m->e_down[i], b, 3, cin, cin);
        }
    }
    load_mid(ld, &m->e_mid, "encoder", cin);
    load_norm(ld, &m->e_norm, "encoder.norm_out", cin);
    load_conv(ld, &m->e_out, "encoder.conv_out", 3, cin, zc2);
    if (find(ld, "quant_conv.weight")) {
        load_conv(ld, &m->quant, "quant_conv", 1, zc2, zc2);
        c->has_quant_conv = true;
    }
}

/* The four 2x2 kernels of an upsample conv (see d_up_phase). Output row 2i+dy of
 * conv3x3(upsample2(x)) reads upsampled rows 2i+dy-1..2i+dy+1, i.e. low-res rows (i-1, i) for
 * dy = 0 (taps {0}, {1,2}) and (i, i+1) for dy = 1 (taps {0,1}, {2}); columns alike. */
static void make_phases(loader *ld, const conv *cv, sdc_tensor **out) {
    if (ld->s != SDC_OK) return;
    const sdc_tensor *w = cv->w;
    int64_t cin = w->ne[2], cout = w->ne[3], n = cin * cout;
    float *w32 = malloc((size_t)n * 9 * sizeof(float)), *k2 = malloc((size_t)n * 4 * sizeof(float));
    if (!w32 || !k2) {
        ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
    } else if ((ld->s = sdc_weight_to_f32(w, w32)) == SDC_OK) {
        static const int first[2][2] = {{0, 1}, {0, 2}}, count[2][2] = {{1, 2}, {2, 1}};
        for (int dy = 0; dy < 2; dy++)
            for (int dx = 0; dx < 2; dx++) {
                for (int64_t i = 0; i < n; i++) {
                    const float *src = w32 + 9 * i;
                    for (int b = 0; b < 2; b++)
                        for (int a = 0; a < 2; a++) {
                            float sum = 0;
                            for (int ky = first[dy][b]; ky < first[dy][b] + count[dy][b]; ky++)
                                for (int kx = first[dx][a]; kx < first[dx][a] + count[dx][a]; kx++)
                                    sum += src[kx + 3 * ky];
                            k2[4 * i + a + 2 * b] = sum;
                        }
                }
                sdc_tensor t = {0};
                t.type = SDC_TYPE_F32;
                t.ne[0] = 2, t.ne[1] = 2, t.ne[2] = cin, t.ne[3] = cout;
                sdc_tensor_set_contiguous_strides(&t);
                t.data = k2;
                t.flags = SDC_TENSOR_PARAM;
                /* the phase suffix always fits: the weight's name is cut first */
                if (snprintf(t.name, sizeof t.name, "%.*s#phase%d%d", (int)sizeof t.name - 10,
                             w->name, dy, dx) >= (int)sizeof t.name)
                    t.name[sizeof t.name - 1] = '\0';
                out[2 * dy + dx] = own(ld, &t, SDC_TYPE_F32, NULL);
            }
    }
    free(w32);
    free(k2);
}

static void load_decoder(loader *ld) {
    sdc_vae *m = ld->m;
    sdc_vae_config *c = &m->cfg;
    int n = c->n_levels, nrb = c->num_res_blocks;
    char b[160], fn[300];
    sdc_tensor *ci = find(ld, "decoder.conv_in.weight");
    if (!ci) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "vae: missing tensor '%s'",
                         full_name(ld, "decoder.conv_in.weight", fn, sizeof fn));
        return;
    }
    if (c->z_channels && c->z_channels != ci->ne[2]) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "vae: encoder has %d latent channels, decoder %lld",
                         c->z_channels, (long long)ci->ne[2]);
        return;
    }
    c->z_channels = (int)ci->ne[2];
    m->d_res = calloc((size_t)n * (nrb + 1), sizeof(resblock));
    if (!m->d_res) {
        ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
        return;
    }
    int64_t cin = m->chans[n - 1];
    if (find(ld, "post_quant_conv.weight")) {
        sdc_tensor *pq = find(ld, "post_quant_conv.weight");
        c->embed_dim = (int)pq->ne[2];
        load_conv(ld, &m->post_quant, "post_quant_conv", 1, c->embed_dim, c->z_channels);
        c->has_quant_conv = true;
    }
    load_conv(ld, &m->d_in, "decoder.conv_in", 3, c->z_channels, cin);
    load_mid(ld, &m->d_mid, "decoder", cin);
    for (int i = n - 1; i >= 0; i--) {
        for (int j = 0; j <= nrb; j++) {
            snprintf(b, sizeof b, "decoder.up.%d.block.%d", i, j);
            load_res(ld, &m->d_res[i * (nrb + 1) + j], b, cin, m->chans[i]);
            cin = m->chans[i];
        }
        if (i != 0) {
            snprintf(b, sizeof b, "decoder.up.%d.upsample.conv", i);
            load_conv(ld, &m->d_up[i], b, 3, cin, cin);
            make_phases(ld, &m->d_up[i], m->d_up_phase[i]);
        }
    }
    load_norm(ld, &m->d_norm, "decoder.norm_out", cin);
    load_conv(ld, &m->d_out, "decoder.conv_out", 3, cin, 3);
}

sdc_status sdc_vae_load(const sdc_weight_source *ws, const char *prefix, sdc_vae **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    if (!sdc_vae_detect(ws, prefix))
        return sdc_fail(SDC_ERR_FORMAT,
                        "vae: no AutoencoderKL tensors under '%s' (looked for "
                        "'%sdecoder.mid.block_1.conv1.weight' and the encoder's)",
                        prefix, prefix);
    sdc_vae *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
    loader ld = {.ws = ws, .prefix = prefix, .m = m, .s = SDC_OK};
    sdc_vae_config *c = &m->cfg;
    c->diffusers_names = has_diffusers_names(ws, prefix);
    if (c->diffusers_names) { /* diffusers numbers the decoder's levels in reverse: count them */
        const char *fmt[2] = {"decoder.up_blocks.%d.resnets.0.conv1.weight",
                              "encoder.down_blocks.%d.resnets.0.conv1.weight"};
        for (int f = 0; f < 2 && !ld.map_levels; f++)
            for (char name[128];; ld.map_levels++) {
                snprintf(name, sizeof name, fmt[f], ld.map_levels);
                if (!sdc_weight_find(ws, prefix, name)) break;
            }
    }
    c->has_encoder = find(&ld, "encoder.conv_in.weight") != NULL;
    c->has_decoder = find(&ld, "decoder.conv_in.weight") != NULL;
    if (!c->has_encoder && !c->has_decoder)
        ld.s = sdc_fail(SDC_ERR_FORMAT,
                        "vae: neither '%sencoder.conv_in.weight' nor "
                        "'%sdecoder.conv_in.weight' found",
                        prefix, prefix);
    if (ld.s == SDC_OK && c->has_encoder) ld.s = detect_half(&ld, true);
    if (ld.s == SDC_OK && c->has_decoder) ld.s = detect_half(&ld, false);
    if (ld.s == SDC_OK && c->has_encoder) load_encoder(&ld);
    if (ld.s == SDC_OK && c->has_decoder) load_decoder(&ld);
    if (ld.s != SDC_OK) {
        sdc_vae_free(m);
        return ld.s;
    }
    if (!c->embed_dim) c->embed_dim = c->z_channels;
    m->mode = SDC_VAE_EXACT;
    *out = m;
    return SDC_OK;
}

void sdc_vae_free(sdc_vae *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->owned);
    free(m->e_res);
    free(m->d_res);
    free(m);
}

const sdc_vae_config *sdc_vae_get_config(const sdc_vae *m) {
    return &m->cfg;
}

/* Every conv of the model, for the F16 copies. */
static int all_convs(sdc_vae *m, conv **out) {
    int n = 0, L = m->cfg.n_levels, nrb = m->cfg.num_res_blocks;
    conv *top[] = {&m->e_in, &m->e_out, &m->quant, &m->d_in, &m->d_out, &m->post_quant};
    for (size_t i = 0; i < sizeof top / sizeof *top; i++) out[n++] = top[i];
    for (int i = 0; i < L; i++) out[n++] = &m->e_down[i], out[n++] = &m->d_up[i];
    mid *mids[2] = {&m->e_mid, &m->d_mid};
    for (int i = 0; i < 2; i++) {
        resblock *r[2] = {&mids[i]->b1, &mids[i]->b2};
        for (int j = 0; j < 2; j++)
            out[n++] = &r[j]->c1, out[n++] = &r[j]->c2, out[n++] = &r[j]->skip;
        attnblock *a = &mids[i]->attn;
        out[n++] = &a->q, out[n++] = &a->k, out[n++] = &a->v, out[n++] = &a->proj;
    }
    for (int i = 0; m->e_res && i < L * nrb; i++)
        out[n++] = &m->e_res[i].c1, out[n++] = &m->e_res[i].c2, out[n++] = &m->e_res[i].skip;
    for (int i = 0; m->d_res && i < L * (nrb + 1); i++)
        out[n++] = &m->d_res[i].c1, out[n++] = &m->d_res[i].c2, out[n++] = &m->d_res[i].skip;
    return n;
}

sdc_status sdc_vae_set_numerics(sdc_vae *m, sdc_vae_numerics mode) {
    if (mode != SDC_VAE_SDCPP && mode != SDC_VAE_EXACT)
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae: numerics mode %d", (int)mode);
    if (mode == SDC_VAE_SDCPP) { /* sd.cpp keeps every conv weight in F16 */
        int L = m->cfg.n_levels, nrb = m->cfg.num_res_blocks;
        int cap = 6 + 2 * L + 2 * 10 + 3 * L * (2 * nrb + 1);
        conv **cv = malloc((size_t)cap * sizeof *cv);
        if (!cv) return sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
        loader ld = {.m = m, .s = SDC_OK};
        int n = all_convs(m, cv);
        for (int i = 0; i < n && ld.s == SDC_OK; i++)
            if (cv[i]->w && !cv[i]->w16) cv[i]->w16 = own(&ld, cv[i]->w, SDC_TYPE_F16, NULL);
        free(cv);
        if (ld.s != SDC_OK) return ld.s;
    }
    m->mode = mode;
    return SDC_OK;
}

/* ---- graph ---- */

typedef struct gctx {
    sdc_graph *g;
    sdc_vae_numerics mode;
    int block; /* next block tag (where a layer split may cut) */
} gctx;

/* sd.cpp's im2col is F16: round a conv input as it does */
static sdc_tensor *rnd(gctx *c, sdc_tensor *x) {
    if (c->mode != SDC_VAE_SDCPP) return x;
    return sdc_cast(c->g, sdc_cast(c->g, x, SDC_TYPE_F16), SDC_TYPE_F32);
}

static sdc_tensor *apply_conv(gctx *c, const conv *cv, sdc_tensor *x, int stride, int pad) {
    sdc_tensor *w = c->mode == SDC_VAE_SDCPP ? cv->w16 : cv->w;
    return sdc_conv2d(c->g, rnd(c, x), w, cv->b, stride, stride, pad, pad, 1, 1, 1);
}

static sdc_tensor *norm_silu(gctx *c, const norm *n, sdc_tensor *x) {
    return sdc_silu(c->g, sdc_group_norm(c->g, x, VAE_GROUPS, n->w, n->b, VAE_EPS));
}

static sdc_tensor *apply_res(gctx *c, const resblock *r, sdc_tensor *x) {
    sdc_graph_set_block(c->g, c->block++);
    /* the (narrower) shortcut first: the wide input then dies at norm1, one full-size tensor
     * earlier (-134 MB of scratch at 512x512) */
    sdc_tensor *skip = r->skip.w ? apply_conv(c, &r->skip, x, 1, 0) : x;
    sdc_tensor *h = apply_conv(c, &r->c1, norm_silu(c, &r->n1, x), 1, 1);
    h = apply_conv(c, &r->c2, norm_silu(c, &r->n2, h), 1, 1);
    return sdc_add(c->g, h, skip);
}

/* A projection of tokens x ne=[C, L] by a 1x1 conv or Linear weight. */
static sdc_tensor *apply_proj(gctx *c, const conv *cv, sdc_tensor *x) {
    sdc_tensor *w = c->mode == SDC_VAE_SDCPP ? cv->w16 : cv->w;
    if (w->ne[2] != 1) w = sdc_reshape_2d(c->g, w, w->ne[2], w->ne[3]); /* [1,1,C,C] -> [C,C] */
    return sdc_add(c->g, sdc_matmul(c->g, w, rnd(c, x)), cv->b);
}

/* Single-head self-attention over the W*H positions, residual added. */
static sdc_tensor *apply_attn(gctx *c, const attnblock *a, sdc_tensor *x) {
    if (!x) return NULL;
    sdc_graph *g = c->g;
    sdc_graph_set_block(g, c->block++);
    int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], L = W * H;
    sdc_tensor *h = sdc_group_norm(g, x, VAE_GROUPS, a->n.w, a->n.b, VAE_EPS);
    h = sdc_reshape_2d(g, sdc_cont(g, sdc_permute(g, h, 2, 0, 1, 3)), C, L); /* [C, L] */
    sdc_tensor *q = sdc_reshape_4d(g, apply_proj(c, &a->q, h), C, L, 1, 1);
    sdc_tensor *k = sdc_reshape_4d(g, apply_proj(c, &a->k, h), C, L, 1, 1);
    sdc_tensor *v = sdc_reshape_4d(g, apply_proj(c, &a->v, h), C, L, 1, 1);
    sdc_tensor *o = sdc_attention(g, q, k, v, NULL, 1.0f / sqrtf((float)C)); /* [C, 1, L, 1] */
    o = apply_proj(c, &a->proj, sdc_reshape_2d(g, o, C, L));
    o = sdc_reshape_4d(g, sdc_cont(g, sdc_transpose(g, o)), W, H, C, 1);
    return sdc_add(g, o, x);
}

static sdc_tensor *apply_mid(gctx *c, const mid *md, sdc_tensor *h) {
    h = apply_res(c, &md->b1, h);
    h = apply_attn(c, &md->attn, h);
    return apply_res(c, &md->b2, h);
}

/* 2x nearest upsample + the level's 3x3 conv. Exact numerics: four 2x2 convs on the input
 * (padded by 1, each phase's window cut out), interleaved as out[2x+dx, 2y+dy] = phase(dy,dx). */
static sdc_tensor *apply_upsample(gctx *c, const sdc_vae *m, int lvl, sdc_tensor *h) {
    sdc_graph *g = c->g;
    if (c->mode == SDC_VAE_SDCPP || !m->d_up_phase[lvl][0] || !h)
        return apply_conv(c, &m->d_up[lvl], sdc_upsample_nearest(g, h, 2), 1, 1);
    int64_t W = h->ne[0], H = h->ne[1], C = m->d_up[lvl].w->ne[3];
    sdc_tensor *rows[2];
    for (int dy = 0; dy < 2; dy++) {
        sdc_tensor *q = NULL; /* [W, H, C, dx] */
        for (int dx = 0; dx < 2; dx++) {
            sdc_tensor *o = sdc_conv2d(g, h, m->d_up_phase[lvl][2 * dy + dx], m->d_up[lvl].b, 1, 1,
                                       1, 1, 1, 1, 1);
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

static sdc_tensor *build_decoder(gctx *c, const sdc_vae *m, sdc_tensor *z) {
    const sdc_vae_config *cf = &m->cfg;
    int nrb = cf->num_res_blocks;
    sdc_tensor *h = z;
    if (m->post_quant.w) h = apply_conv(c, &m->post_quant, h, 1, 0);
    h = apply_conv(c, &m->d_in, h, 1, 1);
    h = apply_mid(c, &m->d_mid, h);
    for (int i = cf->n_levels - 1; i >= 0; i--) {
        for (int j = 0; j <= nrb; j++) h = apply_res(c, &m->d_res[i * (nrb + 1) + j], h);
        if (i != 0) h = apply_upsample(c, m, i, h);
    }
    sdc_graph_set_block(c->g, -1);
    return apply_conv(c, &m->d_out, norm_silu(c, &m->d_norm, h), 1, 1);
}

static sdc_tensor *build_encoder(gctx *c, const sdc_vae *m, sdc_tensor *x) {
    const sdc_vae_config *cf = &m->cfg;
    int nrb = cf->num_res_blocks;
    sdc_tensor *h = apply_conv(c, &m->e_in, x, 1, 1);
    for (int i = 0; i < cf->n_levels; i++) {
        for (int j = 0; j < nrb; j++) h = apply_res(c, &m->e_res[i * nrb + j], h);
        if (i != cf->n_levels - 1) /* pad right and bottom, then a stride-2 conv */
            h = apply_conv(c, &m->e_down[i], sdc_pad(c->g, h, 1, 1, 0, 0), 2, 0);
    }
    h = apply_mid(c, &m->e_mid, h);
    sdc_graph_set_block(c->g, -1);
    h = apply_conv(c, &m->e_out, norm_silu(c, &m->e_norm, h), 1, 1);
    if (m->quant.w) h = apply_conv(c, &m->quant, h, 1, 0);
    return h;
}

/* Builds and runs one half on in ne=[w, h, c_in] and copies its output to out. */
static sdc_status run(sdc_vae *m, sdc_backend *be, bool decode, const float *in, int w, int h,
                      int c_in, float *out, sdc_eval_fn cb, void *cb_user) {
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "vae: out of memory");
    gctx c = {.g = g, .mode = m->mode};
    int64_t ne[4] = {w, h, c_in, 1};
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 4, ne);
    sdc_tensor *y = decode ? build_decoder(&c, m, x) : build_encoder(&c, m, x);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "vae: building the %s graph: %s", decode ? "decoder" : "encoder",
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

#define VAE_MAX_SIDE 65536 /* pixels: keeps sizes far from overflow */

sdc_status sdc_vae_decode(sdc_vae *m, sdc_backend *be, const float *z, int w, int h, float *rgb,
                          sdc_eval_fn cb, void *cb_user) {
    const sdc_vae_config *c = &m->cfg;
    if (!c->has_decoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "vae: this model has no decoder (no 'decoder.*' tensors were loaded)");
    if (!z || !rgb || w < 1 || h < 1 || (int64_t)w * c->scale > VAE_MAX_SIDE ||
        (int64_t)h * c->scale > VAE_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae decode: latent %dx%d (1 to %d cells a side)", w,
                        h, VAE_MAX_SIDE / c->scale);
    int cin = m->post_quant.w ? c->embed_dim : c->z_channels;
    return run(m, be, true, z, w, h, cin, rgb, cb, cb_user);
}

sdc_status sdc_vae_encode(sdc_vae *m, sdc_backend *be, const float *rgb, int W, int H,
                          float *moments, sdc_eval_fn cb, void *cb_user) {
    const sdc_vae_config *c = &m->cfg;
    if (!c->has_encoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "vae: this model has no encoder (no 'encoder.*' tensors were loaded)");
    if (!rgb || !moments || W < c->scale || H < c->scale || W % c->scale || H % c->scale ||
        W > VAE_MAX_SIDE || H > VAE_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "vae encode: image %dx%d must be positive multiples of %d (at most %d)", W,
                        H, c->scale, VAE_MAX_SIDE);
    return run(m, be, false, rgb, W, H, 3, moments, cb, cb_user);
}
