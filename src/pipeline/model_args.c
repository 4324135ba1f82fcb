/* --model-args: see model_args.h. */
#include "pipeline/model_args.h"

#include <string.h>

#include "core/log.h"
#include "core/status.h"
#include "pipeline/kv_list.h"

sdc_status sdc_model_args_parse(const char *args, sdc_model_args *out) {
    memset(out, 0, sizeof *out);
    sdc_kv items[16];
    int n = 0;
    sdc_status s = args ? sdc_kv_split("--model-args", args, items, 16, &n) : SDC_OK;
    for (int i = 0; i < n && s == SDC_OK; i++) {
        const char *k = items[i].key, *v = items[i].value;
        bool b = false, ok = true;
        int x = 0;
        if (!strcmp(k, "qwen_image_zero_cond_t")) {
            ok = sdc_kv_bool(v, &b);
            out->qwen_image_zero_cond_t |= b;
        } else if (!strcmp(k, "chroma_use_dit_mask") || !strcmp(k, "chroma_use_t5_mask") ||
                   !strcmp(k, "chroma_t5_mask_pad")) {
            ok = strcmp(k, "chroma_t5_mask_pad") ? sdc_kv_bool(v, &b) : sdc_kv_int(v, &x);
            if (ok)
                SDC_LOGW("--model-args: %s applies to Chroma, which sdc does not load; ignored", k);
        } else {
            s = sdc_fail(SDC_ERR_INVALID_ARG,
                         "--model-args: unknown key '%s' (keys: qwen_image_zero_cond_t, "
                         "chroma_use_dit_mask, chroma_use_t5_mask, chroma_t5_mask_pad)",
                         k);
            break;
        }
        if (!ok)
            s = sdc_fail(SDC_ERR_INVALID_ARG, "--model-args: invalid value '%s' for '%s'", v, k);
    }
    return s;
}
