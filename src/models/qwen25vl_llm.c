#include "models/qwen25vl_llm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/ops.h"

/* One naming scheme: the embedding, a layer's prefix (printf with its index), the tensor
 * names inside a layer, the final norm. */
typedef struct name_scheme {
    const char *embed, *layer, *final_norm;
    const char *attn_norm, *q, *k, *v, *o, *mlp_norm, *gate, *up, *down; /* without .weight */
} name_scheme;

static const name_scheme SCHEMES[] = {
    /* ComfyUI and the original HF checkpoints (Qwen/Qwen2.5-VL-*-Instruct) */
    {"model.embed_tokens.weight", "model.layers.%d.", "model.norm.weight", "input_layernorm",
     "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
     "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"},
    /* transformers >= 4.52 save_pretrained (Qwen2_5_VLModel.language_model) */
    {"model.language_model.embed_tokens.weight", "model.language_model.layers.%d.",
     "model.language_model.norm.weight", "input_layernorm", "self_attn.q_proj", "self_attn.k_proj",
     "self_attn.v_proj", "self_attn.o_proj", "post_attention_layernorm", "mlp.gate_proj",
     "mlp.up_proj", "mlp.down_proj"},
    /* llama.cpp GGUF (qwen2vl): the same tensors, no permutation (NeoX rotary) */
    {"token_embd.weight", "blk.%d.", "output_norm.weight", "attn_norm", "attn_q", "attn_k",
     "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"},
};
#define N_SCHEMES ((int)(sizeof SCHEMES / sizeof *SCHEMES))

typedef struct llm_layer {
    sdc_tensor *attn_norm, *q, *k, *v, *o, *qb, *kb, *vb; /* biases F32 or NULL */
    sdc_tensor *mlp_norm, *gate, *up, *down;
} llm_layer;

struct sdc_qwen25vl_llm {
    sdc_qwen25vl_llm_config cfg;
    sdc_tensor *embed, *final_norm;
    llm_layer *layers;
    sdc_weight_copies owned; /* F32 copies of norms and biases stored otherwise */
    bool sdcpp;              /* round matmul inputs to F16/BF16 weights' type (ggml) */
    /* keys and values of the last prefix run ([n_layers][2][head_dim * kv_n * n_kv_heads]),
     * for the ids kv_ids[kv_n] in kv_sdcpp numerics: the prompt template is the same for every
     * prompt, so its 34 tokens run once */
    float *kv;
    int32_t *kv_ids;
    int kv_n;
    bool kv_sdcpp;
};

static const name_scheme *find_scheme(const sdc_weight_source *ws, const char *prefix) {
    for (int s = 0; s < N_SCHEMES; s++)
        if (sdc_weight_find(ws, prefix, SCHEMES[s].embed)) return &SCHEMES[s];
    return NULL;
}

bool sdc_qwen25vl_llm_detect(const sdc_weight_source *ws, const char *prefix) {
    const name_scheme *sc = find_scheme(ws, prefix);
    char name[256];
    if (!sc) return false;
    snprintf(name, sizeof name, sc->layer, 0);
    size_t l = strlen(name);
    snprintf(name + l, sizeof name - l, "%s.weight", sc->gate);
    return sdc_weight_find(ws, prefix, name) != NULL;
}

/* An F32 version of a norm weight or bias (our elementwise kernels take F32). */
static sdc_status f32(sdc_qwen25vl_llm *m, sdc_tensor **w) {
    if (!*w || (*w)->type == SDC_TYPE_F32) return SDC_OK;
    return sdc_weight_copies_add(&m->owned, *w, SDC_TYPE_F32, NULL, w);
}

typedef struct loader {
    const sdc_weight_source *ws;
    const char *prefix;
    char layer[96];
} loader;

