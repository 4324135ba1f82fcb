#include "models/qwen_image_dit.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

typedef struct linear {
    sdc_tensor *w, *b; /* w ne=[in, out]; b ne=[out] F32 */
    float in_scale; /* sd.cpp scales this input before an F16 matmul (to_out 1/32, net.2 1/128) */
} linear;

typedef struct mlp {
    linear up, down; /* net.0.proj, net.2 */
} mlp;

typedef struct block {
    linear img_mod, txt_mod;                         /* [hidden] -> [6 hidden] */
    linear to_q, to_k, to_v, to_out;                 /* image stream */
    linear add_q, add_k, add_v, to_add_out;          /* text stream */
    sdc_tensor *norm_q, *norm_k, *norm_aq, *norm_ak; /* [head_dim] F32 */
    mlp img_mlp, txt_mlp;
} block;

struct sdc_qwen_dit {
    sdc_qwen_dit_config cfg;
    sdc_qwen_dit_options opt;
    linear img_in, txt_in, t_lin1, t_lin2, norm_out, proj_out;
    sdc_tensor *txt_norm; /* [txt_dim] F32 */
    float *add_emb;       /* Layered: addition_t_embedding [2][hidden] */
    block *blocks;
    sdc_weight_copies copies;
};

#define EPS 1e-6f

bool sdc_qwen_dit_detect(const sdc_weight_source *ws, const char *prefix) {
    return sdc_weight_find(ws, prefix, "img_in.weight") &&
           sdc_weight_find(ws, prefix, "txt_norm.weight") &&
           sdc_weight_find(ws, prefix, "transformer_blocks.0.img_mod.1.weight");
}

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    sdc_qwen_dit *m;
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
    int64_t ne[4] = {n0, n1, 1, 1};
    sdc_tensor *t;
    ld->s = sdc_weight_require(ld->ws, ld->prefix, name, ndims, ne, &t);
    if (ld->s == SDC_OK) ld->m->cfg.n_tensors++;
    return t;
}

/* Norm weights and biases feed F32 kernels: a converted copy when stored otherwise. */
static sdc_tensor *as_f32(loader *ld, sdc_tensor *w) {
    if (!w || ld->s != SDC_OK || w->type == SDC_TYPE_F32) return w;
    sdc_tensor *t = NULL;
    ld->s = sdc_weight_copies_add(&ld->m->copies, w, SDC_TYPE_F32, NULL, &t);
    return t;
}

static void load_linear(loader *ld, linear *l, const char *base, int64_t in, int64_t out) {
    size_t n = strlen(base);
    l->in_scale = n >= 8 && !strcmp(base + n - 8, "to_out.0")       ? 1.0f / 32
                  : n >= 10 && !strcmp(base + n - 10, "to_add_out") ? 1.0f / 32
                  : n >= 5 && !strcmp(base + n - 5, "net.2")        ? 1.0f / 128
                                                                    : 1.0f;
    l->w = get(ld, 2, in, out, "%s.weight", base);
    l->b = as_f32(ld, get(ld, 1, out, 1, "%s.bias", base));
}

static sdc_tensor *load_vec(loader *ld, int64_t n, const char *base) {
    return as_f32(ld, get(ld, 1, n, 1, "%s.weight", base));
}

static void load_block(loader *ld, block *b, int i) {
    const sdc_qwen_dit_config *c = &ld->m->cfg;
    int64_t H = c->hidden, D = c->head_dim, M = c->mlp_hidden;
    char p[160];
#define P(field) (snprintf(p, sizeof p, "transformer_blocks.%d." field, i), p)
    load_linear(ld, &b->img_mod, P("img_mod.1"), H, 6 * H);
    load_linear(ld, &b->txt_mod, P("txt_mod.1"), H, 6 * H);
    load_linear(ld, &b->to_q, P("attn.to_q"), H, H);
    load_linear(ld, &b->to_k, P("attn.to_k"), H, H);
    load_linear(ld, &b->to_v, P("attn.to_v"), H, H);
    load_linear(ld, &b->to_out, P("attn.to_out.0"), H, H);
    load_linear(ld, &b->add_q, P("attn.add_q_proj"), H, H);
    load_linear(ld, &b->add_k, P("attn.add_k_proj"), H, H);
    load_linear(ld, &b->add_v, P("attn.add_v_proj"), H, H);
    load_linear(ld, &b->to_add_out, P("attn.to_add_out"), H, H);
    b->norm_q = load_vec(ld, D, P("attn.norm_q"));
    b->norm_k = load_vec(ld, D, P("attn.norm_k"));
    b->norm_aq = load_vec(ld, D, P("attn.norm_added_q"));
    b->norm_ak = load_vec(ld, D, P("attn.norm_added_k"));
    load_linear(ld, &b->img_mlp.up, P("img_mlp.net.0.proj"), H, M);
    load_linear(ld, &b->img_mlp.down, P("img_mlp.net.2"), M, H);
    load_linear(ld, &b->txt_mlp.up, P("txt_mlp.net.0.proj"), H, M);
    load_linear(ld, &b->txt_mlp.down, P("txt_mlp.net.2"), M, H);
#undef P
}

