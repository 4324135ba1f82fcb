#include "models/clip_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

#define CLIP_HEAD_DIM 64
#define CLIP_LN_EPS   1e-5f

typedef struct clip_layer {
    sdc_tensor *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    sdc_tensor *q, *k, *v, *qb, *kb, *vb; /* HF: separate projections */
    sdc_tensor *qkv, *qkv_b;              /* OpenCLIP: in_proj [hidden, 3*hidden] */
    sdc_tensor *o, *ob, *fc1, *fc1_b, *fc2, *fc2_b;
} clip_layer;

struct sdc_clip_text {
    sdc_clip_text_config cfg;
    sdc_clip_text_options opt;
    sdc_tensor *tok, *pos, *fln_w, *fln_b;
    sdc_tensor *proj;     /* as a matmul weight ne=[hidden, proj] (reference semantics) */
    sdc_tensor *proj_raw; /* OpenCLIP's stored [hidden, proj] (ne=[proj, hidden]), sd.cpp's use */
    clip_layer *layers;
    sdc_tensor *owned; /* F32 copies, each in a host weight buffer of its own */
    int n_owned, cap_owned;
};

/* Layout-specific key names; %d is the layer index. */
typedef struct clip_names {
    const char *tok, *pos, *fln_w, *fln_b, *proj;
    const char *ln1_w, *ln1_b, *ln2_w, *ln2_b, *o, *ob, *fc1, *fc1_b, *fc2, *fc2_b;
    const char *q, *qb, *k, *kb, *v, *vb; /* HF */
    const char *qkv, *qkv_b;              /* OpenCLIP */
} clip_names;

#define HFL "text_model.encoder.layers.%d."
static const clip_names k_hf = {
    "text_model.embeddings.token_embedding.weight",
    "text_model.embeddings.position_embedding.weight",
    "text_model.final_layer_norm.weight",
    "text_model.final_layer_norm.bias",
    "text_projection.weight",
    HFL "layer_norm1.weight",
    HFL "layer_norm1.bias",
    HFL "layer_norm2.weight",
    HFL "layer_norm2.bias",
    HFL "self_attn.out_proj.weight",
    HFL "self_attn.out_proj.bias",
    HFL "mlp.fc1.weight",
    HFL "mlp.fc1.bias",
    HFL "mlp.fc2.weight",
    HFL "mlp.fc2.bias",
    HFL "self_attn.q_proj.weight",
    HFL "self_attn.q_proj.bias",
    HFL "self_attn.k_proj.weight",
    HFL "self_attn.k_proj.bias",
    HFL "self_attn.v_proj.weight",
    HFL "self_attn.v_proj.bias",
    NULL,
    NULL,
};
#define OCL "transformer.resblocks.%d."
static const clip_names k_openclip = {
    "token_embedding.weight",
    "positional_embedding",
    "ln_final.weight",
    "ln_final.bias",
    "text_projection",
    OCL "ln_1.weight",
    OCL "ln_1.bias",
    OCL "ln_2.weight",
    OCL "ln_2.bias",
    OCL "attn.out_proj.weight",
    OCL "attn.out_proj.bias",
    OCL "mlp.c_fc.weight",
    OCL "mlp.c_fc.bias",
    OCL "mlp.c_proj.weight",
    OCL "mlp.c_proj.bias",
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    OCL "attn.in_proj_weight",
    OCL "attn.in_proj_bias",
};

static bool has_layer0(const sdc_weight_source *ws, const char *prefix, const clip_names *k) {
    char name[160];
    snprintf(name, sizeof name, k->q ? k->q : k->qkv, 0);
    return sdc_weight_find(ws, prefix, k->tok) && sdc_weight_find(ws, prefix, name);
}

bool sdc_clip_text_detect(const sdc_weight_source *ws, const char *prefix) {
    return has_layer0(ws, prefix, &k_hf) || has_layer0(ws, prefix, &k_openclip);
}

