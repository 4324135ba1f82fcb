#include "models/qwen25vl_vision.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

typedef struct vis_block {
    sdc_tensor *norm1, *norm2, *qkv, *qkv_b, *proj, *proj_b;
    sdc_tensor *q, *q_b, *k, *k_b, *v, *v_b; /* llama.cpp's split projections (qkv NULL) */
    sdc_tensor *gate, *gate_b, *up, *up_b, *down, *down_b;
} vis_block;

/* The tensor names of a checkpoint: transformers' (ComfyUI's qwen_2.5_vl_7b.safetensors) or
 * llama.cpp's mmproj GGUF (clip.cpp: q, k and v apart, the patch kernel per frame). */
typedef struct vis_names {
    const char *blk; /* block prefix, %d = index */
    const char *norm1, *norm2, *qkv, *q, *k, *v, *proj, *gate, *up, *down;
    const char *ln_q, *mlp0, *mlp2;
    const char *patch[2]; /* the Conv3d kernel split per frame, [O, C, P, P] each */
} vis_names;

static const vis_names k_hf = {
    "visual.blocks.%d.",
    "norm1",
    "norm2",
    "attn.qkv",
    NULL,
    NULL,
    NULL,
    "attn.proj",
    "mlp.gate_proj",
    "mlp.up_proj",
    "mlp.down_proj",
    "visual.merger.ln_q",
    "visual.merger.mlp.0",
    "visual.merger.mlp.2",
    /* sd.cpp's own split of the Conv3d */
    {"visual.patch_embed.proj.0.weight", "visual.patch_embed.proj.1.weight"}};
static const vis_names k_mmproj = {
    "v.blk.%d.", "ln1",      "ln2",
    NULL,        "attn_q",   "attn_k",
    "attn_v",    "attn_out", "ffn_gate",
    "ffn_up",    "ffn_down", "v.post_ln",
    "mm.0",      "mm.2",     {"v.patch_embd.weight", "v.patch_embd.weight.1"}};

struct sdc_qwen25vl_vision {
    sdc_qwen25vl_vision_config cfg;
    const vis_names *names;
    sdc_tensor *patch_w;    /* Conv3d [O, C, T, P, P] as ne=[P, P, T, O*C] (or [P, P, T, O] 4-D) */
    sdc_tensor *patch_t[2]; /* or split per frame, ne [P, P, C, O] each (patch_w NULL) */
    vis_block *blocks;
    sdc_tensor *ln_q, *mlp0, *mlp0_b, *mlp2, *mlp2_b;
    sdc_weight_copies owned; /* F32 copies of norms and biases stored otherwise */
    bool sdcpp;              /* round matmul inputs to F16/BF16 weights' type (ggml) */
};

#define PATCH_W "visual.patch_embed.proj.weight"

/* Block l's tensor `part` + suffix ("visual.blocks.3." "attn.qkv" ".weight") into out. */
static const char *block_name(char *out, size_t n, const vis_names *nm, int l, const char *part,
                              const char *suffix) {
    char blk[96];
    snprintf(blk, sizeof blk, nm->blk, l);
    snprintf(out, n, "%s%s%s", blk, part, suffix);
    return out;
}

/* Which names the weights under prefix use, NULL for none: the patch kernel (whole or per
 * frame), block 0's first projection and the merger's last Linear must be there. */
static const vis_names *find_names(const sdc_weight_source *ws, const char *prefix) {
    const vis_names *all[] = {&k_hf, &k_mmproj};
    for (int i = 0; i < 2; i++) {
        const vis_names *nm = all[i];
        char b[96], w[160];
        block_name(w, sizeof w, nm, 0, nm->qkv ? nm->qkv : nm->q, ".weight");
        snprintf(b, sizeof b, "%s.weight", nm->mlp2);
        bool patch = (nm == &k_hf && sdc_weight_find(ws, prefix, PATCH_W)) ||
                     (sdc_weight_find(ws, prefix, nm->patch[0]) &&
                      sdc_weight_find(ws, prefix, nm->patch[1]));
        if (patch && sdc_weight_find(ws, prefix, w) && sdc_weight_find(ws, prefix, b)) return nm;
    }
    return NULL;
}

bool sdc_qwen25vl_vision_detect(const sdc_weight_source *ws, const char *prefix) {
    return find_names(ws, prefix ? prefix : "") != NULL;
}

static sdc_status f32(sdc_qwen25vl_vision *m, sdc_tensor **w) {
    if (!*w || (*w)->type == SDC_TYPE_F32) return SDC_OK;
    return sdc_weight_copies_add(&m->owned, *w, SDC_TYPE_F32, NULL, w);
}

