/* Classifier-free guidance (sd.cpp's ClassifierFreeGuidance): combines the model's
 * conditional, unconditional and image-unconditional outputs, optionally only inside a
 * sigma interval; plus which of those passes a request needs. */
#ifndef SDC_SAMPLING_GUIDANCE_H
#define SDC_SAMPLING_GUIDANCE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sdc_cfg_params {
    float txt_cfg; /* --cfg-scale (sd.cpp default 7) */
    float img_cfg; /* --img-cfg-scale for edit/inpaint models; NAN: unset (becomes 1) */
    /* Guidance interval: CFG applies for sigma_lo <= sigma <= sigma_hi; outside, the
     * conditional output is used alone and the other passes can be skipped. The
     * default 0..INFINITY always guides. */
    float sigma_lo, sigma_hi;
} sdc_cfg_params;

void sdc_cfg_params_init(sdc_cfg_params *p);

/* sd.cpp's resolve_guidance: an unset img_cfg becomes 1 (and is forced to 1 when the
 * model has no image conditioning); the unconditional pass is needed when
 * img_cfg != txt_cfg, the image-unconditional pass when img_cfg != 1. */
void sdc_cfg_resolve(sdc_cfg_params *p, bool model_supports_img_cfg, bool *need_uncond,
                     bool *need_img_uncond);

/* Whether guidance is applied at this sigma (the interval test). */
bool sdc_cfg_active(const sdc_cfg_params *p, float sigma);

/* out = guided prediction from raw outputs (uncond / img_uncond may be NULL):
 *   both:       img_uncond + img_cfg*(uncond - img_uncond) + txt_cfg*(cond - uncond)
 *   uncond:     uncond + txt_cfg*(cond - uncond)
 *   img_uncond: img_uncond + txt_cfg*(cond - img_uncond)
 *   neither, or sigma outside the interval: cond.
 * out may alias cond. */
void sdc_cfg_combine(const sdc_cfg_params *p, float sigma, const float *cond, const float *uncond,
                     const float *img_uncond, float *out, int64_t n);

/* The raw output CFG++ samplers step with: img_uncond, else uncond, else cond. */
const float *sdc_cfg_pp_base(const float *cond, const float *uncond, const float *img_uncond);

#endif
