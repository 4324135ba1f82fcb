/* Graph builders: shape and type checks, then one node with its params and sources.
 * Each op's params and src[] order are noted at its builder; the CPU kernels in
 * src/cpu/ read them back the same way. */
#include "core/ops.h"

#include <string.h>

#include "core/lora_link.h"

#define SHAPE(t, buf) sdc_tensor_shape_str((t), (buf), sizeof(buf))

static bool is_float_type(sdc_type t) {
    return t == SDC_TYPE_F32 || t == SDC_TYPE_F16 || t == SDC_TYPE_BF16;
}

static void copy_ne(int64_t *dst, const sdc_tensor *a) {
    for (int i = 0; i < SDC_MAX_DIMS; i++) dst[i] = a->ne[i];
}

/* ---------------------------------------------------------------- views */

sdc_tensor *sdc_reshape(sdc_graph *g, sdc_tensor *a, int ndims, const int64_t *ne) {
    if (!a) return NULL;
    if (ndims < 1 || ndims > SDC_MAX_DIMS)
        return sdc_graph_set_error(g, "sdc_reshape: %d dims (1..4 allowed)", ndims);
    if (!sdc_tensor_is_contiguous(a))
        return sdc_graph_set_error(g, "sdc_reshape: '%s' is not contiguous (use sdc_cont)",
                                   a->name);
    int64_t n4[SDC_MAX_DIMS] = {1, 1, 1, 1}, count = 1;
    for (int i = 0; i < ndims; i++) {
        if (ne[i] < 0) return sdc_graph_set_error(g, "sdc_reshape: negative dim");
        n4[i] = ne[i];
        count *= ne[i];
    }
    char buf[64];
    if (count != sdc_tensor_nelements(a))
        return sdc_graph_set_error(g, "sdc_reshape: '%s' %s has %lld elements, new shape %lld",
                                   a->name, SHAPE(a, buf), (long long)sdc_tensor_nelements(a),
                                   (long long)count);
    const sdc_type_traits *tr = sdc_type_get(a->type);
    if (n4[0] % tr->block_size)
        return sdc_graph_set_error(g, "sdc_reshape: dim 0 (%lld) not a multiple of %s blocks",
                                   (long long)n4[0], tr->name);
    sdc_tensor tmp = {.type = a->type};
    memcpy(tmp.ne, n4, sizeof n4);
    sdc_tensor_set_contiguous_strides(&tmp);
    return sdc_graph_view_node(g, a, SDC_MAX_DIMS, n4, tmp.nb, 0);
}

sdc_tensor *sdc_reshape_2d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1) {
    int64_t ne[2] = {n0, n1};
    return sdc_reshape(g, a, 2, ne);
}

sdc_tensor *sdc_reshape_3d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1, int64_t n2) {
    int64_t ne[3] = {n0, n1, n2};
    return sdc_reshape(g, a, 3, ne);
}

sdc_tensor *sdc_reshape_4d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1, int64_t n2,
                           int64_t n3) {
    int64_t ne[4] = {n0, n1, n2, n3};
    return sdc_reshape(g, a, 4, ne);
}

sdc_tensor *sdc_permute(sdc_graph *g, sdc_tensor *a, int ax0, int ax1, int ax2, int ax3) {
    if (!a) return NULL;
    int ax[4] = {ax0, ax1, ax2, ax3}, seen = 0;
    for (int i = 0; i < 4; i++) {
        if (ax[i] < 0 || ax[i] > 3 || (seen & (1 << ax[i])))
            return sdc_graph_set_error(g, "sdc_permute: (%d,%d,%d,%d) is not a permutation", ax0,
                                       ax1, ax2, ax3);
        seen |= 1 << ax[i];
    }
    if (sdc_type_get(a->type)->is_quantized && ax0 != 0)
        return sdc_graph_set_error(g, "sdc_permute: cannot move dim 0 of quantised '%s'", a->name);
    int64_t ne[4];
    size_t nb[4];
    for (int i = 0; i < 4; i++) ne[i] = a->ne[ax[i]], nb[i] = a->nb[ax[i]];
    return sdc_graph_view_node(g, a, 4, ne, nb, 0);
}

sdc_tensor *sdc_transpose(sdc_graph *g, sdc_tensor *a) {
    return sdc_permute(g, a, 1, 0, 2, 3);
}