/* Required tensor `layer + base + suffix` of shape [n0] or [n0, n1] (n1 0: 1-D). */
static sdc_status req(loader *ld, const char *base, const char *suffix, int64_t n0, int64_t n1,
                      sdc_tensor **out) {
    char name[256];
    snprintf(name, sizeof name, "%s%s%s", ld->layer, base, suffix);
    int64_t ne[2] = {n0, n1};
    return sdc_weight_require(ld->ws, ld->prefix, name, n1 ? 2 : 1, ne, out);
}

/* Sizes from the embedding, layer 0's q/k/gate and the layer count. */
static sdc_status read_config(sdc_qwen25vl_llm *m, const sdc_weight_source *ws, const char *prefix,
                              const name_scheme *sc, int head_dim) {
    sdc_qwen25vl_llm_config *c = &m->cfg;
    char name[256];
    m->embed = sdc_weight_find(ws, prefix, sc->embed);
    c->hidden = (int)m->embed->ne[0];
    c->vocab = (int)m->embed->ne[1];
    while (c->n_layers < 4096) {
        snprintf(name, sizeof name, sc->layer, c->n_layers);
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, "%s.weight", sc->q);
        if (!sdc_weight_find(ws, prefix, name)) break;
        c->n_layers++;
    }
    if (c->n_layers == 0)
        return sdc_fail(SDC_ERR_FORMAT, "qwen2.5-vl llm: no layers under '%s%.*s'", prefix,
                        (int)(strchr(sc->layer, '%') - sc->layer), sc->layer);
    sdc_tensor *t[3];
    const char *base[3] = {sc->q, sc->k, sc->gate};
    for (int i = 0; i < 3; i++) {
        snprintf(name, sizeof name, sc->layer, 0);
        size_t l = strlen(name);
        snprintf(name + l, sizeof name - l, "%s.weight", base[i]);
        int64_t ne[2] = {c->hidden, -1};
        sdc_status s = sdc_weight_require(ws, prefix, name, 2, ne, &t[i]);
        if (s) return s;
    }
    c->head_dim = head_dim > 0 ? head_dim : 128;
    int qw = (int)t[0]->ne[1], kw = (int)t[1]->ne[1];
    c->mlp = (int)t[2]->ne[1];
    if (qw % c->head_dim || kw % c->head_dim || kw == 0 || (qw / c->head_dim) % (kw / c->head_dim))
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen2.5-vl llm: q width %d and k width %d are not whole heads of %d with "
                        "a whole number of query heads per key-value head",
                        qw, kw, c->head_dim);
    c->n_heads = qw / c->head_dim;
    c->n_kv_heads = kw / c->head_dim;
    c->rope_theta = 1000000.0f;
    c->rms_eps = 1e-6f;
    return SDC_OK;
}

