#include "models/t5.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/ops.h"

typedef struct t5_layer {
    sdc_tensor *q, *k, *v, *o, *ln0;
    sdc_tensor *wi0, *wi1, *wo, *ln1; /* wi1 NULL for ReLU FFN (wi0 = wi) */
} t5_layer;

struct sdc_t5 {
    sdc_t5_config cfg;
    sdc_tensor *embed, *final_ln;
    t5_layer *layers;
    float *rel_table; /* [n_buckets][n_heads] from block 0 */
    /* norm weights converted to F32 when stored otherwise, each in a host weight buffer */
    sdc_tensor *owned;
    int n_owned;
};

int sdc_t5_relative_bucket(int rel, int n_buckets, int max_distance) {
    int half = n_buckets / 2;
    int bucket = rel > 0 ? half : 0;
    int n = rel < 0 ? -rel : rel;
    int max_exact = half / 2;
    if (n < max_exact) return bucket + n;
    /* float32 arithmetic and truncation, as the HF implementation does in torch */
    float v = logf((float)n / (float)max_exact) / logf((float)max_distance / (float)max_exact) *
              (float)(half - max_exact);
    int large = max_exact + (int)v;
    if (large > half - 1) large = half - 1;
    return bucket + large;
}

/* Norm weights may be stored as F16/BF16; our norm kernels take F32. */
static sdc_status f32_norm_weight(sdc_t5 *m, sdc_tensor *w, sdc_tensor **out) {
    if (w->type == SDC_TYPE_F32) {
        *out = w;
        return SDC_OK;
    }
    sdc_tensor *t = &m->owned[m->n_owned];
    sdc_status s = sdc_weight_convert_copy(w, SDC_TYPE_F32, NULL, NULL, t);
    if (s != SDC_OK) return s;
    m->n_owned++; /* freed with the model */
    *out = t;
    return SDC_OK;
}