/* Widths from img_in, txt_in, norm_q and the first block's MLP; depth by counting blocks. */
static sdc_status detect_config(loader *ld) {
    sdc_qwen_dit_config *c = &ld->m->cfg;
    const sdc_weight_source *ws = ld->ws;
    sdc_tensor *ii = sdc_weight_find(ws, ld->prefix, "img_in.weight");
    sdc_tensor *ti = sdc_weight_find(ws, ld->prefix, "txt_in.weight");
    sdc_tensor *nq = sdc_weight_find(ws, ld->prefix, "transformer_blocks.0.attn.norm_q.weight");
    sdc_tensor *up =
        sdc_weight_find(ws, ld->prefix, "transformer_blocks.0.img_mlp.net.0.proj.weight");
    sdc_tensor *po = sdc_weight_find(ws, ld->prefix, "proj_out.weight");
    if (!ii || !ti || !nq || !up || !po)
        return sdc_fail(
            SDC_ERR_FORMAT,
            "qwen_image: missing '%s%s' (img_in, txt_in, proj_out, "
            "transformer_blocks.0.attn.norm_q, transformer_blocks.0.img_mlp.net.0.proj)",
            ld->prefix,
            !ii   ? "img_in.weight"
            : !ti ? "txt_in.weight"
            : !nq ? "transformer_blocks.0.attn.norm_q.weight"
            : !up ? "transformer_blocks.0.img_mlp.net.0.proj.weight"
                  : "proj_out.weight");
    c->patch = 2;
    c->hidden = (int)ii->ne[1];
    c->in_channels = (int)ii->ne[0];
    c->txt_dim = (int)ti->ne[0];
    c->head_dim = (int)nq->ne[0];
    c->mlp_hidden = (int)up->ne[1];
    c->out_channels = (int)(po->ne[1] / (c->patch * c->patch));
    c->latent_channels = c->in_channels / (c->patch * c->patch);
    if (c->head_dim <= 0 || c->hidden % c->head_dim || c->in_channels % 4 || po->ne[1] % 4 ||
        c->out_channels != c->latent_channels)
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen_image: widths do not fit: hidden %d, head_dim %d (%s), in_channels "
                        "%d, proj_out rows %lld",
                        c->hidden, c->head_dim, nq->name, c->in_channels, (long long)po->ne[1]);
    c->heads = c->hidden / c->head_dim;
    /* RoPE split over (frame, row, col): 16/56/56 of the real 128; other widths keep the ratio
     * 1/8 for frames and split the rest evenly */
    c->axes[0] = c->head_dim / 8;
    c->axes[1] = c->axes[2] = (c->head_dim - c->axes[0]) / 2;
    if (c->axes[0] % 2 || c->axes[1] % 2 || c->axes[0] + 2 * c->axes[1] != c->head_dim)
        return sdc_fail(SDC_ERR_FORMAT, "qwen_image: head_dim %d has no RoPE axis split",
                        c->head_dim);
    char name[160];
    for (c->n_layers = 0;; c->n_layers++) {
        snprintf(name, sizeof name, "transformer_blocks.%d.img_mod.1.weight", c->n_layers);
        if (!sdc_weight_find(ws, ld->prefix, name)) break;
    }
    c->layered = sdc_weight_find(ws, ld->prefix, "time_text_embed.addition_t_embedding.weight");
    c->zero_cond_t =
        ld->m->opt.zero_cond_t || sdc_weight_find(ws, ld->prefix, "__index_timestep_zero__");
    return SDC_OK;
}

