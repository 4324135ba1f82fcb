#include "cpu/cpu_ops.h"

static const sdc_cpu_kernel_fn g_kernels[SDC_OP_COUNT] = {
    [SDC_OP_CPY] = sdc_cpu_cpy,
    [SDC_OP_ADD] = sdc_cpu_binary,
    [SDC_OP_SUB] = sdc_cpu_binary,
    [SDC_OP_MUL] = sdc_cpu_binary,
    [SDC_OP_DIV] = sdc_cpu_binary,
    [SDC_OP_SCALE] = sdc_cpu_unary,
    [SDC_OP_GELU] = sdc_cpu_unary,
    [SDC_OP_GELU_ERF] = sdc_cpu_unary,
    [SDC_OP_GELU_F16] = sdc_cpu_unary,
    [SDC_OP_SILU] = sdc_cpu_unary,
    [SDC_OP_RELU] = sdc_cpu_unary,
    [SDC_OP_SIGMOID] = sdc_cpu_unary,
    [SDC_OP_TANH] = sdc_cpu_unary,
    [SDC_OP_SQR] = sdc_cpu_unary,
    [SDC_OP_SQRT] = sdc_cpu_unary,
    [SDC_OP_EXP] = sdc_cpu_unary,
    [SDC_OP_CLAMP] = sdc_cpu_unary,
    [SDC_OP_SOFTMAX] = sdc_cpu_softmax,
    [SDC_OP_LAYER_NORM] = sdc_cpu_layer_norm,
    [SDC_OP_RMS_NORM] = sdc_cpu_rms_norm,
    [SDC_OP_GROUP_NORM] = sdc_cpu_group_norm,
    [SDC_OP_ROPE] = sdc_cpu_rope,
    [SDC_OP_MATMUL] = sdc_cpu_matmul,
    [SDC_OP_ATTENTION] = sdc_cpu_attention,
    [SDC_OP_CONV2D] = sdc_cpu_conv2d,
    [SDC_OP_CONCAT] = sdc_cpu_concat,
    [SDC_OP_REPEAT] = sdc_cpu_repeat,
    [SDC_OP_PAD] = sdc_cpu_pad,
    [SDC_OP_UPSAMPLE] = sdc_cpu_upsample,
    [SDC_OP_MEAN] = sdc_cpu_reduce_rows,
    [SDC_OP_SUM_ROWS] = sdc_cpu_reduce_rows,
    [SDC_OP_GET_ROWS] = sdc_cpu_get_rows,
    [SDC_OP_TIMESTEP_EMBED] = sdc_cpu_timestep_embed,
};

static const sdc_cpu_work_fn g_work[SDC_OP_COUNT] = {
    [SDC_OP_MATMUL] = sdc_cpu_matmul_work_size,
    [SDC_OP_ATTENTION] = sdc_cpu_attention_work_size,
    [SDC_OP_CONV2D] = sdc_cpu_conv2d_work_size,
};

sdc_cpu_kernel_fn sdc_cpu_kernel_for(sdc_op op) {
    return op >= 0 && op < SDC_OP_COUNT ? g_kernels[op] : NULL;
}

sdc_cpu_work_fn sdc_cpu_work_for(sdc_op op) {
    return op >= 0 && op < SDC_OP_COUNT ? g_work[op] : NULL;
}

/* ---- which types each kernel handles (what the kernels in src/cpu read and write) ---- */

static bool is_float(sdc_type t) {
    return t == SDC_TYPE_F32 || t == SDC_TYPE_F16 || t == SDC_TYPE_BF16;
}
static bool f32_or_f16(sdc_type t) {
    return t == SDC_TYPE_F32 || t == SDC_TYPE_F16;
}
static bool readable(sdc_type t) { /* rows convertible to float (matmul/conv weights, tables) */
    const sdc_type_traits *tr = sdc_type_get(t);
    return tr && tr->to_float;
}
static bool plain(sdc_type t) {
    const sdc_type_traits *tr = sdc_type_get(t);
    return tr && !tr->is_quantized;
}

/* src[i] must be present with type check ok, or absent when optional */
static bool src_ok(const sdc_tensor *t, int i, bool optional, bool (*ok)(sdc_type),
                   const char **why, const char *need) {
    const sdc_tensor *s = t->src[i];
    if (!s) {
        if (!optional) *why = "a required source is missing";
        return optional;
    }
    if (!ok(s->type)) *why = need;
    return ok(s->type);
}