sdc_tensor *sdc_slice(sdc_graph *g, sdc_tensor *a, const int64_t *ne, const int64_t *off) {
    if (!a) return NULL;
    char buf[64];
    size_t offset = 0;
    const sdc_type_traits *tr = sdc_type_get(a->type);
    for (int i = 0; i < 4; i++) {
        if (ne[i] < 0 || off[i] < 0 || off[i] + ne[i] > a->ne[i])
            return sdc_graph_set_error(g, "sdc_slice: dim %d [%lld, +%lld) outside '%s' %s", i,
                                       (long long)off[i], (long long)ne[i], a->name, SHAPE(a, buf));
        if (i == 0 && (off[0] % tr->block_size || ne[0] % tr->block_size))
            return sdc_graph_set_error(g, "sdc_slice: dim 0 of '%s' cuts %s blocks", a->name,
                                       tr->name);
        offset += (size_t)(i == 0 ? off[0] / tr->block_size : off[i]) * a->nb[i];
    }
    return sdc_graph_view_node(g, a, 4, ne, a->nb, offset);
}

/* ---------------------------------------------------------------- copies and layout */

/* CPY: src[0] = a; dst has the same shape, contiguous, of type `type`. */
static sdc_tensor *make_cpy(sdc_graph *g, sdc_tensor *a, sdc_type type, const char *who) {
    if (!a) return NULL;
    if (a->type != type && !(is_float_type(a->type) && is_float_type(type)))
        return sdc_graph_set_error(g, "%s: cannot convert %s to %s ('%s')", who,
                                   sdc_type_name(a->type), sdc_type_name(type), a->name);
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_CPY, type, 4, a->ne);
    if (t) t->src[0] = a;
    return t;
}

sdc_tensor *sdc_cont(sdc_graph *g, sdc_tensor *a) {
    return a ? make_cpy(g, a, a->type, "sdc_cont") : NULL;
}

sdc_tensor *sdc_cast(sdc_graph *g, sdc_tensor *a, sdc_type type) {
    return make_cpy(g, a, type, "sdc_cast");
}

static bool plain_type(sdc_type t) {
    return !sdc_type_get(t)->is_quantized;
}

/* CONCAT: src = {a, b}; i[0] = dim. */
sdc_tensor *sdc_concat(sdc_graph *g, sdc_tensor *a, sdc_tensor *b, int dim) {
    if (!a || !b) return NULL;
    char ba[64], bb[64];
    if (dim < 0 || dim > 3) return sdc_graph_set_error(g, "sdc_concat: dim %d", dim);
    if (a->type != b->type || !plain_type(a->type))
        return sdc_graph_set_error(g, "sdc_concat: types %s and %s", sdc_type_name(a->type),
                                   sdc_type_name(b->type));
    for (int i = 0; i < 4; i++)
        if (i != dim && a->ne[i] != b->ne[i])
            return sdc_graph_set_error(g, "sdc_concat: %s and %s differ outside dim %d",
                                       SHAPE(a, ba), SHAPE(b, bb), dim);
    int64_t ne[4];
    copy_ne(ne, a);
    ne[dim] += b->ne[dim];
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_CONCAT, a->type, 4, ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = b;
    t->params.i[0] = dim;
    return t;
}

/* REPEAT: src[0] = a; dst shape ne (4 dims, each a multiple of a's). */
sdc_tensor *sdc_repeat(sdc_graph *g, sdc_tensor *a, const int64_t *ne) {
    if (!a) return NULL;
    char buf[64];
    if (!plain_type(a->type)) return sdc_graph_set_error(g, "sdc_repeat: quantised '%s'", a->name);
    for (int i = 0; i < 4; i++)
        if (ne[i] <= 0 || a->ne[i] <= 0 || ne[i] % a->ne[i])
            return sdc_graph_set_error(g, "sdc_repeat: %lld in dim %d is not a multiple of %s",
                                       (long long)ne[i], i, SHAPE(a, buf));
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_REPEAT, a->type, 4, ne);
    if (t) t->src[0] = a;
    return t;
}

/* PAD: src[0] = a; i[0..3] = zeros appended at the end of each dim. */
sdc_tensor *sdc_pad(sdc_graph *g, sdc_tensor *a, int p0, int p1, int p2, int p3) {
    if (!a) return NULL;
    int p[4] = {p0, p1, p2, p3};
    if (!plain_type(a->type)) return sdc_graph_set_error(g, "sdc_pad: quantised '%s'", a->name);
    int64_t ne[4];
    for (int i = 0; i < 4; i++) {
        if (p[i] < 0) return sdc_graph_set_error(g, "sdc_pad: negative padding %d", p[i]);
        ne[i] = a->ne[i] + p[i];
    }
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_PAD, a->type, 4, ne);
    if (!t) return NULL;
    t->src[0] = a;
    for (int i = 0; i < 4; i++) t->params.i[i] = p[i];
    return t;
}

