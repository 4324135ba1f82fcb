/* LoRA key layouts (internal to models/lora.c): what a LoRA file's tensor names mean and
 * which model weight each one updates. Facts from kohya sd-scripts, diffusers/PEFT and
 * sd.cpp's name_conversion.cpp; our own code.
 *
 * A LoRA tensor name is <module><suffix>: the suffix says the part (.lora_down.weight,
 * .lora_up.weight, .lora_mid.weight, .lora_A.weight / .lora_B.weight (PEFT), .alpha,
 * .scale), the module says the target:
 *   kohya:     lora_unet_<LDM name, '.' -> '_'> (SDXL) or lora_unet_<diffusers name> (SD1/2),
 *              lora_te_<HF CLIP name> (SD1/2), lora_te1_ / lora_te2_ (SDXL CLIP-L / bigG)
 *   diffusers: unet.<diffusers name>, text_encoder.<HF name>, text_encoder_2.<HF name>
 *   LDM:       model.diffusion_model.<name> / diffusion_model.<name>
 * Targets are found in the model by name with '.' and '_' treated alike, so one index serves
 * dotted and underscored spellings. HF CLIP names also find OpenCLIP weights (SD2, SDXL
 * bigG): q/k/v projections are the three row thirds of the stacked attn.in_proj_weight.
 * The diffusers UNet map assumes layers_per_block = 2 (SD1, SD2, SDXL). */
#ifndef SDC_MODELS_LORA_NAMES_H
#define SDC_MODELS_LORA_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct sdc_loader;

typedef enum sdc_lora_part {
    SDC_LORA_PART_DOWN,
    SDC_LORA_PART_UP,
    SDC_LORA_PART_MID,
    SDC_LORA_PART_ALPHA,
    SDC_LORA_PART_SCALE,
    SDC_LORA_PART_UNSUPPORTED, /* LoHa, LoKr, DoRA, full diffs: *what names it */
    SDC_LORA_PART_UNKNOWN,
} sdc_lora_part;

/* Splits a LoRA tensor name into its module (written to module, n bytes) and its part;
 * for SDC_LORA_PART_UNSUPPORTED, *what gets a short description ("LoHa (LyCORIS)"). */
sdc_lora_part sdc_lora_split_name(const char *name, char *module, size_t n, const char **what);

/* The model's weights by underscore key, for target lookups. */
typedef struct sdc_lora_targets sdc_lora_targets;
sdc_status sdc_lora_targets_build(struct sdc_loader *l, sdc_lora_targets **out);
void sdc_lora_targets_free(sdc_lora_targets *tg);

/* The weight a LoRA module updates: its loader index (sdc_loader_tensor_at), and the row
 * third (0 q, 1 k, 2 v) of a stacked in_proj it covers, or -1 for the whole weight.
 * False when the module's layout is unknown or its target is not in the model; then
 * `why` gets the name(s) looked for. */
bool sdc_lora_targets_resolve(const sdc_lora_targets *tg, const char *module, int *index,
                              int *third, char *why, size_t why_size);

#endif
