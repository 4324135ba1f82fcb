#include "models/minit2i.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/fp16.h"
#include "core/ops.h"

typedef struct linear {
    sdc_tensor *w, *b; /* b may be NULL */
} linear;

typedef struct swiglu {
    sdc_tensor *w1, *w3, *w2;
} swiglu;

typedef struct preamble_block {
    sdc_tensor *norm1, *norm2, *q_norm, *k_norm;
    linear qkv, proj;
    swiglu mlp;
} preamble_block;

typedef struct double_block {
    sdc_tensor *img_norm1, *img_norm2, *txt_norm1, *txt_norm2, *q_norm, *k_norm;
    linear img_qkv, txt_qkv, img_proj, txt_proj;
    swiglu img_mlp, txt_mlp;
} double_block;

struct sdc_minit2i {
    sdc_minit2i_config cfg;
    sdc_tensor proj1,
        proj2; /* patch embedding as matrices (F16: sd.cpp keeps conv weights in F16) */
    sdc_tensor *proj2_b;
    linear txt_embedder;
    preamble_block *pre;
    double_block *dbl;
    sdc_tensor *norm_final;
    linear final_linear;
    float *mask_token; /* [txt_input] */
    /* position tables of the last image grid: the same for every step of a generation */
    int tab_gw, tab_gh;
    float *tab_pos, *tab_cos, *tab_sin;
    /* F32 copies of 1-D weights stored in other types, each in its own host weight buffer */
    sdc_tensor *owned;
    int n_owned, cap_owned;
};

static const char *k_net_prefixes[] = {"model.net.", "net.", ""};

/* The file's own names are "model.net.…" (HF layout); find which one is present. */
static const char *net_prefix(const sdc_weight_source *ws, const char *prefix) {
    for (size_t i = 0; i < sizeof k_net_prefixes / sizeof *k_net_prefixes; i++) {
        char name[256];
        snprintf(name, sizeof name, "%simg_embedder.proj1.weight", k_net_prefixes[i]);
        if (sdc_weight_find(ws, prefix, name)) return k_net_prefixes[i];
    }
    return NULL;
}

bool sdc_minit2i_detect(const sdc_weight_source *ws, const char *prefix) {
    return net_prefix(ws, prefix) != NULL;
}

typedef struct loader {
    const sdc_weight_source *ws;
    char prefix[256];
    sdc_minit2i *m;
    sdc_status s;
} loader;

static sdc_tensor *get(loader *ld, int ndims, int64_t n0, int64_t n1, const char *fmt, ...)
    SDC_PRINTF(5, 6);