/* Required `prefix + base + suffix` of shape [n0] or [n0, n1] (n1 0: 1-D). */
static sdc_status req(const sdc_weight_source *ws, const char *prefix, const char *base,
                      const char *suffix, int64_t n0, int64_t n1, sdc_tensor **out) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    int64_t ne[2] = {n0, n1};
    return sdc_weight_require(ws, prefix, name, n1 ? 2 : 1, ne, out);
}

/* The patch embedding: the Conv3d kernel whole, or one [O, C, P, P] kernel per frame. */
static sdc_status read_patch(sdc_qwen25vl_vision *m, const sdc_weight_source *ws,
                             const char *prefix) {
    sdc_qwen25vl_vision_config *c = &m->cfg;
    sdc_tensor *pw = m->names == &k_hf ? sdc_weight_find(ws, prefix, PATCH_W) : NULL;
    if (pw) {
        c->patch = (int)pw->ne[0];
        c->temporal_patch = (int)pw->ne[2];
        /* the loader folds [O, C, T, P, P] into ne[3] = O*C; 3 input channels */
        if (pw->ne[1] != pw->ne[0] || pw->ne[3] != 3 * (int64_t)c->hidden || c->patch < 1)
            return sdc_fail(SDC_ERR_FORMAT,
                            "qwen2.5-vl vision: '%s%s' has ne [%lld, %lld, %lld, %lld], expected "
                            "[P, P, T, 3*%d] (Conv3d [%d, 3, T, P, P])",
                            prefix, PATCH_W, (long long)pw->ne[0], (long long)pw->ne[1],
                            (long long)pw->ne[2], (long long)pw->ne[3], c->hidden, c->hidden);
        m->patch_w = pw;
        return SDC_OK;
    }
    for (int t = 0; t < 2; t++) {
        sdc_tensor *w = sdc_weight_find(ws, prefix, m->names->patch[t]);
        if (!w || w->ne[0] < 1 || w->ne[1] != w->ne[0] || w->ne[2] != 3 || w->ne[3] != c->hidden ||
            (w->type != SDC_TYPE_F32 && w->type != SDC_TYPE_F16 && w->type != SDC_TYPE_BF16) ||
            (t && w->ne[0] != m->patch_t[0]->ne[0]))
            return sdc_fail(SDC_ERR_FORMAT,
                            "qwen2.5-vl vision: '%s%s' is missing or not a float [%d, 3, P, P] "
                            "kernel (one frame of the patch Conv3d)",
                            prefix, m->names->patch[t], c->hidden);
        m->patch_t[t] = w;
    }
    c->patch = (int)m->patch_t[0]->ne[0];
    c->temporal_patch = 2;
    return SDC_OK;
}

/* Sizes from the patch kernel, block 0's norm / gate and the merger's last Linear, and the
 * block count. */
static sdc_status read_config(sdc_qwen25vl_vision *m, const sdc_weight_source *ws,
                              const char *prefix, int head_dim, int window, uint64_t full) {
    sdc_qwen25vl_vision_config *c = &m->cfg;
    const vis_names *nm = m->names;
    char name[160];
    sdc_tensor *t;
    sdc_tensor *n1 =
        sdc_weight_find(ws, prefix, block_name(name, sizeof name, nm, 0, nm->norm1, ".weight"));
    if (!n1 || n1->ne[1] != 1)
        return sdc_fail(SDC_ERR_FORMAT, "qwen2.5-vl vision: no 1-D '%s%s'", prefix, name);
    c->hidden = (int)n1->ne[0];
    sdc_status s = read_patch(m, ws, prefix);
    if (s) return s;
    const char *first = nm->qkv ? nm->qkv : nm->q;
    while (c->n_layers < 64 &&
           sdc_weight_find(ws, prefix,
                           block_name(name, sizeof name, nm, c->n_layers, first, ".weight")))
        c->n_layers++;
    if (c->n_layers == 0 ||
        sdc_weight_find(ws, prefix,
                        block_name(name, sizeof name, nm, c->n_layers, first, ".weight")))
        return sdc_fail(SDC_ERR_FORMAT, "qwen2.5-vl vision: %s blocks under '%s%s'",
                        c->n_layers ? "more than 64" : "no", prefix, nm->blk);
    int64_t ne[2] = {c->hidden, -1};
    block_name(name, sizeof name, nm, 0, nm->gate, ".weight");
    if ((s = sdc_weight_require(ws, prefix, name, 2, ne, &t))) return s;
    c->mlp = (int)t->ne[1];
    c->merge = 2;
    int64_t ne2[2] = {(int64_t)c->hidden * c->merge * c->merge, -1};
    snprintf(name, sizeof name, "%s.weight", nm->mlp2);
    s = sdc_weight_require(ws, prefix, name, 2, ne2, &t);
    if (s) return s;
    c->out_hidden = (int)t->ne[1];
    c->head_dim = head_dim > 0 ? head_dim : 80;
    if (c->hidden % c->head_dim || c->head_dim % 4)
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen2.5-vl vision: width %d is not whole heads of %d (a multiple of 4)",
                        c->hidden, c->head_dim);
    c->n_heads = c->hidden / c->head_dim;
    c->window = window > 0 ? window : 112;
    if (c->window % (c->patch * c->merge))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "qwen2.5-vl vision: window %d is not a multiple of patch %d x merge %d",
                        c->window, c->patch, c->merge);
    c->full_attn = full ? full : (1ull << 7 | 1ull << 15 | 1ull << 23 | 1ull << 31);
    c->rope_theta = 10000.0f;
    c->rms_eps = 1e-6f;
    return SDC_OK;
}

