/* Read-only facts about a context, for code outside the pipeline (parameters text). */
#ifndef SDC_PIPELINE_CONTEXT_INFO_H
#define SDC_PIPELINE_CONTEXT_INFO_H

#include "sdc.h"

/* Basename of the file the context was created from with -m (model_path), "" if none.
 * The pointer stays valid as long as the context. sd-cli writes it as "Model: ...". */
const char *sdc_context_model_name(const sdc_context *ctx);
/* Basename of --diffusion-model ("Unet: ..."), "" if none. */
const char *sdc_context_diffusion_model_name(const sdc_context *ctx);
/* Basename of --t5xxl ("TE: ..."), "" if none. */
const char *sdc_context_t5xxl_name(const sdc_context *ctx);

/* --type the weights were converted to on load (ggml id, -1: as stored) and --flow-shift
 * (NAN: not set), for the parameters text. */
int sdc_context_weight_type(const sdc_context *ctx);
float sdc_context_flow_shift(const sdc_context *ctx);

/* The sampler and scheduler names a generation with these parameters uses (the model
 * family's defaults where p leaves them unset), as sd-cli writes them in PNG text. */
const char *sdc_context_sampler_name(const sdc_context *ctx, const sdc_generate_params *p);
const char *sdc_context_scheduler_name(const sdc_context *ctx, const sdc_generate_params *p);

#endif
