/* Classifier-free guidance; the float operation order follows sd.cpp's tensor
 * expressions (each + - * rounds separately, left to right). */
#include "sampling/guidance.h"

#include <math.h>

void sdc_cfg_params_init(sdc_cfg_params *p) {
    p->txt_cfg = 7.0f;
    p->img_cfg = NAN;
    p->sigma_lo = 0.0f;
    p->sigma_hi = INFINITY;
}

void sdc_cfg_resolve(sdc_cfg_params *p, bool model_supports_img_cfg, bool *need_uncond,
                     bool *need_img_uncond) {
    if (!isfinite(p->img_cfg) || !model_supports_img_cfg) p->img_cfg = 1.0f;
    *need_uncond = p->img_cfg != p->txt_cfg;
    *need_img_uncond = p->img_cfg != 1.0f;
}

bool sdc_cfg_active(const sdc_cfg_params *p, float sigma) {
    return sigma >= p->sigma_lo && sigma <= p->sigma_hi;
}

void sdc_cfg_combine(const sdc_cfg_params *p, float sigma, const float *cond, const float *uncond,
                     const float *img_uncond, float *out, int64_t n) {
    const float s = p->txt_cfg, si = isfinite(p->img_cfg) ? p->img_cfg : 1.0f;
    if (!sdc_cfg_active(p, sigma) || (!uncond && !img_uncond)) {
        if (out != cond)
            for (int64_t i = 0; i < n; i++) out[i] = cond[i];
        return;
    }
    if (uncond && img_uncond) {
        for (int64_t i = 0; i < n; i++)
            out[i] = img_uncond[i] + si * (uncond[i] - img_uncond[i]) + s * (cond[i] - uncond[i]);
    } else if (uncond) {
        for (int64_t i = 0; i < n; i++) out[i] = uncond[i] + s * (cond[i] - uncond[i]);
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = img_uncond[i] + s * (cond[i] - img_uncond[i]);
    }
}

const float *sdc_cfg_pp_base(const float *cond, const float *uncond, const float *img_uncond) {
    return img_uncond ? img_uncond : uncond ? uncond : cond;
}
