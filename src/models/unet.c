#include "models/unet.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

#define MAX_BLOCKS 64 /* input/output block indices searched (SD: 12, gaps allowed) */
#define GN_GROUPS  32
#define GN_EPS     1e-6f /* sd.cpp's GroupNorm32 (LDM's ResBlock uses 1e-5: within f32 noise) */
#define LN_EPS     1e-5f

typedef struct lin {
    sdc_tensor *w, *b; /* b F32 or NULL */
} lin;

typedef struct conv {
    sdc_tensor *w, *b; /* w NULL: absent */
    int stride, pad;
} conv;

typedef struct resblock {
    sdc_tensor *gn1_w, *gn1_b, *gn2_w, *gn2_b;
    conv in_conv, out_conv, skip;
    lin emb;
    int cin, cout;
} resblock;

typedef struct tblock {
    sdc_tensor *n1_w, *n1_b, *n2_w, *n2_b, *n3_w, *n3_b;
    sdc_tensor *q1, *k1, *v1, *q2, *k2, *v2;
    lin o1, o2, ff_in, ff_out;
} tblock;

typedef struct spatial {
    sdc_tensor *gn_w, *gn_b;
    conv proj_in_c, proj_out_c; /* SD1 */
    lin proj_in_l, proj_out_l;  /* SD2/SDXL */
    int channels, heads, head_dim, depth;
    tblock *blocks;
} spatial;

/* One entry of input_blocks / middle_block / output_blocks: any of a res block, a
 * transformer, a downsample or an upsample, in that order. */
typedef struct ublock {
    resblock *res;
    spatial *attn;
    resblock *res2; /* middle block's second res block */
    conv down, up;
    int index;
} ublock;

struct sdc_unet {
    sdc_unet_config cfg;
    sdc_unet_options opt;
    lin time0, time2, label0, label2;
    lin tcond;        /* time_embedding.cond_proj (LCM), w NULL: absent */
    float *tcond_emb; /* the w embedding set for the next forwards, NULL: none */
    conv conv_in, conv_out;
    sdc_tensor *out_gn_w, *out_gn_b;
    ublock in[MAX_BLOCKS], out[MAX_BLOCKS], mid;
    int n_in, n_out, has_mid, n_down;
    /* converted copies (F32 norms/biases, F16 conv weights), each in its own buffer */
    sdc_tensor *owned;
    int n_owned, cap_owned;
    const sdc_tensor **used; /* the source tensors the model reads */
    int n_used, cap_used;
};

/* ---------------------------------------------------------------- loading */

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    sdc_unet *m;
    sdc_status s;
} loader;

static bool has(loader *ld, const char *fmt, ...) SDC_PRINTF(2, 3);
static bool has(loader *ld, const char *fmt, ...) {
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return sdc_weight_find(ld->ws, ld->prefix, name) != NULL;
}

static void note_used(loader *ld, const sdc_tensor *t) {
    sdc_unet *m = ld->m;
    for (int i = m->n_used - 1; i >= 0; i--)
        if (m->used[i] == t) return; /* the detection reads a few tensors twice */
    if (m->n_used == m->cap_used) {
        int cap = m->cap_used ? 2 * m->cap_used : 1024;
        const sdc_tensor **u = realloc(m->used, (size_t)cap * sizeof *u);
        if (!u) {
            ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
            return;
        }
        m->used = u, m->cap_used = cap;
    }
    m->used[m->n_used++] = t;
}

/* The tensor prefix+name with ne[0..ndims) as given (-1 = any); errors name it. */
static sdc_tensor *get(loader *ld, int ndims, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                       const char *fmt, ...) SDC_PRINTF(7, 8);
static sdc_tensor *get(loader *ld, int ndims, int64_t n0, int64_t n1, int64_t n2, int64_t n3,
                       const char *fmt, ...) {
    if (ld->s != SDC_OK) return NULL;
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int64_t ne[4] = {n0, n1, n2, n3};
    sdc_tensor *t;
    ld->s = sdc_weight_require(ld->ws, ld->prefix, name, ndims, ne, &t);
    if (ld->s == SDC_OK) note_used(ld, t);
    return ld->s == SDC_OK ? t : NULL;
}

static sdc_tensor *convert(loader *ld, sdc_tensor *w, sdc_type type) {
    if (!w || ld->s != SDC_OK || w->type == type) return w;
    sdc_unet *m = ld->m;
    if (m->n_owned == m->cap_owned) {
        ld->s = sdc_fail(SDC_ERR_INTERNAL, "unet: too many converted weights");
        return NULL;
    }
    sdc_tensor *t = &m->owned[m->n_owned];
    ld->s = sdc_weight_convert_copy(w, type, NULL, NULL, t);
    if (ld->s != SDC_OK) return NULL;
    m->n_owned++; /* freed with the model */
    return t;
}

/* Norm weights and biases feed F32 kernels. */
static sdc_tensor *as_f32(loader *ld, sdc_tensor *w) {
    return convert(ld, w, SDC_TYPE_F32);
}

static sdc_tensor *vec(loader *ld, int64_t n, const char *base, const char *what) {
    return as_f32(ld, get(ld, 1, n, 1, 1, 1, "%s.%s", base, what));
}