sdc_status sdc_qwen_dit_load(const sdc_weight_source *ws, const char *prefix,
                             const sdc_qwen_dit_options *opt, sdc_qwen_dit **out) {
    *out = NULL;
    sdc_qwen_dit *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
    if (opt) m->opt = *opt;
    loader ld = {.ws = ws, .prefix = prefix ? prefix : "", .m = m, .s = SDC_OK};
    if ((ld.s = detect_config(&ld)) != SDC_OK) goto fail;
    sdc_qwen_dit_config *c = &m->cfg;
    int64_t H = c->hidden;
    m->blocks = calloc((size_t)c->n_layers, sizeof(block));
    if (!m->blocks) {
        ld.s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
        goto fail;
    }
    load_linear(&ld, &m->img_in, "img_in", c->in_channels, H);
    load_linear(&ld, &m->txt_in, "txt_in", c->txt_dim, H);
    m->txt_norm = load_vec(&ld, c->txt_dim, "txt_norm");
    load_linear(&ld, &m->t_lin1, "time_text_embed.timestep_embedder.linear_1", 256, H);
    load_linear(&ld, &m->t_lin2, "time_text_embed.timestep_embedder.linear_2", H, H);
    for (int i = 0; i < c->n_layers; i++) load_block(&ld, &m->blocks[i], i);
    load_linear(&ld, &m->norm_out, "norm_out.linear", H, 2 * H);
    load_linear(&ld, &m->proj_out, "proj_out", H, (int64_t)c->patch * c->patch * c->out_channels);
    if (c->layered) {
        sdc_tensor *e = get(&ld, 2, H, 2, "time_text_embed.addition_t_embedding.weight");
        if (ld.s != SDC_OK) goto fail;
        if (!(m->add_emb = malloc((size_t)2 * H * sizeof(float)))) {
            ld.s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
            goto fail;
        }
        if ((ld.s = sdc_weight_to_f32(e, m->add_emb)) != SDC_OK) goto fail;
    }
    if (ld.s != SDC_OK) goto fail;
    *out = m;
    return SDC_OK;
fail:
    sdc_qwen_dit_free(m);
    return ld.s;
}

void sdc_qwen_dit_free(sdc_qwen_dit *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->copies);
    free(m->blocks);
    free(m->add_emb);
    free(m);
}

const sdc_qwen_dit_config *sdc_qwen_dit_get_config(const sdc_qwen_dit *m) {
    return &m->cfg;
}

/* ---- positions ---- */

static int tokens_of(int n, int p) {
    return (n + p - 1) / p;
}

static int n_image_tokens(const sdc_qwen_dit_config *c, const sdc_qwen_dit_input *in) {
    int p = c->patch, n = in->frames * tokens_of(in->h, p) * tokens_of(in->w, p);
    for (int j = 0; j < in->n_refs; j++)
        n += tokens_of(in->refs[j].h, p) * tokens_of(in->refs[j].w, p);
    return n;
}

static int max_i(int a, int b) {
    return a > b ? a : b;
}

static int *put_grid_at(int *ids, int frame, int gh, int gw, int r0, int c0) {
    for (int y = 0; y < gh; y++)
        for (int x = 0; x < gw; x++, ids += 3) ids[0] = frame, ids[1] = r0 + y, ids[2] = c0 + x;
    return ids;
}

static int *put_grid(int *ids, int frame, int gh, int gw, bool diffusers) {
    /* centred: sd.cpp starts at -(n/2), diffusers at -(n - n/2) (they differ for odd n) */
    int r0 = diffusers ? -(gh - gh / 2) : -(gh / 2), c0 = diffusers ? -(gw - gw / 2) : -(gw / 2);
    return put_grid_at(ids, frame, gh, gw, r0, c0);
}

/* sd.cpp's FIXED reference positions: frame 1, each reference's grid from (h_off, w_off),
 * placed below the ones before when that keeps the layout wider than tall, else right of
 * them; offsets count latent cells (the reference's h and w), not patches. */
static int *put_fixed_refs(int *q, const sdc_qwen_dit_input *in, int p) {
    int cur_h = 0, cur_w = 0;
    for (int j = 0; j < in->n_refs; j++) {
        int h = in->refs[j].h, w = in->refs[j].w, h_off = 0, w_off = 0;
        if (h + cur_h > w + cur_w)
            w_off = cur_w;
        else
            h_off = cur_h;
        q = put_grid_at(q, 1, tokens_of(h, p), tokens_of(w, p), h_off, w_off);
        cur_h = max_i(cur_h, h + h_off);
        cur_w = max_i(cur_w, w + w_off);
    }
    return q;
}