static sdc_status load_block(sdc_qwen25vl_vision *m, const sdc_weight_source *ws,
                             const char *prefix, int l) {
    const sdc_qwen25vl_vision_config *c = &m->cfg;
    const vis_names *nm = m->names;
    vis_block *B = &m->blocks[l];
    char b[160];
    int64_t h = c->hidden, ff = c->mlp;
    sdc_status s = SDC_OK;
#define R(field, base, suf, n0, n1)                                                                \
    if (!s) s = req(ws, prefix, block_name(b, sizeof b, nm, l, base, ""), suf, n0, n1, &B->field);
/* a linear layer: weight [n_in -> n_out] and bias [n_out] */
#define RL(field, base, n_in, n_out)                                                               \
    R(field, base, ".weight", n_in, n_out);                                                        \
    R(field##_b, base, ".bias", n_out, 0)
    R(norm1, nm->norm1, ".weight", h, 0);
    R(norm2, nm->norm2, ".weight", h, 0);
    if (nm->qkv) {
        RL(qkv, nm->qkv, h, 3 * h);
    } else {
        RL(q, nm->q, h, h);
        RL(k, nm->k, h, h);
        RL(v, nm->v, h, h);
    }
    RL(proj, nm->proj, h, h);
    RL(gate, nm->gate, h, ff);
    RL(up, nm->up, h, ff);
    RL(down, nm->down, ff, h);
#undef RL
#undef R
    sdc_tensor **small[] = {&B->norm1, &B->norm2,  &B->qkv_b,  &B->q_b,  &B->k_b,
                            &B->v_b,   &B->proj_b, &B->gate_b, &B->up_b, &B->down_b};
    for (size_t i = 0; i < sizeof small / sizeof *small && !s; i++) s = f32(m, small[i]);
    return s;
}

sdc_status sdc_qwen25vl_vision_load(const sdc_weight_source *ws, const char *prefix, int head_dim,
                                    int window, uint64_t full_attn, sdc_qwen25vl_vision **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    sdc_qwen25vl_vision *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl vision: out of memory");
    m->names = find_names(ws, prefix);
    sdc_status s = m->names ? read_config(m, ws, prefix, head_dim, window, full_attn)
                            : sdc_fail(SDC_ERR_FORMAT,
                                       "qwen2.5-vl vision: no vision tower under '%s' (looked for "
                                       "transformers' visual.* and llama.cpp's mmproj v.* names)",
                                       prefix);
    const sdc_qwen25vl_vision_config *c = &m->cfg;
    if (!s && !(m->blocks = calloc((size_t)c->n_layers, sizeof *m->blocks)))
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl vision: out of memory");
    for (int l = 0; !s && l < c->n_layers; l++) s = load_block(m, ws, prefix, l);
    int64_t h = c->hidden, hm = h * c->merge * c->merge;
    const vis_names *nm = m->names;
    if (!s) s = req(ws, prefix, nm->ln_q, ".weight", h, 0, &m->ln_q);
    if (!s) s = req(ws, prefix, nm->mlp0, ".weight", hm, hm, &m->mlp0);
    if (!s) s = req(ws, prefix, nm->mlp0, ".bias", hm, 0, &m->mlp0_b);
    if (!s) s = req(ws, prefix, nm->mlp2, ".weight", hm, c->out_hidden, &m->mlp2);
    if (!s) s = req(ws, prefix, nm->mlp2, ".bias", c->out_hidden, 0, &m->mlp2_b);
    if (!s) s = f32(m, &m->ln_q);
    if (!s) s = f32(m, &m->mlp0_b);
    if (!s) s = f32(m, &m->mlp2_b);
    if (s) {
        sdc_qwen25vl_vision_free(m);
        return s;
    }
    *out = m;
    return SDC_OK;
}

void sdc_qwen25vl_vision_free(sdc_qwen25vl_vision *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->owned);
    free(m->blocks);
    free(m);
}