static void load_lin(loader *ld, lin *l, const char *base, int64_t in, int64_t out, bool bias) {
    l->w = get(ld, 2, in, out, 1, 1, "%s.weight", base);
    l->b = bias ? vec(ld, out, base, "bias") : NULL;
}

/* sd.cpp holds every conv weight in F16 (its im2col is then F16 too). */
static void load_conv(loader *ld, conv *c, const char *base, int k, int64_t cin, int64_t cout,
                      int stride) {
    sdc_tensor *w = get(ld, 4, k, k, cin, cout, "%s.weight", base);
    if (w && !ld->m->opt.exact && (w->type == SDC_TYPE_F32 || w->type == SDC_TYPE_BF16))
        w = convert(ld, w, SDC_TYPE_F16);
    c->w = w;
    c->b = vec(ld, cout, base, "bias");
    c->stride = stride;
    c->pad = k / 2;
}

/* Output channels of a conv weight named base.weight (ne[3]), -1 if absent or not 4-D. */
static int64_t conv_out_ch(loader *ld, const char *base, int64_t *cin) {
    char name[256];
    snprintf(name, sizeof name, "%s.weight", base);
    sdc_tensor *t = sdc_weight_find(ld->ws, ld->prefix, name);
    if (!t) return -1;
    if (cin) *cin = t->ne[2];
    return t->ne[3];
}

static resblock *load_res(loader *ld, const char *base, int64_t cin) {
    if (ld->s != SDC_OK) return NULL;
    char b[224];
    snprintf(b, sizeof b, "%s.in_layers.2", base);
    int64_t cout = conv_out_ch(ld, b, NULL);
    if (cout <= 0) {
        ld->s = sdc_fail(SDC_ERR_FORMAT, "unet: missing tensor '%s%s.weight'", ld->prefix, b);
        return NULL;
    }
    resblock *r = calloc(1, sizeof *r);
    if (!r) {
        ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
        return NULL;
    }
    r->cin = (int)cin, r->cout = (int)cout;
    snprintf(b, sizeof b, "%s.in_layers.0", base);
    r->gn1_w = vec(ld, cin, b, "weight"), r->gn1_b = vec(ld, cin, b, "bias");
    snprintf(b, sizeof b, "%s.in_layers.2", base);
    load_conv(ld, &r->in_conv, b, 3, cin, cout, 1);
    snprintf(b, sizeof b, "%s.emb_layers.1", base);
    load_lin(ld, &r->emb, b, ld->m->cfg.time_embed_dim, cout, true);
    snprintf(b, sizeof b, "%s.out_layers.0", base);
    r->gn2_w = vec(ld, cout, b, "weight"), r->gn2_b = vec(ld, cout, b, "bias");
    snprintf(b, sizeof b, "%s.out_layers.3", base);
    load_conv(ld, &r->out_conv, b, 3, cout, cout, 1);
    if (cin != cout) {
        snprintf(b, sizeof b, "%s.skip_connection", base);
        load_conv(ld, &r->skip, b, 1, cin, cout, 1);
    }
    return r;
}

static int count_depth(loader *ld, const char *base) {
    int d = 0;
    while (d < 1000 && has(ld, "%s.transformer_blocks.%d.attn1.to_q.weight", base, d)) d++;
    return d;
}

static void pick_heads(loader *ld, spatial *sp) {
    const sdc_unet_options *o = &ld->m->opt;
    int C = sp->channels;
    if (o->n_heads > 0)
        sp->heads = o->n_heads, sp->head_dim = C / o->n_heads;
    else if (o->head_dim > 0)
        sp->head_dim = o->head_dim, sp->heads = C / o->head_dim;
    else if (ld->m->cfg.n_heads > 0)
        sp->heads = ld->m->cfg.n_heads, sp->head_dim = C / sp->heads;
    else
        sp->head_dim = ld->m->cfg.head_dim, sp->heads = C / sp->head_dim;
    if (sp->heads <= 0 || sp->head_dim <= 0 || sp->heads * sp->head_dim != C)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "unet: %d channels do not split into heads (%d x %d)", C,
                         sp->heads, sp->head_dim);
}