sdc_status sdc_qwen_dit_positions(const sdc_qwen_dit *m, const sdc_qwen_dit_input *in, int *ids,
                                  int n) {
    const sdc_qwen_dit_config *c = &m->cfg;
    int p = c->patch, gh = tokens_of(in->h, p), gw = tokens_of(in->w, p);
    if (n != in->n_ctx + n_image_tokens(c, in))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen_image: %d positions, the input has %d", n,
                        in->n_ctx + n_image_tokens(c, in));
    bool diff = m->opt.positions == SDC_QWEN_POS_DIFFUSERS;
    sdc_qwen_ref_index mode = in->ref_index;
    if (mode == SDC_QWEN_REF_AUTO)
        mode = c->layered ? SDC_QWEN_REF_DECREASE : SDC_QWEN_REF_INCREASE;
    int txt0 = max_i(gh, gw) / 2;
    if (diff) { /* every latent counts, and Layered's index of its last entry */
        for (int j = 0; j < in->n_refs; j++)
            txt0 = max_i(txt0, max_i(tokens_of(in->refs[j].h, p), tokens_of(in->refs[j].w, p)) / 2);
        if (c->layered) txt0 = max_i(txt0, in->frames + in->n_refs - 1);
    }
    int *q = ids;
    for (int i = 0; i < in->n_ctx; i++, q += 3) q[0] = q[1] = q[2] = txt0 + i;
    /* diffusers' Layered RoPE gives its last entry (the condition image) frame -1 */
    int n_entries = in->frames + in->n_refs;
    for (int f = 0; f < in->frames; f++) {
        int frame = diff && c->layered && f == n_entries - 1 ? -1 : f;
        q = put_grid(q, frame, gh, gw, diff);
    }
    if (!diff && mode == SDC_QWEN_REF_FIXED) {
        put_fixed_refs(q, in, p);
        return SDC_OK;
    }
    for (int j = 0; j < in->n_refs; j++) {
        int frame;
        if (diff)
            frame = c->layered ? (in->frames + j == n_entries - 1 ? -1 : in->frames + j) : 1 + j;
        else
            frame = mode == SDC_QWEN_REF_DECREASE ? -(j + 1) : 1 + j;
        q = put_grid(q, frame, tokens_of(in->refs[j].h, p), tokens_of(in->refs[j].w, p), diff);
    }
    return SDC_OK;
}

/* cos/sin [n][head_dim/2]: axis a's pairs k use omega = 10000^(-2k/axes[a]) (float, as diffusers)
 */
static void rope_tables(const sdc_qwen_dit_config *c, const int *ids, int n, float *cs, float *sn) {
    int half = c->head_dim / 2;
    for (int i = 0; i < n; i++) {
        int j = 0;
        for (int a = 0; a < 3; a++)
            for (int k = 0; k < c->axes[a] / 2; k++, j++) {
                float omega = 1.0f / powf(10000.0f, (float)(2 * k) / (float)c->axes[a]);
                float ang = (float)ids[3 * i + a] * omega;
                cs[(size_t)i * half + j] = (float)cos((double)ang);
                sn[(size_t)i * half + j] = (float)sin((double)ang);
            }
    }
}

/* ---- host layout ---- */

/* One latent [C][frames][h][w] -> tokens [frames*gh*gw][C*p*p] (feature ch*p*p + py*p + px,
 * the pipelines' packing), zero past the edges. */
static float *patchify(const float *x, int C, int frames, int h, int w, int p, float *dst) {
    int gh = tokens_of(h, p), gw = tokens_of(w, p), pp = C * p * p;
    for (int f = 0; f < frames; f++)
        for (int ty = 0; ty < gh; ty++)
            for (int tx = 0; tx < gw; tx++, dst += pp)
                for (int ch = 0; ch < C; ch++)
                    for (int py = 0; py < p; py++)
                        for (int px = 0; px < p; px++) {
                            int y = ty * p + py, xx = tx * p + px;
                            dst[ch * p * p + py * p + px] =
                                y < h && xx < w ? x[(((size_t)ch * frames + f) * h + y) * w + xx]
                                                : 0.0f;
                        }
    return dst;
}

static void unpatchify(const float *y, int C, int frames, int h, int w, int p, float *out) {
    int gh = tokens_of(h, p), gw = tokens_of(w, p), pp = C * p * p;
    for (int f = 0; f < frames; f++)
        for (int ty = 0; ty < gh; ty++)
            for (int tx = 0; tx < gw; tx++, y += pp)
                for (int ch = 0; ch < C; ch++)
                    for (int py = 0; py < p; py++)
                        for (int px = 0; px < p; px++) {
                            int yy = ty * p + py, xx = tx * p + px;
                            if (yy < h && xx < w)
                                out[(((size_t)ch * frames + f) * h + yy) * w + xx] =
                                    y[ch * p * p + py * p + px];
                        }
}

/* ---- graph pieces ---- */

