/* diffusers folder names -> the LDM / original names a single-file SD checkpoint uses
 * (what the SD family's loaders expect): the inverse of diffusers'
 * convert_ldm_unet_checkpoint / convert_ldm_vae_checkpoint. UNet block indices depend
 * on the layout (levels, res blocks per level, which levels have attention), given by
 * a hint read from the folder's unet/config.json. */
#ifndef SDC_IO_DIFFUSERS_NAMES_H
#define SDC_IO_DIFFUSERS_NAMES_H

#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>

#define SDC_UNET_MAX_LEVELS 8

typedef struct sdc_unet_layout_hint {
    int n_levels;                              /* UNet down (and up) blocks */
    int layers_per_block[SDC_UNET_MAX_LEVELS]; /* res blocks of down level i */
    bool down_attn[SDC_UNET_MAX_LEVELS];       /* down_blocks.i has attentions */
    bool up_attn[SDC_UNET_MAX_LEVELS];         /* up_blocks.i (diffusers order) has them */
    bool mid_attn;                             /* mid block with attention (the usual one) */
    int vae_levels;                            /* VAE down/up blocks */
    bool sdxl; /* text encoders go to conditioner.embedders.0/1 (SDXL) */
} sdc_unet_layout_hint;

/* SD 1.x / 2.x: 4 levels, 2 res blocks, attention in down 0-2 / up 1-3, VAE 4 levels. */
void sdc_unet_layout_hint_default(sdc_unet_layout_hint *h);
/* Fills the UNet part from a diffusers unet/config.json text (layers_per_block int or
 * list, down_block_types, up_block_types, mid_block_type; sdxl from addition_embed_type
 * "text_time"); vae_levels keeps its value. `label` names the file in errors. */
sdc_status sdc_unet_layout_hint_from_config(const char *json, size_t len, const char *label,
                                            sdc_unet_layout_hint *h);

/* LDM name for a diffusers tensor name of component `comp` ("unet", "vae",
 * "text_encoder", "text_encoder_2"); false if unmapped. out gets the full name incl.
 * prefix. `hint` NULL means the SD 1.x default. */
bool sdc_diffusers_to_ldm(const char *comp, const char *name, const sdc_unet_layout_hint *hint,
                          char *out, size_t n);

#endif