static void load_tblock(loader *ld, tblock *t, const char *base, int64_t C) {
    char b[256];
    int64_t ctx = ld->m->cfg.context_dim;
#define NORM(wf, bf, n)                                                                            \
    (snprintf(b, sizeof b, "%s.%s", base, n), t->wf = vec(ld, C, b, "weight"),                     \
     t->bf = vec(ld, C, b, "bias"))
    NORM(n1_w, n1_b, "norm1");
    NORM(n2_w, n2_b, "norm2");
    NORM(n3_w, n3_b, "norm3");
#undef NORM
    /* SDXS-09 keys its level-0 self-attention with the text context's width; sd.cpp runs
     * that by reading the 320-wide input as 1024-wide rows, nothing to reproduce */
    snprintf(b, sizeof b, "%s.attn1.to_k.weight", base);
    sdc_tensor *k1 = sdc_weight_find(ld->ws, ld->prefix, b);
    if (k1 && k1->ne[0] != C && k1->ne[0] == ctx) {
        ld->s = sdc_fail(SDC_ERR_UNSUPPORTED,
                         "unet: '%s%s' is %lld wide (the text context), not %lld: an SDXS-09 "
                         "UNet (self-attention over the context), not supported",
                         ld->prefix, b, (long long)k1->ne[0], (long long)C);
        return;
    }
    t->q1 = get(ld, 2, C, C, 1, 1, "%s.attn1.to_q.weight", base);
    t->k1 = get(ld, 2, C, C, 1, 1, "%s.attn1.to_k.weight", base);
    t->v1 = get(ld, 2, C, C, 1, 1, "%s.attn1.to_v.weight", base);
    snprintf(b, sizeof b, "%s.attn1.to_out.0", base);
    load_lin(ld, &t->o1, b, C, C, true);
    t->q2 = get(ld, 2, C, C, 1, 1, "%s.attn2.to_q.weight", base);
    t->k2 = get(ld, 2, ctx, C, 1, 1, "%s.attn2.to_k.weight", base);
    t->v2 = get(ld, 2, ctx, C, 1, 1, "%s.attn2.to_v.weight", base);
    snprintf(b, sizeof b, "%s.attn2.to_out.0", base);
    load_lin(ld, &t->o2, b, C, C, true);
    snprintf(b, sizeof b, "%s.ff.net.0.proj", base);
    load_lin(ld, &t->ff_in, b, C, 8 * C, true);
    snprintf(b, sizeof b, "%s.ff.net.2", base);
    load_lin(ld, &t->ff_out, b, 4 * C, C, true);
}

static spatial *load_spatial(loader *ld, const char *base, int64_t C) {
    if (ld->s != SDC_OK) return NULL;
    spatial *sp = calloc(1, sizeof *sp);
    if (!sp) {
        ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
        return NULL;
    }
    sp->channels = (int)C;
    sp->depth = count_depth(ld, base);
    char b[224];
    snprintf(b, sizeof b, "%s.norm", base);
    sp->gn_w = vec(ld, C, b, "weight"), sp->gn_b = vec(ld, C, b, "bias");
    snprintf(b, sizeof b, "%s.proj_in", base);
    if (ld->m->cfg.linear_proj) {
        load_lin(ld, &sp->proj_in_l, b, C, C, true);
        snprintf(b, sizeof b, "%s.proj_out", base);
        load_lin(ld, &sp->proj_out_l, b, C, C, true);
    } else {
        load_conv(ld, &sp->proj_in_c, b, 1, C, C, 1);
        snprintf(b, sizeof b, "%s.proj_out", base);
        load_conv(ld, &sp->proj_out_c, b, 1, C, C, 1);
    }
    pick_heads(ld, sp);
    sp->blocks = calloc((size_t)(sp->depth ? sp->depth : 1), sizeof(tblock));
    if (!sp->blocks && ld->s == SDC_OK) ld->s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
    for (int i = 0; i < sp->depth && ld->s == SDC_OK; i++) {
        snprintf(b, sizeof b, "%s.transformer_blocks.%d", base, i);
        load_tblock(ld, &sp->blocks[i], b, C);
    }
    return sp;
}

static void free_spatial(spatial *sp) {
    if (sp) free(sp->blocks);
    free(sp);
}

static void free_ublock(ublock *u) {
    free(u->res);
    free(u->res2);
    free_spatial(u->attn);
}

/* The configuration values that do not depend on the block walk. */
static void detect_globals(loader *ld) {
    sdc_unet_config *c = &ld->m->cfg;
    sdc_tensor *in = get(ld, 4, 3, 3, -1, -1, "input_blocks.0.0.weight");
    if (!in) return;
    c->in_channels = (int)in->ne[2];
    c->model_channels = (int)in->ne[3];
    sdc_tensor *t0 = get(ld, 2, c->model_channels, -1, 1, 1, "time_embed.0.weight");
    if (!t0) return;
    c->time_embed_dim = (int)t0->ne[1];
    sdc_tensor *o = get(ld, 4, 3, 3, c->model_channels, -1, "out.2.weight");
    if (!o) return;
    c->out_channels = (int)o->ne[3];
    /* the first cross-attention key weight gives the context width; its proj_in the kind */
    c->context_dim = 0;
    const char *where[] = {"input_blocks.%d.1", "output_blocks.%d.1"};
    for (int w = 0; w < 2 && !c->context_dim; w++)
        for (int i = 0; i < MAX_BLOCKS && !c->context_dim; i++) {
            char base[64], name[128];
            snprintf(base, sizeof base, where[w], i);
            snprintf(name, sizeof name, "%s.transformer_blocks.0.attn2.to_k.weight", base);
            sdc_tensor *k = sdc_weight_find(ld->ws, ld->prefix, name);
            if (!k) continue;
            c->context_dim = (int)k->ne[0];
            snprintf(name, sizeof name, "%s.proj_in.weight", base);
            sdc_tensor *p = sdc_weight_find(ld->ws, ld->prefix, name);
            c->linear_proj = p && p->ne[2] == 1 && p->ne[3] == 1 && p->ne[1] > 1;
        }
    if (!c->context_dim) {
        sdc_tensor *k = sdc_weight_find(ld->ws, ld->prefix,
                                        "middle_block.1.transformer_blocks.0.attn2.to_k.weight");
        sdc_tensor *p = sdc_weight_find(ld->ws, ld->prefix, "middle_block.1.proj_in.weight");
        if (k) c->context_dim = (int)k->ne[0];
        c->linear_proj = p && p->ne[2] == 1 && p->ne[3] == 1 && p->ne[1] > 1;
    }
    /* sd.cpp: SD1 (768-wide CLIP) has 8 heads per transformer; SD2/SDXL heads of 64 */
    if (c->context_dim == 768)
        c->n_heads = 8, c->head_dim = 0;
    else
        c->n_heads = 0, c->head_dim = 64;
    if (ld->m->opt.n_heads > 0) c->n_heads = ld->m->opt.n_heads, c->head_dim = 0;
    if (ld->m->opt.head_dim > 0) c->n_heads = 0, c->head_dim = ld->m->opt.head_dim;
    sdc_tensor *l0 = sdc_weight_find(ld->ws, ld->prefix, "label_emb.0.0.weight");
    c->adm_in_channels = l0 ? (int)l0->ne[0] : 0;
}