/* UPSAMPLE: src[0] = a; i[0] = factor (dims 0 and 1, nearest). */
sdc_tensor *sdc_upsample_nearest(sdc_graph *g, sdc_tensor *a, int factor) {
    if (!a) return NULL;
    if (factor < 1) return sdc_graph_set_error(g, "sdc_upsample_nearest: factor %d", factor);
    if (!plain_type(a->type))
        return sdc_graph_set_error(g, "sdc_upsample_nearest: quantised '%s'", a->name);
    int64_t ne[4];
    copy_ne(ne, a);
    ne[0] *= factor, ne[1] *= factor;
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_UPSAMPLE, a->type, 4, ne);
    if (!t) return NULL;
    t->src[0] = a;
    t->params.i[0] = factor;
    return t;
}

/* GET_ROWS: src = {table [D,V] any type with to_float, ids I32 [n,b]}; dst F32 [D,n,b].
 * An id outside [0,V) yields a row of zeros (kernels cannot fail). */
sdc_tensor *sdc_get_rows(sdc_graph *g, sdc_tensor *table, sdc_tensor *ids) {
    if (!table || !ids) return NULL;
    char buf[64];
    const sdc_type_traits *tr = sdc_type_get(table->type);
    if (!tr || !tr->to_float)
        return sdc_graph_set_error(g, "sdc_get_rows: table type %s", sdc_type_name(table->type));
    if (ids->type != SDC_TYPE_I32)
        return sdc_graph_set_error(g, "sdc_get_rows: ids must be i32, got %s",
                                   sdc_type_name(ids->type));
    if (table->ne[2] != 1 || table->ne[3] != 1 || ids->ne[2] != 1 || ids->ne[3] != 1)
        return sdc_graph_set_error(g, "sdc_get_rows: table %s must be 2-D, ids 1-D or 2-D",
                                   SHAPE(table, buf));
    if (table->nb[0] != tr->block_bytes)
        return sdc_graph_set_error(g, "sdc_get_rows: table rows of '%s' not contiguous",
                                   table->name);
    int64_t ne[4] = {table->ne[0], ids->ne[0], ids->ne[1], 1};
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_GET_ROWS, SDC_TYPE_F32, 4, ne);
    if (t) t->src[0] = table, t->src[1] = ids;
    return t;
}

/* ---------------------------------------------------------------- elementwise */

/* ADD/SUB/MUL/DIV: src = {a F32, b F32/F16/BF16}; b broadcast over a; dst F32. */
static sdc_tensor *binary(sdc_graph *g, sdc_op op, sdc_tensor *a, sdc_tensor *b, const char *who) {
    if (!a || !b) return NULL;
    char ba[64], bb[64];
    if (a->type != SDC_TYPE_F32 || !is_float_type(b->type))
        return sdc_graph_set_error(g, "%s: needs f32 a and f32/f16/bf16 b, got %s and %s", who,
                                   sdc_type_name(a->type), sdc_type_name(b->type));
    for (int i = 0; i < 4; i++)
        if (b->ne[i] <= 0 || a->ne[i] % b->ne[i])
            return sdc_graph_set_error(g, "%s: '%s' %s does not broadcast to '%s' %s", who, b->name,
                                       SHAPE(b, bb), a->name, SHAPE(a, ba));
    sdc_tensor *t = sdc_graph_node(g, op, SDC_TYPE_F32, 4, a->ne);
    if (t) t->src[0] = a, t->src[1] = b;
    return t;
}

sdc_tensor *sdc_add(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    return binary(g, SDC_OP_ADD, a, b, "sdc_add");
}
sdc_tensor *sdc_sub(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    return binary(g, SDC_OP_SUB, a, b, "sdc_sub");
}
sdc_tensor *sdc_mul(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    return binary(g, SDC_OP_MUL, a, b, "sdc_mul");
}
sdc_tensor *sdc_div(sdc_graph *g, sdc_tensor *a, sdc_tensor *b) {
    return binary(g, SDC_OP_DIV, a, b, "sdc_div");
}

/* Unary ops: src[0] = a (F32, any strides); dst F32 contiguous, same shape.
 * SCALE: f[0] = s, f[1] = bias. CLAMP: f[0] = min, f[1] = max. */
static sdc_tensor *unary(sdc_graph *g, sdc_op op, sdc_tensor *a, float f0, float f1) {
    if (!a) return NULL;
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "unary op %d: needs f32, '%s' is %s", (int)op, a->name,
                                   sdc_type_name(a->type));
    sdc_tensor *t = sdc_graph_node(g, op, SDC_TYPE_F32, 4, a->ne);
    if (!t) return NULL;
    t->src[0] = a;
    t->params.f[0] = f0, t->params.f[1] = f1;
    return t;
}

