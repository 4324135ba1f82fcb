/* TAESD: Sequential stacks of 3x3 convs, residual blocks (conv-ReLU-conv-ReLU-conv + skip,
 * ReLU), 2x nearest upsampling (decoder) and stride-2 convs (encoder). The stacks are read
 * layer by layer from the names: a conv, a block, or a gap (ReLU at decoder index 1, else an
 * upsample), so the block counts come from the file. */
#include "models/taesd.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

#define TAE_MAX_LAYERS 64

typedef enum layer_kind { L_CONV, L_BLOCK, L_RELU, L_UP } layer_kind;

typedef struct tconv {
    sdc_tensor *w, *w16, *b; /* b may be NULL; w16: F16 copy for sd.cpp numerics */
    int stride;
} tconv;

typedef struct layer {
    layer_kind kind;
    tconv c[3], skip; /* conv: c[0]; block: c[0..2] (conv.0, conv.2, conv.4), skip optional */
} layer;

typedef struct stack {
    layer l[TAE_MAX_LAYERS];
    int n;
} stack;

struct sdc_taesd {
    sdc_taesd_config cfg;
    sdc_vae_numerics mode;
    stack dec, enc;
    sdc_weight_copies owned; /* converted weights (F32 norms, F16 convs) */
};

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    sdc_taesd *m;
    sdc_status s;
    bool enc;
} loader;

/* Name of layer idx's tensor `suffix` in the file's layout. */
static void lname(const loader *ld, int idx, const char *suffix, char *out, size_t size) {
    if (!ld->m->cfg.original_names)
        snprintf(out, size, "%s.layers.%d.%s", ld->enc ? "encoder" : "decoder", idx, suffix);
    else /* taesd.py's decoder starts with a Clamp module at index 0 */
        snprintf(out, size, "%d.%s", ld->enc ? idx : idx + 1, suffix);
}

static sdc_tensor *lfind(const loader *ld, int idx, const char *suffix) {
    char name[128];
    lname(ld, idx, suffix, name, sizeof name);
    return sdc_weight_find(ld->ws, ld->prefix, name);
}

static sdc_tensor *own(loader *ld, sdc_tensor *w, sdc_type type) {
    if (ld->s != SDC_OK) return NULL;
    sdc_tensor *t = NULL;
    ld->s = sdc_weight_copies_add(&ld->m->owned, w, type, NULL, &t);
    return t;
}

/* A conv of layer idx (sub: "" or "conv.0." etc.) with k x k x cin -> cout; bias optional. */
static void load_conv(loader *ld, tconv *c, int idx, const char *sub, int k, int64_t cin,
                      int64_t cout, int stride) {
    if (ld->s != SDC_OK) return;
    char suffix[64], name[128];
    snprintf(suffix, sizeof suffix, "%sweight", sub);
    lname(ld, idx, suffix, name, sizeof name);
    int64_t ne[4] = {k, k, cin, cout};
    ld->s = sdc_weight_require(ld->ws, ld->prefix, name, 4, ne, &c->w);
    if (ld->s != SDC_OK) {
        sdc_fail_prefix(ld->s, "taesd: ");
        return;
    }
    snprintf(suffix, sizeof suffix, "%sbias", sub);
    lname(ld, idx, suffix, name, sizeof name);
    sdc_tensor *b = sdc_weight_find(ld->ws, ld->prefix, name);
    if (b) {
        int64_t bne[1] = {cout};
        ld->s = sdc_weight_require(ld->ws, ld->prefix, name, 1, bne, &b);
        if (ld->s != SDC_OK) {
            sdc_fail_prefix(ld->s, "taesd: ");
            return;
        }
        c->b = b->type == SDC_TYPE_F32 ? b : own(ld, b, SDC_TYPE_F32);
    }
    c->stride = stride;
    if (ld->s == SDC_OK && c->w->type == SDC_TYPE_F16) c->w16 = c->w;
}