/* input_blocks.1.. : res (+ transformer) or downsample; fills the skip channel stack */
static void load_inputs(loader *ld, int *skip, int *n_skip) {
    sdc_unet *m = ld->m;
    sdc_unet_config *c = &m->cfg;
    int64_t ch = c->model_channels;
    skip[(*n_skip)++] = (int)ch;
    int level = 0, res_in_level = 0;
    for (int i = 1; i < MAX_BLOCKS && ld->s == SDC_OK; i++) {
        char base[64];
        snprintf(base, sizeof base, "input_blocks.%d", i);
        bool is_res = has(ld, "%s.0.in_layers.2.weight", base);
        bool is_down = has(ld, "%s.0.op.weight", base);
        if (!is_res && !is_down) continue;
        ublock *u = &m->in[m->n_in++];
        u->index = i;
        char b[96];
        if (is_down) {
            snprintf(b, sizeof b, "%s.0.op", base);
            load_conv(ld, &u->down, b, 3, ch, -1, 2);
            if (u->down.w) ch = u->down.w->ne[3];
            if (++level >= 4) { /* the config arrays hold 4 levels, as every SD UNet has */
                ld->s = sdc_fail(SDC_ERR_UNSUPPORTED,
                                 "unet: '%s%s' is a 4th downsample (at most 4 levels supported)",
                                 ld->prefix, b);
                return;
            }
            m->n_down++;
            res_in_level = 0;
        } else {
            snprintf(b, sizeof b, "%s.0", base);
            u->res = load_res(ld, b, ch);
            if (!u->res) break;
            ch = u->res->cout;
            if (has(ld, "%s.1.proj_in.weight", base)) {
                snprintf(b, sizeof b, "%s.1", base);
                u->attn = load_spatial(ld, b, ch);
            }
            if (res_in_level == 0) {
                c->channel_mult[level] = (int)(ch / c->model_channels);
                c->transformer_depth[level] = u->attn ? u->attn->depth : 0;
            }
            res_in_level++;
            if (level == 0) c->num_res_blocks = res_in_level;
        }
        skip[(*n_skip)++] = (int)ch;
    }
    c->n_levels = level + 1;
}

static void load_middle(loader *ld, int64_t ch) {
    sdc_unet *m = ld->m;
    ublock *u = &m->mid;
    m->cfg.mid_depth = -1;
    if (!has(ld, "middle_block.0.in_layers.2.weight")) return;
    m->has_mid = 1;
    u->res = load_res(ld, "middle_block.0", ch);
    m->cfg.mid_depth = 0;
    if (has(ld, "middle_block.1.proj_in.weight")) {
        u->attn = load_spatial(ld, "middle_block.1", ch);
        if (u->attn) m->cfg.mid_depth = u->attn->depth;
    }
    if (has(ld, "middle_block.2.in_layers.2.weight")) u->res2 = load_res(ld, "middle_block.2", ch);
}

/* output_blocks.N: res on concat(h, skip) (+ transformer) (+ upsample at .1 or .2); a
 * distilled UNet may keep only the upsample of an index */
static void load_outputs(loader *ld, int64_t ch, const int *skip, int n_skip) {
    sdc_unet *m = ld->m;
    for (int i = 0; i < MAX_BLOCKS && ld->s == SDC_OK; i++) {
        char base[64], b[96];
        snprintf(base, sizeof base, "output_blocks.%d", i);
        bool is_res = has(ld, "%s.0.in_layers.2.weight", base);
        int up = has(ld, "%s.1.conv.weight", base) ? 1 : has(ld, "%s.2.conv.weight", base) ? 2 : 0;
        if (!is_res && !up) continue;
        ublock *u = &m->out[m->n_out++];
        u->index = i;
        if (is_res) {
            if (n_skip == 0) {
                ld->s = sdc_fail(SDC_ERR_FORMAT,
                                 "unet: '%s%s' has no input block left to take its skip from",
                                 ld->prefix, base);
                return;
            }
            int64_t cin = ch + skip[--n_skip];
            snprintf(b, sizeof b, "%s.0", base);
            u->res = load_res(ld, b, cin);
            if (!u->res) return;
            ch = u->res->cout;
            if (has(ld, "%s.1.proj_in.weight", base)) {
                snprintf(b, sizeof b, "%s.1", base);
                u->attn = load_spatial(ld, b, ch);
            }
        }
        if (up) {
            snprintf(b, sizeof b, "%s.%d.conv", base, up);
            load_conv(ld, &u->up, b, 3, ch, ch, 1);
        }
    }
    if (ld->s == SDC_OK && n_skip != 0)
        ld->s = sdc_fail(SDC_ERR_FORMAT,
                         "unet: %d input block outputs are never used by an output block (the "
                         "checkpoint under '%s' is incomplete)",
                         n_skip, ld->prefix);
    if (ld->s == SDC_OK && ch != m->cfg.model_channels)
        ld->s = sdc_fail(SDC_ERR_FORMAT, "unet: the last output block has %lld channels, out.0 %d",
                         (long long)ch, m->cfg.model_channels);
}

