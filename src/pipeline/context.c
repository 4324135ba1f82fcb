/* Context creation: open the model files into one name map, detect the architecture
 * from tensor names, load the text encoder and its tokenizer. */
#include "pipeline/context.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"
#include "core/threadpool.h"
#include "cpu/quant_dispatch.h"
#include "io/model_loader.h"
#include "pipeline/convert.h"
#include "pipeline/tokenizer_source.h"
#include "sampling/defaults.h"
#include "sampling/samplers.h"
#include "sampling/schedulers.h"

#define PREFIX_DIT "model.diffusion_model."
#define PREFIX_T5  "text_encoders.t5xxl.transformer."

void sdc_context_params_init(sdc_context_params *p) {
    memset(p, 0, sizeof *p);
    p->struct_size = sizeof *p;
    p->n_threads = -1;
    p->weight_type = -1;
    p->flow_shift = NAN;
}

static sdc_tensor *find_weight(void *user, const char *name) {
    return sdc_loader_find((sdc_loader *)user, name);
}

static const char *base_name(const char *path) {
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static sdc_status add_file(sdc_context *ctx, const char *path, const char *prefix, char *name,
                           size_t name_size) {
    struct stat st;
    if (stat(path, &st) != 0) return sdc_fail(SDC_ERR_IO, "%s: no such file", path);
    sdc_status s = sdc_loader_add_file(ctx->weights, path, prefix);
    if (s == SDC_OK) snprintf(name, name_size, "%s", base_name(path));
    return s;
}

sdc_status sdc_context_create(const sdc_context_params *p, sdc_context **out) {
    *out = NULL;
    if (!p) return sdc_fail(SDC_ERR_INVALID_ARG, "context: NULL parameters");
    sdc_cpu_quant_init(); /* weights are dequantised while loading, before the backend exists */
    if (!p->model_path && !p->diffusion_model_path)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "no model given: pass -m (full checkpoint) or --diffusion-model");
    sdc_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return sdc_fail(SDC_ERR_NO_MEMORY, "context: out of memory");
    sdc_status s = sdc_loader_create(&ctx->weights);
    if (s != SDC_OK) goto fail;
    if (p->model_path &&
        (s = add_file(ctx, p->model_path, "", ctx->model_name, sizeof ctx->model_name)) != SDC_OK)
        goto fail;
    if (p->diffusion_model_path &&
        (s = add_file(ctx, p->diffusion_model_path, PREFIX_DIT, ctx->diffusion_model_name,
                      sizeof ctx->diffusion_model_name)) != SDC_OK)
        goto fail;
    ctx->t5_file = -1;
    if (p->t5xxl_path) {
        if ((s = add_file(ctx, p->t5xxl_path, PREFIX_T5, ctx->t5xxl_name,
                          sizeof ctx->t5xxl_name)) != SDC_OK)
            goto fail;
        ctx->t5_file = sdc_loader_file_count(ctx->weights) - 1;
    }
    /* --type / --tensor-type-rules: the loaded weights are converted into our own memory,
     * dropping each source tensor's file pages once read (release_pages only ever drops
     * file-mapped pages, never converted data) */
    if ((s = sdc_convert_loaded_weights(ctx->weights, p->weight_type, p->tensor_type_rules,
                                        p->imatrix, p->n_threads, &ctx->converted)) != SDC_OK)
        goto fail;
    ctx->ws.find = find_weight;
    ctx->ws.user = ctx->weights;

    if (!sdc_minit2i_detect(&ctx->ws, PREFIX_DIT)) {
        s = sdc_fail(SDC_ERR_UNSUPPORTED,
                     "unknown diffusion model: no MiniT2I tensors ('%smodel.net.img_embedder.*') "
                     "found; this build supports MiniT2I",
                     PREFIX_DIT);
        goto fail;
    }
    if ((s = sdc_minit2i_load(&ctx->ws, PREFIX_DIT, &ctx->dit)) != SDC_OK) goto fail;
    if (!p->t5xxl_path && !p->model_path) {
        s = sdc_fail(SDC_ERR_INVALID_ARG, "MiniT2I needs its T5 text encoder: pass --t5xxl");
        goto fail;
    }
    if ((s = sdc_t5_load(&ctx->ws, PREFIX_T5, &ctx->t5)) != SDC_OK) goto fail;
    const char *tok_near = p->t5xxl_path ? p->t5xxl_path : p->model_path;
    if ((s = sdc_load_t5_tokenizer(ctx->weights, tok_near, p->t5_tokenizer_path,
                                   &ctx->tokenizer)) != SDC_OK)
        goto fail;
    ctx->n_threads = p->n_threads > 0 ? p->n_threads : sdc_cpu_count();
    ctx->backend = sdc_backend_cpu_create(ctx->n_threads);
    if (!ctx->backend) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "cannot create the CPU backend");
        goto fail;
    }
    const sdc_minit2i_config *c = sdc_minit2i_get_config(ctx->dit);
    SDC_LOGI("minit2i: hidden %d, heads %d x %d, %d double blocks, %d text blocks, patch %d; "
             "t5: %d layers, d_model %d",
             c->hidden, c->heads, c->head_dim, c->n_double, c->n_preamble, c->patch,
             sdc_t5_get_config(ctx->t5)->n_layers, sdc_t5_get_config(ctx->t5)->d_model);
    *out = ctx;
    return SDC_OK;
fail:
    sdc_context_free(ctx);
    return s;
}

void sdc_context_free(sdc_context *ctx) {
    if (!ctx) return;
    sdc_backend_free(ctx->backend);
    sdc_minit2i_free(ctx->dit);
    sdc_t5_free(ctx->t5);
    sdc_tokenizer_free(ctx->tokenizer);
    sdc_loader_free(ctx->weights);
    sdc_converted_weights_free(ctx->converted);
    free(ctx);
}

void sdc_cancel(sdc_context *ctx) {
    if (ctx) atomic_store(&ctx->cancel, 1);
}

const char *sdc_context_model_name(const sdc_context *ctx) {
    return ctx ? ctx->model_name : "";
}
const char *sdc_context_diffusion_model_name(const sdc_context *ctx) {
    return ctx ? ctx->diffusion_model_name : "";
}
const char *sdc_context_t5xxl_name(const sdc_context *ctx) {
    return ctx ? ctx->t5xxl_name : "";
}

const char *sdc_context_sampler_name(const sdc_context *ctx, const sdc_generate_params *p) {
    (void)ctx; /* MiniT2I is the only family so far */
    if (p && p->sampling_method && *p->sampling_method) return p->sampling_method;
    return sdc_sample_method_name(sdc_default_sample_method(SDC_FAMILY_MINIT2I));
}

const char *sdc_context_scheduler_name(const sdc_context *ctx, const sdc_generate_params *p) {
    (void)ctx;
    if (p && p->scheduler && *p->scheduler) return p->scheduler;
    sdc_sample_method m = sdc_default_sample_method(SDC_FAMILY_MINIT2I);
    if (p && p->sampling_method) sdc_sample_method_from_name(p->sampling_method, &m);
    return sdc_sched_name(sdc_default_scheduler(SDC_FAMILY_MINIT2I, SDC_PRED_MINIT2I_FLOW, m));
}