/* Reads one stack; the first conv fixes the widths (z -> ch or 3 -> ch). */
static void load_stack(loader *ld, stack *st) {
    sdc_taesd_config *cf = &ld->m->cfg;
    int64_t ch = cf->channels;
    for (int i = 0; ld->s == SDC_OK; i++) {
        bool conv = lfind(ld, i, "weight") != NULL, block = lfind(ld, i, "conv.0.weight") != NULL;
        if (!conv && !block) {
            if (!lfind(ld, i + 1, "weight") && !lfind(ld, i + 1, "conv.0.weight")) break;
            if (ld->enc) {
                char name[128];
                lname(ld, i, "weight", name, sizeof name);
                ld->s = sdc_fail(SDC_ERR_FORMAT, "taesd: missing tensor '%s%s'", ld->prefix, name);
                break;
            }
        }
        if (st->n == TAE_MAX_LAYERS) {
            ld->s = sdc_fail(SDC_ERR_UNSUPPORTED, "taesd: more than %d layers", TAE_MAX_LAYERS);
            break;
        }
        layer *l = &st->l[st->n++];
        if (!conv && !block) { /* the decoder's ReLU after its first conv, then upsamples */
            l->kind = i == 1 ? L_RELU : L_UP;
            continue;
        }
        if (block) {
            l->kind = L_BLOCK;
            load_conv(ld, &l->c[0], i, "conv.0.", 3, ch, ch, 1);
            load_conv(ld, &l->c[1], i, "conv.2.", 3, ch, ch, 1);
            load_conv(ld, &l->c[2], i, "conv.4.", 3, ch, ch, 1);
            if (lfind(ld, i, "skip.weight")) load_conv(ld, &l->skip, i, "skip.", 1, ch, ch, 1);
            continue;
        }
        l->kind = L_CONV;
        sdc_tensor *w = lfind(ld, i, "weight");
        bool first = i == 0, bias = lfind(ld, i, "bias") != NULL;
        bool last = !lfind(ld, i + 1, "weight") && !lfind(ld, i + 1, "conv.0.weight") &&
                    !lfind(ld, i + 2, "weight") && !lfind(ld, i + 2, "conv.0.weight");
        int64_t cin = first ? (ld->enc ? 3 : cf->z_channels) : ch;
        int64_t cout = last ? (ld->enc ? cf->z_channels : 3) : ch;
        if (last && ld->enc) cout = w->ne[3];
        /* in the encoder the bias-free convs are the stride-2 downsamplers */
        load_conv(ld, &l->c[0], i, "", 3, cin, cout, ld->enc && !bias ? 2 : 1);
    }
}

bool sdc_taesd_detect(const sdc_weight_source *ws, const char *prefix) {
    return sdc_weight_find(ws, prefix, "decoder.layers.0.weight") ||
           sdc_weight_find(ws, prefix, "encoder.layers.0.weight");
}

