/* Run-time LoRA: what a weight's `lora` field points at. sdc_matmul(g, w, x) and
 * sdc_conv2d(g, x, w, ...) add, for every adapter of w->lora, the low-rank term
 * up(mid(down(x))) to their result (the scale is folded into `up`), so model code needs
 * no change to get LoRAs. models/lora.c owns these structs and fills them. */
#ifndef SDC_CORE_LORA_LINK_H
#define SDC_CORE_LORA_LINK_H

#include <stdbool.h>

struct sdc_tensor;

typedef struct sdc_lora_adapter {
    /* matmul: down ne=[K, R], up ne=[R, N], mid NULL.
     * conv:   down ne=[KW, KH, Cin, R] (the weight's kernel, stride, padding, dilation),
     *         or with mid: down [1, 1, Cin, R], mid [KW, KH, R, R] (Tucker LoCon);
     *         up ne=[1, 1, R, Cout]. All F32 host weights. */
    struct sdc_tensor *down, *mid, *up;
    bool merged; /* already added into the data at sdc_lora_link.merged_data */
} sdc_lora_adapter;

typedef struct sdc_lora_link {
    int n;
    const sdc_lora_adapter *adapters;
    /* The weight's data with the `merged` adapters added in (NULL: none merged). A tensor
     * sharing the link whose data is elsewhere (a converted copy of the pristine weight)
     * gets every adapter at run time. */
    const void *merged_data;
    /* The weight as loaded, before any merge: what converted copies are made from. */
    const void *pristine_data;
    struct sdc_buffer *pristine_buffer;
} sdc_lora_link;

#endif
