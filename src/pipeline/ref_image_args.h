/* --ref-image-args: how reference images (-r) reach a model that reads them as extra
 * latents and shows them to a vision-language encoder, as sd.cpp's presets and
 * key=value overrides define it (its docs/edit.md). */
#ifndef SDC_PIPELINE_REF_IMAGE_ARGS_H
#define SDC_PIPELINE_REF_IMAGE_ARGS_H

#include <stdbool.h>

#include "sdc.h"

typedef enum sdc_ref_index_mode {
    SDC_REF_INDEX_FIXED = 0, /* every reference at index 1, tiled beside the previous ones */
    SDC_REF_INDEX_INCREASE,  /* 1, 2, 3, ... */
    SDC_REF_INDEX_DECREASE,  /* -1, -2, -3, ... */
} sdc_ref_index_mode;

typedef enum sdc_vlm_resize_mode {
    SDC_VLM_RESIZE_NONE = 0,     /* sides rounded to the vision tower's multiple only */
    SDC_VLM_RESIZE_LONGEST_SIDE, /* min/max bound the longest side (pixels) */
    SDC_VLM_RESIZE_AREA,         /* min/max bound the area (pixels) */
} sdc_vlm_resize_mode;

typedef struct sdc_ref_image_opts {
    bool pass_to_vlm;             /* shown to the text encoder's vision tower */
    bool pass_to_dit;             /* VAE-encoded and read by the diffusion model */
    sdc_ref_index_mode ref_index; /* the references' RoPE frame index */
    bool force_ref_timestep_zero; /* Krea2 only in sd.cpp: warned about, no effect */
    bool resize_before_vae;       /* resized to about the output's area before encoding */
    int vae_input_max_pixels;     /* that area's cap, <= 0: 1024 x 1024 */
    bool resize_vae_to_target;    /* resized to the output's own size instead */
    sdc_vlm_resize_mode vlm_resize_mode;
    int vlm_min_size, vlm_max_size; /* <= 0: the model's own */
} sdc_ref_image_opts;

/* The preset `preset` (sd.cpp's names: "qwen", "qwen_layered", "flux_kontext", ...;
 * "default" or NULL: sd.cpp's RefImageParams defaults), then `args`: a ',' or ';'
 * separated list of key=value, sd.cpp's keys (preset, pass_to_vlm, pass_to_dit,
 * ref_index_mode, force_ref_timestep_zero, resize_before_vae, vae_input_max_pixels,
 * vlm_resize_mode, vlm_max_size, vlm_min_size, vlm_size), later keys win, vlm_size last.
 * A malformed item, an unknown key, preset or value is an error naming it (sd.cpp warns
 * and ignores it). NULL or "" leaves the preset as it is. */
sdc_status sdc_ref_image_opts_parse(const char *args, const char *preset, sdc_ref_image_opts *out);

/* sd.cpp's name of a preset's (or opts') index mode / resize mode, for logs. */
const char *sdc_ref_index_mode_name(sdc_ref_index_mode m);

#endif
