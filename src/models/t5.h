/* T5 encoder (encoder only, HF T5EncoderModel semantics): flan-t5 and T5-XXL from the
 * same code, configuration detected from the weights. */
#ifndef SDC_MODELS_T5_H
#define SDC_MODELS_T5_H

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_t5_config {
    int n_layers, d_model, n_heads, d_kv, d_ff, vocab;
    int n_buckets, max_distance; /* relative attention: 32 buckets, distance 128 */
    bool gated;                  /* gated-GELU FFN (wi_0, wi_1) vs ReLU (wi) */
} sdc_t5_config;

typedef struct sdc_t5 sdc_t5;

/* prefix: e.g. "text_encoders.t5xxl.transformer." */
sdc_status sdc_t5_load(const sdc_weight_source *ws, const char *prefix, sdc_t5 **out);
void sdc_t5_free(sdc_t5 *m);
const sdc_t5_config *sdc_t5_get_config(const sdc_t5 *m);

/* Encodes n token ids (all real: padding never needs computing, since pads are masked
 * as keys and replaced downstream) into out[n * d_model] (row per token). */
sdc_status sdc_t5_encode(sdc_t5 *m, sdc_backend *be, const int32_t *ids, int n, float *out,
                         sdc_eval_fn cb, void *cb_user);

/* HF bidirectional relative-position bucket of (key - query). */
int sdc_t5_relative_bucket(int relative_position, int n_buckets, int max_distance);

#endif
