/* Which type each tensor gets when a model is converted or quantised on load.
 *
 * The target is the first --tensor-type-rules pattern (POSIX extended regex, searched
 * anywhere in the full prefixed name) that matches, else the requested --type. Then our
 * keep rule (docs/quantization.md) may keep the stored type:
 *  - integer tensors, and tensors with a single row (norm weights, biases, mask_token,
 *    1-D tables) always keep their stored type;
 *  - a quantised target needs a row length (ne[0]) that is a multiple of its block:
 *    K-quants whose rows are a multiple of 32 but not of 256 fall back to the legacy
 *    type of about the same size (q2_K/q3_K -> q4_0, q4_K -> q5_0, q5_K -> q5_1,
 *    q6_K -> q8_0); otherwise the stored type is kept;
 *  - without an explicit rule, tensors under 4096 elements and the model's input and
 *    output embeddings (MiniT2I img_embedder, t_embedder, pooled_embedder, final_layer,
 *    pos_embed; matched as whole name components, not substrings) keep their stored
 *    type. An explicit rule overrides this list, never the two structural rules above. */
#ifndef SDC_PIPELINE_QUANT_RULES_H
#define SDC_PIPELINE_QUANT_RULES_H

#include "core/status.h"
#include "core/types.h"

typedef struct sdc_quant_rules sdc_quant_rules;

/* Parses "regex=type,regex=type,..." (NULL or "" gives an empty list). A malformed
 * item, regex or type name is an error naming it. */
sdc_status sdc_quant_rules_parse(const char *spec, sdc_quant_rules **out);
void sdc_quant_rules_free(sdc_quant_rules *r);
int sdc_quant_rules_count(const sdc_quant_rules *r);

/* The type a tensor is written as. `wanted` is the --type id (-1: keep stored types
 * unless a rule matches). rules may be NULL. */
sdc_type sdc_quant_pick_type(const sdc_quant_rules *rules, const char *name, int n_dims,
                             const int64_t *ne, sdc_type stored, int wanted);

/* sd.cpp's rule, used by -M convert for the SD families (SD 1.x/2.x/XL) so both tools
 * write the same types: the target is the first matching rule, else `wanted` (-1: keep);
 * the stored type is kept for integer tensors, a quantised target whose block does not
 * divide ne[0] (no fallback type), names ending in ".bias", ".scale" or ".weight_scale",
 * and names containing any of sd.cpp's input/output markers (img_in., txt_in., time_in.,
 * vector_in., guidance_in., final_layer., x_embedder., t_embedder., y_embedder., pos_embed,
 * context_embedder., time_embed., label_emb., embedding). Everything else converts,
 * 1-D norm weights included. */
sdc_type sdc_quant_pick_type_sdcpp(const sdc_quant_rules *rules, const char *name,
                                   const int64_t *ne, sdc_type stored, int wanted);

/* Tensors sd.cpp drops when it loads a checkpoint (the noise schedule tables but
 * alphas_cumprod, CLIP position_ids, logit_scale, EMA bookkeeping, ...; matched as name
 * prefixes): -M convert leaves them out as sd.cpp's convert does. */
bool sdc_quant_sdcpp_unused(const char *name);

/* True for the types --type and the rules accept (f32, f16, bf16, q4_0 ... q6_K). */
bool sdc_quant_type_is_target(int type);

#endif
