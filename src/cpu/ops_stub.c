/* Placeholder kernels until the ops land (ops helper replaces this file). */
#include "cpu/cpu_ops.h"

#define STUB(fn)                                                                                   \
    void fn(const sdc_cpu_params *p, sdc_tensor *dst) {                                            \
        (void)p, (void)dst;                                                                        \
    }
STUB(sdc_cpu_cpy)
STUB(sdc_cpu_concat)
STUB(sdc_cpu_repeat)
STUB(sdc_cpu_pad)
STUB(sdc_cpu_upsample)
STUB(sdc_cpu_get_rows)
STUB(sdc_cpu_binary)
STUB(sdc_cpu_unary)
STUB(sdc_cpu_reduce_rows)
STUB(sdc_cpu_softmax)
STUB(sdc_cpu_layer_norm)
STUB(sdc_cpu_rms_norm)
STUB(sdc_cpu_group_norm)
STUB(sdc_cpu_rope)
STUB(sdc_cpu_timestep_embed)
STUB(sdc_cpu_attention)
STUB(sdc_cpu_conv2d)
size_t sdc_cpu_attention_work_size(const sdc_tensor *dst, int nth) {
    return 0;
}
size_t sdc_cpu_conv2d_work_size(const sdc_tensor *dst, int nth) {
    return 0;
}