sdc_tensor *sdc_scale(sdc_graph *g, sdc_tensor *a, float s, float bias) {
    return unary(g, SDC_OP_SCALE, a, s, bias);
}
sdc_tensor *sdc_gelu_f16(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_GELU_F16, a, 0, 0);
}
sdc_tensor *sdc_gelu(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_GELU, a, 0, 0);
}
sdc_tensor *sdc_gelu_erf(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_GELU_ERF, a, 0, 0);
}
sdc_tensor *sdc_silu(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_SILU, a, 0, 0);
}
sdc_tensor *sdc_relu(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_RELU, a, 0, 0);
}
sdc_tensor *sdc_sigmoid(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_SIGMOID, a, 0, 0);
}
sdc_tensor *sdc_tanh(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_TANH, a, 0, 0);
}
sdc_tensor *sdc_sqr(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_SQR, a, 0, 0);
}
sdc_tensor *sdc_sqrt(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_SQRT, a, 0, 0);
}
sdc_tensor *sdc_exp(sdc_graph *g, sdc_tensor *a) {
    return unary(g, SDC_OP_EXP, a, 0, 0);
}
sdc_tensor *sdc_clamp(sdc_graph *g, sdc_tensor *a, float lo, float hi) {
    if (a && !(lo <= hi)) return sdc_graph_set_error(g, "sdc_clamp: min %g > max %g", lo, hi);
    return unary(g, SDC_OP_CLAMP, a, lo, hi);
}

/* ---------------------------------------------------------------- reductions and norms */

/* MEAN / SUM_ROWS: src[0] = a (F32); dst [1, ne1, ne2, ne3]. */
static sdc_tensor *reduce_rows(sdc_graph *g, sdc_op op, sdc_tensor *a, const char *who) {
    if (!a) return NULL;
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "%s: needs f32, '%s' is %s", who, a->name,
                                   sdc_type_name(a->type));
    int64_t ne[4] = {1, a->ne[1], a->ne[2], a->ne[3]};
    sdc_tensor *t = sdc_graph_node(g, op, SDC_TYPE_F32, 4, ne);
    if (t) t->src[0] = a;
    return t;
}

sdc_tensor *sdc_mean(sdc_graph *g, sdc_tensor *a) {
    return reduce_rows(g, SDC_OP_MEAN, a, "sdc_mean");
}
sdc_tensor *sdc_sum_rows(sdc_graph *g, sdc_tensor *a) {
    return reduce_rows(g, SDC_OP_SUM_ROWS, a, "sdc_sum_rows");
}

/* A per-channel vector (F32, ne=[n]) or NULL. */
static bool check_vec(sdc_graph *g, const sdc_tensor *v, int64_t n, const char *who,
                      const char *what) {
    if (!v) return true;
    if (v->type != SDC_TYPE_F32 || v->ne[0] != n || v->ne[1] * v->ne[2] * v->ne[3] != 1) {
        char buf[64];
        sdc_graph_set_error(g, "%s: %s '%s' is %s %s, expected f32 [%lld]", who, what, v->name,
                            sdc_type_name(v->type), SHAPE(v, buf), (long long)n);
        return false;
    }
    return true;
}

/* SOFTMAX: src = {a F32, mask F32/F16 or NULL}; f[0] = scale. Fully masked rows give 0. */
sdc_tensor *sdc_softmax(sdc_graph *g, sdc_tensor *a, sdc_tensor *mask, float scale) {
    if (!a) return NULL;
    char ba[64], bm[64];
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_softmax: needs f32, '%s' is %s", a->name,
                                   sdc_type_name(a->type));
    if (mask) {
        if (mask->type != SDC_TYPE_F32 && mask->type != SDC_TYPE_F16)
            return sdc_graph_set_error(g, "sdc_softmax: mask type %s", sdc_type_name(mask->type));
        if (mask->ne[0] != a->ne[0] || mask->ne[1] != a->ne[1] || a->ne[2] % mask->ne[2] ||
            a->ne[3] % mask->ne[3])
            return sdc_graph_set_error(g, "sdc_softmax: mask %s does not fit %s", SHAPE(mask, bm),
                                       SHAPE(a, ba));
    }
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_SOFTMAX, SDC_TYPE_F32, 4, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = mask;
    t->params.f[0] = scale;
    return t;
}

/* LAYER_NORM: src = {a, w or NULL, b or NULL}; f[0] = eps. */
sdc_tensor *sdc_layer_norm(sdc_graph *g, sdc_tensor *a, sdc_tensor *w, sdc_tensor *b, float eps) {
    if (!a) return NULL;
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_layer_norm: needs f32, '%s' is %s", a->name,
                                   sdc_type_name(a->type));
    if (!check_vec(g, w, a->ne[0], "sdc_layer_norm", "weight") ||
        !check_vec(g, b, a->ne[0], "sdc_layer_norm", "bias"))
        return NULL;
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_LAYER_NORM, SDC_TYPE_F32, 4, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = w, t->src[2] = b;
    t->params.f[0] = eps;
    return t;
}