const sdc_qwen25vl_vision_config *sdc_qwen25vl_vision_get_config(const sdc_qwen25vl_vision *m) {
    return &m->cfg;
}

int sdc_qwen25vl_vision_tokens(const sdc_qwen25vl_vision *m, int w, int h) {
    int f = m->cfg.patch * m->cfg.merge;
    return (w / f) * (h / f);
}

/* ---- host-side layout: patches, window order, rotary tables, window mask ---- */

/* The merged units (2x2 patch blocks, row-major over the gh/2 x gw/2 grid) in window order:
 * windows row-major, units row-major inside each (transformers' get_vision_window_index).
 * unit_of[k] = the unit at position k; win_end[k] = one past the last unit of k's window. */
static void window_order(int uh, int uw, int vw, int *unit_of, int *win_end) {
    int k = 0;
    for (int wy = 0; wy < uh; wy += vw)
        for (int wx = 0; wx < uw; wx += vw) {
            int start = k;
            for (int y = wy; y < wy + vw && y < uh; y++)
                for (int x = wx; x < wx + vw && x < uw; x++) unit_of[k++] = y * uw + x;
            for (int i = start; i < k; i++) win_end[i] = k;
        }
}

typedef struct host_inputs {
    float *patches; /* [n][3*T*P*P]: (c, t, y, x) per patch, frame duplicated */
    float *cs, *sn; /* [n][D/2] */
    float *mask;    /* [n][n] window mask, 0 / -inf */
    int *unit_of, *win_end;
} host_inputs;

static void host_free(host_inputs *hi) {
    free(hi->patches);
    free(hi->cs);
    free(hi->mask);
    free(hi->unit_of);
    free(hi->win_end);
}

static sdc_status host_build(const sdc_qwen25vl_vision_config *c, const float *img, int w, int h,
                             host_inputs *hi) {
    int P = c->patch, T = c->temporal_patch, M = c->merge, gw = w / P, gh = h / P;
    int uw = gw / M, uh = gh / M, nu = uw * uh, mu = M * M, n = nu * mu, half = c->head_dim / 2;
    size_t K = (size_t)3 * T * P * P;
    memset(hi, 0, sizeof *hi);
    hi->patches = malloc((size_t)n * K * sizeof(float));
    hi->cs = malloc((size_t)2 * n * half * sizeof(float));
    hi->mask = malloc((size_t)n * n * sizeof(float));
    hi->unit_of = malloc((size_t)nu * sizeof(int));
    hi->win_end = malloc((size_t)nu * sizeof(int));
    if (!hi->patches || !hi->cs || !hi->mask || !hi->unit_of || !hi->win_end) {
        host_free(hi);
        return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl vision: %dx%d image", w, h);
    }
    hi->sn = hi->cs + (size_t)n * half;
    window_order(uh, uw, c->window / (P * M), hi->unit_of, hi->win_end);
    int quarter = c->head_dim / 4;
    for (int k = 0; k < nu; k++) {
        int u = hi->unit_of[k], uy = u / uw, ux = u % uw;
        for (int j = 0; j < mu; j++) {
            int i = k * mu + j, py = uy * M + j / M, px = ux * M + j % M;
            float *pt = hi->patches + (size_t)i * K;
            for (int ch = 0; ch < 3; ch++)
                for (int t = 0; t < T; t++)
                    for (int y = 0; y < P; y++)
                        memcpy(pt + (((size_t)ch * T + t) * P + y) * P,
                               img + ((size_t)ch * h + py * P + y) * w + (size_t)px * P,
                               (size_t)P * sizeof(float));
            /* first D/4 pairs rotate by the row, the next D/4 by the column */
            for (int q = 0; q < quarter; q++) {
                double inv = pow((double)c->rope_theta, -(double)(2 * q) / (double)half);
                double ay = py * inv, ax = px * inv;
                hi->cs[(size_t)i * half + q] = (float)cos(ay);
                hi->sn[(size_t)i * half + q] = (float)sin(ay);
                hi->cs[(size_t)i * half + quarter + q] = (float)cos(ax);
                hi->sn[(size_t)i * half + quarter + q] = (float)sin(ax);
            }
        }
    }
    for (int qi = 0, start = 0; qi < n; qi++) {
        int ku = qi / mu, end = hi->win_end[ku] * mu;
        if (ku > 0 && hi->win_end[ku - 1] != hi->win_end[ku]) start = hi->win_end[ku - 1] * mu;
        for (int kj = 0; kj < n; kj++)
            hi->mask[(size_t)qi * n + kj] = kj >= start && kj < end ? 0.0f : -INFINITY;
    }
    return SDC_OK;
}

