/* The A1111-style "parameters" text stored in generated PNGs, in sd-cli's field order:
 *   <prompt>
 *   Negative prompt: <negative>            (only when there is one)
 *   Steps: 20, CFG scale: 7.000000, Eta: inf, Seed: 42, Size: 512x512, Model: <file>,
 *   RNG: cuda, [Sampler RNG: cpu, ]Sampler: euler[ discrete], [TE: <file>, ][Unet: <file>, ]
 *   Version: sdc 0.1.0
 * (the third line is one line). Numbers are printed as sd-cli prints them (std::to_string). */
#ifndef SDC_PIPELINE_PARAMS_TEXT_H
#define SDC_PIPELINE_PARAMS_TEXT_H

#include "sdc.h"

/* Basenames of the model files, each may be NULL or "" (field then empty or left out). */
typedef struct sdc_params_text_models {
    const char *model;           /* -m: "Model: " (always written, possibly empty) */
    const char *t5xxl;           /* --t5xxl: "TE: " */
    const char *diffusion_model; /* --diffusion-model: "Unet: " */
    const char *sampler;         /* resolved sampler name (NULL: p->sampling_method) */
    const char *scheduler;       /* resolved scheduler name (NULL: p->scheduler) */
} sdc_params_text_models;

/* Returns a malloc'd string (free()), NULL if out of memory or p is NULL. */
char *sdc_params_text_format_models(const sdc_params_text_models *models,
                                    const sdc_generate_params *p, int64_t seed);
/* The same with only the "Model: " file known. */
char *sdc_params_text_format(const char *model_name, const sdc_generate_params *p, int64_t seed);

#endif
