/* Sampling stage: the denoiser adapter around the family's diffusion model (scalings,
 * CFG as one batch of 2, inpainting blend, finiteness checks), driven by the samplers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/log.h"
#include "pipeline/stages.h"
#include "sampling/guidance.h"

typedef struct sample_state {
    sdc_context *ctx;
    const sdc_generate_params *p;
    const sdc_sample_job *job;
    sdc_cfg_params cfg;
    float *batch_x, *batch_out; /* [2][n] and [3][n] (cond, uncond, image-uncond) */
    float *x;                   /* the sampler's state (updated in place) */
    float *known;               /* inpainting scratch [n] */
    float *denoised;            /* last x0 prediction, for previews (NULL: no preview) */
    int step;                   /* steps completed */
    double step_start;
} sample_state;

static sdc_status not_finite(const sample_state *st, const char *what, const float *v, int64_t n) {
    int64_t bad = sdc_first_non_finite(v, n);
    if (bad < 0) return SDC_OK;
    return sdc_fail(SDC_ERR_FORMAT,
                    "step %d of %d: %s has a non-finite value (%g at element %lld); stopping "
                    "instead of writing a broken image",
                    st->step + 1, st->job->n_sigmas - 1, what, (double)v[bad], (long long)bad);
}

static sdc_status denoise(void *user, const float *x, float sigma, float *denoised,
                          float *uncond_out, int64_t n) {
    sample_state *st = user;
    const sdc_sample_job *job = st->job;
    sdc_context *ctx = st->ctx;
    if (atomic_load(&ctx->cancel)) return sdc_fail(SDC_ERR_CANCELLED, "generation cancelled");
    float t, c_skip, c_out, c_in;
    sdc_denoiser_model_inputs(job->den, sigma, 0, &t, &c_skip, &c_out, &c_in);
    bool active = sdc_cfg_active(&st->cfg, sigma) || uncond_out;
    bool cfg = job->uncond && active, img = job->img_uncond && active;
    int B = cfg ? 2 : 1;
    for (int b = 0; b < B; b++) {
        float *bx = st->batch_x + b * n;
        if (c_in == 1.0f)
            memcpy(bx, x, (size_t)n * sizeof(float));
        else
            for (int64_t i = 0; i < n; i++) bx[i] = x[i] * c_in;
    }
    const sdc_cond *conds[2] = {job->cond, job->uncond};
    const sdc_diffusion *dm = &ctx->m.diffusion;
    sdc_status s = dm->forward(dm->self, &ctx->env_diffusion, st->batch_x, B, job->width,
                               job->height, t, conds, st->batch_out);
    /* sd.cpp's third pass: the negative prompt with the image latent zeroed */
    float *iu = img ? st->batch_out + 2 * n : NULL;
    if (s == SDC_OK && img)
        s = dm->forward(dm->self, &ctx->env_diffusion, st->batch_x, 1, job->width, job->height, t,
                        &job->img_uncond, iu);
    if (s != SDC_OK) return s;
    if ((s = not_finite(st, "the diffusion model's output (conditional pass)", st->batch_out, n)) !=
            SDC_OK ||
        (cfg && (s = not_finite(st, "the diffusion model's output (unconditional pass)",
                                st->batch_out + n, n)) != SDC_OK) ||
        (img && (s = not_finite(st, "the diffusion model's output (image-unconditional pass)", iu,
                                n)) != SDC_OK))
        return s;
    float *c = st->batch_out, *u = cfg ? st->batch_out + n : NULL;
    if (!(c_skip == 0.0f && c_out == 1.0f)) { /* MiniT2I's output is x0 itself */
        sdc_denoiser_combine(c_skip, c_out, x, c, c, n);
        if (u) sdc_denoiser_combine(c_skip, c_out, x, u, u, n);
        if (iu) sdc_denoiser_combine(c_skip, c_out, x, iu, iu, n);
    }
    sdc_cfg_combine(&st->cfg, sigma, c, u, iu, denoised, n);
    if (job->keep && job->keep_x0) { /* sd.cpp: kept cells of x0 are the init latent */
        int64_t plane = (int64_t)job->shape.width * job->shape.height;
        for (int64_t i = 0; i < n; i++) {
            float k = job->keep[i % plane];
            if (k > 0.0f) denoised[i] = k * job->init[i] + (1.0f - k) * denoised[i];
        }
    }
    if (st->denoised) memcpy(st->denoised, denoised, (size_t)n * sizeof(float));
    if (uncond_out) memcpy(uncond_out, sdc_cfg_pp_base(c, u, iu), (size_t)n * sizeof(float));
    char what[96];
    snprintf(what, sizeof what, "the guided prediction (cfg scale %g)", (double)job->cfg_scale);
    return not_finite(st, what, denoised, n);
}