sdc_status sdc_t5_load(const sdc_weight_source *ws, const char *prefix, sdc_t5 **out) {
    *out = NULL;
    sdc_t5 *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "t5: out of memory");
    sdc_status s = SDC_OK;
    sdc_t5_config *c = &m->cfg;
    m->embed = sdc_weight_find(ws, prefix, "shared.weight");
    if (!m->embed) m->embed = sdc_weight_find(ws, prefix, "encoder.embed_tokens.weight");
    if (!m->embed) {
        s = sdc_fail(SDC_ERR_FORMAT, "t5: missing tensor '%sshared.weight'", prefix);
        goto fail;
    }
    c->d_model = (int)m->embed->ne[0];
    c->vocab = (int)m->embed->ne[1];
    char name[160];
    while (1) {
        snprintf(name, sizeof name, "encoder.block.%d.layer.0.SelfAttention.q.weight", c->n_layers);
        if (!sdc_weight_find(ws, prefix, name)) break;
        c->n_layers++;
    }
    if (c->n_layers == 0) {
        s = sdc_fail(SDC_ERR_FORMAT, "t5: no encoder blocks found under '%sencoder.block.'",
                     prefix);
        goto fail;
    }
    sdc_tensor *q0 = sdc_weight_find(ws, prefix, "encoder.block.0.layer.0.SelfAttention.q.weight");
    int inner = (int)q0->ne[1];
    c->d_kv = 64;
    c->n_heads = inner / c->d_kv;
    if (inner % c->d_kv) {
        s = sdc_fail(SDC_ERR_FORMAT, "t5: attention width %d is not a multiple of 64", inner);
        goto fail;
    }
    c->gated = sdc_weight_find(ws, prefix, "encoder.block.0.layer.1.DenseReluDense.wi_0.weight");
    sdc_tensor *wi = sdc_weight_find(ws, prefix,
                                     c->gated ? "encoder.block.0.layer.1.DenseReluDense.wi_0.weight"
                                              : "encoder.block.0.layer.1.DenseReluDense.wi.weight");
    if (!wi) {
        s = sdc_fail(SDC_ERR_FORMAT,
                     "t5: missing '%sencoder.block.0.layer.1.DenseReluDense.wi_0.weight'", prefix);
        goto fail;
    }
    c->d_ff = (int)wi->ne[1];
    c->max_distance = 128;

    m->layers = calloc((size_t)c->n_layers, sizeof(t5_layer));
    m->owned = calloc((size_t)c->n_layers * 2 + 1, sizeof(sdc_tensor));
    if (!m->layers || !m->owned) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "t5: out of memory");
        goto fail;
    }
    int64_t dm = c->d_model, in = inner, ff = c->d_ff;
    for (int l = 0; l < c->n_layers; l++) {
        t5_layer *L = &m->layers[l];
        const char *p = prefix;
#define REQ(field, fmt, n0, n1)                                                                    \
    do {                                                                                           \
        int64_t ne_[2] = {n0, n1};                                                                 \
        snprintf(name, sizeof name, fmt, l);                                                       \
        if ((s = sdc_weight_require(ws, p, name, 2, ne_, &L->field)) != SDC_OK) goto fail;         \
    } while (0)
        REQ(q, "encoder.block.%d.layer.0.SelfAttention.q.weight", dm, in);
        REQ(k, "encoder.block.%d.layer.0.SelfAttention.k.weight", dm, in);
        REQ(v, "encoder.block.%d.layer.0.SelfAttention.v.weight", dm, in);
        REQ(o, "encoder.block.%d.layer.0.SelfAttention.o.weight", in, dm);
        REQ(ln0, "encoder.block.%d.layer.0.layer_norm.weight", dm, 1);
        if (c->gated) {
            REQ(wi0, "encoder.block.%d.layer.1.DenseReluDense.wi_0.weight", dm, ff);
            REQ(wi1, "encoder.block.%d.layer.1.DenseReluDense.wi_1.weight", dm, ff);
        } else {
            REQ(wi0, "encoder.block.%d.layer.1.DenseReluDense.wi.weight", dm, ff);
        }
        REQ(wo, "encoder.block.%d.layer.1.DenseReluDense.wo.weight", ff, dm);
        REQ(ln1, "encoder.block.%d.layer.1.layer_norm.weight", dm, 1);
#undef REQ
        if ((s = f32_norm_weight(m, L->ln0, &L->ln0)) != SDC_OK) goto fail;
        if ((s = f32_norm_weight(m, L->ln1, &L->ln1)) != SDC_OK) goto fail;
    }
    int64_t fne[1] = {dm};
    if ((s = sdc_weight_require(ws, prefix, "encoder.final_layer_norm.weight", 1, fne,
                                &m->final_ln)) != SDC_OK)
        goto fail;
    if ((s = f32_norm_weight(m, m->final_ln, &m->final_ln)) != SDC_OK) goto fail;

    sdc_tensor *rel;
    int64_t rne[2] = {c->n_heads, -1};
    if ((s = sdc_weight_require(
             ws, prefix, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", 2,
             rne, &rel)) != SDC_OK)
        goto fail;
    c->n_buckets = (int)rel->ne[1];
    m->rel_table = malloc((size_t)c->n_buckets * (size_t)c->n_heads * sizeof(float));
    if (!m->rel_table) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "t5: out of memory");
        goto fail;
    }
    if ((s = sdc_weight_to_f32(rel, m->rel_table)) != SDC_OK) goto fail;
    *out = m;
    return SDC_OK;
fail:
    sdc_t5_free(m);
    return s;
}

void sdc_t5_free(sdc_t5 *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) sdc_buffer_free(m->owned[i].buffer);
    free(m->owned);
    free(m->layers);
    free(m->rel_table);
    free(m);
}

const sdc_t5_config *sdc_t5_get_config(const sdc_t5 *m) {
    return &m->cfg;
}

/* [inner, n] -> [d_kv, n, heads] contiguous, the attention op's layout */
static sdc_tensor *heads_first(sdc_graph *g, sdc_tensor *x, int d_kv, int heads, int n) {
    sdc_tensor *r = sdc_reshape_3d(g, x, d_kv, heads, n);
    return sdc_cont(g, sdc_permute(g, r, 0, 2, 1, 3));
}