typedef struct builder {
    sdc_graph *g;
    const sdc_qwen_dit_config *c;
    int B;
    int n_main; /* image tokens of the noisy latent (the rest: references) */
    bool zero;  /* zero_cond_t with references: those tokens use the t = 0 modulation */
    bool ggml;  /* sd.cpp's CPU numerics */
} builder;

/* With ggml numerics an F16 weight's input is rounded to F16 (ggml's F16 dot products), after
 * sd.cpp's input scale (which moves the subnormal range). */
static sdc_tensor *apply_linear(builder *bd, const linear *l, sdc_tensor *x) {
    sdc_graph *g = bd->g;
    if (bd->ggml && l->w && l->w->type == SDC_TYPE_F16 && x) {
        if (l->in_scale != 1.0f) x = sdc_scale(g, x, l->in_scale, 0.0f);
        x = sdc_cast(g, sdc_cast(g, x, SDC_TYPE_F16), SDC_TYPE_F32);
        if (l->in_scale != 1.0f) x = sdc_scale(g, x, 1.0f / l->in_scale, 0.0f);
    }
    return sdc_add(g, sdc_matmul(g, l->w, x), l->b);
}

/* Chunk k (of n) of a modulation output m [n*H, cols] for batch columns [c0, c0+B): [H, 1, B]. */
static sdc_tensor *chunk(builder *bd, sdc_tensor *m, int k, int c0) {
    if (!m) return NULL;
    int64_t H = bd->c->hidden, ne[3] = {H, 1, bd->B};
    size_t nb[3] = {sizeof(float), m->nb[1], m->nb[1]};
    return sdc_graph_view_node(bd->g, m, 3, ne, nb, (size_t)k * H * sizeof(float) + c0 * m->nb[1]);
}

/* x * (1 + scale) + shift for rows of x, with chunks (k_shift, k_shift+1) at columns c0 */
static sdc_tensor *modulate_cols(builder *bd, sdc_tensor *x, sdc_tensor *m, int k, int c0) {
    sdc_graph *g = bd->g;
    sdc_tensor *scale = sdc_scale(g, chunk(bd, m, k + 1, c0), 1.0f, 1.0f);
    return sdc_add(g, sdc_mul(g, x, scale), chunk(bd, m, k, c0));
}

/* Rows [r0, r0+n) of x [H, L, B] (a view). */
static sdc_tensor *rows(sdc_graph *g, sdc_tensor *x, int64_t r0, int64_t n) {
    if (!x) return NULL;
    int64_t ne[4] = {x->ne[0], n, x->ne[2], x->ne[3]}, off[4] = {0, r0, 0, 0};
    return sdc_slice(g, x, ne, off);
}

/* Image-stream modulation: with zero_cond_t the reference rows take the second column set. */
static sdc_tensor *modulate_img(builder *bd, sdc_tensor *x, sdc_tensor *m, int k) {
    if (!bd->zero) return modulate_cols(bd, x, m, k, 0);
    sdc_graph *g = bd->g;
    if (!x) return NULL;
    int64_t L = x->ne[1];
    return sdc_concat(g, modulate_cols(bd, rows(g, x, 0, bd->n_main), m, k, 0),
                      modulate_cols(bd, rows(g, x, bd->n_main, L - bd->n_main), m, k, bd->B), 1);
}

static sdc_tensor *gate_img(builder *bd, sdc_tensor *y, sdc_tensor *m, int k) {
    sdc_graph *g = bd->g;
    if (!bd->zero) return sdc_mul(g, y, chunk(bd, m, k, 0));
    if (!y) return NULL;
    int64_t L = y->ne[1];
    return sdc_concat(g, sdc_mul(g, rows(g, y, 0, bd->n_main), chunk(bd, m, k, 0)),
                      sdc_mul(g, rows(g, y, bd->n_main, L - bd->n_main), chunk(bd, m, k, bd->B)),
                      1);
}

static sdc_tensor *apply_mlp(builder *bd, const mlp *f, sdc_tensor *x) {
    sdc_tensor *h = apply_linear(bd, &f->up, x);
    h = bd->ggml ? sdc_gelu_f16(bd->g, h) : sdc_gelu(bd->g, h); /* ggml: its F16 GELU table */
    return apply_linear(bd, &f->down, h);
}

/* [H, L, B] -> [D, heads, L, B] (q/k/v before the per-head norm) */
static sdc_tensor *split_heads(builder *bd, sdc_tensor *x) {
    if (!x) return NULL;
    return sdc_reshape_4d(bd->g, x, bd->c->head_dim, bd->c->heads, x->ne[1], x->ne[2]);
}