sdc_status sdc_qwen25vl_llm_load(const sdc_weight_source *ws, const char *prefix, int head_dim,
                                 sdc_qwen25vl_llm **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    const name_scheme *sc = find_scheme(ws, prefix);
    if (!sc)
        return sdc_fail(SDC_ERR_FORMAT,
                        "qwen2.5-vl llm: no '%smodel.embed_tokens.weight' (nor "
                        "model.language_model.embed_tokens / token_embd)",
                        prefix);
    sdc_qwen25vl_llm *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl llm: out of memory");
    sdc_status s = read_config(m, ws, prefix, sc, head_dim);
    sdc_qwen25vl_llm_config *c = &m->cfg;
    if (s == SDC_OK && !(m->layers = calloc((size_t)c->n_layers, sizeof *m->layers)))
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl llm: out of memory");
    int64_t h = c->hidden, qw = (int64_t)c->n_heads * c->head_dim,
            kw = (int64_t)c->n_kv_heads * c->head_dim, ff = c->mlp;
    loader ld = {ws, prefix, {0}};
    for (int l = 0; s == SDC_OK && l < c->n_layers; l++) {
        llm_layer *L = &m->layers[l];
        snprintf(ld.layer, sizeof ld.layer, sc->layer, l);
        if (!s) s = req(&ld, sc->attn_norm, ".weight", h, 0, &L->attn_norm);
        if (!s) s = req(&ld, sc->q, ".weight", h, qw, &L->q);
        if (!s) s = req(&ld, sc->k, ".weight", h, kw, &L->k);
        if (!s) s = req(&ld, sc->v, ".weight", h, kw, &L->v);
        if (!s) s = req(&ld, sc->o, ".weight", qw, h, &L->o);
        if (!s) s = req(&ld, sc->mlp_norm, ".weight", h, 0, &L->mlp_norm);
        if (!s) s = req(&ld, sc->gate, ".weight", h, ff, &L->gate);
        if (!s) s = req(&ld, sc->up, ".weight", h, ff, &L->up);
        if (!s) s = req(&ld, sc->down, ".weight", ff, h, &L->down);
        /* Qwen2 has q/k/v biases; all present or none */
        char name[256];
        snprintf(name, sizeof name, "%s%s.bias", ld.layer, sc->q);
        bool has_bias = sdc_weight_find(ws, prefix, name) != NULL;
        if (l == 0) c->qkv_bias = has_bias;
        if (!s && has_bias != c->qkv_bias)
            s = sdc_fail(SDC_ERR_FORMAT, "qwen2.5-vl llm: layer %d %s q/k/v biases, layer 0 %s", l,
                         has_bias ? "has" : "lacks", c->qkv_bias ? "has them" : "not");
        if (!s && has_bias) s = req(&ld, sc->q, ".bias", qw, 0, &L->qb);
        if (!s && has_bias) s = req(&ld, sc->k, ".bias", kw, 0, &L->kb);
        if (!s && has_bias) s = req(&ld, sc->v, ".bias", kw, 0, &L->vb);
        sdc_tensor **small[] = {&L->attn_norm, &L->mlp_norm, &L->qb, &L->kb, &L->vb};
        for (size_t i = 0; i < sizeof small / sizeof *small && !s; i++) s = f32(m, small[i]);
    }
    if (s == SDC_OK) {
        int64_t ne[1] = {h};
        s = sdc_weight_require(ws, prefix, sc->final_norm, 1, ne, &m->final_norm);
        if (!s) s = f32(m, &m->final_norm);
    }
    if (s != SDC_OK) {
        sdc_qwen25vl_llm_free(m);
        return s;
    }
    *out = m;
    return SDC_OK;
}

void sdc_qwen25vl_llm_free(sdc_qwen25vl_llm *m) {
    if (!m) return;
    sdc_weight_copies_free(&m->owned);
    free(m->kv);
    free(m->kv_ids);
    free(m->layers);
    free(m);
}

const sdc_qwen25vl_llm_config *sdc_qwen25vl_llm_get_config(const sdc_qwen25vl_llm *m) {
    return &m->cfg;
}

void sdc_qwen25vl_llm_set_sdcpp_numerics(sdc_qwen25vl_llm *m, bool on) {
    m->sdcpp = on;
}

/* ---- graph ---- */

/* x @ w^T, with sd.cpp's rounding of x to an F16/BF16 weight's type when asked */
static sdc_tensor *mm(sdc_graph *g, bool sdcpp, sdc_tensor *w, sdc_tensor *x) {
    if (sdcpp && (w->type == SDC_TYPE_F16 || w->type == SDC_TYPE_BF16))
        x = sdc_cast(g, sdc_cast(g, x, w->type), SDC_TYPE_F32);
    return sdc_matmul(g, w, x);
}

static sdc_tensor *linear(sdc_graph *g, bool sdcpp, sdc_tensor *w, sdc_tensor *b, sdc_tensor *x) {
    sdc_tensor *y = mm(g, sdcpp, w, x);
    return b ? sdc_add(g, y, b) : y;
}

/* Rows [first, first + n) of a contiguous 2-D tensor (a view). */
static sdc_tensor *rows(sdc_graph *g, sdc_tensor *a, int64_t first, int64_t n) {
    if (first == 0 && n == a->ne[1]) return a;
    int64_t ne[4] = {a->ne[0], n, 1, 1}, off[4] = {0, first, 0, 0};
    return sdc_slice(g, a, ne, off);
}