/* Norm weights, biases and the position embedding feed F32 elementwise kernels. */
static sdc_status f32_copy(sdc_clip_text *m, sdc_tensor **w) {
    if ((*w)->type == SDC_TYPE_F32) return SDC_OK;
    if (m->n_owned == m->cap_owned)
        return sdc_fail(SDC_ERR_INTERNAL, "clip: too many converted tensors");
    sdc_tensor *t = &m->owned[m->n_owned];
    sdc_status s = sdc_weight_convert_copy(*w, SDC_TYPE_F32, NULL, NULL, t);
    if (s != SDC_OK) return s;
    m->n_owned++; /* freed with the model */
    *w = t;
    return SDC_OK;
}

/* prefix + (fmt with layer l) of shape ne (ndims 1 or 2), converted to F32 if `f32`. */
static sdc_status req(sdc_clip_text *m, const sdc_weight_source *ws, const char *prefix,
                      const char *fmt, int l, int64_t n0, int64_t n1, bool f32, sdc_tensor **out) {
    char name[160];
    snprintf(name, sizeof name, fmt, l);
    int64_t ne[2] = {n0, n1};
    sdc_status s = sdc_weight_require(ws, prefix, name, n1 == 0 ? 1 : 2, ne, out);
    if (s == SDC_OK && f32) s = f32_copy(m, out);
    return s;
}

/* OpenCLIP's text_projection [hidden, proj] transposed into a Linear weight (ne=[hidden, proj]). */
static sdc_status transposed_projection(sdc_clip_text *m, sdc_tensor *raw) {
    int64_t P = raw->ne[0], H = raw->ne[1];
    float *a = malloc((size_t)(P * H) * sizeof(float)),
          *b = malloc((size_t)(P * H) * sizeof(float));
    sdc_status s =
        a && b ? sdc_weight_to_f32(raw, a) : sdc_fail(SDC_ERR_NO_MEMORY, "clip: out of memory");
    if (s == SDC_OK) {
        for (int64_t h = 0; h < H; h++)
            for (int64_t p = 0; p < P; p++) b[p * H + h] = a[h * P + p];
        sdc_tensor t = {0};
        t.type = SDC_TYPE_F32;
        t.ne[0] = H, t.ne[1] = P, t.ne[2] = t.ne[3] = 1;
        sdc_tensor_set_contiguous_strides(&t);
        t.data = b;
        t.flags = SDC_TENSOR_PARAM;
        snprintf(t.name, sizeof t.name, "%s", raw->name);
        s = sdc_weight_convert_copy(&t, SDC_TYPE_F32, NULL, NULL, &m->owned[m->n_owned]);
        if (s == SDC_OK) m->proj = &m->owned[m->n_owned++];
    }
    free(a);
    free(b);
    return s;
}

static sdc_status load_layer(sdc_clip_text *m, const sdc_weight_source *ws, const char *prefix,
                             const clip_names *k, int l) {
    clip_layer *L = &m->layers[l];
    int64_t H = m->cfg.hidden, F = m->cfg.ff;
    sdc_status s;
#define R(field, fmt, n0, n1, f32)                                                                 \
    if ((s = req(m, ws, prefix, k->fmt, l, n0, n1, f32, &L->field)) != SDC_OK) return s
    R(ln1_w, ln1_w, H, 0, true);
    R(ln1_b, ln1_b, H, 0, true);
    R(ln2_w, ln2_w, H, 0, true);
    R(ln2_b, ln2_b, H, 0, true);
    if (m->cfg.openclip) {
        R(qkv, qkv, H, 3 * H, false);
        R(qkv_b, qkv_b, 3 * H, 0, true);
    } else {
        R(q, q, H, H, false);
        R(qb, qb, H, 0, true);
        R(k, k, H, H, false);
        R(kb, kb, H, 0, true);
        R(v, v, H, H, false);
        R(vb, vb, H, 0, true);
    }
    R(o, o, H, H, false);
    R(ob, ob, H, 0, true);
    R(fc1, fc1, H, F, false);
    R(fc1_b, fc1_b, F, 0, true);
    R(fc2, fc2, F, H, false);
    R(fc2_b, fc2_b, H, 0, true);
#undef R
    return SDC_OK;
}

static void default_options(sdc_clip_text *m) {
    m->opt.sdcpp_numerics = true;
    m->opt.use_projection = true;
    m->opt.eos_id = m->cfg.vocab - 1;
    m->opt.act = SDC_CLIP_ACT_AUTO;
    m->cfg.quick_gelu = !(m->cfg.hidden == 1024 || m->cfg.hidden == 1280);
}