/* RMS_NORM: src = {a, w or NULL}; f[0] = eps. */
sdc_tensor *sdc_rms_norm(sdc_graph *g, sdc_tensor *a, sdc_tensor *w, float eps) {
    if (!a) return NULL;
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_rms_norm: needs f32, '%s' is %s", a->name,
                                   sdc_type_name(a->type));
    if (!check_vec(g, w, a->ne[0], "sdc_rms_norm", "weight")) return NULL;
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_RMS_NORM, SDC_TYPE_F32, 4, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = w;
    t->params.f[0] = eps;
    return t;
}

/* GROUP_NORM: src = {a, w or NULL, b or NULL}; i[0] = groups, f[1] = eps,
 * i[2] = channel axis (2 for [W,H,C,N]; 1 for [L,C,N], chosen when ne[3] == 1 and
 * ne[1] matches w's length while ne[2] does not). */
sdc_tensor *sdc_group_norm(sdc_graph *g, sdc_tensor *a, int groups, sdc_tensor *w, sdc_tensor *b,
                           float eps) {
    if (!a) return NULL;
    char buf[64];
    if (a->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_group_norm: needs f32, '%s' is %s", a->name,
                                   sdc_type_name(a->type));
    int axis = 2;
    const sdc_tensor *v = w ? w : b;
    if (v && a->ne[3] == 1 && a->ne[1] == v->ne[0] && a->ne[2] != v->ne[0]) axis = 1;
    int64_t C = a->ne[axis];
    if (groups < 1 || C % groups)
        return sdc_graph_set_error(g, "sdc_group_norm: %lld channels of %s not divisible by %d",
                                   (long long)C, SHAPE(a, buf), groups);
    if (!check_vec(g, w, C, "sdc_group_norm", "weight") ||
        !check_vec(g, b, C, "sdc_group_norm", "bias"))
        return NULL;
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_GROUP_NORM, SDC_TYPE_F32, 4, a->ne);
    if (!t) return NULL;
    t->src[0] = a, t->src[1] = w, t->src[2] = b;
    t->params.i[0] = groups;
    t->params.f[1] = eps;
    t->params.i[2] = axis;
    return t;
}

/* ---------------------------------------------------------------- positions */

/* ROPE: src = {x, cos, sin}; i[0] = mode. */
sdc_tensor *sdc_rope(sdc_graph *g, sdc_tensor *x, sdc_tensor *cos_t, sdc_tensor *sin_t, int mode) {
    if (!x || !cos_t || !sin_t) return NULL;
    char bx[64], bc[64];
    if (mode != SDC_ROPE_INTERLEAVED && mode != SDC_ROPE_HALF)
        return sdc_graph_set_error(g, "sdc_rope: mode %d", mode);
    if (x->type != SDC_TYPE_F32 || cos_t->type != SDC_TYPE_F32 || sin_t->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_rope: x, cos and sin must be f32");
    if (x->ne[0] % 2)
        return sdc_graph_set_error(g, "sdc_rope: odd head dim %lld", (long long)x->ne[0]);
    if (!sdc_tensor_same_shape(cos_t, sin_t) || cos_t->ne[0] != x->ne[0] / 2 ||
        cos_t->ne[1] != x->ne[2] || cos_t->ne[2] != 1 ||
        (cos_t->ne[3] != 1 && cos_t->ne[3] != x->ne[3]))
        return sdc_graph_set_error(g, "sdc_rope: tables %s do not fit x %s (want [D/2,L,1,1|B])",
                                   SHAPE(cos_t, bc), SHAPE(x, bx));
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_ROPE, SDC_TYPE_F32, 4, x->ne);
    if (!t) return NULL;
    t->src[0] = x, t->src[1] = cos_t, t->src[2] = sin_t;
    t->params.i[0] = mode;
    return t;
}

/* TIMESTEP_EMBED: src[0] = t; i[0] = dim, i[1] = max_period, f[2] = 1 (cos first).
 * An odd dim leaves the last value 0. */