bool sdc_unet_detect(const sdc_weight_source *ws, const char *prefix) {
    sdc_tensor *in = sdc_weight_find(ws, prefix, "input_blocks.0.0.weight");
    return in && in->ne[0] == 3 && in->ne[1] == 3 && sdc_weight_find(ws, prefix, "out.2.weight") &&
           sdc_weight_find(ws, prefix, "time_embed.0.weight");
}

sdc_status sdc_unet_load(const sdc_weight_source *ws, const char *prefix, sdc_unet **out) {
    return sdc_unet_load_ex(ws, prefix, NULL, out);
}

sdc_status sdc_unet_load_ex(const sdc_weight_source *ws, const char *prefix,
                            const sdc_unet_options *opt, sdc_unet **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    sdc_unet *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
    if (opt) m->opt = *opt;
    loader ld = {.ws = ws, .prefix = prefix, .m = m, .s = SDC_OK};
    sdc_unet_config *c = &m->cfg;
    m->cap_owned = 8192;
    m->owned = calloc((size_t)m->cap_owned, sizeof(sdc_tensor));
    if (!m->owned) {
        ld.s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
        goto fail;
    }
    /* video UNets (SVD) and AnimateDiff motion modules add blocks this model does not run */
    if (has(&ld, "input_blocks.1.0.time_stack.emb_layers.1.weight") ||
        has(&ld, "middle_block.0.time_stack.emb_layers.1.weight") ||
        has(&ld,
            "motion_module.down_blocks.0.motion_modules.0.temporal_transformer.proj_in.weight")) {
        ld.s = sdc_fail(SDC_ERR_UNSUPPORTED,
                        "unet: '%s' is a video UNet (SVD time_stack / AnimateDiff motion "
                        "modules), not supported",
                        prefix);
        goto fail;
    }
    detect_globals(&ld);
    if (ld.s != SDC_OK) goto fail;
    int mc = c->model_channels, ted = c->time_embed_dim;
    load_lin(&ld, &m->time0, "time_embed.0", mc, ted, true);
    load_lin(&ld, &m->time2, "time_embed.2", ted, ted, true);
    /* LCM checkpoints keep diffusers' name for the w projection under the LDM prefix */
    sdc_tensor *tc = sdc_weight_find(ws, prefix, "time_embedding.cond_proj.weight");
    if (tc && tc->ne[1] == mc) {
        c->time_cond_proj_dim = (int)tc->ne[0];
        load_lin(&ld, &m->tcond, "time_embedding.cond_proj", c->time_cond_proj_dim, mc, false);
    }
    if (c->adm_in_channels) {
        load_lin(&ld, &m->label0, "label_emb.0.0", c->adm_in_channels, ted, true);
        load_lin(&ld, &m->label2, "label_emb.0.2", ted, ted, true);
    }
    load_conv(&ld, &m->conv_in, "input_blocks.0.0", 3, c->in_channels, mc, 1);
    int skip[MAX_BLOCKS + 1], n_skip = 0;
    load_inputs(&ld, skip, &n_skip);
    if (ld.s != SDC_OK) goto fail;
    int64_t ch = skip[n_skip - 1];
    load_middle(&ld, ch);
    load_outputs(&ld, ch, skip, n_skip);
    m->out_gn_w = vec(&ld, mc, "out.0", "weight");
    m->out_gn_b = vec(&ld, mc, "out.0", "bias");
    load_conv(&ld, &m->conv_out, "out.2", 3, mc, c->out_channels, 1);
    if (ld.s != SDC_OK) goto fail;
    if (c->context_dim <= 0) {
        ld.s =
            sdc_fail(SDC_ERR_FORMAT, "unet: no cross-attention under '%s' (no attn2.to_k)", prefix);
        goto fail;
    }
    c->n_tensors = m->n_used;
    *out = m;
    return SDC_OK;
fail:
    sdc_unet_free(m);
    return ld.s;
}

void sdc_unet_free(sdc_unet *m) {
    if (!m) return;
    for (int i = 0; i < m->n_in; i++) free_ublock(&m->in[i]);
    for (int i = 0; i < m->n_out; i++) free_ublock(&m->out[i]);
    free_ublock(&m->mid);
    for (int i = 0; i < m->n_owned; i++) sdc_buffer_free(m->owned[i].buffer);
    free(m->owned);
    free(m->used);
    free(m->tcond_emb);
    free(m);
}