sdc_status sdc_clip_text_load(const sdc_weight_source *ws, const char *prefix,
                              sdc_clip_text **out) {
    *out = NULL;
    sdc_clip_text *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "clip: out of memory");
    sdc_status s = SDC_OK;
    sdc_clip_text_config *c = &m->cfg;
    const clip_names *k = NULL;
    if (has_layer0(ws, prefix, &k_hf))
        k = &k_hf;
    else if (has_layer0(ws, prefix, &k_openclip))
        k = &k_openclip;
    if (!k) {
        s = sdc_fail(SDC_ERR_FORMAT,
                     "clip: no CLIP text model under '%s' (neither '%s%s' nor '%s%s' with layer 0)",
                     prefix, prefix, k_hf.tok, prefix, k_openclip.tok);
        goto fail;
    }
    c->openclip = k == &k_openclip;
    m->tok = sdc_weight_find(ws, prefix, k->tok);
    if (m->tok->ne[2] != 1 || m->tok->ne[3] != 1 || m->tok->ne[0] < CLIP_HEAD_DIM) {
        s = sdc_fail(SDC_ERR_FORMAT, "clip: tensor '%s%s' has an unexpected shape", prefix, k->tok);
        goto fail;
    }
    c->hidden = (int)m->tok->ne[0];
    c->vocab = (int)m->tok->ne[1];
    if (c->hidden % CLIP_HEAD_DIM) {
        s = sdc_fail(SDC_ERR_FORMAT, "clip: width %d ('%s%s') is not a multiple of 64", c->hidden,
                     prefix, k->tok);
        goto fail;
    }
    c->heads = c->hidden / CLIP_HEAD_DIM;
    char name[160];
    for (;; c->n_layers++) {
        snprintf(name, sizeof name, k->q ? k->q : k->qkv, c->n_layers);
        if (!sdc_weight_find(ws, prefix, name)) break;
    }
    snprintf(name, sizeof name, k->fc1, 0);
    sdc_tensor *fc1 = sdc_weight_find(ws, prefix, name);
    if (!fc1) {
        s = sdc_fail(SDC_ERR_FORMAT, "clip: missing tensor '%s%s'", prefix, name);
        goto fail;
    }
    c->ff = (int)fc1->ne[1];
    int64_t H = c->hidden;
    if ((s = sdc_weight_require(ws, prefix, k->pos, 2, (int64_t[]){H, -1}, &m->pos)) != SDC_OK)
        goto fail;
    c->n_pos = (int)m->pos->ne[1];
    sdc_tensor *proj = sdc_weight_find(ws, prefix, k->proj);
    /* HF: Linear [proj, hidden] (ne=[hidden, proj]); OpenCLIP: [hidden, proj] (ne=[proj, hidden])
     */
    if (proj) {
        int64_t pne[2] = {c->openclip ? -1 : H, c->openclip ? H : -1};
        if ((s = sdc_weight_require(ws, prefix, k->proj, 2, pne, &proj)) != SDC_OK) goto fail;
        c->proj_dim = (int)(c->openclip ? proj->ne[0] : proj->ne[1]);
    }
    m->cap_owned = c->n_layers * 12 + 8;
    m->layers = calloc((size_t)c->n_layers, sizeof(clip_layer));
    m->owned = calloc((size_t)m->cap_owned, sizeof(sdc_tensor));
    if (!m->layers || !m->owned) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "clip: out of memory");
        goto fail;
    }
    for (int l = 0; l < c->n_layers; l++)
        if ((s = load_layer(m, ws, prefix, k, l)) != SDC_OK) goto fail;
    if ((s = req(m, ws, prefix, k->fln_w, 0, H, 0, true, &m->fln_w)) != SDC_OK) goto fail;
    if ((s = req(m, ws, prefix, k->fln_b, 0, H, 0, true, &m->fln_b)) != SDC_OK) goto fail;
    if ((s = f32_copy(m, &m->pos)) != SDC_OK) goto fail;
    if (proj && c->openclip) {
        m->proj_raw = proj;
        if ((s = transposed_projection(m, proj)) != SDC_OK) goto fail;
    } else {
        m->proj = proj;
    }
    default_options(m);
    *out = m;
    return SDC_OK;