sdc_status sdc_taesd_load(const sdc_weight_source *ws, const char *prefix, sdc_taesd **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    sdc_taesd *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "taesd: out of memory");
    sdc_taesd_config *c = &m->cfg;
    loader ld = {.ws = ws, .prefix = prefix, .m = m, .s = SDC_OK};
    sdc_tensor *d0 = sdc_weight_find(ws, prefix, "decoder.layers.0.weight");
    sdc_tensor *e0 = sdc_weight_find(ws, prefix, "encoder.layers.0.weight");
    if (!d0 && !e0) { /* taesd.py's files: decoder "1.weight" (z -> ch), encoder "0.weight" */
        sdc_tensor *o1 = sdc_weight_find(ws, prefix, "1.weight");
        sdc_tensor *o0 = sdc_weight_find(ws, prefix, "0.weight");
        if (o1 && o1->ne[0] == 3 && !o0) d0 = o1;
        if (o0 && o0->ne[0] == 3 && o0->ne[2] == 3 &&
            sdc_weight_find(ws, prefix, "1.conv.0.weight"))
            e0 = o0;
        c->original_names = d0 || e0;
    }
    if (!d0 && !e0) {
        free(m);
        return sdc_fail(SDC_ERR_FORMAT,
                        "taesd: no '%sdecoder.layers.0.weight' or '%sencoder.layers.0.weight' "
                        "tensor",
                        prefix, prefix);
    }
    if (d0 && d0->ne[0] == 3 && d0->ne[1] == 3) {
        c->channels = (int)d0->ne[3], c->z_channels = (int)d0->ne[2];
        c->has_decoder = true;
        load_stack(&ld, &m->dec);
    } else if (d0) {
        ld.s = sdc_fail(SDC_ERR_FORMAT, "taesd: '%s' is not a 3x3 conv", d0->name);
    }
    if (ld.s == SDC_OK && e0) {
        ld.enc = true;
        if (!c->channels) c->channels = (int)e0->ne[3];
        if (e0->ne[3] != c->channels || e0->ne[2] != 3 || e0->ne[0] != 3) {
            ld.s = sdc_fail(SDC_ERR_FORMAT, "taesd: '%s' is not a 3x3 conv from 3 to %d channels",
                            e0->name, c->channels);
        } else {
            c->has_encoder = true;
            load_stack(&ld, &m->enc);
            const layer *last = m->enc.n ? &m->enc.l[m->enc.n - 1] : NULL;
            int zc = last && last->kind == L_CONV ? (int)last->c[0].w->ne[3] : 0;
            if (ld.s == SDC_OK && c->z_channels && zc != c->z_channels)
                ld.s = sdc_fail(SDC_ERR_FORMAT,
                                "taesd: encoder gives %d latent channels, the "
                                "decoder takes %d",
                                zc, c->z_channels);
            if (!c->z_channels) c->z_channels = zc;
        }
    }
    if (ld.s != SDC_OK) {
        sdc_taesd_free(m);
        return ld.s;
    }
    m->mode = SDC_VAE_EXACT;
    *out = m;
    return SDC_OK;
}

void sdc_taesd_free(sdc_taesd *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->owned);
    free(m);
}

const sdc_taesd_config *sdc_taesd_get_config(const sdc_taesd *m) {
    return &m->cfg;
}

sdc_status sdc_taesd_set_numerics(sdc_taesd *m, sdc_vae_numerics mode) {
    if (mode != SDC_VAE_SDCPP && mode != SDC_VAE_EXACT)
        return sdc_fail(SDC_ERR_INVALID_ARG, "taesd: numerics mode %d", (int)mode);
    loader ld = {.m = m, .s = SDC_OK};
    stack *st[2] = {&m->dec, &m->enc};
    for (int s = 0; s < 2 && mode == SDC_VAE_SDCPP; s++)
        for (int i = 0; i < st[s]->n; i++) {
            tconv *cv[4] = {&st[s]->l[i].c[0], &st[s]->l[i].c[1], &st[s]->l[i].c[2],
                            &st[s]->l[i].skip};
            for (int k = 0; k < 4; k++)
                if (cv[k]->w && !cv[k]->w16 &&
                    (cv[k]->w16 = own(&ld, cv[k]->w, SDC_TYPE_F16)) == NULL)
                    return ld.s;
        }
    m->mode = mode;
    return SDC_OK;
}

/* ---- graph ---- */

static sdc_tensor *apply_conv(sdc_graph *g, sdc_vae_numerics mode, const tconv *c, sdc_tensor *x) {
    sdc_tensor *w = c->w;
    if (mode == SDC_VAE_SDCPP) { /* sd.cpp: F16 weights, F16 im2col */
        w = c->w16;
        x = sdc_cast(g, sdc_cast(g, x, SDC_TYPE_F16), SDC_TYPE_F32);
    }
    int pad = (int)w->ne[0] / 2;
    return sdc_conv2d(g, x, w, c->b, c->stride, c->stride, pad, pad, 1, 1, 1);
}