sdc_status sdc_unet_set_time_cond(sdc_unet *m, const float *emb) {
    free(m->tcond_emb);
    m->tcond_emb = NULL;
    if (!emb) return SDC_OK;
    int d = m->cfg.time_cond_proj_dim;
    if (d <= 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "unet: no time_embedding.cond_proj (not an LCM-distilled UNet): no w "
                        "embedding to set");
    if (!(m->tcond_emb = malloc((size_t)d * sizeof(float))))
        return sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
    memcpy(m->tcond_emb, emb, (size_t)d * sizeof(float));
    return SDC_OK;
}

void sdc_unet_guidance_embedding(float w, int dim, float *out) {
    /* float32 throughout, in diffusers' order: the argument reaches ~1e4, where a change in
     * rounding moves sin/cos by 1e-3 */
    int half = dim / 2;
    float ws = w * 1000.0f, step = logf(10000.0f) / (float)(half - 1);
    for (int i = 0; i < half; i++) {
        float a = ws * expf((float)i * -step);
        out[i] = sinf(a);
        out[half + i] = cosf(a);
    }
    if (dim % 2) out[dim - 1] = 0.0f;
}

const sdc_unet_config *sdc_unet_get_config(const sdc_unet *m) {
    return &m->cfg;
}

bool sdc_unet_uses(const sdc_unet *m, const char *name) {
    for (int i = 0; i < m->n_used; i++)
        if (!strcmp(m->used[i]->name, name)) return true;
    return false;
}

/* ---------------------------------------------------------------- graph */

typedef struct builder {
    sdc_graph *g;
    const sdc_unet *m;
    bool round;                /* emulate ggml's F16 conversion of matmul/conv inputs */
    sdc_tensor *emb_act, *ctx; /* silu(time embedding) [ted, B]; context [ctx_dim, n_ctx, B] */
    sdc_tensor *tcond;         /* LCM w embedding [time_cond_proj_dim, B], or NULL */
    /* F16-rounded copies: the two inputs every block reads, then the most recent ones (q, k
     * and v share one) */
    sdc_tensor *pin_src[2], *pin_dst[2], *rsrc[4], *rdst[4];
    int rnext;
    int block;
} builder;

static sdc_tensor *rounded(builder *bd, sdc_tensor *x) {
    if (!x) return NULL;
    for (int i = 0; i < 2; i++)
        if (bd->pin_src[i] == x) {
            if (!bd->pin_dst[i])
                bd->pin_dst[i] = sdc_cast(bd->g, sdc_cast(bd->g, x, SDC_TYPE_F16), SDC_TYPE_F32);
            return bd->pin_dst[i];
        }
    for (int i = 0; i < 4; i++)
        if (bd->rsrc[i] == x) return bd->rdst[i];
    sdc_tensor *r = sdc_cast(bd->g, sdc_cast(bd->g, x, SDC_TYPE_F16), SDC_TYPE_F32);
    bd->rsrc[bd->rnext] = x, bd->rdst[bd->rnext] = r;
    bd->rnext = (bd->rnext + 1) % 4;
    return r;
}

/* The input as the kernel would see it: rounded to F16 when sd.cpp's weight is F16. */
static sdc_tensor *input_for(builder *bd, const sdc_tensor *w, sdc_tensor *x) {
    return bd->round && w && w->type == SDC_TYPE_F16 ? rounded(bd, x) : x;
}

static sdc_tensor *mm(builder *bd, sdc_tensor *w, sdc_tensor *x) {
    return sdc_matmul(bd->g, w, input_for(bd, w, x));
}

static sdc_tensor *linear(builder *bd, const lin *l, sdc_tensor *x) {
    sdc_tensor *y = mm(bd, l->w, x);
    return l->b ? sdc_add(bd->g, y, l->b) : y;
}

static sdc_tensor *conv2d(builder *bd, const conv *c, sdc_tensor *x) {
    return sdc_conv2d(bd->g, input_for(bd, c->w, x), c->w, c->b, c->stride, c->stride, c->pad,
                      c->pad, 1, 1, 1);
}

static sdc_tensor *gn_silu(builder *bd, sdc_tensor *x, sdc_tensor *w, sdc_tensor *b) {
    return sdc_silu(bd->g, sdc_group_norm(bd->g, x, GN_GROUPS, w, b, GN_EPS));
}

static sdc_tensor *res_forward(builder *bd, const resblock *r, sdc_tensor *x) {
    sdc_graph *g = bd->g;
    sdc_tensor *h = conv2d(bd, &r->in_conv, gn_silu(bd, x, r->gn1_w, r->gn1_b));
    sdc_tensor *e = linear(bd, &r->emb, bd->emb_act); /* [cout, B] */
    if (e) e = sdc_reshape_4d(g, e, 1, 1, e->ne[0], e->ne[1]);
    h = sdc_add(g, h, e);
    h = conv2d(bd, &r->out_conv, gn_silu(bd, h, r->gn2_w, r->gn2_b));
    return sdc_add(g, h, r->skip.w ? conv2d(bd, &r->skip, x) : x);
}

/* [C, L, B] -> [D, L, heads, B], the attention op's layout (a view: it reads rows by
 * their strides and packs each head itself) */