fail:
    sdc_clip_text_free(m);
    return s;
}

void sdc_clip_text_free(sdc_clip_text *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) sdc_buffer_free(m->owned[i].buffer);
    free(m->owned);
    free(m->layers);
    free(m);
}

const sdc_clip_text_config *sdc_clip_text_get_config(const sdc_clip_text *m) {
    return &m->cfg;
}

const sdc_clip_text_options *sdc_clip_text_get_options(const sdc_clip_text *m) {
    return &m->opt;
}

sdc_status sdc_clip_text_set_options(sdc_clip_text *m, const sdc_clip_text_options *opt) {
    if (opt->act < SDC_CLIP_ACT_AUTO || opt->act > SDC_CLIP_ACT_GELU)
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip: activation %d unknown", (int)opt->act);
    m->opt = *opt;
    m->cfg.quick_gelu = opt->act == SDC_CLIP_ACT_AUTO
                            ? !(m->cfg.hidden == 1024 || m->cfg.hidden == 1280)
                            : opt->act == SDC_CLIP_ACT_QUICK_GELU;
    return SDC_OK;
}

int sdc_clip_text_pooled_dim(const sdc_clip_text *m) {
    return m->proj && m->opt.use_projection ? m->cfg.proj_dim : m->cfg.hidden;
}

/* ---------------------------------------------------------------------------- graph */

/* sd.cpp's ggml rounds a matmul's F32 input to the weight's F16/BF16 (its vec_dot_type). */
static sdc_tensor *mm_input(const sdc_clip_text *m, sdc_graph *g, sdc_tensor *w, sdc_tensor *x) {
    if (!m->opt.sdcpp_numerics || (w->type != SDC_TYPE_F16 && w->type != SDC_TYPE_BF16)) return x;
    return sdc_cast(g, sdc_cast(g, x, w->type), SDC_TYPE_F32);
}

static sdc_tensor *linear(const sdc_clip_text *m, sdc_graph *g, sdc_tensor *w, sdc_tensor *b,
                          sdc_tensor *x) {
    return sdc_add(g, sdc_matmul(g, w, mm_input(m, g, w, x)), b);
}

static sdc_tensor *activation(const sdc_clip_text *m, sdc_graph *g, sdc_tensor *x) {
    bool ggml = m->opt.sdcpp_numerics;
    if (!m->cfg.quick_gelu) return ggml ? sdc_gelu_f16(g, x) : sdc_gelu_erf(g, x);
    /* quick_gelu x * sigmoid(1.702 x) from ops; ggml: through F16 on the way in and out */
    if (ggml) x = sdc_cast(g, sdc_cast(g, x, SDC_TYPE_F16), SDC_TYPE_F32);
    sdc_tensor *y = sdc_mul(g, x, sdc_sigmoid(g, sdc_scale(g, x, 1.702f, 0.0f)));
    if (ggml) y = sdc_cast(g, sdc_cast(g, y, SDC_TYPE_F16), SDC_TYPE_F32);
    return y;
}

/* [hidden, n] (a contiguous or a row-strided view) -> [64, n, heads] contiguous */
static sdc_tensor *heads_first(sdc_graph *g, sdc_tensor *x, int heads, int n) {
    if (x && x->nb[1] != (size_t)x->ne[0] * x->nb[0]) x = sdc_cont(g, x);
    sdc_tensor *r = sdc_reshape_3d(g, x, CLIP_HEAD_DIM, heads, n);
    return sdc_cont(g, sdc_permute(g, r, 0, 2, 1, 3));
}