static sdc_tensor *get(loader *ld, int ndims, int64_t n0, int64_t n1, const char *fmt, ...) {
    if (ld->s != SDC_OK) return NULL;
    char name[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    int64_t ne[4] = {n0, n1, -1, -1}; /* higher dims: checked by the caller */
    sdc_tensor *t;
    ld->s = sdc_weight_require(ld->ws, ld->prefix, name, ndims, ne, &t);
    return t;
}

/* Norm weights and biases feed F32 kernels: convert when stored otherwise. */
static sdc_tensor *as_f32(loader *ld, sdc_tensor *w) {
    if (!w || ld->s != SDC_OK || w->type == SDC_TYPE_F32) return w;
    sdc_minit2i *m = ld->m;
    if (m->n_owned == m->cap_owned) {
        ld->s = sdc_fail(SDC_ERR_INTERNAL, "minit2i: too many converted weights");
        return NULL;
    }
    sdc_tensor *t = &m->owned[m->n_owned];
    ld->s = sdc_weight_convert_copy(w, SDC_TYPE_F32, NULL, NULL, t);
    if (ld->s != SDC_OK) return NULL;
    m->n_owned++; /* freed with the model */
    return t;
}

/* A copy of w rounded to F16 with a new 2-D shape (row length k). */
static void f16_matrix(loader *ld, sdc_tensor *w, int64_t k, int64_t n, sdc_tensor *out) {
    if (ld->s != SDC_OK) return;
    int64_t ne[4] = {k, n, 1, 1};
    ld->s = sdc_weight_convert_copy(w, SDC_TYPE_F16, ne, NULL, out);
}

static void load_swiglu(loader *ld, swiglu *s, const char *base, int hidden, int mlp) {
    s->w1 = get(ld, 2, hidden, mlp, "%s.w1.weight", base);
    s->w3 = get(ld, 2, hidden, mlp, "%s.w3.weight", base);
    s->w2 = get(ld, 2, mlp, hidden, "%s.w2.weight", base);
}

static void load_linear(loader *ld, linear *l, const char *base, int in, int out) {
    l->w = get(ld, 2, in, out, "%s.weight", base);
    l->b = as_f32(ld, get(ld, 1, out, 1, "%s.bias", base));
}

sdc_status sdc_minit2i_load(const sdc_weight_source *ws, const char *prefix, sdc_minit2i **out) {
    *out = NULL;
    const char *np = net_prefix(ws, prefix);
    if (!np)
        return sdc_fail(SDC_ERR_FORMAT,
                        "minit2i: no '%smodel.net.img_embedder.proj1.weight' tensor", prefix);
    sdc_minit2i *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    loader ld = {.ws = ws, .m = m, .s = SDC_OK};
    snprintf(ld.prefix, sizeof ld.prefix, "%s%s", prefix, np);
    sdc_minit2i_config *c = &m->cfg;

    sdc_tensor *p1 = get(&ld, 4, -1, -1, "img_embedder.proj1.weight");
    sdc_tensor *p2 = get(&ld, 4, 1, 1, "img_embedder.proj2.weight"); /* checked below */
    if (ld.s != SDC_OK) goto fail;
    c->patch = (int)p1->ne[0];
    c->in_channels = (int)p1->ne[2];
    c->pca = (int)p1->ne[3];
    c->hidden = (int)p2->ne[3];
    if (p1->ne[1] != p1->ne[0] || p2->ne[2] != c->pca) {
        ld.s =
            sdc_fail(SDC_ERR_FORMAT, "minit2i: patch embedding shapes do not fit (%s)", p1->name);
        goto fail;
    }
    sdc_tensor *qn = get(&ld, 1, -1, 1, "double_blocks.0.q_norm.weight");
    if (ld.s != SDC_OK) goto fail;
    c->head_dim = (int)qn->ne[0];
    c->heads = c->hidden / c->head_dim;
    if (c->hidden % c->head_dim || c->head_dim % 4) {
        ld.s = sdc_fail(SDC_ERR_FORMAT, "minit2i: hidden %d and head_dim %d do not fit", c->hidden,
                        c->head_dim);
        goto fail;
    }
    char name[256];
    for (c->n_double = 0;; c->n_double++) {
        snprintf(name, sizeof name, "double_blocks.%d.img_qkv.weight", c->n_double);
        if (!sdc_weight_find(ws, ld.prefix, name)) break;
    }
    for (c->n_preamble = 0;; c->n_preamble++) {
        snprintf(name, sizeof name, "txt_preamble_blocks.%d.qkv.weight", c->n_preamble);
        if (!sdc_weight_find(ws, ld.prefix, name)) break;
    }
    sdc_tensor *w1 = get(&ld, 2, c->hidden, -1, "double_blocks.0.img_mlp.w1.weight");
    sdc_tensor *te = get(&ld, 2, -1, c->hidden, "txt_embedder.weight");
    if (ld.s != SDC_OK) goto fail;
    c->mlp_hidden = (int)w1->ne[1];
    c->txt_input = (int)te->ne[0];
    c->prompt_len = 256;
    int H = c->hidden, M = c->mlp_hidden, pp = c->patch * c->patch * c->in_channels;

    m->cap_owned = 8 + 8 * (c->n_double + c->n_preamble);
    m->owned = calloc((size_t)m->cap_owned, sizeof(sdc_tensor));
    m->pre = calloc((size_t)c->n_preamble + 1, sizeof(preamble_block));
    m->dbl = calloc((size_t)c->n_double + 1, sizeof(double_block));
    if (!m->owned || !m->pre || !m->dbl) {
        ld.s = sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
        goto fail;
    }
    f16_matrix(&ld, p1, pp, c->pca, &m->proj1);
    f16_matrix(&ld, p2, c->pca, H, &m->proj2);
    m->proj2_b = as_f32(&ld, get(&ld, 1, H, 1, "img_embedder.proj2.bias"));
    m->txt_embedder.w = te;
    for (int i = 0; i < c->n_preamble; i++) {
        preamble_block *b = &m->pre[i];
        char base[96];
#define P(field) (snprintf(base, sizeof base, "txt_preamble_blocks.%d." field, i), base)
        b->norm1 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("norm1.weight")));
        b->norm2 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("norm2.weight")));
        b->q_norm = as_f32(&ld, get(&ld, 1, c->head_dim, 1, "%s", P("q_norm.weight")));
        b->k_norm = as_f32(&ld, get(&ld, 1, c->head_dim, 1, "%s", P("k_norm.weight")));
        load_linear(&ld, &b->qkv, P("qkv"), H, 3 * H);
        load_linear(&ld, &b->proj, P("attn_proj"), H, H);
        load_swiglu(&ld, &b->mlp, P("mlp"), H, M);
