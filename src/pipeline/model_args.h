/* --model-args: sd.cpp's extra model arguments, a key=value list read when a model loads. */
#ifndef SDC_PIPELINE_MODEL_ARGS_H
#define SDC_PIPELINE_MODEL_ARGS_H

#include <stdbool.h>

#include "sdc.h"

typedef struct sdc_model_args {
    /* qwen_image_zero_cond_t: Qwen-Image-Edit 2511's reference tokens at t = 0, for files
     * without the '__index_timestep_zero__' marker (as sd.cpp, it can only switch it on) */
    bool qwen_image_zero_cond_t;
} sdc_model_args;

/* sd.cpp's keys: qwen_image_zero_cond_t; chroma_use_dit_mask, chroma_use_t5_mask and
 * chroma_t5_mask_pad are checked and then warned about (Chroma is not a family sdc loads).
 * NULL or "": none. A malformed item, an unknown key or a bad value is an error naming it
 * (sd.cpp warns and ignores it). */
sdc_status sdc_model_args_parse(const char *args, sdc_model_args *out);

#endif