/* [D*heads, L] -> rotated, in the attention layout [D, L, heads] */
static sdc_tensor *heads_rope(sdc_graph *g, sdc_tensor *x, int d, int heads, sdc_tensor *cos_t,
                              sdc_tensor *sin_t) {
    sdc_tensor *r = sdc_reshape_3d(g, x, d, heads, x->ne[1]);
    if (cos_t) r = sdc_rope(g, r, cos_t, sin_t, SDC_ROPE_HALF);
    return sdc_cont(g, sdc_permute(g, r, 0, 2, 1, 3));
}

/* The inputs of one run: token ids, the mask [n_keys, n] and the rotary tables [D/2, n] of the
 * run's own positions, and per layer the cached keys and values of the positions before the
 * run (NULL when it starts at position 0). */
typedef struct graph_inputs {
    sdc_tensor *tok, *mask, *cos_t, *sin_t;
    sdc_tensor **kc, **vc;
} graph_inputs;

/* One decoder layer over the run's tokens x [hidden, n]; queries (and the output) only for rows
 * [first, n). *k_out / *v_out (may be NULL) get the run's rotated keys and values ([D, n, Hkv]);
 * kv_only stops there (the last layer of a prefix run). */
static sdc_tensor *layer(sdc_graph *g, const sdc_qwen25vl_llm *m, int l, sdc_tensor *x,
                         const graph_inputs *in, int first, sdc_tensor **k_out, sdc_tensor **v_out,
                         bool kv_only) {
    const sdc_qwen25vl_llm_config *c = &m->cfg;
    const llm_layer *L = &m->layers[l];
    bool e = m->sdcpp;
    int64_t n = x->ne[1], nq = n - first;
    int d = c->head_dim;
    sdc_tensor *h = sdc_rms_norm(g, x, L->attn_norm, c->rms_eps);
    sdc_tensor *k =
        heads_rope(g, linear(g, e, L->k, L->kb, h), d, c->n_kv_heads, in->cos_t, in->sin_t);
    sdc_tensor *v = heads_rope(g, linear(g, e, L->v, L->vb, h), d, c->n_kv_heads, NULL, NULL);
    if (k_out) *k_out = k, *v_out = v;
    if (kv_only) return x;
    if (in->kc) { /* the cached positions come first */
        k = sdc_concat(g, in->kc[l], k, 1);
        v = sdc_concat(g, in->vc[l], v, 1);
    }
    sdc_tensor *hq = rows(g, h, first, nq);
    sdc_tensor *cq = rows(g, in->cos_t, first, nq), *sq = rows(g, in->sin_t, first, nq);
    sdc_tensor *q = heads_rope(g, linear(g, e, L->q, L->qb, hq), d, c->n_heads, cq, sq);
    sdc_tensor *a = sdc_attention(g, q, k, v, rows(g, in->mask, first, nq), 1.0f / sqrtf((float)d));
    if (!a) return NULL;
    a = sdc_reshape_2d(g, a, (int64_t)d * c->n_heads, nq);
    x = sdc_add(g, rows(g, x, first, nq), mm(g, e, L->o, a));
    h = sdc_rms_norm(g, x, L->mlp_norm, c->rms_eps);
    sdc_tensor *f = sdc_mul(g, sdc_silu(g, mm(g, e, L->gate, h)), mm(g, e, L->up, h));
    return sdc_add(g, x, mm(g, e, L->down, f));
}

/* Host inputs of a run of n tokens at positions past..past+n-1: the causal mask [n][past + n]
 * (0 / -inf) and the rotary tables [n][D/2]: angle p * theta^(-2j/D), in double. */
