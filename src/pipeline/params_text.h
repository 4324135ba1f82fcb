/* The A1111-style "parameters" text stored in generated images, in sd-cli's field order
 * and spelling where sd-cli has the field:
 *   <prompt>
 *   Negative prompt: <negative>            (only when there is one)
 *   Steps: 20, CFG scale: 7.000000, Guidance: 3.500000, Eta: inf, Seed: 42,
 *   Size: 512x512, Model: <file>, RNG: cuda, [Sampler RNG: cpu, ]
 *   Sampler: euler[ discrete | , Custom Sigmas: [1.0000, 0.5000, 0.0000]],
 *   [TE: <file>, ...][Unet: <file>, ][VAE: <file>, ][Clip skip: 2, ]
 *   [Denoising strength: 0.750000, ][Mask: yes, ][Weight type: q8_0, ]
 *   [Flow shift: 3.000000, ]Version: sdc 0.1.0
 * (the third line is one line). Numbers are printed as sd-cli prints them (std::to_string,
 * i.e. "%f"; sigmas "%.4f"). The fields sd-cli does not have (Denoising strength and Mask
 * for img2img/inpainting, as A1111 names the first; Weight type; Flow shift) are what else
 * is needed to reproduce the image. */
#ifndef SDC_PIPELINE_PARAMS_TEXT_H
#define SDC_PIPELINE_PARAMS_TEXT_H

#include <stdbool.h>

#include "sdc.h"

/* What the context knows; each string may be NULL or "" (field then empty or left out). */
typedef struct sdc_params_text_models {
    const char *model;           /* -m: "Model: " (always written, possibly empty) */
    const char *t5xxl;           /* --t5xxl: "TE: " */
    const char *diffusion_model; /* --diffusion-model: "Unet: " */
    const char *sampler;         /* resolved sampler name (NULL: p->sampling_method) */
    const char *scheduler;       /* resolved scheduler name (NULL: p->scheduler) */
    const char *clip_l, *clip_g, *llm, *llm_vision; /* further "TE: " files, sd-cli's order */
    const char *vae;                                /* --vae: "VAE: " */
    const char *weight_type; /* --type name ("q8_0"), NULL: weights as stored */
    bool has_flow_shift;     /* --flow-shift was set: "Flow shift: " */
    float flow_shift;
} sdc_params_text_models;

/* Returns a malloc'd string (free()), NULL if out of memory or p is NULL. */
char *sdc_params_text_format_models(const sdc_params_text_models *models,
                                    const sdc_generate_params *p, int64_t seed);
/* The same with only the "Model: " file known. */
char *sdc_params_text_format(const char *model_name, const sdc_generate_params *p, int64_t seed);

#endif
