#include "core/tensor.h"

#include <stdarg.h>
#include <stdio.h>

int64_t sdc_tensor_nelements(const sdc_tensor *t) {
    return t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
}

int64_t sdc_tensor_nrows(const sdc_tensor *t) {
    return t->ne[1] * t->ne[2] * t->ne[3];
}

size_t sdc_tensor_nbytes(const sdc_tensor *t) {
    const sdc_type_traits *tr = sdc_type_get(t->type);
    if (sdc_tensor_nelements(t) == 0) return 0;
    /* first row's bytes plus the offset of the last row */
    size_t bytes = (size_t)(t->ne[0] / tr->block_size) * tr->block_bytes;
    for (int i = 1; i < SDC_MAX_DIMS; i++) bytes += (size_t)(t->ne[i] - 1) * t->nb[i];
    return bytes;
}

bool sdc_tensor_is_contiguous(const sdc_tensor *t) {
    const sdc_type_traits *tr = sdc_type_get(t->type);
    if (t->nb[0] != tr->block_bytes) return false;
    size_t expect = (size_t)(t->ne[0] / tr->block_size) * tr->block_bytes;
    for (int i = 1; i < SDC_MAX_DIMS; i++) {
        if (t->ne[i] != 1 && t->nb[i] != expect) return false;
        expect *= (size_t)t->ne[i];
    }
    return true;
}

bool sdc_tensor_same_shape(const sdc_tensor *a, const sdc_tensor *b) {
    for (int i = 0; i < SDC_MAX_DIMS; i++)
        if (a->ne[i] != b->ne[i]) return false;
    return true;
}

void sdc_tensor_set_contiguous_strides(sdc_tensor *t) {
    const sdc_type_traits *tr = sdc_type_get(t->type);
    t->nb[0] = tr->block_bytes;
    t->nb[1] = (size_t)(t->ne[0] / tr->block_size) * tr->block_bytes;
    for (int i = 2; i < SDC_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
}

void sdc_tensor_set_name(sdc_tensor *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->name, sizeof t->name, fmt, ap);
    va_end(ap);
}

const char *sdc_tensor_shape_str(const sdc_tensor *t, char *buf, size_t size) {
    snprintf(buf, size, "[%lld,%lld,%lld,%lld]", (long long)t->ne[0], (long long)t->ne[1],
             (long long)t->ne[2], (long long)t->ne[3]);
    return buf;
}

const char *sdc_op_name(int op) {
    static const char *names[SDC_OP_COUNT] = {
        [SDC_OP_NONE] = "none",
        [SDC_OP_VIEW] = "view",
        [SDC_OP_CPY] = "cpy",
        [SDC_OP_ADD] = "add",
        [SDC_OP_SUB] = "sub",
        [SDC_OP_MUL] = "mul",
        [SDC_OP_DIV] = "div",
        [SDC_OP_SCALE] = "scale",
        [SDC_OP_GELU] = "gelu",
        [SDC_OP_GELU_ERF] = "gelu_erf",
        [SDC_OP_SILU] = "silu",
        [SDC_OP_RELU] = "relu",
        [SDC_OP_SIGMOID] = "sigmoid",
        [SDC_OP_TANH] = "tanh",
        [SDC_OP_SQR] = "sqr",
        [SDC_OP_SQRT] = "sqrt",
        [SDC_OP_EXP] = "exp",
        [SDC_OP_CLAMP] = "clamp",
        [SDC_OP_SOFTMAX] = "softmax",
        [SDC_OP_LAYER_NORM] = "layer_norm",
        [SDC_OP_RMS_NORM] = "rms_norm",
        [SDC_OP_GROUP_NORM] = "group_norm",
        [SDC_OP_ROPE] = "rope",
        [SDC_OP_MATMUL] = "matmul",
        [SDC_OP_ATTENTION] = "attention",
        [SDC_OP_CONV2D] = "conv2d",
        [SDC_OP_CONCAT] = "concat",
        [SDC_OP_REPEAT] = "repeat",
        [SDC_OP_PAD] = "pad",
        [SDC_OP_UPSAMPLE] = "upsample",
        [SDC_OP_MEAN] = "mean",
        [SDC_OP_SUM_ROWS] = "sum_rows",
        [SDC_OP_GET_ROWS] = "get_rows",
        [SDC_OP_TIMESTEP_EMBED] = "timestep_embed",
        [SDC_OP_GELU_F16] = "gelu_f16",
    };
    return op >= 0 && op < SDC_OP_COUNT && names[op] ? names[op] : "?";
}
