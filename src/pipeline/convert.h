/* Weight conversion shared by -M convert (sdc_convert, streaming to a file) and --type
 * on load (the context converts the loaded weights in memory). */
#ifndef SDC_PIPELINE_CONVERT_H
#define SDC_PIPELINE_CONVERT_H

#include "core/tensor.h"
#include "core/threadpool.h"
#include "sdc.h"

struct sdc_loader;

/* Writes w (contiguous, any type with a to_float) as `dst_type` rows into dst
 * (sdc_type_row_bytes(dst_type, ne[0]) * rows bytes), rows split over the pool (may be
 * NULL). importance: ne[0] per-column weights for the quantiser, or NULL. */
sdc_status sdc_convert_tensor_data(const sdc_tensor *w, sdc_type dst_type, void *dst,
                                   const float *importance, sdc_threadpool *pool);

/* The importances of weight `name` with ne0 columns from im, in a malloc'ed array
 * (NULL when im has no such entry or its width differs: a warning says so). */
float *sdc_convert_importance(const sdc_imatrix *im, const char *name, int64_t ne0);

/* --type / --tensor-type-rules on load: converts every loaded weight whose picked type
 * differs from the stored one, in place (the tensor's type, strides and data change;
 * the new data is owned by *owned: free with sdc_converted_weights_free). */
typedef struct sdc_converted_weights sdc_converted_weights;
/* Which conversions go to a spill file instead of memory (params "disk"). */
typedef struct sdc_convert_spill {
    bool (*to_spill)(const char *name, void *user);
    void *user;
} sdc_convert_spill;
sdc_status sdc_convert_loaded_weights(struct sdc_loader *l, int type, const char *rules,
                                      const sdc_imatrix *im, int n_threads,
                                      const sdc_convert_spill *spill,
                                      sdc_converted_weights **owned);
void sdc_converted_weights_free(sdc_converted_weights *c);
/* Drops t's resident pages when its conversion lives in the spill file (true), else
 * does nothing (false). */
bool sdc_converted_weights_release(sdc_converted_weights *c, const sdc_tensor *t);

#endif
