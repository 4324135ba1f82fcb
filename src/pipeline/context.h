/* The library context: the loaded model (its family's modules), the backends its
 * modules are placed on, and cancellation. */
#ifndef SDC_PIPELINE_CONTEXT_H
#define SDC_PIPELINE_CONTEXT_H

#include <stdatomic.h>

#include "core/backend.h"
#include "pipeline/context_info.h"
#include "pipeline/family.h"
#include "placement/placement.h"
#include "sdc.h"

#define SDC_CTX_MAX_BACKENDS 8

struct sdc_context {
    struct sdc_loader *weights;
    int t5_file; /* loader file index of a separate --t5xxl file, -1 if none */
    sdc_model_family family;
    const struct sdc_family_desc *family_desc; /* the registry's entry */
    sdc_family_modules m;
    /* one backend per device in use (owned); each stage runs on its module's */
    sdc_backend *backends[SDC_CTX_MAX_BACKENDS];
    int backend_device[SDC_CTX_MAX_BACKENDS]; /* registry index of each */
    int n_backends;
    sdc_stage_env env_cond, env_diffusion, env_first_stage;
    sdc_placement placement;
    int n_threads;
    float flow_shift; /* NAN: the family's default */
    /* basenames of the model files, for PNG metadata */
    char model_name[256], diffusion_model_name[256], t5xxl_name[256];
    char description[1280]; /* sdc_context_describe */
    char autofit_plan[512]; /* --auto-fit: the plan line, "" without it */
    int weight_type;        /* --type (ggml id, -1: as stored), for PNG metadata */
    _Atomic int cancel;
    /* called around every graph node of every model pass (imatrix collection, debugging);
     * NULL costs nothing */
    sdc_eval_fn eval_cb;
    void *eval_user;
    /* weights converted on load (--type): owned here, freed after the loader */
    struct sdc_converted_weights *converted;
};

/* The stage environments with the context's current eval callback. */
void sdc_context_sync_envs(sdc_context *ctx);

/* A module's phase of this generation is over: drop its weights' resident pages as its
 * params placement says (default: mapped pages of the text encoders; "disk": also the
 * weights converted on load; "cpu": nothing, they stay resident). */
void sdc_context_end_phase(sdc_context *ctx, sdc_module m);
/* Whether weight `name` belongs to module m (by sd.cpp's internal prefixes). */
bool sdc_module_owns_tensor(sdc_module m, const char *name);

#endif