#undef P
    }
    for (int i = 0; i < c->n_double; i++) {
        double_block *b = &m->dbl[i];
        char base[96];
#define P(field) (snprintf(base, sizeof base, "double_blocks.%d." field, i), base)
        b->img_norm1 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("img_norm1.weight")));
        b->img_norm2 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("img_norm2.weight")));
        b->txt_norm1 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("txt_norm1.weight")));
        b->txt_norm2 = as_f32(&ld, get(&ld, 1, H, 1, "%s", P("txt_norm2.weight")));
        b->q_norm = as_f32(&ld, get(&ld, 1, c->head_dim, 1, "%s", P("q_norm.weight")));
        b->k_norm = as_f32(&ld, get(&ld, 1, c->head_dim, 1, "%s", P("k_norm.weight")));
        load_linear(&ld, &b->img_qkv, P("img_qkv"), H, 3 * H);
        load_linear(&ld, &b->txt_qkv, P("txt_qkv"), H, 3 * H);
        load_linear(&ld, &b->img_proj, P("img_attn_proj"), H, H);
        load_linear(&ld, &b->txt_proj, P("txt_attn_proj"), H, H);
        load_swiglu(&ld, &b->img_mlp, P("img_mlp"), H, M);
        load_swiglu(&ld, &b->txt_mlp, P("txt_mlp"), H, M);
#undef P
    }
    m->norm_final = as_f32(&ld, get(&ld, 1, H, 1, "final_layer.norm_final.weight"));
    load_linear(&ld, &m->final_linear, "final_layer.linear", H, pp);
    sdc_tensor *mt = get(&ld, 3, c->txt_input, 1, "mask_token");
    if (ld.s != SDC_OK) goto fail;
    m->mask_token = malloc((size_t)c->txt_input * sizeof(float));
    if (!m->mask_token) {
        ld.s = sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
        goto fail;
    }
    if ((ld.s = sdc_weight_to_f32(mt, m->mask_token)) != SDC_OK) goto fail;
    *out = m;
    return SDC_OK;
fail:
    sdc_minit2i_free(m);
    return ld.s;
}

void sdc_minit2i_free(sdc_minit2i *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) sdc_buffer_free(m->owned[i].buffer);
    free(m->owned);
    sdc_buffer_free(m->proj1.buffer);
    sdc_buffer_free(m->proj2.buffer);
    free(m->pre);
    free(m->dbl);
    free(m->mask_token);
    free(m->tab_pos);
    free(m->tab_cos);
    free(m->tab_sin);
    free(m);
}

const sdc_minit2i_config *sdc_minit2i_get_config(const sdc_minit2i *m) {
    return &m->cfg;
}

void sdc_minit2i_sigmas(int steps, float *out) {
    for (int i = 0; i < steps; i++) out[i] = 1.0f - (float)i / (float)steps;
    out[steps] = 0.0f;
}

/* ---- host tables (float arithmetic as the reference computes them) ---- */

