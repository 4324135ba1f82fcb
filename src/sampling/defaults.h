/* Per-model-family sampling defaults, as sd.cpp resolves them
 * (sd_get_default_sample_method, sd_get_default_scheduler, resolve_eta, the denoiser
 * choice and default flow shift at model load). */
#ifndef SDC_SAMPLING_DEFAULTS_H
#define SDC_SAMPLING_DEFAULTS_H

#include "sampling/samplers.h"
#include "sampling/schedulers.h"

typedef enum sdc_model_family {
    SDC_FAMILY_SD1 = 0,
    SDC_FAMILY_SD2,
    SDC_FAMILY_SDXL,
    SDC_FAMILY_SVD,
    SDC_FAMILY_SD3,
    SDC_FAMILY_FLUX, /* Flux.1, Fill, Kontext, Chroma, Flex.2, Ovis */
    SDC_FAMILY_FLUX2,
    SDC_FAMILY_LTXAV,
    SDC_FAMILY_WAN,
    SDC_FAMILY_QWEN_IMAGE,
    SDC_FAMILY_Z_IMAGE,
    SDC_FAMILY_HIDREAM_O1,
    SDC_FAMILY_ANIMA,
    SDC_FAMILY_ERNIE_IMAGE,
    SDC_FAMILY_PID,
    SDC_FAMILY_IDEOGRAM4,
    SDC_FAMILY_BOOGU,
    SDC_FAMILY_MAGE_FLOW,
    SDC_FAMILY_HUNYUAN_VIDEO,
    SDC_FAMILY_MINIMAX_H3,
    SDC_FAMILY_LONGCAT,
    SDC_FAMILY_LENS,
    SDC_FAMILY_KREA2,
    SDC_FAMILY_MINIT2I,
    SDC_FAMILY_SEFI_IMAGE, /* sd.cpp's own dual-time flow (SEFI_FLOW_PRED) is not here yet */
    SDC_FAMILY_LINGBOT_VIDEO,
    SDC_FAMILY_COUNT
} sdc_model_family;

const char *sdc_model_family_name(sdc_model_family f);

/* lcm for PID, euler for every DiT, euler_a for the UNets (SD1/SD2/SDXL/SVD). */
sdc_sample_method sdc_default_sample_method(sdc_model_family f);
/* exponential for EDM-v; lcm for lcm/tcd; simple for ddim_trailing; then flux, flux2,
 * ltx2 or logit_normal by family; discrete otherwise. */
sdc_scheduler sdc_default_scheduler(sdc_model_family f, sdc_prediction pred,
                                    sdc_sample_method method);
/* eta when the user gives none: 8 for HiDream-O1, else sdc_sampler_default_eta. */
float sdc_default_eta(sdc_model_family f, sdc_sample_method method);
/* The denoiser a family loads with. SD2 is v when has_v_pred (sd.cpp probes the
 * model); SDXL is EDM-v with an edm_vpred.sigma_max tensor, v with a v_pred tensor. */
sdc_prediction sdc_default_prediction(sdc_model_family f, bool has_v_pred, bool has_edm_vpred);
/* Flow shift of the family's flow denoiser (has_guidance_in: Flux-dev style models). */
float sdc_default_flow_shift(sdc_model_family f, bool has_guidance_in);
/* The AYS table sd.cpp picks for the family (SDC_AYS_NONE: AYS is refused). */
sdc_ays_table sdc_family_ays_table(sdc_model_family f);

#endif