static sdc_tensor *heads_first(sdc_graph *g, sdc_tensor *x, int D, int heads) {
    if (!x) return NULL;
    sdc_tensor *r = sdc_reshape_4d(g, x, D, heads, x->ne[1], x->ne[2]);
    return sdc_permute(g, r, 0, 2, 1, 3);
}

static sdc_tensor *attend(builder *bd, const spatial *sp, sdc_tensor *x, sdc_tensor *kv,
                          sdc_tensor *wq, sdc_tensor *wk, sdc_tensor *wv, const lin *o) {
    sdc_graph *g = bd->g;
    int D = sp->head_dim, H = sp->heads;
    sdc_tensor *q = heads_first(g, mm(bd, wq, x), D, H);
    sdc_tensor *k = heads_first(g, mm(bd, wk, kv), D, H);
    sdc_tensor *v = heads_first(g, mm(bd, wv, kv), D, H);
    sdc_tensor *a = sdc_attention(g, q, k, v, NULL, 1.0f / sqrtf((float)D));
    if (!a) return NULL;
    a = sdc_reshape_3d(g, a, (int64_t)D * H, a->ne[2], a->ne[3]);
    return linear(bd, o, a);
}

static sdc_tensor *geglu_ff(builder *bd, const tblock *t, sdc_tensor *x) {
    sdc_graph *g = bd->g;
    sdc_tensor *p = linear(bd, &t->ff_in, x); /* [8C, L, B]: value half, then gate half */
    if (!p) return NULL;
    int64_t inner = p->ne[0] / 2;
    int64_t ne[4] = {inner, p->ne[1], p->ne[2], p->ne[3]}, off0[4] = {0},
            off1[4] = {inner, 0, 0, 0};
    /* views: the GELU and the product read them strided */
    sdc_tensor *val = sdc_slice(g, p, ne, off0), *gate = sdc_slice(g, p, ne, off1);
    gate = bd->m->opt.exact ? sdc_gelu_erf(g, gate) : sdc_gelu_f16(g, gate);
    return linear(bd, &t->ff_out, sdc_mul(g, val, gate));
}

static sdc_tensor *tblock_forward(builder *bd, const spatial *sp, const tblock *t, sdc_tensor *x) {
    sdc_graph *g = bd->g;
    sdc_tensor *h = sdc_layer_norm(g, x, t->n1_w, t->n1_b, LN_EPS);
    x = sdc_add(g, x, attend(bd, sp, h, h, t->q1, t->k1, t->v1, &t->o1));
    h = sdc_layer_norm(g, x, t->n2_w, t->n2_b, LN_EPS);
    x = sdc_add(g, x, attend(bd, sp, h, bd->ctx, t->q2, t->k2, t->v2, &t->o2));
    h = sdc_layer_norm(g, x, t->n3_w, t->n3_b, LN_EPS);
    return sdc_add(g, x, geglu_ff(bd, t, h));
}

static sdc_tensor *spatial_forward(builder *bd, const spatial *sp, sdc_tensor *x) {
    sdc_graph *g = bd->g;
    if (!x) return NULL;
    int64_t W = x->ne[0], H = x->ne[1], C = x->ne[2], B = x->ne[3];
    sdc_tensor *h = sdc_group_norm(g, x, GN_GROUPS, sp->gn_w, sp->gn_b, GN_EPS);
    if (!bd->m->cfg.linear_proj) h = conv2d(bd, &sp->proj_in_c, h);
    /* [W, H, C, B] -> tokens [C, W*H, B] */
    h = sdc_reshape_3d(g, sdc_cont(g, sdc_permute(g, h, 2, 0, 1, 3)), C, W * H, B);
    if (bd->m->cfg.linear_proj) h = linear(bd, &sp->proj_in_l, h);
    for (int i = 0; i < sp->depth; i++) h = tblock_forward(bd, sp, &sp->blocks[i], h);
    if (bd->m->cfg.linear_proj) h = linear(bd, &sp->proj_out_l, h);
    /* tokens [C, W*H, B] -> [W, H, C, B] */
    h = sdc_cont(g, sdc_permute(g, sdc_reshape_4d(g, h, C, W, H, B), 1, 2, 0, 3));
    if (!bd->m->cfg.linear_proj) h = conv2d(bd, &sp->proj_out_c, h);
    return sdc_add(g, h, x);
}

static void next_block(builder *bd) {
    sdc_graph_set_block(bd->g, bd->block++);
}