static sdc_tensor *layer_forward(const sdc_clip_text *m, sdc_graph *g, const clip_layer *L,
                                 sdc_tensor *x, sdc_tensor *mask, int n) {
    const int H = m->cfg.hidden, heads = m->cfg.heads;
    sdc_tensor *h = sdc_layer_norm(g, x, L->ln1_w, L->ln1_b, CLIP_LN_EPS);
    sdc_tensor *q, *k, *v;
    if (L->qkv) {
        /* one in_proj matmul, then q, k, v are row blocks of its output */
        sdc_tensor *qkv = linear(m, g, L->qkv, L->qkv_b, h);
        q = sdc_slice(g, qkv, (int64_t[]){H, n, 1, 1}, (int64_t[]){0, 0, 0, 0});
        k = sdc_slice(g, qkv, (int64_t[]){H, n, 1, 1}, (int64_t[]){H, 0, 0, 0});
        v = sdc_slice(g, qkv, (int64_t[]){H, n, 1, 1}, (int64_t[]){2 * H, 0, 0, 0});
    } else {
        sdc_tensor *hq = mm_input(m, g, L->q, h); /* q, k, v share the rounded input */
        q = sdc_add(g, sdc_matmul(g, L->q, hq), L->qb);
        k = sdc_add(g, sdc_matmul(g, L->k, hq), L->kb);
        v = sdc_add(g, sdc_matmul(g, L->v, hq), L->vb);
    }
    q = heads_first(g, q, heads, n);
    k = heads_first(g, k, heads, n);
    v = heads_first(g, v, heads, n);
    sdc_tensor *a = sdc_attention(g, q, k, v, mask, 1.0f / sqrtf((float)CLIP_HEAD_DIM));
    a = sdc_reshape_2d(g, a, H, n);
    x = sdc_add(g, x, linear(m, g, L->o, L->ob, a));
    h = sdc_layer_norm(g, x, L->ln2_w, L->ln2_b, CLIP_LN_EPS);
    h = activation(m, g, linear(m, g, L->fc1, L->fc1_b, h));
    return sdc_add(g, x, linear(m, g, L->fc2, L->fc2_b, h));
}

static sdc_status check_args(const sdc_clip_text *m, const int32_t *ids, int n, int layer_skip,
                             const float *extra, int n_extra, bool *any_extra) {
    const sdc_clip_text_config *c = &m->cfg;
    if (n <= 0 || n > c->n_pos)
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip: %d tokens, the model takes 1 to %d", n,
                        c->n_pos);
    if (layer_skip < 1 || layer_skip > c->n_layers)
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip: layer_skip %d outside 1..%d", layer_skip,
                        c->n_layers);
    if (n_extra < 0 || (n_extra > 0 && !extra))
        return sdc_fail(SDC_ERR_INVALID_ARG, "clip: %d extra embeddings without data", n_extra);
    *any_extra = false;
    for (int i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= c->vocab + n_extra)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "clip: token %d (position %d) outside the vocabulary (%d) and the %d "
                            "extra embeddings",
                            ids[i], i, c->vocab, n_extra);
        if (ids[i] >= c->vocab) *any_extra = true;
    }
    return SDC_OK;
}

typedef struct clip_inputs {
    sdc_input_data d[4];
    int n;
    void *own[4];
} clip_inputs;

static void *add_input(clip_inputs *in, sdc_tensor *t, size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) return NULL;
    in->own[in->n] = p;
    in->d[in->n++] = (sdc_input_data){t, p, bytes};
    return p;
}