typedef struct streams {
    sdc_tensor *img, *txt;
} streams;

/* One dual-stream block; t_silu [H, B or 2B] (SiLU of the time embedding), cos/sin over
 * text then image rows. last: the text stream's update is never read. */
static streams block_forward(builder *bd, const block *b, streams s, sdc_tensor *t_silu,
                             sdc_tensor *cos_t, sdc_tensor *sin_t, bool last) {
    sdc_graph *g = bd->g;
    const sdc_qwen_dit_config *c = bd->c;
    sdc_tensor *im = apply_linear(bd, &b->img_mod, t_silu);
    sdc_tensor *t_first = t_silu;
    if (bd->zero && t_silu) { /* the text stream and norm_out use the real t only */
        int64_t ne[4] = {t_silu->ne[0], bd->B, 1, 1}, off[4] = {0};
        t_first = sdc_slice(g, t_silu, ne, off);
    }
    sdc_tensor *tm = apply_linear(bd, &b->txt_mod, t_first);

    sdc_tensor *img_m = modulate_img(bd, sdc_layer_norm(g, s.img, NULL, NULL, EPS), im, 0);
    sdc_tensor *txt_m = modulate_cols(bd, sdc_layer_norm(g, s.txt, NULL, NULL, EPS), tm, 0, 0);

    sdc_tensor *iq =
        sdc_rms_norm(g, split_heads(bd, apply_linear(bd, &b->to_q, img_m)), b->norm_q, EPS);
    sdc_tensor *ik =
        sdc_rms_norm(g, split_heads(bd, apply_linear(bd, &b->to_k, img_m)), b->norm_k, EPS);
    sdc_tensor *iv = split_heads(bd, apply_linear(bd, &b->to_v, img_m));
    sdc_tensor *tq =
        sdc_rms_norm(g, split_heads(bd, apply_linear(bd, &b->add_q, txt_m)), b->norm_aq, EPS);
    sdc_tensor *tk =
        sdc_rms_norm(g, split_heads(bd, apply_linear(bd, &b->add_k, txt_m)), b->norm_ak, EPS);
    sdc_tensor *tv = split_heads(bd, apply_linear(bd, &b->add_v, txt_m));
    /* joint sequence: text rows first */
    sdc_tensor *q = sdc_rope(g, sdc_concat(g, tq, iq, 2), cos_t, sin_t, SDC_ROPE_INTERLEAVED);
    sdc_tensor *k = sdc_rope(g, sdc_concat(g, tk, ik, 2), cos_t, sin_t, SDC_ROPE_INTERLEAVED);
    sdc_tensor *v = sdc_concat(g, tv, iv, 2);
    /* [D, heads, L, B] -> the attention layout [D, L, heads, B] (views) */
    sdc_tensor *a =
        sdc_attention(g, sdc_permute(g, q, 0, 2, 1, 3), sdc_permute(g, k, 0, 2, 1, 3),
                      sdc_permute(g, v, 0, 2, 1, 3), NULL, 1.0f / sqrtf((float)c->head_dim));
    streams r = {NULL, NULL};
    if (!a) return r;
    a = sdc_reshape_3d(g, a, c->hidden, a->ne[2], a->ne[3]); /* [H, L, B] */
    int64_t Lt = s.txt->ne[1], Li = s.img->ne[1];

    sdc_tensor *img =
        sdc_add(g, s.img, gate_img(bd, apply_linear(bd, &b->to_out, rows(g, a, Lt, Li)), im, 2));
    sdc_tensor *h = modulate_img(bd, sdc_layer_norm(g, img, NULL, NULL, EPS), im, 3);
    r.img = sdc_add(g, img, gate_img(bd, apply_mlp(bd, &b->img_mlp, h), im, 5));
    if (last) {
        r.txt = s.txt;
        return r;
    }
    sdc_tensor *txt = sdc_add(
        g, s.txt,
        sdc_mul(g, apply_linear(bd, &b->to_add_out, rows(g, a, 0, Lt)), chunk(bd, tm, 2, 0)));
    h = modulate_cols(bd, sdc_layer_norm(g, txt, NULL, NULL, EPS), tm, 3, 0);
    r.txt = sdc_add(g, txt, sdc_mul(g, apply_mlp(bd, &b->txt_mlp, h), chunk(bd, tm, 5, 0)));
    return r;
}