/* ---- graph ---- */

void sdc_qwen25vl_vision_set_sdcpp_numerics(sdc_qwen25vl_vision *m, bool on) {
    m->sdcpp = on;
}

/* x @ w^T; ggml rounds x to an F16/BF16 weight's type first (sd.cpp's numerics) */
static sdc_tensor *mm(sdc_graph *g, const sdc_qwen25vl_vision *m, sdc_tensor *w, sdc_tensor *x) {
    if (m->sdcpp && (w->type == SDC_TYPE_F16 || w->type == SDC_TYPE_BF16))
        x = sdc_cast(g, sdc_cast(g, x, w->type), SDC_TYPE_F32);
    return sdc_matmul(g, w, x);
}

static sdc_tensor *linear(sdc_graph *g, const sdc_qwen25vl_vision *m, sdc_tensor *w, sdc_tensor *b,
                          sdc_tensor *x) {
    return sdc_add(g, mm(g, m, w, x), b);
}

/* [hidden, n] as rotated (or not) heads [D, n, heads]. */
static sdc_tensor *heads(sdc_graph *g, const sdc_qwen25vl_vision_config *c, sdc_tensor *x,
                         sdc_tensor *cs, sdc_tensor *sn) {
    x = sdc_reshape_3d(g, x, c->head_dim, c->n_heads, x->ne[1]);
    if (cs) x = sdc_rope(g, x, cs, sn, SDC_ROPE_HALF);
    return sdc_cont(g, sdc_permute(g, x, 0, 2, 1, 3));
}

/* One third of the fused qkv [3*hidden, n] as heads. */
static sdc_tensor *qkv_part(sdc_graph *g, const sdc_qwen25vl_vision_config *c, sdc_tensor *qkv,
                            int part, sdc_tensor *cs, sdc_tensor *sn) {
    int64_t n = qkv->ne[1], ne[4] = {c->hidden, n, 1, 1}, off[4] = {(int64_t)part * c->hidden, 0};
    return heads(g, c, sdc_cont(g, sdc_slice(g, qkv, ne, off)), cs, sn);
}

static sdc_tensor *block(sdc_graph *g, const sdc_qwen25vl_vision *m, int l, sdc_tensor *x,
                         sdc_tensor *cs, sdc_tensor *sn, sdc_tensor *mask) {
    const sdc_qwen25vl_vision_config *c = &m->cfg;
    const vis_block *B = &m->blocks[l];
    int64_t n = x->ne[1];
    sdc_tensor *h = sdc_rms_norm(g, x, B->norm1, c->rms_eps);
    sdc_tensor *q, *k, *v;
    if (B->qkv) {
        sdc_tensor *qkv = linear(g, m, B->qkv, B->qkv_b, h);
        q = qkv_part(g, c, qkv, 0, cs, sn), k = qkv_part(g, c, qkv, 1, cs, sn);
        v = qkv_part(g, c, qkv, 2, NULL, NULL);
    } else { /* llama.cpp's split projections: the same rows, three products */
        q = heads(g, c, linear(g, m, B->q, B->q_b, h), cs, sn);
        k = heads(g, c, linear(g, m, B->k, B->k_b, h), cs, sn);
        v = heads(g, c, linear(g, m, B->v, B->v_b, h), NULL, NULL);
    }
    bool full = (c->full_attn >> l) & 1;
    sdc_tensor *a = sdc_attention(g, q, k, v, full ? NULL : mask, 1.0f / sqrtf((float)c->head_dim));
    if (!a) return NULL;
    a = sdc_reshape_2d(g, a, c->hidden, n);
    x = sdc_add(g, x, linear(g, m, B->proj, B->proj_b, a));
    h = sdc_rms_norm(g, x, B->norm2, c->rms_eps);
    sdc_tensor *f = sdc_mul(g, sdc_silu(g, linear(g, m, B->gate, B->gate_b, h)),
                            linear(g, m, B->up, B->up_b, h));
    return sdc_add(g, x, linear(g, m, B->down, B->down_b, f));
}