sdc_status sdc_clip_text_encode(sdc_clip_text *m, sdc_backend *be, const int32_t *ids, int n,
                                int layer_skip, bool final_ln, const float *extra_embd, int n_extra,
                                float *hidden, float *pooled, sdc_eval_fn cb, void *cb_user) {
    const sdc_clip_text_config *c = &m->cfg;
    bool any_extra = false;
    sdc_status s = check_args(m, ids, n, layer_skip, extra_embd, n_extra, &any_extra);
    if (s != SDC_OK || (!hidden && !pooled)) return s;
    const int H = c->hidden;
    int eos = n - 1;
    for (int i = 0; i < n; i++)
        if (ids[i] == m->opt.eos_id) {
            eos = i;
            break;
        }
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "clip: out of memory");
    clip_inputs in = {0};
    sdc_tensor *tok = sdc_graph_input_1d(g, SDC_TYPE_I32, n);
    sdc_tensor *mask = sdc_graph_input(g, SDC_TYPE_F32, 2, (int64_t[]){n, n});
    sdc_tensor *x = sdc_get_rows(g, m->tok, tok), *sel = NULL, *ext = NULL;
    if (any_extra) {
        /* textual inversion: zero the looked-up rows of extra ids and add their vectors */
        sel = sdc_graph_input(g, SDC_TYPE_F32, 2, (int64_t[]){1, n});
        ext = sdc_graph_input(g, SDC_TYPE_F32, 2, (int64_t[]){H, n});
        x = sdc_add(g, sdc_mul(g, x, sel), ext);
    }
    x = sdc_add(g, x, sdc_slice(g, m->pos, (int64_t[]){H, n, 1, 1}, (int64_t[]){0, 0, 0, 0}));
    int keep = c->n_layers - layer_skip + 1; /* layers whose output `hidden` is */
    int run = pooled ? c->n_layers : keep;
    sdc_tensor *h_out = NULL, *p_out = NULL, *last_ln = NULL;
    for (int l = 0; l < run; l++) {
        sdc_graph_set_block(g, l); /* a layer split may cut between layers */
        x = layer_forward(m, g, &m->layers[l], x, mask, n);
        if (l + 1 == keep && hidden) {
            sdc_graph_set_block(g, -1);
            h_out = final_ln ? sdc_layer_norm(g, x, m->fln_w, m->fln_b, CLIP_LN_EPS) : x;
            if (final_ln && keep == c->n_layers) last_ln = h_out;
            sdc_graph_mark_output(g, h_out);
        }
    }
    sdc_graph_set_block(g, -1);
    if (pooled) {
        sdc_tensor *row;
        if (last_ln) {
            row = sdc_cont(
                g, sdc_slice(g, last_ln, (int64_t[]){H, 1, 1, 1}, (int64_t[]){0, eos, 0, 0}));
        } else {
            row = sdc_cont(g, sdc_slice(g, x, (int64_t[]){H, 1, 1, 1}, (int64_t[]){0, eos, 0, 0}));
            row = sdc_layer_norm(g, row, m->fln_w, m->fln_b, CLIP_LN_EPS);
        }
        if (m->proj && m->opt.use_projection) {
            /* sd.cpp keeps text_projection in F32: no input rounding */
            bool raw = m->opt.sdcpp_numerics && m->proj_raw && c->proj_dim == H;
            row = sdc_matmul(g, raw ? m->proj_raw : m->proj, row);
        }
        p_out = row;
        sdc_graph_mark_output(g, p_out);
    }
    if ((s = sdc_graph_status(g)) != SDC_OK) {
        s = sdc_fail(s, "clip: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    int32_t *idb = add_input(&in, tok, (size_t)n * sizeof(int32_t));
    float *mb = add_input(&in, mask, (size_t)n * n * sizeof(float));
    float *selb = sel ? add_input(&in, sel, (size_t)n * sizeof(float)) : NULL;
    float *extb = ext ? add_input(&in, ext, (size_t)n * H * sizeof(float)) : NULL;
    if (!idb || !mb || (sel && (!selb || !extb))) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "clip: out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++) {
        bool e = ids[i] >= c->vocab;
        idb[i] = e ? 0 : ids[i];
        if (sel) {
            selb[i] = e ? 0.0f : 1.0f;
            if (e)
                memcpy(extb + (size_t)i * H, extra_embd + (size_t)(ids[i] - c->vocab) * H,
                       (size_t)H * sizeof(float));
            else
                memset(extb + (size_t)i * H, 0, (size_t)H * sizeof(float));
        }
        for (int j = 0; j < n; j++) mb[(size_t)i * n + j] = j > i ? -INFINITY : 0.0f; /* causal */
    }
    s = sdc_backend_set_inputs(be, g, in.d, in.n);
    if (s == SDC_OK) s = sdc_backend_compute(be, g, cb, cb_user);
    if (s == SDC_OK && h_out)
        s = sdc_backend_tensor_get(be, h_out, hidden, 0, (size_t)n * H * sizeof(float));
    if (s == SDC_OK && p_out)
        s = sdc_backend_tensor_get(be, p_out, pooled, 0, (size_t)p_out->ne[0] * sizeof(float));
done:
    for (int i = 0; i < in.n; i++) free(in.own[i]);
    sdc_graph_free(g);
    return s;
}