static sdc_status check_input(const sdc_qwen_dit *m, const sdc_qwen_dit_input *in) {
    const sdc_qwen_dit_config *c = &m->cfg;
    if (!in->x || !in->t || !in->ctx || in->B < 1 || in->frames < 1 || in->w < 1 || in->h < 1 ||
        in->n_ctx < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "qwen_image: bad input (B %d, frames %d, %dx%d, %d text tokens)", in->B,
                        in->frames, in->w, in->h, in->n_ctx);
    if (in->n_refs < 0 || (in->n_refs > 0 && !in->refs))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen_image: %d reference latents", in->n_refs);
    for (int j = 0; j < in->n_refs; j++)
        if (!in->refs[j].x || in->refs[j].w < 1 || in->refs[j].h < 1)
            return sdc_fail(SDC_ERR_INVALID_ARG, "qwen_image: reference latent %d is empty", j);
    if (in->addition_t_cond && c->layered)
        for (int b = 0; b < in->B; b++)
            if (in->addition_t_cond[b] < 0 || in->addition_t_cond[b] > 1)
                return sdc_fail(SDC_ERR_INVALID_ARG,
                                "qwen_image: addition_t_cond[%d] = %d, the table has 2 rows", b,
                                in->addition_t_cond[b]);
    if ((int64_t)n_image_tokens(c, in) + in->n_ctx > (1 << 24))
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen_image: %d image tokens is too many",
                        n_image_tokens(c, in));
    return SDC_OK;
}

typedef struct host_inputs {
    float *patches, *cos, *sin, *tvals, *add;
    int *ids;
} host_inputs;

static void host_free(host_inputs *h) {
    free(h->patches), free(h->cos), free(h->sin), free(h->tvals), free(h->add), free(h->ids);
}

/* Patches [B][n_img][in_ch], timesteps (zero_cond_t: then B zeros), addition embedding rows, RoPE.
 */
static sdc_status host_prepare(const sdc_qwen_dit *m, const sdc_qwen_dit_input *in, int n_img,
                               int nt, host_inputs *h) {
    const sdc_qwen_dit_config *c = &m->cfg;
    int B = in->B, L = in->n_ctx + n_img, C = c->latent_channels, p = c->patch,
        half = c->head_dim / 2;
    size_t H = (size_t)c->hidden;
    h->patches = malloc((size_t)B * n_img * c->in_channels * sizeof(float));
    h->cos = malloc((size_t)L * half * sizeof(float));
    h->sin = malloc((size_t)L * half * sizeof(float));
    h->tvals = calloc((size_t)nt, sizeof(float));
    h->add = c->layered ? malloc(H * nt * sizeof(float)) : NULL;
    h->ids = malloc((size_t)L * 3 * sizeof(int));
    if (!h->patches || !h->cos || !h->sin || !h->tvals || (c->layered && !h->add) || !h->ids)
        return sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory for %d tokens", L);
    size_t frame_n = (size_t)C * in->frames * in->h * in->w;
    for (int b = 0; b < B; b++) {
        float *dst = h->patches + (size_t)b * n_img * c->in_channels;
        dst = patchify(in->x + b * frame_n, C, in->frames, in->h, in->w, p, dst);
        for (int j = 0; j < in->n_refs; j++) {
            const sdc_qwen_dit_ref *r = &in->refs[j];
            dst = patchify(r->x + (size_t)b * C * r->h * r->w, C, 1, r->h, r->w, p, dst);
        }
        h->tvals[b] = in->t[b]; /* zero_cond_t: columns B..2B stay 0 */
    }
    for (int i = 0; i < nt && h->add; i++) {
        int row = in->addition_t_cond ? in->addition_t_cond[i % B] : 0;
        memcpy(h->add + i * H, m->add_emb + row * H, H * sizeof(float));
    }
    sdc_status s = sdc_qwen_dit_positions(m, in, h->ids, L);
    if (s == SDC_OK) rope_tables(c, h->ids, L, h->cos, h->sin);
    return s;
}