void sdc_minit2i_pos_embed(int gw, int gh, int hidden, float *out) {
    int half = hidden / 2, q = half / 2;
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++) {
            float *row = out + ((size_t)y * gw + x) * hidden;
            for (int i = 0; i < q; i++) {
                float omega = 1.0f / powf(10000.0f, (float)i / (float)q);
                float ax = (float)x * omega, ay = (float)y * omega;
                row[i] = sinf(ax);
                row[q + i] = cosf(ax);
                row[half + i] = sinf(ay);
                row[half + q + i] = cosf(ay);
            }
        }
}

void sdc_minit2i_rope_text(int len, int head_dim, float *cos_out, float *sin_out) {
    int half = head_dim / 2;
    float end = (float)(head_dim - 2) / (float)head_dim;
    for (int j = 0; j < half; j++) {
        float scale = half > 1 ? (float)j * (end / (float)(half - 1)) : 0.0f;
        float omega = 1.0f / powf(10000.0f, scale);
        for (int n = 0; n < len; n++) {
            float a = (float)n * omega;
            cos_out[(size_t)n * half + j] = cosf(a);
            sin_out[(size_t)n * half + j] = sinf(a);
        }
    }
}

void sdc_minit2i_rope_image(int gw, int gh, int head_dim, float *cos_out, float *sin_out) {
    int half = head_dim / 2, quarter = half / 2;
    for (int i = 0; i < quarter; i++) {
        float freq = 1.0f / powf(10000.0f, (float)(2 * i) / (float)half);
        for (int y = 0; y < gh; y++)
            for (int x = 0; x < gw; x++) {
                size_t row = ((size_t)y * gw + x) * half;
                float ay = (float)y * freq, ax = (float)x * freq;
                cos_out[row + i] = cosf(ay);
                sin_out[row + i] = sinf(ay);
                cos_out[row + quarter + i] = cosf(ax);
                sin_out[row + quarter + i] = sinf(ax);
            }
    }
}

/* ---- graph pieces ---- */

static sdc_tensor *apply_linear(sdc_graph *g, const linear *l, sdc_tensor *x) {
    sdc_tensor *y = sdc_matmul(g, l->w, x);
    return l->b ? sdc_add(g, y, l->b) : y;
}

static sdc_tensor *apply_swiglu(sdc_graph *g, const swiglu *s, sdc_tensor *x) {
    sdc_tensor *gate = sdc_silu(g, sdc_matmul(g, s->w1, x));
    return sdc_matmul(g, s->w2, sdc_mul(g, gate, sdc_matmul(g, s->w3, x)));
}

/* One of q/k/v from a fused qkv output [3*H, L, B] as [head_dim, heads, L, B] (a view). */
static sdc_tensor *qkv_part(sdc_graph *g, sdc_tensor *qkv, const sdc_minit2i_config *c, int part) {
    if (!qkv) return NULL;
    int64_t ne[4] = {c->head_dim, c->heads, qkv->ne[1], qkv->ne[2]};
    size_t nb[4] = {sizeof(float), (size_t)c->head_dim * sizeof(float), qkv->nb[1], qkv->nb[2]};
    return sdc_graph_view_node(g, qkv, 4, ne, nb, (size_t)part * c->hidden * sizeof(float));
}

/* [D, heads, L, B] -> attention layout [D, L, heads, B] */
static sdc_tensor *to_attn(sdc_graph *g, sdc_tensor *t) {
    return sdc_cont(g, sdc_permute(g, t, 0, 2, 1, 3));
}

/* softmax(q k^T / sqrt(d)) v over [D, heads, L, B] inputs -> [H, L, B] */
static sdc_tensor *attend(sdc_graph *g, const sdc_minit2i_config *c, sdc_tensor *q, sdc_tensor *k,
                          sdc_tensor *v) {
    sdc_tensor *a = sdc_attention(g, to_attn(g, q), to_attn(g, k), to_attn(g, v), NULL,
                                  1.0f / sqrtf((float)c->head_dim));
    if (!a) return NULL;
    return sdc_reshape_3d(g, a, c->hidden, a->ne[2], a->ne[3]);
}