static sdc_tensor *apply_stack(sdc_graph *g, sdc_vae_numerics mode, const stack *st,
                               sdc_tensor *h) {
    for (int i = 0; i < st->n; i++) {
        const layer *l = &st->l[i];
        sdc_graph_set_block(g, i);
        switch (l->kind) {
        case L_RELU:
            h = sdc_relu(g, h);
            break;
        case L_UP:
            h = sdc_upsample_nearest(g, h, 2);
            break;
        case L_CONV:
            h = apply_conv(g, mode, &l->c[0], h);
            break;
        case L_BLOCK: {
            sdc_tensor *y = sdc_relu(g, apply_conv(g, mode, &l->c[0], h));
            y = sdc_relu(g, apply_conv(g, mode, &l->c[1], y));
            y = apply_conv(g, mode, &l->c[2], y);
            sdc_tensor *skip = l->skip.w ? apply_conv(g, mode, &l->skip, h) : h;
            h = sdc_relu(g, sdc_add(g, y, skip));
            break;
        }
        }
    }
    sdc_graph_set_block(g, -1);
    return h;
}

static sdc_status run(sdc_taesd *m, sdc_backend *be, bool decode, const float *in, int w, int h,
                      int c_in, float *out, sdc_eval_fn cb, void *cb_user) {
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "taesd: out of memory");
    int64_t ne[4] = {w, h, c_in, 1};
    sdc_tensor *x = sdc_graph_input(g, SDC_TYPE_F32, 4, ne), *y;
    if (decode) { /* soft clamp to (-3, 3), then TAESD's [0,1] output to [-1,1] */
        sdc_tensor *t = sdc_scale(g, sdc_tanh(g, sdc_scale(g, x, 1.0f / 3.0f, 0)), 3.0f, 0);
        y = sdc_scale(g, apply_stack(g, m->mode, &m->dec, t), 2.0f, -1.0f);
    } else { /* [-1,1] to TAESD's [0,1] */
        y = apply_stack(g, m->mode, &m->enc, sdc_scale(g, x, 0.5f, 0.5f));
    }
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "taesd: building the %s graph: %s", decode ? "decoder" : "encoder",
                     sdc_graph_error(g));
    } else if (y->ne[2] != (decode ? 3 : m->cfg.z_channels) ||
               y->ne[0] != (decode ? (int64_t)w * 8 : w / 8)) {
        s = sdc_fail(SDC_ERR_FORMAT, "taesd: the %s maps %dx%d to %lldx%lld, not by 8",
                     decode ? "decoder" : "encoder", w, h, (long long)y->ne[0],
                     (long long)y->ne[1]);
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

#define TAE_MAX_SIDE 65536

sdc_status sdc_taesd_decode(sdc_taesd *m, sdc_backend *be, const float *latent, int w, int h,
                            float *rgb, sdc_eval_fn cb, void *cb_user) {
    if (!m->cfg.has_decoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "taesd: this model has no decoder");
    if (!latent || !rgb || w < 1 || h < 1 || w > TAE_MAX_SIDE / 8 || h > TAE_MAX_SIDE / 8)
        return sdc_fail(SDC_ERR_INVALID_ARG, "taesd decode: latent %dx%d (1 to %d a side)", w, h,
                        TAE_MAX_SIDE / 8);
    return run(m, be, true, latent, w, h, m->cfg.z_channels, rgb, cb, cb_user);
}

sdc_status sdc_taesd_encode(sdc_taesd *m, sdc_backend *be, const float *rgb, int W, int H,
                            float *latent, sdc_eval_fn cb, void *cb_user) {
    if (!m->cfg.has_encoder)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "taesd: this model has no encoder");
    if (!rgb || !latent || W < 8 || H < 8 || W % 8 || H % 8 || W > TAE_MAX_SIDE || H > TAE_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "taesd encode: image %dx%d must be positive multiples of 8", W, H);
    return run(m, be, false, rgb, W, H, 3, latent, cb, cb_user);
}
