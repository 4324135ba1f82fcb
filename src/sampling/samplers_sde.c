/* DPM-Solver++(2M) SDE, midpoint variant, with noise from the sampler rng or from a
 * Brownian tree seeded by the rng's first draw (dpm++2m_sde_bt). */
#include "sampling/brownian_tree.h"
#include "sampling/samplers_impl.h"

#include <math.h>
#include <string.h>

static sdc_status run(sdc_smp *s, sdc_btree *bt) {
    float *x = s->x, *den = sdc_smp_buf(s), *old = sdc_smp_buf(s), *noise = sdc_smp_buf(s);
    SDC_SMP_NEED(den && old && noise);
    const float eta = s->eta;
    bool have_old = false;
    float h_last = 0.f;
    for (int i = 0; i < s->steps; i++) {
        float s0 = s->sigmas[i], s1 = s->sigmas[i + 1];
        SDC_SMP_TRY(sdc_smp_model(s, x, s0, den, NULL));
        if (s1 == 0.f) {
            for (int64_t k = 0; k < s->n; k++) x[k] = den[k];
        } else {
            float t = -logf(s0), sn = -logf(s1), h = sn - t, eta_h = eta * h;
            float a = s1 / s0 * expf(-eta_h), b = -expm1f(-h - eta_h);
            for (int64_t k = 0; k < s->n; k++) x[k] = a * x[k] + b * den[k];
            if (have_old) {
                float c = 0.5f * b / (h_last / h);
                for (int64_t k = 0; k < s->n; k++) x[k] += c * (den[k] - old[k]);
            }
            if (eta > 0.f) {
                if (bt)
                    SDC_SMP_TRY(sdc_btree_noise(bt, s0, s1, noise));
                else
                    SDC_SMP_TRY(sdc_smp_noise(s, noise));
                float amp = s1 * sqrtf(-expm1f(-2.f * eta_h));
                for (int64_t k = 0; k < s->n; k++) x[k] += noise[k] * amp;
            }
            h_last = h;
        }
        float *tmp = old;
        old = den;
        den = tmp;
        have_old = true;
        SDC_SMP_TRY(sdc_smp_step_done(s, i));
    }
    return SDC_OK;
}

sdc_status sdc_sample_dpmpp_sde(sdc_smp *s) {
    if (s->p->method != SDC_SAMPLE_DPMPP2M_SDE_BT) return run(s, NULL);
    double smax = 0.0, smin = INFINITY;
    for (int i = 0; i <= s->steps; i++) {
        if (s->sigmas[i] > 0.0f) {
            smax = fmax(smax, (double)s->sigmas[i]);
            smin = fmin(smin, (double)s->sigmas[i]);
        }
    }
    /* sd.cpp returns x untouched when there is no interval to span (one step); we run
     * the steps, which then draw no noise. */
    if (!(smax > smin) || !(s->eta > 0.f)) return run(s, NULL);
    float draw[2];
    SDC_SMP_TRY(sdc_smp_noise_n(s, draw, 2));
    uint64_t seed;
    memcpy(&seed, draw, sizeof(seed)); /* the two floats' bytes, as sd.cpp */
    sdc_btree bt;
    SDC_SMP_TRY(sdc_btree_init(&bt, s->n, smin, smax, seed));
    sdc_status st = run(s, &bt);
    sdc_btree_free(&bt);
    return st;
}