sdc_status sdc_minit2i_encode_text(sdc_minit2i *m, sdc_backend *be, const float *ctx, int n_tokens,
                                   float *out, sdc_eval_fn cb, void *cb_user) {
    const sdc_minit2i_config *c = &m->cfg;
    int L = c->prompt_len;
    if (n_tokens < 0 || n_tokens > L)
        return sdc_fail(SDC_ERR_INVALID_ARG, "minit2i: %d text tokens, at most %d", n_tokens, L);
    size_t ctx_n = (size_t)L * c->txt_input, half = (size_t)c->head_dim / 2;
    float *host = malloc((ctx_n + 2 * half * L) * sizeof(float));
    if (!host) return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    /* padded rows are replaced by the learned mask token */
    for (int i = 0; i < L; i++)
        memcpy(host + (size_t)i * c->txt_input,
               i < n_tokens ? ctx + (size_t)i * c->txt_input : m->mask_token,
               (size_t)c->txt_input * sizeof(float));
    float *rc = host + ctx_n, *rs = rc + half * L;
    sdc_minit2i_rope_text(L, c->head_dim, rc, rs);

    sdc_graph *g = sdc_graph_create();
    if (!g) {
        free(host);
        return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    }
    int64_t cne[2] = {c->txt_input, L}, rne[2] = {(int64_t)half, L};
    sdc_tensor *in = sdc_graph_input(g, SDC_TYPE_F32, 2, cne);
    sdc_tensor *cos_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *sin_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *txt = sdc_matmul(g, m->txt_embedder.w, in);
    const float eps = 1e-6f;
    for (int i = 0; i < c->n_preamble; i++) {
        const preamble_block *b = &m->pre[i];
        sdc_graph_set_block(g, i); /* a layer split may cut between blocks */
        sdc_tensor *qkv = apply_linear(g, &b->qkv, sdc_rms_norm(g, txt, b->norm1, eps));
        sdc_tensor *q = sdc_rms_norm(g, qkv_part(g, qkv, c, 0), b->q_norm, eps);
        sdc_tensor *k = sdc_rms_norm(g, qkv_part(g, qkv, c, 1), b->k_norm, eps);
        q = sdc_rope(g, q, cos_t, sin_t, SDC_ROPE_HALF);
        k = sdc_rope(g, k, cos_t, sin_t, SDC_ROPE_HALF);
        sdc_tensor *a = attend(g, c, q, k, qkv_part(g, qkv, c, 2));
        txt = sdc_add(g, txt, apply_linear(g, &b->proj, a));
        txt = sdc_add(g, txt, apply_swiglu(g, &b->mlp, sdc_rms_norm(g, txt, b->norm2, eps)));
    }
    sdc_graph_set_block(g, -1);
    sdc_graph_mark_output(g, txt);
    sdc_status s = sdc_graph_status(g);
    if (s == SDC_OK) {
        const sdc_input_data inputs[] = {{in, host, ctx_n * sizeof(float)},
                                         {cos_t, rc, half * L * sizeof(float)},
                                         {sin_t, rs, half * L * sizeof(float)}};
        s = sdc_backend_set_inputs(be, g, inputs, 3);
        if (s == SDC_OK) s = sdc_backend_compute(be, g, cb, cb_user);
        if (s == SDC_OK)
            s = sdc_backend_tensor_get(be, txt, out, 0, (size_t)L * c->hidden * sizeof(float));
    } else {
        s = sdc_fail(s, "minit2i: building the text graph: %s", sdc_graph_error(g));
    }
    sdc_graph_free(g);
    free(host);
    return s;
}

static void round_f16(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = sdc_fp16_to_f32(sdc_f32_to_fp16(x[i]));
}