static float *host_tables(const sdc_qwen25vl_llm_config *c, int past, int n) {
    size_t half = (size_t)c->head_dim / 2, nk = (size_t)past + n, nm = nk * n;
    float *t = malloc((nm + 2 * half * n) * sizeof *t);
    if (!t) return NULL;
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < nk; j++) t[i * nk + j] = j <= (size_t)(past + i) ? 0.0f : -INFINITY;
    float *cs = t + nm, *sn = cs + half * n;
    for (size_t j = 0; j < half; j++) {
        double inv = pow((double)c->rope_theta, -(double)(2 * j) / (double)c->head_dim);
        for (int i = 0; i < n; i++) {
            double a = (double)(past + i) * inv;
            cs[(size_t)i * half + j] = (float)cos(a);
            sn[(size_t)i * half + j] = (float)sin(a);
        }
    }
    return t;
}

/* Floats of one layer's cached keys (or values) for `past` positions. */
static size_t kv_floats(const sdc_qwen25vl_llm_config *c, int past) {
    return (size_t)c->head_dim * past * c->n_kv_heads;
}

/* x [hidden, n] (the run's token embeddings, positions past..) with the rows of each span
 * replaced by the span's data, as graph inputs (one inputs[] entry per span). Spans are sorted
 * and inside the run (checked by the caller). */
static sdc_tensor *splice(sdc_graph *g, sdc_tensor *x, const sdc_qwen25vl_llm_span *spans,
                          int n_spans, int past, sdc_input_data *inputs) {
    if (!n_spans) return x;
    int64_t hidden = x->ne[0], n = x->ne[1], at = 0;
    sdc_tensor *y = NULL;
    for (int i = 0; i < n_spans; i++) {
        int64_t a = spans[i].at - past, ne[2] = {hidden, spans[i].n};
        sdc_tensor *e = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
        inputs[i] = (sdc_input_data){e, spans[i].data, (size_t)hidden * spans[i].n * 4};
        if (a > at) y = y ? sdc_concat(g, y, rows(g, x, at, a - at), 1) : rows(g, x, at, a - at);
        y = y ? sdc_concat(g, y, e, 1) : e;
        at = a + spans[i].n;
    }
    if (at < n) y = sdc_concat(g, y, rows(g, x, at, n - at), 1);
    return y;
}

/* One graph over ids[0..n) at positions past..past+n-1, the keys and values of the positions
 * before from m->kv when past > 0. Either out gets rows first..n-1 of the final norm (n_layers
 * 0) or of the residual after n_layers layers, or (kv_dst) every layer's keys and values of the
 * run go to kv_dst ([n_layers][2][kv_floats]) and nothing else is computed. */
