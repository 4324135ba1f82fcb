/* How a model builder finds its weights: a lookup by full (prefixed) tensor name, so
 * that one builder serves single-file checkpoints, split files and GGUF alike. */
#ifndef SDC_MODELS_WEIGHTS_H
#define SDC_MODELS_WEIGHTS_H

#include "core/status.h"
#include "core/tensor.h"

typedef struct sdc_weight_source {
    sdc_tensor *(*find)(void *user, const char *name); /* NULL if absent */
    void *user;
} sdc_weight_source;

/* Finds prefix+name; NULL if absent. */
sdc_tensor *sdc_weight_find(const sdc_weight_source *ws, const char *prefix, const char *name);
/* Like sdc_weight_find, but a missing tensor or one whose ne differs from the expected
 * (ne[i] < 0 = any) is an error naming the tensor and both shapes. */
sdc_status sdc_weight_require(const sdc_weight_source *ws, const char *prefix, const char *name,
                              int ndims, const int64_t *ne, sdc_tensor **out);
/* Copies any float-typed weight to F32 host memory (n = its element count). */
sdc_status sdc_weight_to_f32(const sdc_tensor *w, float *dst);

struct sdc_backend;
/* A converted copy of weight w for kernels that want another type (norms in F32, conv
 * weights in F16): type F32 or F16, shape ne (same element count; NULL: w's), contiguous,
 * in a weights buffer of its own from backend `be` (NULL: host memory). Converted on the
 * host and written through the backend, so a device can hold it. *out is overwritten;
 * free with sdc_buffer_free(out->buffer). The copy keeps w's LoRA link (`lora`): it is made
 * from the weight as loaded and gets the active LoRAs at run time (models/lora.h). */
sdc_status sdc_weight_convert_copy(const sdc_tensor *w, sdc_type type, const int64_t *ne,
                                   struct sdc_backend *be, sdc_tensor *out);

/* The converted copies a model owns (host memory), freed together with the model. */
typedef struct sdc_weight_copies {
    sdc_tensor **t;
    int n, cap;
} sdc_weight_copies;
/* A host copy of w as sdc_weight_convert_copy makes it, kept in c; *out = the copy. */
sdc_status sdc_weight_copies_add(sdc_weight_copies *c, const sdc_tensor *w, sdc_type type,
                                 const int64_t *ne, sdc_tensor **out);
void sdc_weight_copies_free(sdc_weight_copies *c);

#endif