/* The graph over n patches in window order: merged [out_hidden, n / 4], window order too. */
static sdc_tensor *build(sdc_graph *g, const sdc_qwen25vl_vision *m, sdc_tensor *patches,
                         sdc_tensor *cs, sdc_tensor *sn, sdc_tensor *mask) {
    const sdc_qwen25vl_vision_config *c = &m->cfg;
    int64_t n = patches->ne[1], K = patches->ne[0], mu = (int64_t)c->merge * c->merge;
    /* Conv3d with kernel = stride is a matmul over each flattened (c, t, y, x) patch; with
     * the kernel split per frame (sd.cpp's and llama.cpp's files), one product per frame
     * over its (c, y, x) values, summed as sd.cpp sums its two Conv2d. The frames are the
     * same image (host_build repeats it), so frame 0's values serve both products. */
    sdc_tensor *x = NULL;
    if (m->patch_w) {
        x = mm(g, m, sdc_reshape_2d(g, m->patch_w, K, c->hidden), patches);
    } else {
        int64_t pp = (int64_t)c->patch * c->patch, ne[4] = {pp, 1, 3, n}, off[4] = {0};
        sdc_tensor *p4 = sdc_reshape_4d(g, patches, pp, c->temporal_patch, 3, n);
        sdc_tensor *p0 = sdc_reshape_2d(g, sdc_cont(g, sdc_slice(g, p4, ne, off)), 3 * pp, n);
        for (int t = 0; t < 2; t++) {
            sdc_tensor *y = mm(g, m, sdc_reshape_2d(g, m->patch_t[t], 3 * pp, c->hidden), p0);
            x = x ? sdc_add(g, x, y) : y;
        }
    }
    for (int l = 0; l < c->n_layers && x; l++) {
        sdc_graph_set_block(g, l);
        x = block(g, m, l, x, cs, sn, mask);
    }
    sdc_graph_set_block(g, -1);
    if (!x) return NULL;
    x = sdc_rms_norm(g, x, m->ln_q, c->rms_eps);
    x = sdc_reshape_2d(g, x, c->hidden * mu, n / mu);
    x = sdc_gelu_erf(g, linear(g, m, m->mlp0, m->mlp0_b, x));
    return linear(g, m, m->mlp2, m->mlp2_b, x);
}

sdc_status sdc_qwen25vl_vision_encode(sdc_qwen25vl_vision *m, sdc_backend *be, const float *img,
                                      int w, int h, float *out, sdc_eval_fn cb, void *cb_user) {
    const sdc_qwen25vl_vision_config *c = &m->cfg;
    int f = c->patch * c->merge;
    if (!img || !out || w < f || h < f || w % f || h % f || (int64_t)w * h > 64 * 1024 * 1024)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "qwen2.5-vl vision: image %dx%d is not a positive multiple of %d", w, h, f);
    host_inputs hi;
    sdc_status s = host_build(c, img, w, h, &hi);
    if (s) return s;
    int mu = c->merge * c->merge, nu = (w / f) * (h / f), n = nu * mu;
    int64_t K = (int64_t)3 * c->temporal_patch * c->patch * c->patch, half = c->head_dim / 2;
    float *merged = malloc((size_t)nu * c->out_hidden * sizeof *merged);
    sdc_graph *g = merged ? sdc_graph_create() : NULL;
    if (!g) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl vision: %dx%d image", w, h);
        goto done;
    }
    int64_t pne[2] = {K, n}, rne[2] = {half, n}, mne[2] = {n, n};
    sdc_tensor *pt = sdc_graph_input(g, SDC_TYPE_F32, 2, pne);
    sdc_tensor *cs = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *sn = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *mask = sdc_graph_input(g, SDC_TYPE_F32, 2, mne);
    sdc_input_data in[4] = {{pt, hi.patches, (size_t)K * n * sizeof(float)},
                            {cs, hi.cs, (size_t)half * n * sizeof(float)},
                            {sn, hi.sn, (size_t)half * n * sizeof(float)},
                            {mask, hi.mask, (size_t)n * n * sizeof(float)}};
    sdc_tensor *o = build(g, m, pt, cs, sn, mask);
    if (o) sdc_graph_mark_output(g, o);
    s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "qwen2.5-vl vision: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    s = sdc_backend_set_inputs(be, g, in, 4);
    if (!s) s = sdc_backend_compute(be, g, cb, cb_user);
    if (!s)
        s = sdc_backend_tensor_get(be, o, merged, 0, (size_t)nu * c->out_hidden * sizeof(float));
    /* back from window order to the row-major grid */
    for (int k = 0; !s && k < nu; k++)
        memcpy(out + (size_t)hi.unit_of[k] * c->out_hidden, merged + (size_t)k * c->out_hidden,
               (size_t)c->out_hidden * sizeof(float));
