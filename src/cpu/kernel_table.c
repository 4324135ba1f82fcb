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
