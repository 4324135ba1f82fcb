/* The library context: loaded models, the compute backend and cancellation. */
#ifndef SDC_PIPELINE_CONTEXT_H
#define SDC_PIPELINE_CONTEXT_H

#include <stdatomic.h>

#include "core/backend.h"
#include "models/minit2i.h"
#include "models/t5.h"
#include "sdc.h"
#include "pipeline/context_info.h"
#include "text/tokenizer.h"

struct sdc_context {
    sdc_backend *backend;
    int n_threads;
    struct sdc_loader *weights;
    sdc_weight_source ws;
    int t5_file; /* loader file index of a separate --t5xxl file, -1 if none */
    sdc_minit2i *dit;
    sdc_t5 *t5;
    sdc_tokenizer *tokenizer;
    /* basenames of the model files, for PNG metadata */
    char model_name[256], diffusion_model_name[256], t5xxl_name[256];
    int weight_type;  /* --type (ggml id, -1: as stored), for PNG metadata */
    float flow_shift; /* --flow-shift (NAN: not set), for PNG metadata */
    _Atomic int cancel;
    /* called around every graph node of every model pass (imatrix collection, debugging);
     * NULL costs nothing */
    sdc_eval_fn eval_cb;
    void *eval_user;
    /* weights converted on load (--type): owned here, freed after the loader */
    struct sdc_converted_weights *converted;
};

#endif