done:
    sdc_graph_free(g);
    free(merged);
    host_free(&hi);
    return s;
}

/* ---- preprocessing (sd.cpp's rules for Qwen-Image-Edit reference images) ---- */

static int imax(int a, int b) {
    return a > b ? a : b;
}

/* sides h and w times beta (AREA's shrink divides by its inverse, as sd.cpp), rounded to
 * multiples of factor by rnd (round, floor or ceil), at least factor unless ceil */
static void scaled(int w, int h, double beta, bool divide, double (*rnd)(double), int factor,
                   int *wb, int *hb) {
    double f = factor, sw = divide ? w / beta : w * beta, sh = divide ? h / beta : h * beta;
    *wb = (int)rnd(sw / f) * factor;
    *hb = (int)rnd(sh / f) * factor;
    if (rnd != ceil) *wb = imax(factor, *wb), *hb = imax(factor, *hb);
}

void sdc_qwen25vl_vision_resize_dims(int w, int h, int factor, int min, int max,
                                     sdc_qwen25vl_resize mode, int *w_out, int *h_out) {
    const bool area = mode == SDC_QWEN25VL_RESIZE_AREA;
    if (factor <= 0) factor = 28;
    if (min <= 0) min = area ? 384 * 384 : 384;
    if (max <= 0) max = area ? 560 * 560 : 560;
    double f = factor, hw = (double)h * w, side = w > h ? w : h;
    int hb = (int)(round(h / f) * f), wb = (int)(round(w / f) * f);
    /* AREA bounds the rounded area, LONGEST_SIDE the longest side as given */
    double size = area ? (double)hb * wb : side;
    if (mode == SDC_QWEN25VL_RESIZE_NONE) {
        /* rounded only */
    } else if (min == max) { /* a fixed size */
        scaled(w, h, area ? sqrt(min / hw) : min / side, false, round, factor, &wb, &hb);
    } else if (size > max) {
        if (area)
            scaled(w, h, sqrt(hw / max), true, floor, factor, &wb, &hb);
        else
            scaled(w, h, max / side, false, floor, factor, &wb, &hb);
    } else if (size < min) {
        scaled(w, h, area ? sqrt(min / hw) : min / side, false, ceil, factor, &wb, &hb);
    }
    *w_out = wb;
    *h_out = hb;
}

sdc_status sdc_qwen25vl_vision_preprocess(const float *rgb, int w, int h, int tw, int th,
                                          float *out) {
    static const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
    static const float std_[3] = {0.26862954f, 0.26130258f, 0.27577711f};
    if (!rgb || !out || w <= 0 || h <= 0 || tw <= 0 || th <= 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen2.5-vl vision preprocess: %dx%d -> %dx%d", w, h,
                        tw, th);
    /* float arithmetic as sd.cpp */
    float sx = (float)tw / (float)w, sy = (float)th / (float)h, sc = sx > sy ? sx : sy;
    int64_t rw = (int64_t)(sc * (float)w), rh = (int64_t)(sc * (float)h);
    int64_t ox = rw > tw ? (rw - tw) / 2 : 0, oy = rh > th ? (rh - th) / 2 : 0;
    for (int y = 0; y < th; y++) {
        int64_t ry = y + oy < rh ? y + oy : rh - 1; /* rh may round below th */
        int64_t syi = ry * h / rh;
        for (int x = 0; x < tw; x++) {
            int64_t rx = x + ox < rw ? x + ox : rw - 1;
            const float *p = rgb + ((size_t)syi * w + (size_t)(rx * w / rw)) * 3;
            for (int c = 0; c < 3; c++) {
                float v = p[c] < 0.0f ? 0.0f : p[c] > 1.0f ? 1.0f : p[c];
                out[((size_t)c * th + y) * tw + x] = (v - mean[c]) / std_[c];
            }
        }
    }
    return SDC_OK;
}

/* ---- Qwen-Image-Edit conditioning ---- */