static bool is_f32(sdc_type t) {
    return t == SDC_TYPE_F32;
}
static bool is_i32(sdc_type t) {
    return t == SDC_TYPE_I32;
}

bool sdc_cpu_types_ok(const sdc_tensor *t, const char **why) {
    *why = NULL;
    const sdc_tensor *a = t->src[0];
    bool dst_f32 = t->type == SDC_TYPE_F32;
    switch (t->op) {
    case SDC_OP_NONE:
    case SDC_OP_VIEW:
        return true;
    case SDC_OP_CPY:
        if (!a) return *why = "a required source is missing", false;
        if (a->type == t->type || (is_float(a->type) && is_float(t->type))) return true;
        return *why = "cpy converts only between f32/f16/bf16 (or copies one type)", false;
    case SDC_OP_ADD:
    case SDC_OP_SUB:
    case SDC_OP_MUL:
    case SDC_OP_DIV:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "a must be f32") &&
               src_ok(t, 1, false, is_float, why, "b must be f32/f16/bf16");
    case SDC_OP_SCALE:
    case SDC_OP_GELU:
    case SDC_OP_GELU_ERF:
    case SDC_OP_GELU_F16:
    case SDC_OP_SILU:
    case SDC_OP_RELU:
    case SDC_OP_SIGMOID:
    case SDC_OP_TANH:
    case SDC_OP_SQR:
    case SDC_OP_SQRT:
    case SDC_OP_EXP:
    case SDC_OP_CLAMP:
    case SDC_OP_MEAN:
    case SDC_OP_SUM_ROWS:
    case SDC_OP_TIMESTEP_EMBED:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "the source must be f32");
    case SDC_OP_SOFTMAX:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "the source must be f32") &&
               src_ok(t, 1, true, f32_or_f16, why, "the mask must be f32/f16");
    case SDC_OP_LAYER_NORM:
    case SDC_OP_GROUP_NORM:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "the source must be f32") &&
               src_ok(t, 1, true, is_f32, why, "the weight must be f32") &&
               src_ok(t, 2, true, is_f32, why, "the bias must be f32");
    case SDC_OP_RMS_NORM:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "the source must be f32") &&
               src_ok(t, 1, true, is_f32, why, "the weight must be f32");
    case SDC_OP_ROPE:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "x must be f32") &&
               src_ok(t, 1, false, is_f32, why, "the cos table must be f32") &&
               src_ok(t, 2, false, is_f32, why, "the sin table must be f32");
    case SDC_OP_MATMUL:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, readable, why, "the weight type has no float conversion") &&
               src_ok(t, 1, false, is_f32, why, "x must be f32");
    case SDC_OP_ATTENTION:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, f32_or_f16, why, "q must be f32/f16") &&
               src_ok(t, 1, false, f32_or_f16, why, "k must be f32/f16") &&
               src_ok(t, 2, false, f32_or_f16, why, "v must be f32/f16") &&
               src_ok(t, 3, true, f32_or_f16, why, "the mask must be f32/f16");
    case SDC_OP_CONV2D:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, is_f32, why, "x must be f32") &&
               src_ok(t, 1, false, readable, why, "the weight type has no float conversion") &&
               src_ok(t, 2, true, is_f32, why, "the bias must be f32");
    case SDC_OP_CONCAT:
        if (!a || !t->src[1]) return *why = "a required source is missing", false;
        if (plain(t->type) && a->type == t->type && t->src[1]->type == t->type) return true;
        return *why = "both sources and dst must have one unquantised type", false;
    case SDC_OP_REPEAT:
    case SDC_OP_PAD:
    case SDC_OP_UPSAMPLE:
        if (!a) return *why = "a required source is missing", false;
        if (plain(t->type) && a->type == t->type) return true;
        return *why = "source and dst must have one unquantised type", false;
    case SDC_OP_GET_ROWS:
        if (!dst_f32) return *why = "dst must be f32", false;
        return src_ok(t, 0, false, readable, why, "the table type has no float conversion") &&
               src_ok(t, 1, false, is_i32, why, "the ids must be i32");
    default:
        return *why = "no kernel for this op", false;
    }
}
