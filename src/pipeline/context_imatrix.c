/* --imat-out: the context's eval callback feeds every model pass into an imatrix. */
#include "pipeline/context.h"
#include "pipeline/imatrix.h"

sdc_status sdc_context_collect_imatrix(sdc_context *ctx, sdc_imatrix *im) {
    if (!ctx) return sdc_fail(SDC_ERR_INVALID_ARG, "imatrix: NULL context");
    if (!im) {
        ctx->eval_cb = NULL;
        ctx->eval_user = NULL;
        sdc_context_sync_envs(ctx);
        return SDC_OK;
    }
    sdc_imatrix_set_loader(im, ctx->weights);
    ctx->eval_cb = sdc_imatrix_eval_cb;
    ctx->eval_user = im;
    sdc_context_sync_envs(ctx);
    return SDC_OK;
}
