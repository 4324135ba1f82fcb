/* --ref-image-args: sd.cpp's reference-image presets and key=value overrides. */
#include "pipeline/ref_image_args.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "pipeline/kv_list.h"

typedef struct preset {
    const char *name;
    sdc_ref_image_opts o;
} preset;

#define F    SDC_REF_INDEX_FIXED
#define I    SDC_REF_INDEX_INCREASE
#define D    SDC_REF_INDEX_DECREASE
#define NONE SDC_VLM_RESIZE_NONE
#define LONG SDC_VLM_RESIZE_LONGEST_SIDE
#define AREA SDC_VLM_RESIZE_AREA
/* fields: pass_to_vlm, pass_to_dit, index, force_ref_timestep_zero, resize_before_vae,
 * vae_input_max_pixels, resize_vae_to_target, vlm mode, vlm min, vlm max (sd.cpp's table) */
static const preset presets[] = {
    {"default", {false, true, F, false, true, -1, false, AREA, -1, -1}},
    {"flux_kontext", {false, true, F, false, true, -1, false, NONE, -1, -1}},
    {"longcat", {true, true, F, false, true, -1, false, AREA, -1, -1}},
    {"flux2", {false, true, I, false, true, -1, false, NONE, -1, -1}},
    {"qwen", {true, true, I, false, true, -1, false, AREA, -1, -1}},
    {"qwen_layered", {true, true, D, false, true, -1, false, AREA, -1, -1}},
    {"mage_flow", {true, true, I, false, true, -1, true, LONG, -1, 384}},
    {"z_image_omni", {true, true, F, false, true, -1, false, AREA, -1, -1}},
    {"krea2_ostris_edit", {true, true, I, true, true, -1, false, AREA, -1, -1}},
    {"krea2_edit", {true, true, I, false, true, -1, false, LONG, 768, 768}},
    {"cosmos_reference", {false, true, I, false, false, -1, false, NONE, -1, -1}},
};
#undef F
#undef I
#undef D
#undef NONE
#undef LONG
#undef AREA

const char *sdc_ref_index_mode_name(sdc_ref_index_mode m) {
    return m == SDC_REF_INDEX_INCREASE   ? "increase"
           : m == SDC_REF_INDEX_DECREASE ? "decrease"
                                         : "fixed";
}

static const preset *find_preset(const char *name) {
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, name)) return &presets[i];
    return NULL;
}

static bool parse_enum(const char *v, const char *const *names, int n, int *out) {
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) return *out = i, true;
    return false;
}

/* Applies one override; false: the value is not valid for the key, or the key unknown. */
static sdc_status apply(const sdc_kv *it, sdc_ref_image_opts *o) {
    static const char *const index_names[] = {"fixed", "increase", "decrease"};
    static const char *const resize_names[] = {"none", "longest_side", "area"};
    const char *k = it->key, *v = it->value;
    bool ok = true;
    int e = 0;
    if (!strcmp(k, "preset") || !strcmp(k, "vlm_size")) return SDC_OK; /* handled apart */
    if (!strcmp(k, "pass_to_vlm"))
        ok = sdc_kv_bool(v, &o->pass_to_vlm);
    else if (!strcmp(k, "pass_to_dit"))
        ok = sdc_kv_bool(v, &o->pass_to_dit);
    else if (!strcmp(k, "force_ref_timestep_zero"))
        ok = sdc_kv_bool(v, &o->force_ref_timestep_zero);
    else if (!strcmp(k, "resize_before_vae"))
        ok = sdc_kv_bool(v, &o->resize_before_vae);
    else if (!strcmp(k, "vae_input_max_pixels"))
        ok = sdc_kv_int(v, &o->vae_input_max_pixels);
    else if (!strcmp(k, "vlm_max_size"))
        ok = sdc_kv_int(v, &o->vlm_max_size);
    else if (!strcmp(k, "vlm_min_size"))
        ok = sdc_kv_int(v, &o->vlm_min_size);
    else if (!strcmp(k, "ref_index_mode")) {
        if ((ok = parse_enum(v, index_names, 3, &e))) o->ref_index = (sdc_ref_index_mode)e;
    } else if (!strcmp(k, "vlm_resize_mode")) {
        if ((ok = parse_enum(v, resize_names, 3, &e))) o->vlm_resize_mode = (sdc_vlm_resize_mode)e;
    } else {
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "--ref-image-args: unknown key '%s' (keys: preset, pass_to_vlm, "
                        "pass_to_dit, ref_index_mode, force_ref_timestep_zero, resize_before_vae, "
                        "vae_input_max_pixels, vlm_resize_mode, vlm_max_size, vlm_min_size, "
                        "vlm_size)",
                        k);
    }
    if (!ok)
        return sdc_fail(SDC_ERR_INVALID_ARG, "--ref-image-args: invalid value '%s' for '%s'", v, k);
    return SDC_OK;
}

sdc_status sdc_ref_image_opts_parse(const char *args, const char *preset_name,
                                    sdc_ref_image_opts *out) {
    const preset *p = find_preset(preset_name ? preset_name : "default");
    if (!p) return sdc_fail(SDC_ERR_INTERNAL, "ref image preset '%s' unknown", preset_name);
    sdc_kv items[32];
    int n = 0;
    sdc_status s = args ? sdc_kv_split("--ref-image-args", args, items, 32, &n) : SDC_OK;
    if (s != SDC_OK) return s;
    /* the first preset= item picks the preset (sd.cpp reads only the first) */
    for (int i = 0; i < n; i++) {
        if (strcmp(items[i].key, "preset")) continue;
        if (!(p = find_preset(items[i].value)))
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "--ref-image-args: unknown preset '%s' (presets: default, "
                            "flux_kontext, longcat, flux2, qwen, qwen_layered, mage_flow, "
                            "z_image_omni, krea2_ostris_edit, krea2_edit, cosmos_reference)",
                            items[i].value);
        SDC_LOGI("reference images: preset '%s'", p->name);
        break;
    }
    *out = p->o;
    for (int i = 0; i < n && s == SDC_OK; i++) s = apply(&items[i], out);
    if (s != SDC_OK) return s;
    for (int i = 0; i < n; i++) { /* the first vlm_size sets both bounds */
        if (strcmp(items[i].key, "vlm_size")) continue;
        int v = 0;
        if (!sdc_kv_int(items[i].value, &v))
            return sdc_fail(SDC_ERR_INVALID_ARG, "--ref-image-args: invalid value '%s' for '%s'",
                            items[i].value, items[i].key);
        out->vlm_min_size = out->vlm_max_size = v;
        break;
    }
    if (out->force_ref_timestep_zero)
        SDC_LOGW("--ref-image-args: force_ref_timestep_zero applies to Krea2 only (as in "
                 "sd.cpp); ignored");
    return SDC_OK;
}