static sdc_status run(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids, int n, int past,
                      int first, int n_layers, float *out, float *kv_dst,
                      const sdc_qwen25vl_llm_span *spans, int n_spans, sdc_eval_fn cb,
                      void *cb_user) {
    const sdc_qwen25vl_llm_config *c = &m->cfg;
    int nl = c->n_layers, run_layers = n_layers ? n_layers : nl;
    int n_in = 4 + (past ? 2 * nl : 0) + n_spans;
    int n_out = kv_dst ? 2 * nl : 1;
    float *host = host_tables(c, past, n);
    int32_t *idbuf = malloc((size_t)n * sizeof *idbuf);
    sdc_tensor **t = calloc((size_t)(2 * nl + n_out), sizeof *t); /* cached kv inputs, outputs */
    sdc_input_data *inputs = calloc((size_t)n_in, sizeof *inputs);
    sdc_graph *g = host && idbuf && t && inputs ? sdc_graph_create() : NULL;
    sdc_status s = SDC_OK;
    if (!g) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl llm: %d tokens", n);
        goto done;
    }
    memcpy(idbuf, ids, (size_t)n * sizeof *idbuf);
    int64_t half = c->head_dim / 2, mne[2] = {past + n, n}, rne[2] = {half, n};
    int64_t kne[3] = {c->head_dim, past, c->n_kv_heads};
    graph_inputs in = {0};
    in.tok = sdc_graph_input_1d(g, SDC_TYPE_I32, n);
    in.mask = sdc_graph_input(g, SDC_TYPE_F32, 2, mne);
    in.cos_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    in.sin_t = sdc_graph_input(g, SDC_TYPE_F32, 2, rne);
    size_t nm = (size_t)(past + n) * n, nr = (size_t)half * n, kvb = kv_floats(c, past);
    inputs[0] = (sdc_input_data){in.tok, idbuf, (size_t)n * sizeof(int32_t)};
    inputs[1] = (sdc_input_data){in.mask, host, nm * sizeof(float)};
    inputs[2] = (sdc_input_data){in.cos_t, host + nm, nr * sizeof(float)};
    inputs[3] = (sdc_input_data){in.sin_t, host + nm + nr, nr * sizeof(float)};
    if (past) {
        in.kc = t;
        in.vc = t + nl;
        for (int l = 0; l < nl; l++) {
            in.kc[l] = sdc_graph_input(g, SDC_TYPE_F32, 3, kne);
            in.vc[l] = sdc_graph_input(g, SDC_TYPE_F32, 3, kne);
            inputs[4 + 2 * l] = (sdc_input_data){in.kc[l], m->kv + 2 * l * kvb, kvb * 4};
            inputs[5 + 2 * l] = (sdc_input_data){in.vc[l], m->kv + (2 * l + 1) * kvb, kvb * 4};
        }
    }
    sdc_tensor **o = t + 2 * nl, *x = sdc_get_rows(g, m->embed, in.tok);
    x = splice(g, x, spans, n_spans, past, inputs + n_in - n_spans);
    for (int l = 0; l < run_layers && x; l++) {
        sdc_graph_set_block(g, l); /* a layer split may cut between layers */
        bool last = l == run_layers - 1;
        x = layer(g, m, l, x, &in, last && !kv_dst ? first : 0, kv_dst ? &o[2 * l] : NULL,
                  kv_dst ? &o[2 * l + 1] : NULL, kv_dst && last);
    }
    sdc_graph_set_block(g, -1);
    if (!kv_dst && !n_layers && x) x = sdc_rms_norm(g, x, m->final_norm, c->rms_eps);
    if (!kv_dst) o[0] = x;
    for (int i = 0; i < n_out; i++)
        if (o[i]) sdc_graph_mark_output(g, o[i]);
    s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "qwen2.5-vl llm: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    s = sdc_backend_set_inputs(be, g, inputs, n_in);
    if (s == SDC_OK) s = sdc_backend_compute(be, g, cb, cb_user);
    size_t kvn = kv_floats(c, n);
    for (int i = 0; i < n_out && s == SDC_OK; i++)
        s = kv_dst ? sdc_backend_tensor_get(be, o[i], kv_dst + i * kvn, 0, kvn * sizeof(float))
                   : sdc_backend_tensor_get(be, o[0], out, 0,
                                            (size_t)(n - first) * c->hidden * sizeof(float));
done:
    sdc_graph_free(g);
    free(host);
    free(idbuf);
    free(t);
    free(inputs);
    return s;
}

int sdc_qwen25vl_llm_cached_prefix(const sdc_qwen25vl_llm *m) {
    return m->kv_n;
}

/* Keys and values of ids[0..p) in m->kv, computed unless they are there already. */
static sdc_status prefix_kv(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids, int p,
                            sdc_eval_fn cb, void *cb_user) {
    if (m->kv_n == p && m->kv_sdcpp == m->sdcpp && !memcmp(m->kv_ids, ids, (size_t)p * 4))
        return SDC_OK;
    m->kv_n = 0;
    free(m->kv);
    free(m->kv_ids);
    m->kv = malloc(2 * (size_t)m->cfg.n_layers * kv_floats(&m->cfg, p) * sizeof(float));
    m->kv_ids = malloc((size_t)p * sizeof *m->kv_ids);
    if (!m->kv || !m->kv_ids)
        return sdc_fail(SDC_ERR_NO_MEMORY, "qwen2.5-vl llm: cache of %d tokens", p);
    memcpy(m->kv_ids, ids, (size_t)p * sizeof *ids);
    sdc_status s = run(m, be, ids, p, 0, 0, 0, NULL, m->kv, NULL, 0, cb, cb_user);
    if (s == SDC_OK) m->kv_n = p, m->kv_sdcpp = m->sdcpp;
    return s;
}