sdc_tensor *sdc_timestep_embedding(sdc_graph *g, sdc_tensor *t, int dim, int max_period) {
    if (!t) return NULL;
    char buf[64];
    if (t->type != SDC_TYPE_F32 || t->ne[1] * t->ne[2] * t->ne[3] != 1)
        return sdc_graph_set_error(g, "sdc_timestep_embedding: t must be f32 [n], got %s %s",
                                   sdc_type_name(t->type), SHAPE(t, buf));
    if (dim < 1 || max_period < 1)
        return sdc_graph_set_error(g, "sdc_timestep_embedding: dim %d, max_period %d", dim,
                                   max_period);
    int64_t ne[4] = {dim, t->ne[0], 1, 1};
    sdc_tensor *r = sdc_graph_node(g, SDC_OP_TIMESTEP_EMBED, SDC_TYPE_F32, 4, ne);
    if (!r) return NULL;
    r->src[0] = t;
    r->params.i[0] = dim;
    r->params.i[1] = max_period;
    r->params.f[2] = 1.0f;
    return r;
}

/* ---------------------------------------------------------------- heavy ops */

/* MATMUL: src = {w, x}. */
static sdc_tensor *matmul_node(sdc_graph *g, sdc_tensor *w, sdc_tensor *x) {
    if (!w || !x) return NULL;
    char bw[64], bx[64];
    const sdc_type_traits *tr = sdc_type_get(w->type);
    if (!tr || !tr->to_float)
        return sdc_graph_set_error(g, "sdc_matmul: weight type %s", sdc_type_name(w->type));
    if (x->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_matmul: x '%s' must be f32, got %s", x->name,
                                   sdc_type_name(x->type));
    if (w->ne[0] != x->ne[0] || w->ne[2] <= 0 || w->ne[3] <= 0 || x->ne[2] % w->ne[2] ||
        x->ne[3] % w->ne[3])
        return sdc_graph_set_error(g, "sdc_matmul: w '%s' %s and x '%s' %s do not match", w->name,
                                   SHAPE(w, bw), x->name, SHAPE(x, bx));
    int64_t ne[4] = {w->ne[1], x->ne[1], x->ne[2], x->ne[3]};
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_MATMUL, SDC_TYPE_F32, 4, ne);
    if (t) t->src[0] = w, t->src[1] = x;
    return t;
}

/* ATTENTION: src = {q, k, v, mask or NULL}; f[0] = scale. */
sdc_tensor *sdc_attention(sdc_graph *g, sdc_tensor *q, sdc_tensor *k, sdc_tensor *v,
                          sdc_tensor *mask, float scale) {
    if (!q || !k || !v) return NULL;
    char bq[64], bk[64], bv[64], bm[64];
    const sdc_tensor *in[3] = {q, k, v};
    for (int i = 0; i < 3; i++)
        if (in[i]->type != SDC_TYPE_F32 && in[i]->type != SDC_TYPE_F16)
            return sdc_graph_set_error(g, "sdc_attention: '%s' is %s (f32/f16 only)", in[i]->name,
                                       sdc_type_name(in[i]->type));
    if (k->ne[0] != q->ne[0] || v->ne[1] != k->ne[1] || v->ne[2] != k->ne[2] ||
        k->ne[3] != q->ne[3] || v->ne[3] != q->ne[3] || k->ne[2] < 1 || q->ne[2] % k->ne[2])
        return sdc_graph_set_error(g, "sdc_attention: q %s, k %s, v %s do not match", SHAPE(q, bq),
                                   SHAPE(k, bk), SHAPE(v, bv));
    if (mask) {
        if (mask->type != SDC_TYPE_F32 && mask->type != SDC_TYPE_F16)
            return sdc_graph_set_error(g, "sdc_attention: mask type %s", sdc_type_name(mask->type));
        if (mask->ne[0] != k->ne[1] || mask->ne[1] != q->ne[1] ||
            (mask->ne[2] != 1 && mask->ne[2] != q->ne[2]) ||
            (mask->ne[3] != 1 && mask->ne[3] != q->ne[3]))
            return sdc_graph_set_error(g,
                                       "sdc_attention: mask %s, want [Lk,Lq,1|H,1|B] for q %s k %s",
                                       SHAPE(mask, bm), SHAPE(q, bq), SHAPE(k, bk));
    }
    int64_t ne[4] = {v->ne[0], q->ne[2], q->ne[1], q->ne[3]};
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_ATTENTION, SDC_TYPE_F32, 4, ne);
    if (!t) return NULL;
    t->src[0] = q, t->src[1] = k, t->src[2] = v, t->src[3] = mask;
    t->params.f[0] = scale;
    return t;
}

/* CONV2D: src = {x, w, bias or NULL}; i[0..6] = stride x, stride y, pad x, pad y,
 * dilation x, dilation y, groups. A quantised w is read as Cout rows of KW*KH*Cin/groups
 * values each (which must be a whole number of blocks). */