static sdc_tensor *build(builder *bd, sdc_tensor *x, sdc_tensor *t, sdc_tensor *y) {
    const sdc_unet *m = bd->m;
    sdc_graph *g = bd->g;
    const sdc_unet_config *c = &m->cfg;
    sdc_tensor *te = sdc_timestep_embedding(g, t, c->model_channels, 10000);
    if (bd->tcond) te = sdc_add(g, te, linear(bd, &m->tcond, bd->tcond));
    sdc_tensor *emb = linear(bd, &m->time2, sdc_silu(g, linear(bd, &m->time0, te)));
    if (y) emb = sdc_add(g, emb, linear(bd, &m->label2, sdc_silu(g, linear(bd, &m->label0, y))));
    bd->emb_act = sdc_silu(g, emb);
    bd->pin_src[0] = bd->emb_act, bd->pin_src[1] = bd->ctx;
    sdc_tensor *hs[MAX_BLOCKS + 1];
    int n_hs = 0;
    next_block(bd);
    sdc_tensor *h = conv2d(bd, &m->conv_in, x);
    hs[n_hs++] = h;
    for (int i = 0; i < m->n_in; i++) {
        const ublock *u = &m->in[i];
        next_block(bd);
        if (u->down.w) {
            h = conv2d(bd, &u->down, h);
        } else {
            h = res_forward(bd, u->res, h);
            if (u->attn) h = spatial_forward(bd, u->attn, h);
        }
        hs[n_hs++] = h;
    }
    if (m->has_mid) {
        next_block(bd);
        h = res_forward(bd, m->mid.res, h);
        if (m->mid.attn) h = spatial_forward(bd, m->mid.attn, h);
        if (m->mid.res2) h = res_forward(bd, m->mid.res2, h);
    }
    for (int i = 0; i < m->n_out; i++) {
        const ublock *u = &m->out[i];
        next_block(bd);
        if (u->res) {
            h = res_forward(bd, u->res, sdc_concat(g, h, hs[--n_hs], 2));
            if (u->attn) h = spatial_forward(bd, u->attn, h);
        }
        if (u->up.w) h = conv2d(bd, &u->up, sdc_upsample_nearest(g, h, 2));
    }
    sdc_graph_set_block(g, -1);
    h = gn_silu(bd, h, m->out_gn_w, m->out_gn_b);
    return conv2d(bd, &m->conv_out, h);
}

sdc_status sdc_unet_forward(sdc_unet *m, sdc_backend *be, const float *x, int B, int w, int h,
                            const float *t, const float *ctx, int n_ctx, const float *y, float *out,
                            sdc_eval_fn cb, void *cb_user) {
    const sdc_unet_config *c = &m->cfg;
    int mult = 1 << m->n_down;
    if (mult < 8) mult = 8;
    if (B < 1 || w <= 0 || h <= 0 || w % mult || h % mult)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "unet: latent %dx%d (batch %d) must be positive multiples of %d", w, h, B,
                        mult);
    if (n_ctx <= 0 || !ctx)
        return sdc_fail(SDC_ERR_INVALID_ARG, "unet: %d context tokens (at least 1 needed)", n_ctx);
    if (!x || !t || !out) return sdc_fail(SDC_ERR_INVALID_ARG, "unet: NULL x, t or out");
    if (c->adm_in_channels && !y)
        return sdc_fail(SDC_ERR_INVALID_ARG, "unet: this model needs the %d-wide vector y",
                        c->adm_in_channels);
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
    int64_t xne[4] = {w, h, c->in_channels, B}, cne[3] = {c->context_dim, n_ctx, B},
            yne[2] = {c->adm_in_channels, B};
    sdc_tensor *xin = sdc_graph_input(g, SDC_TYPE_F32, 4, xne);
    sdc_tensor *tin = sdc_graph_input_1d(g, SDC_TYPE_F32, B);
    sdc_tensor *cin = sdc_graph_input(g, SDC_TYPE_F32, 3, cne);
    sdc_tensor *yin = c->adm_in_channels ? sdc_graph_input(g, SDC_TYPE_F32, 2, yne) : NULL;
    int64_t wne[2] = {c->time_cond_proj_dim, B};
    float *wemb = NULL; /* the w embedding for every batch item */
    sdc_tensor *win = m->tcond_emb ? sdc_graph_input(g, SDC_TYPE_F32, 2, wne) : NULL;
    builder bd = {.g = g, .m = m, .round = !m->opt.exact, .ctx = cin, .tcond = win};
    sdc_tensor *o = build(&bd, xin, tin, yin);
    if (o) sdc_graph_mark_output(g, o);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "unet: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    size_t nx = (size_t)w * h * c->in_channels * B;
    sdc_input_data inputs[5] = {{xin, x, nx * sizeof(float)},
                                {tin, t, (size_t)B * sizeof(float)},
                                {cin, ctx, (size_t)c->context_dim * n_ctx * B * sizeof(float)}};
    int n_in = 3;
    if (yin)
        inputs[n_in++] = (sdc_input_data){yin, y, (size_t)c->adm_in_channels * B * sizeof(float)};
    if (win) {
        size_t d = (size_t)c->time_cond_proj_dim;
        if (!(wemb = malloc(d * B * sizeof(float)))) {
            s = sdc_fail(SDC_ERR_NO_MEMORY, "unet: out of memory");
            goto done;
        }
        for (int b = 0; b < B; b++) memcpy(wemb + d * b, m->tcond_emb, d * sizeof(float));
        inputs[n_in++] = (sdc_input_data){win, wemb, d * B * sizeof(float)};
    }
    if ((s = sdc_backend_set_inputs(be, g, inputs, n_in)) != SDC_OK) goto done;
    if ((s = sdc_backend_compute(be, g, cb, cb_user)) != SDC_OK) goto done;
    s = sdc_backend_tensor_get(be, o, out, 0, (size_t)w * h * c->out_channels * B * sizeof(float));
done:
    free(wemb);
    sdc_graph_free(g);
    return s;
}