sdc_status sdc_minit2i_forward(sdc_minit2i *m, sdc_backend *be, const float *x, int B, int width,
                               int height, const float *txt, float *out, sdc_eval_fn cb,
                               void *cb_user) {
    const sdc_minit2i_config *c = &m->cfg;
    int p = c->patch, C = c->in_channels;
    if (B < 1 || width <= 0 || height <= 0 || width % p || height % p)
        return sdc_fail(
            SDC_ERR_INVALID_ARG,
            "minit2i: image size %dx%d must be a positive multiple of the patch size %d", width,
            height, p);
    int gw = width / p, gh = height / p, Ni = gw * gh, Lt = c->prompt_len, L = Lt + Ni;
    int pp = p * p * C;
    size_t half = (size_t)c->head_dim / 2;
    size_t n_patch = (size_t)pp * Ni * B, n_pos = (size_t)c->hidden * Ni, n_rope = half * L;
    if (gw != m->tab_gw || gh != m->tab_gh) { /* new grid: rebuild the position tables */
        free(m->tab_pos), free(m->tab_cos), free(m->tab_sin);
        m->tab_pos = malloc(n_pos * sizeof(float));
        m->tab_cos = malloc(n_rope * sizeof(float));
        m->tab_sin = malloc(n_rope * sizeof(float));
        m->tab_gw = m->tab_gh = 0;
        if (!m->tab_pos || !m->tab_cos || !m->tab_sin)
            return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
        sdc_minit2i_pos_embed(gw, gh, c->hidden, m->tab_pos);
        sdc_minit2i_rope_text(Lt, c->head_dim, m->tab_cos, m->tab_sin);
        sdc_minit2i_rope_image(gw, gh, c->head_dim, m->tab_cos + half * Lt, m->tab_sin + half * Lt);
        m->tab_gw = gw, m->tab_gh = gh;
    }
    float *host = malloc(n_patch * sizeof(float));
    if (!host) return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    void *ytmp = NULL; /* the output's host copy, when it lives on a device */
    float *patches = host, *pos = m->tab_pos, *rc = m->tab_cos, *rs = m->tab_sin;
    /* patchify: feature kx + p*ky + p*p*c of token (ty, tx), the conv weight's order */
    for (int b = 0; b < B; b++)
        for (int ty = 0; ty < gh; ty++)
            for (int tx = 0; tx < gw; tx++) {
                float *dst = patches + ((size_t)b * Ni + (size_t)ty * gw + tx) * pp;
                for (int ch = 0; ch < C; ch++)
                    for (int ky = 0; ky < p; ky++)
                        for (int kx = 0; kx < p; kx++)
                            dst[kx + p * ky + p * p * ch] =
                                x[(((size_t)b * C + ch) * height + ty * p + ky) * width + tx * p +
                                  kx];
            }
    round_f16(patches, n_patch); /* sd.cpp's im2col is F16 */

    sdc_graph *g = sdc_graph_create();
    if (!g) {
        free(host);
        return sdc_fail(SDC_ERR_NO_MEMORY, "minit2i: out of memory");
    }
    int64_t pne[3] = {pp, Ni, B}, posne[2] = {c->hidden, Ni}, rne[2] = {(int64_t)half, L},
            tne[3] = {c->hidden, Lt, B};
    sdc_tensor *in = sdc_graph_input(g, SDC_TYPE_F32, 3, pne);
    sdc_tensor *pos_t = sdc_graph_input(g, SDC_TYPE_F32, 2, posne);
    sdc_tensor *cos_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *sin_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *txt_in = sdc_graph_input(g, SDC_TYPE_F32, 3, tne);

    /* bottleneck patch embedding; its output is rounded to F16 as sd.cpp's F16 im2col does */
    sdc_tensor *h = sdc_matmul(g, &m->proj1, in);
    h = sdc_cast(g, sdc_cast(g, h, SDC_TYPE_F16), SDC_TYPE_F32);
    sdc_tensor *img = sdc_add(g, sdc_add(g, sdc_matmul(g, &m->proj2, h), m->proj2_b), pos_t);
    sdc_tensor *t = txt_in;
    const float eps = 1e-6f;
    for (int i = 0; i < c->n_double; i++) {
        const double_block *b = &m->dbl[i];
        sdc_graph_set_block(g, i);        /* a layer split may cut between blocks */
        bool last = i == c->n_double - 1; /* the text stream's last update is never read */
        sdc_tensor *iq = apply_linear(g, &b->img_qkv, sdc_rms_norm(g, img, b->img_norm1, eps));
        sdc_tensor *tq = apply_linear(g, &b->txt_qkv, sdc_rms_norm(g, t, b->txt_norm1, eps));
        sdc_tensor *q = sdc_concat(g, sdc_rms_norm(g, qkv_part(g, tq, c, 0), b->q_norm, eps),
                                   sdc_rms_norm(g, qkv_part(g, iq, c, 0), b->q_norm, eps), 2);
        sdc_tensor *k = sdc_concat(g, sdc_rms_norm(g, qkv_part(g, tq, c, 1), b->k_norm, eps),
                                   sdc_rms_norm(g, qkv_part(g, iq, c, 1), b->k_norm, eps), 2);
        sdc_tensor *v = sdc_concat(g, sdc_cont(g, qkv_part(g, tq, c, 2)),
                                   sdc_cont(g, qkv_part(g, iq, c, 2)), 2);
        q = sdc_rope(g, q, cos_t, sin_t, SDC_ROPE_HALF);
        k = sdc_rope(g, k, cos_t, sin_t, SDC_ROPE_HALF);
        sdc_tensor *a = attend(g, c, q, k, v); /* [H, L, B]: text rows first */
        if (!a) break;
        int64_t ine[3] = {c->hidden, Ni, B}, tne2[3] = {c->hidden, Lt, B};
        size_t anb[3] = {a->nb[0], a->nb[1], a->nb[2]};
        sdc_tensor *a_img = sdc_graph_view_node(g, a, 3, ine, anb, (size_t)Lt * a->nb[1]);
        img = sdc_add(g, img, apply_linear(g, &b->img_proj, a_img));
        img =
            sdc_add(g, img, apply_swiglu(g, &b->img_mlp, sdc_rms_norm(g, img, b->img_norm2, eps)));
        if (!last) {
            sdc_tensor *a_txt = sdc_graph_view_node(g, a, 3, tne2, anb, 0);
            t = sdc_add(g, t, apply_linear(g, &b->txt_proj, a_txt));
            t = sdc_add(g, t, apply_swiglu(g, &b->txt_mlp, sdc_rms_norm(g, t, b->txt_norm2, eps)));
        }
    }
    sdc_graph_set_block(g, -1);
    /* the final layer is per token: only image rows are needed */
    sdc_tensor *y = apply_linear(g, &m->final_linear, sdc_rms_norm(g, img, m->norm_final, eps));
    sdc_graph_mark_output(g, y);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "minit2i: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    const sdc_input_data inputs[] = {{in, patches, n_patch * sizeof(float)},
                                     {pos_t, pos, n_pos * sizeof(float)},
                                     {cos_t, rc, n_rope * sizeof(float)},
                                     {sin_t, rs, n_rope * sizeof(float)},
                                     {txt_in, txt, (size_t)c->hidden * Lt * B * sizeof(float)}};
    if ((s = sdc_backend_set_inputs(be, g, inputs, 5)) != SDC_OK) goto done;
    if ((s = sdc_backend_compute(be, g, cb, cb_user)) != SDC_OK) goto done;
    /* unpatchify straight from the output where the host can read it (the CPU's scratch) */
    const void *ymap;
    if ((s = sdc_tensor_map_read(y, &ymap, &ytmp)) != SDC_OK) goto done;
    /* unpatchify: feature (py*p + px)*C + ch of token (ty, tx) -> pixel (ch, ty*p+py, tx*p+px) */
    const float *yd = ymap;
    for (int b = 0; b < B; b++)
        for (int ty = 0; ty < gh; ty++)
            for (int tx = 0; tx < gw; tx++) {
                const float *f = yd + ((size_t)b * Ni + (size_t)ty * gw + tx) * pp;
                for (int py = 0; py < p; py++)
                    for (int px = 0; px < p; px++)
                        for (int ch = 0; ch < C; ch++)
                            out[(((size_t)b * C + ch) * height + ty * p + py) * width + tx * p +
                                px] = f[(py * p + px) * C + ch];
            }
done:
    free(ytmp);
    sdc_graph_free(g);
    free(host);
    return s;
}