static sdc_tensor *conv2d_node(sdc_graph *g, sdc_tensor *x, sdc_tensor *w, sdc_tensor *bias,
                               int stride_x, int stride_y, int pad_x, int pad_y, int dil_x,
                               int dil_y, int groups) {
    if (!x || !w) return NULL;
    char bx[64], bw[64];
    const sdc_type_traits *tr = sdc_type_get(w->type);
    if (x->type != SDC_TYPE_F32)
        return sdc_graph_set_error(g, "sdc_conv2d: x '%s' must be f32", x->name);
    if (!tr || !tr->to_float)
        return sdc_graph_set_error(g, "sdc_conv2d: weight type %s", sdc_type_name(w->type));
    if (stride_x < 1 || stride_y < 1 || dil_x < 1 || dil_y < 1 || pad_x < 0 || pad_y < 0 ||
        groups < 1)
        return sdc_graph_set_error(g, "sdc_conv2d: stride %d,%d pad %d,%d dilation %d,%d groups %d",
                                   stride_x, stride_y, pad_x, pad_y, dil_x, dil_y, groups);
    int64_t cin = x->ne[2], cout = w->ne[3];
    if (cin % groups || cout % groups || w->ne[2] != cin / groups)
        return sdc_graph_set_error(g, "sdc_conv2d: x '%s' %s, w '%s' %s, groups %d do not match",
                                   x->name, SHAPE(x, bx), w->name, SHAPE(w, bw), groups);
    int64_t kdim = w->ne[0] * w->ne[1] * w->ne[2];
    if (tr->is_quantized) {
        if (kdim % tr->block_size)
            return sdc_graph_set_error(g, "sdc_conv2d: %s weight '%s' rows of %lld values",
                                       tr->name, w->name, (long long)kdim);
    } else if (!sdc_tensor_is_contiguous(w)) {
        return sdc_graph_set_error(g, "sdc_conv2d: weight '%s' not contiguous", w->name);
    }
    if (!check_vec(g, bias, cout, "sdc_conv2d", "bias")) return NULL;
    int64_t ow = (x->ne[0] + 2 * pad_x - dil_x * (w->ne[0] - 1) - 1) / stride_x + 1;
    int64_t oh = (x->ne[1] + 2 * pad_y - dil_y * (w->ne[1] - 1) - 1) / stride_y + 1;
    if (x->ne[0] + 2 * pad_x < dil_x * (w->ne[0] - 1) + 1 ||
        x->ne[1] + 2 * pad_y < dil_y * (w->ne[1] - 1) + 1)
        return sdc_graph_set_error(g, "sdc_conv2d: kernel %s larger than padded input %s",
                                   SHAPE(w, bw), SHAPE(x, bx));
    int64_t ne[4] = {ow, oh, cout, x->ne[3]};
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_CONV2D, SDC_TYPE_F32, 4, ne);
    if (!t) return NULL;
    t->src[0] = x, t->src[1] = w, t->src[2] = bias;
    int32_t p[7] = {stride_x, stride_y, pad_x, pad_y, dil_x, dil_y, groups};
    for (int i = 0; i < 7; i++) t->params.i[i] = p[i];
    return t;
}

/* ---------------------------------------------------------------- run-time LoRA */

/* The weight whose `lora` applies to w: w itself, or the weight a view node w reads. */
static const sdc_tensor *lora_owner(const sdc_tensor *w) {
    if (w->lora) return w->lora->n > 0 ? w : NULL;
    const sdc_tensor *o = w->op == SDC_OP_VIEW ? w->view_src : NULL;
    return o && o->lora && o->lora->n > 0 ? o : NULL;
}

/* Output channels of a LoRA'd weight: Linear ne=[K, N], conv ne=[KW, KH, Cin, Cout]. */
static int64_t lora_outputs(const sdc_tensor *o) {
    return o->ne[2] != 1 || o->ne[3] != 1 ? o->ne[3] : o->ne[1];
}

/* w reads all of o, reshaped (a 1x1 conv as a Linear or back). */
static bool lora_whole(const sdc_tensor *w, const sdc_tensor *o, int64_t n_out) {
    return w == o ||
           (w->view_offset == 0 && sdc_tensor_is_contiguous(w) &&
            sdc_tensor_nelements(w) == sdc_tensor_nelements(o) && n_out == lora_outputs(o));
}

/* An adapter still to add at run time: not merged into the data this tensor reads. */
static bool lora_pending(const sdc_tensor *owner, const sdc_lora_adapter *a) {
    return !(a->merged && owner->data && owner->data == owner->lora->merged_data);
}

