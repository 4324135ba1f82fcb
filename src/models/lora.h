/* LoRA for the SD family: <lora:name:weight> in prompts, files DIR/name.safetensors (also
 * .gguf, or name given with its extension; .ckpt through the loader where it reads them).
 * Key layouts: models/lora_names.h (kohya/A1111, diffusers/PEFT, LDM; LoCon with a 3x3
 * down and Tucker lora_mid). LoHa, LoKr, DoRA and full diffs are refused with an error.
 * Scale per module: alpha / rank (alpha absent: 1; a .scale tensor wins) times the
 * multiplier.
 *
 * Two ways to apply (sd.cpp's --lora-apply-mode):
 *  - immediately: W' = W + scale * up @ (mid) @ down computed in F32 (on the CPU backend)
 *    and stored in W's type
 *    (F32/F16/BF16 converted; quantised: dequantised, added, re-quantised to the same type)
 *    in memory of our own; the tensor's data then points there and the loaded data is kept,
 *    so another set restores it bit for bit.
 *  - at_runtime: each weight's `lora` link (core/lora_link.h) lists the adapters and
 *    sdc_matmul / sdc_conv2d add up(mid(down(x))) to their result: no model code changes.
 *  - auto: sd.cpp's rule: at_runtime when any weight of the model is quantised, else
 *    immediately.
 *
 * Order of use: create the state right after the loader holds all files and before any
 * model is built from it (every weight gets its link then, and converted copies made by
 * sdc_weight_convert_copy share it: a copy is made from the weight as loaded and gets
 * every adapter at run time, merged or not). Free the state after the models. A graph view
 * of a LoRA'd weight gets its adapters too when it is the whole weight reshaped (a 1x1 conv
 * as a Linear or back) or, for sdc_matmul, a block of whole rows of a Linear (q/k/v thirds
 * of a stacked in_proj); any other view of it is a graph build error naming the weight. */
#ifndef SDC_MODELS_LORA_H
#define SDC_MODELS_LORA_H

#include "core/status.h"

struct sdc_loader;

typedef enum sdc_lora_mode {
    SDC_LORA_AUTO,
    SDC_LORA_IMMEDIATELY,
    SDC_LORA_AT_RUNTIME
} sdc_lora_mode;
/* "auto", "immediately", "at_runtime" (sd.cpp's spellings). */
sdc_status sdc_lora_mode_from_name(const char *name, sdc_lora_mode *out);
const char *sdc_lora_mode_name(sdc_lora_mode mode);

typedef struct sdc_lora_state sdc_lora_state; /* per context: what is applied now */
sdc_status sdc_lora_state_create(struct sdc_loader *weights, sdc_lora_state **out);
void sdc_lora_state_free(sdc_lora_state *st); /* restores the weights */

/* Makes exactly these LoRAs active (names resolved in dir; weight = multiplier), undoing the
 * previous set when it differs; a no-op when it is the same (same names, multipliers and
 * mode). n = 0 removes all. Errors name the file and the key (unknown layout, target not in
 * the model, shape or rank mismatch, missing up/down); after an error no LoRA is active.
 * Reports how many tensors each LoRA touched (SDC_LOGI). Names may hold sub-folders but no
 * ".." and no leading '/'. */
typedef struct sdc_lora_request {
    const char *name;
    float multiplier;
} sdc_lora_request;
sdc_status sdc_lora_set_active(sdc_lora_state *st, const char *dir, const sdc_lora_request *loras,
                               int n, sdc_lora_mode mode);

/* Threads for merging (immediately mode); <= 0 (the default): all cores. */
void sdc_lora_set_threads(sdc_lora_state *st, int n_threads);

/* What the last successful sdc_lora_set_active did (for tests and logs). */
typedef struct sdc_lora_stats {
    int n_loras;
    int n_targets;      /* weights with at least one adapter */
    int n_merged;       /* of them, merged into the data */
    int n_runtime;      /* of them, applied at run time (at_runtime, or not mergeable) */
    sdc_lora_mode mode; /* the mode used (auto resolved) */
} sdc_lora_stats;
sdc_lora_stats sdc_lora_get_stats(const sdc_lora_state *st);

#endif