/* Inpainting: cells to keep are reset to the init latent noised to the next sigma. */
static void blend_known(sample_state *st, int step) {
    const sdc_sample_job *job = st->job;
    if (!job->keep || job->keep_x0) return;
    int64_t n = job->shape.n, plane = (int64_t)job->shape.width * job->shape.height;
    sdc_denoiser_noise_scaling(job->den, job->sigmas[step], job->noise, job->init, st->known, n);
    for (int64_t i = 0; i < n; i++) {
        float k = job->keep[i % plane];
        if (k <= 0.0f) continue;
        st->x[i] = k * st->known[i] + (1.0f - k) * st->x[i];
    }
}

static int on_step(void *user, int step, int steps, const float *x) {
    sample_state *st = user;
    (void)x;
    st->step = step;
    blend_known(st, step);
    const sdc_generate_params *p = st->p;
    const sdc_latent_shape *sh = &st->job->shape;
    if (p->latent)
        p->latent(step, steps, st->x, sh->channels * sh->frames, sh->width, sh->height,
                  p->latent_user);
    int every = p->preview_interval > 0 ? p->preview_interval : 1;
    if (p->preview && (step % every == 0 || step == steps)) {
        sdc_image img = {0};
        if (sdc_stage_preview(st->ctx, st->denoised, st->job->width, st->job->height, &img) ==
            SDC_OK)
            p->preview(step, steps, &img, p->preview_user);
        free(img.data);
    }
    double t = sdc_now_seconds();
    if (p->progress) p->progress(step, steps, t - st->step_start, p->progress_user);
    st->step_start = t;
    return atomic_load(&st->ctx->cancel);
}

sdc_status sdc_stage_sample(sdc_context *ctx, const sdc_generate_params *p,
                            const sdc_sample_job *job, float *x) {
    int64_t n = job->shape.n;
    sample_state st = {.ctx = ctx, .p = p, .job = job, .x = x};
    sdc_cfg_params_init(&st.cfg);
    st.cfg.txt_cfg = job->cfg_scale;
    st.cfg.img_cfg = job->img_uncond ? job->img_cfg_scale : 1.0f;
    st.batch_x = malloc((size_t)n * 2 * sizeof(float));
    st.batch_out = malloc((size_t)n * 3 * sizeof(float));
    st.known = job->keep && !job->keep_x0 ? malloc((size_t)n * sizeof(float)) : NULL;
    st.denoised = p->preview ? malloc((size_t)n * sizeof(float)) : NULL;
    if (!st.batch_x || !st.batch_out || (job->keep && !job->keep_x0 && !st.known) ||
        (p->preview && !st.denoised)) {
        free(st.batch_x), free(st.batch_out), free(st.known), free(st.denoised);
        return sdc_fail(SDC_ERR_NO_MEMORY, "sampling: out of memory");
    }
    sdc_sampler_params sp;
    sdc_sampler_params_init(&sp);
    sp.method = job->method;
    sp.eta = job->eta;
    sp.flow = sdc_denoiser_is_flow(job->den);
    sp.on_step = on_step;
    sp.step_user = &st;
    sp.rng = job->rng;
    const sdc_latent_shape *sh = &job->shape;
    if (p->latent)
        p->latent(0, job->n_sigmas - 1, x, sh->channels * sh->frames, sh->width, sh->height,
                  p->latent_user);
    st.step_start = sdc_now_seconds();
    sdc_status s = sdc_sample(&sp, job->sigmas, job->n_sigmas, denoise, &st, x, n);
    if (s == SDC_OK && atomic_load(&ctx->cancel))
        s = sdc_fail(SDC_ERR_CANCELLED, "generation cancelled");
    if (s == SDC_OK) s = not_finite(&st, "the final latent", x, n);
    if (s == SDC_OK)
        sdc_denoiser_inverse_noise_scaling(job->den, job->sigmas[job->n_sigmas - 1], x, n);
    free(st.batch_x);
    free(st.batch_out);
    free(st.known);
    free(st.denoised);
    return s;
}