sdc_status sdc_qwen25vl_llm_encode(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids, int n,
                                   int first, int n_layers, float *out, sdc_eval_fn cb,
                                   void *cb_user) {
    return sdc_qwen25vl_llm_encode_spans(m, be, ids, n, first, n_layers, NULL, 0, out, cb, cb_user);
}

sdc_status sdc_qwen25vl_llm_encode_spans(sdc_qwen25vl_llm *m, sdc_backend *be, const int32_t *ids,
                                         int n, int first, int n_layers,
                                         const sdc_qwen25vl_llm_span *spans, int n_spans,
                                         float *out, sdc_eval_fn cb, void *cb_user) {
    const sdc_qwen25vl_llm_config *c = &m->cfg;
    if (n <= 0 || first < 0 || first >= n || n_layers < 0 || n_layers > c->n_layers || !ids || !out)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "qwen2.5-vl llm: %d tokens from row %d through %d layers (of %d)", n, first,
                        n_layers, c->n_layers);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "qwen2.5-vl llm: token id %d outside the vocabulary (%d)", ids[i],
                            c->vocab);
    /* spans sorted, disjoint, inside the rows that are computed (the cached prefix has none) */
    int lo = n_layers || !first ? 0 : first;
    for (int i = 0; i < n_spans; i++)
        if (!spans || !spans[i].data || spans[i].n <= 0 || spans[i].at < lo ||
            spans[i].at > n - spans[i].n || (i && spans[i].at < spans[i - 1].at + spans[i - 1].n))
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "qwen2.5-vl llm: embedding span %d (rows %d..+%d) is not sorted inside "
                            "rows %d..%d",
                            i, spans ? spans[i].at : -1, spans ? spans[i].n : 0, lo, n - 1);
    if (n_layers) /* intermediate states: every row, one graph (tests) */
        return run(m, be, ids, n, 0, 0, n_layers, out, NULL, spans, n_spans, cb, cb_user);
    if (first == 0) return run(m, be, ids, n, 0, 0, 0, out, NULL, spans, n_spans, cb, cb_user);
    /* rows before `first` are keys only: their keys and values come from the cache */
    sdc_status s = prefix_kv(m, be, ids, first, cb, cb_user);
    if (s == SDC_OK)
        s = run(m, be, ids + first, n - first, first, 0, 0, out, NULL, spans, n_spans, cb, cb_user);
    return s;
}

sdc_status sdc_qwen_image_encode_prompt(sdc_qwen25vl_llm *m, sdc_backend *be,
                                        const sdc_qwen2_tokenizer *tok, const char *prompt,
                                        float **out, int *n_ctx, sdc_eval_fn cb, void *cb_user) {
    if (!m || !tok || !out || !n_ctx)
        return sdc_fail(SDC_ERR_INVALID_ARG, "qwen-image prompt: bad arguments");
    *out = NULL;
    *n_ctx = 0;
    int32_t *ids = NULL;
    int n = 0, drop = 0;
    sdc_status s = sdc_qwen_image_prompt_tokens(tok, prompt, &ids, &n, &drop);
    if (s) return s;
    float *h = malloc((size_t)(n - drop) * m->cfg.hidden * sizeof *h);
    s = h ? sdc_qwen25vl_llm_encode(m, be, ids, n, drop, 0, h, cb, cb_user)
          : sdc_fail(SDC_ERR_NO_MEMORY, "qwen-image prompt: %d tokens", n);
    free(ids);
    if (s) {
        free(h);
        return s;
    }
    *out = h;
    *n_ctx = n - drop;
    return SDC_OK;
}
