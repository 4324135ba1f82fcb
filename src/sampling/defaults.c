/* Per-family defaults (see defaults.h). */
#include "sampling/defaults.h"

static const char *const family_names[SDC_FAMILY_COUNT] = {
    "sd1",   "sd2",       "sdxl",       "svd",        "sd3",           "flux",       "flux2",
    "ltxav", "wan",       "qwen_image", "z_image",    "hidream_o1",    "anima",      "ernie_image",
    "pid",   "ideogram4", "boogu",      "mage_flow",  "hunyuan_video", "minimax_h3", "longcat",
    "lens",  "krea2",     "minit2i",    "sefi_image", "lingbot_video",
};

const char *sdc_model_family_name(sdc_model_family f) {
    return ((int)f >= 0 && f < SDC_FAMILY_COUNT) ? family_names[f] : "unknown";
}

static bool is_unet(sdc_model_family f) {
    return f == SDC_FAMILY_SD1 || f == SDC_FAMILY_SD2 || f == SDC_FAMILY_SDXL ||
           f == SDC_FAMILY_SVD;
}

sdc_sample_method sdc_default_sample_method(sdc_model_family f) {
    if (f == SDC_FAMILY_PID) return SDC_SAMPLE_LCM;
    return is_unet(f) ? SDC_SAMPLE_EULER_A : SDC_SAMPLE_EULER;
}

sdc_scheduler sdc_default_scheduler(sdc_model_family f, sdc_prediction pred,
                                    sdc_sample_method method) {
    if (pred == SDC_PRED_EDM_V) return SDC_SCHED_EXPONENTIAL;
    if (method == SDC_SAMPLE_LCM || method == SDC_SAMPLE_TCD) return SDC_SCHED_LCM;
    if (method == SDC_SAMPLE_DDIM_TRAILING) return SDC_SCHED_SIMPLE;
    switch (f) {
    case SDC_FAMILY_FLUX:
        return SDC_SCHED_FLUX;
    case SDC_FAMILY_FLUX2:
        return SDC_SCHED_FLUX2;
    case SDC_FAMILY_LTXAV:
        return SDC_SCHED_LTX2;
    case SDC_FAMILY_IDEOGRAM4:
        return SDC_SCHED_LOGIT_NORMAL;
    default:
        return SDC_SCHED_DISCRETE;
    }
}

float sdc_default_eta(sdc_model_family f, sdc_sample_method method) {
    return f == SDC_FAMILY_HIDREAM_O1 ? 8.0f : sdc_sampler_default_eta(method);
}

sdc_prediction sdc_default_prediction(sdc_model_family f, bool has_v_pred, bool has_edm_vpred) {
    switch (f) {
    case SDC_FAMILY_SD2:
        return has_v_pred ? SDC_PRED_V : SDC_PRED_EPS;
    case SDC_FAMILY_SDXL:
        return has_edm_vpred ? SDC_PRED_EDM_V : has_v_pred ? SDC_PRED_V : SDC_PRED_EPS;
    case SDC_FAMILY_SD1:
    case SDC_FAMILY_SVD:
        return SDC_PRED_EPS;
    case SDC_FAMILY_FLUX:
    case SDC_FAMILY_FLUX2:
    case SDC_FAMILY_LONGCAT:
    case SDC_FAMILY_LENS:
    case SDC_FAMILY_LTXAV:
    case SDC_FAMILY_KREA2:
        return SDC_PRED_FLUX_FLOW;
    case SDC_FAMILY_MINIT2I:
        return SDC_PRED_MINIT2I_FLOW;
    default:
        return SDC_PRED_SD3_FLOW;
    }
}

float sdc_default_flow_shift(sdc_model_family f, bool has_guidance_in) {
    switch (f) {
    case SDC_FAMILY_WAN:
        return 5.f;
    case SDC_FAMILY_HUNYUAN_VIDEO:
        return 7.f;
    case SDC_FAMILY_MINIMAX_H3:
        return 12.f;
    case SDC_FAMILY_ERNIE_IMAGE:
        return 4.f;
    case SDC_FAMILY_PID:
        return 1.5f;
    case SDC_FAMILY_IDEOGRAM4:
        return 1.0f;
    case SDC_FAMILY_BOOGU:
        return 3.16f;
    case SDC_FAMILY_MAGE_FLOW:
        return 6.f;
    case SDC_FAMILY_FLUX:
    case SDC_FAMILY_FLUX2:
        return has_guidance_in ? 1.15f : 1.0f;
    case SDC_FAMILY_LONGCAT:
        return 3.0f;
    case SDC_FAMILY_LENS:
        return 1.83f;
    case SDC_FAMILY_LTXAV:
        return 2.37f;
    case SDC_FAMILY_KREA2:
        return 1.15f;
    default:
        return 3.f; /* SD3, Qwen-Image, Z-Image, Anima, HiDream-O1 */
    }
}

sdc_ays_table sdc_family_ays_table(sdc_model_family f) {
    switch (f) {
    case SDC_FAMILY_SD1:
        return SDC_AYS_SD1;
    case SDC_FAMILY_SDXL:
        return SDC_AYS_SDXL;
    case SDC_FAMILY_SVD:
        return SDC_AYS_SVD;
    default:
        return SDC_AYS_NONE;
    }
}