sdc_status sdc_t5_encode(sdc_t5 *m, sdc_backend *be, const int32_t *ids, int n, float *out,
                         sdc_eval_fn cb, void *cb_user) {
    const sdc_t5_config *c = &m->cfg;
    if (n <= 0) return SDC_OK;
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= c->vocab)
            return sdc_fail(SDC_ERR_INVALID_ARG, "t5: token id %d outside the vocabulary (%d)",
                            ids[i], c->vocab);
    sdc_graph *g = sdc_graph_create();
    if (!g) return sdc_fail(SDC_ERR_NO_MEMORY, "t5: out of memory");
    sdc_tensor *tok = sdc_graph_input_1d(g, SDC_TYPE_I32, n);
    int64_t bne[3] = {n, n, c->n_heads};
    sdc_tensor *bias = sdc_graph_input(g, SDC_TYPE_F32, 3, bne);
    sdc_tensor *x = sdc_get_rows(g, m->embed, tok);
    const float eps = 1e-6f;
    for (int l = 0; l < c->n_layers; l++) {
        const t5_layer *L = &m->layers[l];
        sdc_graph_set_block(g, l); /* a layer split may cut between layers */
        sdc_tensor *h = sdc_rms_norm(g, x, L->ln0, eps);
        sdc_tensor *q = heads_first(g, sdc_matmul(g, L->q, h), c->d_kv, c->n_heads, n);
        sdc_tensor *k = heads_first(g, sdc_matmul(g, L->k, h), c->d_kv, c->n_heads, n);
        sdc_tensor *v = heads_first(g, sdc_matmul(g, L->v, h), c->d_kv, c->n_heads, n);
        /* T5 does not scale attention logits */
        sdc_tensor *a = sdc_attention(g, q, k, v, bias, 1.0f);
        a = sdc_reshape_2d(g, a, (int64_t)c->d_kv * c->n_heads, n);
        x = sdc_add(g, x, sdc_matmul(g, L->o, a));
        h = sdc_rms_norm(g, x, L->ln1, eps);
        sdc_tensor *f;
        if (c->gated)
            f = sdc_mul(g, sdc_gelu_f16(g, sdc_matmul(g, L->wi0, h)), sdc_matmul(g, L->wi1, h));
        else
            f = sdc_relu(g, sdc_matmul(g, L->wi0, h));
        x = sdc_add(g, x, sdc_matmul(g, L->wo, f));
    }
    sdc_graph_set_block(g, -1);
    x = sdc_rms_norm(g, x, m->final_ln, eps);
    sdc_graph_mark_output(g, x);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) {
        s = sdc_fail(s, "t5: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    {
        /* host arrays for the inputs: used in place where the backend computes on host memory */
        int32_t *idbuf = malloc((size_t)n * sizeof(int32_t));
        float *bbuf = malloc((size_t)n * n * c->n_heads * sizeof(float));
        if (!idbuf || !bbuf) {
            free(idbuf);
            free(bbuf);
            s = sdc_fail(SDC_ERR_NO_MEMORY, "t5: out of memory");
            goto done;
        }
        memcpy(idbuf, ids, (size_t)n * sizeof(int32_t));
        for (int h = 0; h < c->n_heads; h++)
            for (int qi = 0; qi < n; qi++)
                for (int ki = 0; ki < n; ki++) {
                    int b = sdc_t5_relative_bucket(ki - qi, c->n_buckets, c->max_distance);
                    bbuf[((size_t)h * n + qi) * n + ki] = m->rel_table[(size_t)b * c->n_heads + h];
                }
        const sdc_input_data inputs[] = {{tok, idbuf, (size_t)n * sizeof(int32_t)},
                                         {bias, bbuf, (size_t)n * n * c->n_heads * sizeof(float)}};
        s = sdc_backend_set_inputs(be, g, inputs, 2);
        if (s == SDC_OK) s = sdc_backend_compute(be, g, cb, cb_user);
        if (s == SDC_OK)
            s = sdc_backend_tensor_get(be, x, out, 0, (size_t)n * c->d_model * sizeof(float));
        free(idbuf);
        free(bbuf);
    }
done:
    sdc_graph_free(g);
    return s;
}