/* a (contiguous F32 adapter weight) with shape ne, reshaped when it differs. */
static sdc_tensor *lora_shaped(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1, int64_t n2,
                               int64_t n3) {
    if (a->ne[0] == n0 && a->ne[1] == n1 && a->ne[2] == n2 && a->ne[3] == n3) return a;
    return sdc_reshape_4d(g, a, n0, n1, n2, n3);
}

sdc_tensor *sdc_matmul(sdc_graph *g, sdc_tensor *w, sdc_tensor *x) {
    sdc_tensor *y = matmul_node(g, w, x);
    const sdc_tensor *o = y ? lora_owner(w) : NULL;
    if (!o) return y;
    /* all of o, or a block of whole rows of a Linear (the q/k/v thirds of an in_proj) */
    int64_t r0 = 0, n_out = lora_outputs(o), K = w->ne[0], N = w->ne[1];
    bool whole = lora_whole(w, o, N);
    if (!whole) {
        bool rows = o->ne[2] == 1 && o->ne[3] == 1 && w->ne[0] == o->ne[0] &&
                    w->nb[1] == o->nb[1] && w->view_offset % o->nb[1] == 0;
        r0 = rows ? (int64_t)(w->view_offset / o->nb[1]) : 0;
        if (!rows || r0 + N > o->ne[1])
            return sdc_graph_set_error(g,
                                       "sdc_matmul: LoRA on '%s': the view is not a block of "
                                       "rows",
                                       o->name);
    }
    if (w->ne[2] != 1 || w->ne[3] != 1)
        return sdc_graph_set_error(g, "sdc_matmul: LoRA on batched weight '%s'", o->name);
    for (int i = 0; i < o->lora->n && y; i++) {
        const sdc_lora_adapter *a = &o->lora->adapters[i];
        if (!lora_pending(o, a)) continue;
        int64_t R = sdc_tensor_nelements(a->up) / n_out;
        if (a->mid || sdc_tensor_nelements(a->down) != (whole ? K : o->ne[0]) * R)
            return sdc_graph_set_error(g, "sdc_matmul: LoRA adapter does not fit '%s'", o->name);
        sdc_tensor *up = lora_shaped(g, a->up, R, n_out, 1, 1);
        if (!whole) {
            int64_t ne[4] = {R, N, 1, 1}, off[4] = {0, r0, 0, 0};
            up = sdc_slice(g, up, ne, off);
        }
        sdc_tensor *d = matmul_node(g, lora_shaped(g, a->down, K, R, 1, 1), x);
        y = sdc_add(g, y, matmul_node(g, up, d));
    }
    return y;
}

sdc_tensor *sdc_conv2d(sdc_graph *g, sdc_tensor *x, sdc_tensor *w, sdc_tensor *bias, int stride_x,
                       int stride_y, int pad_x, int pad_y, int dil_x, int dil_y, int groups) {
    sdc_tensor *y =
        conv2d_node(g, x, w, bias, stride_x, stride_y, pad_x, pad_y, dil_x, dil_y, groups);
    const sdc_tensor *o = y ? lora_owner(w) : NULL;
    if (!o) return y;
    int64_t kw = w->ne[0], kh = w->ne[1], cin = w->ne[2], cout = w->ne[3];
    if (groups != 1 || !lora_whole(w, o, cout))
        return sdc_graph_set_error(g, "sdc_conv2d: LoRA on '%s': %s", o->name,
                                   groups != 1 ? "grouped conv" : "a view of part of the weight");
    for (int i = 0; i < o->lora->n && y; i++) {
        const sdc_lora_adapter *a = &o->lora->adapters[i];
        if (!lora_pending(o, a)) continue;
        int64_t R = sdc_tensor_nelements(a->up) / cout;
        /* Linear-shaped adapters of a weight used as a 1x1 conv get conv shapes */
        sdc_tensor *up = lora_shaped(g, a->up, 1, 1, R, cout), *d;
        if (a->mid) {
            int64_t Rd = a->mid->ne[2];
            d = conv2d_node(g, x, lora_shaped(g, a->down, 1, 1, cin, Rd), NULL, 1, 1, 0, 0, 1, 1,
                            1);
            d = conv2d_node(g, d, a->mid, NULL, stride_x, stride_y, pad_x, pad_y, dil_x, dil_y, 1);
        } else {
            d = conv2d_node(g, x, lora_shaped(g, a->down, kw, kh, cin, R), NULL, stride_x, stride_y,
                            pad_x, pad_y, dil_x, dil_y, 1);
        }
        d = conv2d_node(g, d, up, NULL, 1, 1, 0, 0, 1, 1, 1);
        if (d && !sdc_tensor_same_shape(d, y))
            return sdc_graph_set_error(g, "sdc_conv2d: LoRA adapter does not fit '%s'", o->name);
        y = sdc_add(g, y, d);
    }
    return y;
}