sdc_status sdc_qwen_dit_forward(sdc_qwen_dit *m, sdc_backend *be, const sdc_qwen_dit_input *in,
                                float *out, sdc_eval_fn cb, void *cb_user) {
    const sdc_qwen_dit_config *c = &m->cfg;
    sdc_status s = check_input(m, in);
    if (s != SDC_OK) return s;
    int B = in->B, p = c->patch, n_img = n_image_tokens(c, in), Lt = in->n_ctx;
    int n_main = in->frames * tokens_of(in->h, p) * tokens_of(in->w, p);
    bool zero = c->zero_cond_t && n_img > n_main;
    int nt = zero ? 2 * B : B, L = Lt + n_img, half = c->head_dim / 2;
    host_inputs h = {0};
    sdc_graph *g = NULL;
    if ((s = host_prepare(m, in, n_img, nt, &h)) != SDC_OK) goto done;
    if (!(g = sdc_graph_create())) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen_image: out of memory");
        goto done;
    }
    int64_t pne[3] = {c->in_channels, n_img, B}, cne[3] = {c->txt_dim, Lt, B}, rne[2] = {half, L},
            ane[2] = {c->hidden, nt};
    sdc_tensor *x_in = sdc_graph_input(g, SDC_TYPE_F32, 3, pne);
    sdc_tensor *ctx_in = sdc_graph_input(g, SDC_TYPE_F32, 3, cne);
    sdc_tensor *t_in = sdc_graph_input_1d(g, SDC_TYPE_F32, nt);
    sdc_tensor *cos_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *sin_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    sdc_tensor *add_in = c->layered ? sdc_graph_input(g, SDC_TYPE_F32, 2, ane) : NULL;

    builder b0 = {
        .g = g, .c = c, .B = B, .n_main = n_main, .zero = zero, .ggml = m->opt.ggml_numerics};
    builder *bd = &b0;
    sdc_tensor *temb = sdc_timestep_embedding(g, t_in, 256, 10000);
    temb = apply_linear(bd, &m->t_lin2, sdc_silu(g, apply_linear(bd, &m->t_lin1, temb)));
    if (add_in) temb = sdc_add(g, temb, add_in);
    sdc_tensor *t_silu = sdc_silu(g, temb); /* every modulation reads SiLU(temb) */
    streams st = {apply_linear(bd, &m->img_in, x_in),
                  apply_linear(bd, &m->txt_in, sdc_rms_norm(g, ctx_in, m->txt_norm, EPS))};
    for (int i = 0; i < c->n_layers; i++) {
        sdc_graph_set_block(g, i); /* a layer split may cut between blocks */
        st = block_forward(bd, &m->blocks[i], st, t_silu, cos_t, sin_t, i == c->n_layers - 1);
        if (!st.img) break;
    }
    sdc_graph_set_block(g, -1);
    /* the final layer is per token: only the noisy latent's rows are needed */
    sdc_tensor *img = rows(g, st.img, 0, n_main);
    sdc_tensor *t_first = t_silu;
    if (zero && t_silu) {
        int64_t ne4[4] = {c->hidden, B, 1, 1}, off4[4] = {0};
        t_first = sdc_slice(g, t_silu, ne4, off4);
    }
    sdc_tensor *e = apply_linear(bd, &m->norm_out, t_first); /* [2H, B]: scale, then shift */
    sdc_tensor *y = sdc_layer_norm(g, img, NULL, NULL, EPS);
    y = sdc_add(g, sdc_mul(g, y, sdc_scale(g, chunk(bd, e, 0, 0), 1.0f, 1.0f)), chunk(bd, e, 1, 0));
    y = apply_linear(bd, &m->proj_out, y); /* [p*p*C, n_main, B] */
    sdc_graph_mark_output(g, y);
    if ((s = sdc_graph_status(g)) != SDC_OK) {
        s = sdc_fail(s, "qwen_image: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    const sdc_input_data inputs[] = {
        {x_in, h.patches, (size_t)B * n_img * c->in_channels * sizeof(float)},
        {ctx_in, in->ctx, (size_t)B * Lt * c->txt_dim * sizeof(float)},
        {t_in, h.tvals, (size_t)nt * sizeof(float)},
        {cos_t, h.cos, (size_t)L * half * sizeof(float)},
        {sin_t, h.sin, (size_t)L * half * sizeof(float)},
        {add_in, h.add, (size_t)nt * c->hidden * sizeof(float)}};
    if ((s = sdc_backend_set_inputs(be, g, inputs, add_in ? 6 : 5)) != SDC_OK) goto done;
    if ((s = sdc_backend_compute(be, g, cb, cb_user)) != SDC_OK) goto done;
    const void *ymap;
    void *ytmp = NULL;
    if ((s = sdc_tensor_map_read(y, &ymap, &ytmp)) != SDC_OK) goto done;
    size_t pp = (size_t)c->out_channels * p * p,
           per_b = (size_t)c->out_channels * in->frames * in->h * in->w;
    for (int b = 0; b < B; b++)
        unpatchify((const float *)ymap + (size_t)b * n_main * pp, c->out_channels, in->frames,
                   in->h, in->w, p, out + b * per_b);
    free(ytmp);
done:
    sdc_graph_free(g);
    host_free(&h);
    return s;
}