sdc_status sdc_qwen_image_edit_prompt_tokens(const sdc_qwen2_tokenizer *tok, const char *prompt,
                                             int n_images, const int *n_pads, bool labels,
                                             int32_t **ids, int *n, int *n_drop, int *pad_at) {
    static const char pad[] = "<|image_pad|>";
    *ids = NULL;
    *n = *n_drop = 0;
    if (!tok || n_images < 0 || (n_images && (!n_pads || !pad_at)))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen-image-edit prompt: bad arguments");
    if (!prompt) prompt = "";
    int32_t pad_id = sdc_qwen2_tokenizer_find(tok, pad);
    if (n_images && pad_id < 0)
        return sdc_fail(SDC_ERR_FORMAT, "qwen-image-edit prompt: the tokenizer has no %s", pad);
    size_t len = strlen(SDC_QWEN_IMAGE_EDIT_PROMPT_PREFIX) + strlen(prompt) +
                 strlen(SDC_QWEN_IMAGE_PROMPT_SUFFIX) + 1;
    for (int i = 0; i < n_images; i++) {
        if (n_pads[i] <= 0 || n_pads[i] > 1 << 20)
            return sdc_fail(SDC_ERR_INVALID_ARG, "qwen-image-edit prompt: image %d with %d tokens",
                            i, n_pads[i]);
        len += 64 + (size_t)n_pads[i] * (sizeof pad - 1);
    }
    char *text = malloc(len), *p = text;
    if (!text) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen-image-edit prompt: %zu bytes", len);
    p += sprintf(p, "%s", SDC_QWEN_IMAGE_EDIT_PROMPT_PREFIX);
    for (int i = 0; i < n_images; i++) {
        if (labels) p += sprintf(p, "Picture %d: ", i + 1);
        p += sprintf(p, "<|vision_start|>");
        for (int j = 0; j < n_pads[i]; j++) p += sprintf(p, "%s", pad);
        p += sprintf(p, "<|vision_end|>");
    }
    p += sprintf(p, "%s%s", prompt, SDC_QWEN_IMAGE_PROMPT_SUFFIX);
    sdc_status s = sdc_qwen2_tokenize(tok, text, (size_t)(p - text), ids, n);
    free(text);
    if (s) return s;
    /* the pads as runs of pad ids, one per image in order (the prompt text may hold more) */
    int k = 0;
    for (int i = 0; i < *n && k < n_images; i++)
        if ((*ids)[i] == pad_id) {
            int j = i;
            while (j < *n && (*ids)[j] == pad_id) j++;
            if (j - i != n_pads[k]) break;
            pad_at[k++] = i;
            i = j - 1;
        }
    if (k < n_images || *n <= SDC_QWEN_IMAGE_EDIT_DROP_TOKENS ||
        (n_images && pad_at[0] < SDC_QWEN_IMAGE_EDIT_DROP_TOKENS)) {
        free(*ids);
        *ids = NULL;
        *n = 0;
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen-image-edit prompt: %d of %d images' pads found after the %d "
                        "template tokens",
                        k, n_images, SDC_QWEN_IMAGE_EDIT_DROP_TOKENS);
    }
    *n_drop = SDC_QWEN_IMAGE_EDIT_DROP_TOKENS;
    return SDC_OK;
}

sdc_status sdc_qwen_image_edit_encode_prompt(sdc_qwen25vl_llm *m, sdc_backend *be,
                                             const sdc_qwen2_tokenizer *tok, const char *prompt,
                                             int n_images, const float *const *embeds,
                                             const int *n_pads, bool labels, float **out,
                                             int *n_ctx, sdc_eval_fn cb, void *cb_user) {
    if (!m || !out || !n_ctx || n_images < 0 || n_images > 64 || (n_images && !embeds))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen-image-edit prompt: bad arguments");
    *out = NULL;
    *n_ctx = 0;
    int32_t *ids = NULL;
    int n = 0, drop = 0, pad_at[64];
    sdc_qwen25vl_llm_span spans[64];
    sdc_status s = sdc_qwen_image_edit_prompt_tokens(tok, prompt, n_images, n_pads, labels, &ids,
                                                     &n, &drop, pad_at);
    if (s) return s;
    for (int i = 0; i < n_images; i++)
        spans[i] = (sdc_qwen25vl_llm_span){pad_at[i], n_pads[i], embeds[i]};
    int hidden = sdc_qwen25vl_llm_get_config(m)->hidden;
    float *h = malloc((size_t)(n - drop) * hidden * sizeof *h);
    s = h ? sdc_qwen25vl_llm_encode_spans(m, be, ids, n, drop, 0, spans, n_images, h, cb, cb_user)
          : sdc_fail(SDC_ERR_NO_MEMORY, "qwen-image-edit prompt: %d tokens", n);
    free(ids);
    if (s) {
        free(h);
        return s;
    }
    *out = h;
    *n_ctx = n - drop;
    return SDC_OK;
}
