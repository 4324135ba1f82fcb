/* Every sampler on golden/sampling's analytic stand-in model, from the stored x_T and
 * with the stored sampler noise replayed, against sd.cpp's trajectories (all 10
 * states). Also: model evaluation sigmas, the draw count, Brownian-tree noise from our
 * std_default generator, the sets' sigma schedules and x_T noise scaling. */
#include "test_util.h"

#include "io/safetensors.h"
#include "sampling/brownian_tree.h"
#include "sampling/schedulers.h"
#include "sampling/samplers.h"

#define NLAT    256
#define NSTEPS  10
#define MAXEVAL 64

typedef enum { SET_EPS, SET_FLOW, SET_MINIT2I } set_kind;

typedef struct {
    set_kind kind;
    float model_sigma[MAXEVAL];
    int n_eval;
    float states[NSTEPS + 1][NLAT];
    /* replayed noise */
    const float *noise;
    int n_draws, next_draw;
    const float *seed_draw;
    bool bad_request;
} run_ctx;

static float stand_in_c(set_kind k, float s) {
    if (k == SET_EPS) return 1.0f / (1.0f + s * s);
    float a = 1.0f - s;
    return k == SET_FLOW ? a / (a * a + s * s) : a / (a * a + 4.0f * s * s);
}

static sdc_status stand_in(void *user, const float *x, float sigma, float *den, float *unc,
                           int64_t n) {
    run_ctx *r = user;
    if (r->n_eval < MAXEVAL) r->model_sigma[r->n_eval] = sigma;
    r->n_eval++;
    float c = stand_in_c(r->kind, sigma), cu = 0.9f * c;
    for (int64_t i = 0; i < n; i++) {
        den[i] = c * x[i];
        if (unc) unc[i] = cu * x[i];
    }
    return SDC_OK;
}

static sdc_status replay(void *user, float *out, int64_t n) {
    run_ctx *r = user;
    if (n == 2 && r->seed_draw && r->next_draw == 0) {
        memcpy(out, r->seed_draw, sizeof(float) * 2);
        r->seed_draw = NULL;
        return SDC_OK;
    }
    if (n != NLAT || r->next_draw >= r->n_draws) {
        r->bad_request = true;
        memset(out, 0, sizeof(float) * (size_t)n);
        return SDC_OK;
    }
    memcpy(out, r->noise + (size_t)r->next_draw * NLAT, sizeof(float) * NLAT);
    r->next_draw++;
    return SDC_OK;
}

static int record_state(void *user, int step, int steps, const float *x) {
    run_ctx *r = user;
    if (step >= 1 && step <= NSTEPS) memcpy(r->states[step], x, sizeof(float) * NLAT);
    return 0;
}

static const float *tensor_f32(sdc_st_file *f, const char *name, int64_t *numel, float **owned) {
    const sdc_st_tensor *t = sdc_st_find(f, name);
    *owned = NULL;
    if (!t) return NULL;
    *numel = sdc_st_numel(t);
    *owned = malloc(sizeof(float) * (size_t)*numel);
    sdc_st_to_f32(t, *owned);
    return *owned;
}

static double worst_overall;
static int runs_checked, live_checked, kdiff_checked;
static double kdiff_worst;
static sdc_st_file *kdiff_file; /* k-diffusion's trajectories, an independent reference */

/* sd.cpp differs from k-diffusion by design here (LMS history shift 1; flow-specific
 * ancestral steps), see golden/sampling/README.md. */
static bool kdiff_by_design(const char *set, const char *run) {
    if (strcmp(run, "lms") == 0) return true;
    return strcmp(set, "flow_sd3_discrete10") == 0 &&
           (strcmp(run, "euler_a") == 0 || strcmp(run, "dpm++2s_a") == 0);
}

/* max over states 1..10 of max|a-b| / max|b|, the README's metric */
static double kdiff_max_rel(const float states[][NLAT], const float *ref) {
    double worst = 0;
    for (int k = 1; k <= NSTEPS; k++) {
        double mref = 0, mdiff = 0;
        for (int i = 0; i < NLAT; i++) {
            double b = ref[(size_t)k * NLAT + i];
            mref = fmax(mref, fabs(b));
            mdiff = fmax(mdiff, fabs((double)states[k][i] - b));
        }
        worst = fmax(worst, mref > 0 ? mdiff / mref : mdiff);
    }
    return worst;
}

/* rel L2 and max-rel of one state; NaN positions must agree */
static void compare_state(const char *label, int k, const float *got, const float *ref, double tol,
                          double *worst_l2, double *worst_mr) {
    double ref_d[NLAT], maxref = 0, maxdiff = 0;
    bool ref_nan = false, nan_match = true;
    for (int i = 0; i < NLAT; i++) {
        ref_d[i] = ref[i];
        if (isnan(ref[i]) != isnan(got[i])) nan_match = false;
        if (isnan(ref[i])) ref_nan = true;
    }
    if (ref_nan) {
        CHECK(nan_match, "%s state %d: NaN pattern differs", label, k);
        return;
    }
    for (int i = 0; i < NLAT; i++) {
        maxref = fmax(maxref, fabs(ref_d[i]));
        maxdiff = fmax(maxdiff, fabs((double)got[i] - ref_d[i]));
    }
    double l2 = t_rel_l2(got, ref_d, NLAT), mr = maxref > 0 ? maxdiff / maxref : maxdiff;
    if (isnan(l2)) l2 = INFINITY;
    CHECK(l2 <= tol, "%s state %d: rel L2 %.3g > %.3g", label, k, l2, tol);
    if (l2 > *worst_l2) *worst_l2 = l2;
    if (mr > *worst_mr) *worst_mr = mr;
}

static void run_set(const char *file, const char *set_name, set_kind kind) {
    sdc_st_file *f = NULL;
    CHECK(sdc_st_open(file, &f) == SDC_OK, "open %s: %s", file, sdc_last_error());
    if (!f) return;
    int64_t cnt;
    float *own_sig, *own_xt, *own_n;
    const float *sigmas = tensor_f32(f, "sigmas", &cnt, &own_sig);
    const float *x_T = tensor_f32(f, "x_T", &cnt, &own_xt);
    const float *n0 = tensor_f32(f, "n", &cnt, &own_n);
    CHECK(sigmas && x_T && n0, "%s: missing sigmas/x_T/n", set_name);
    if (!sigmas || !x_T || !n0) goto done;

    /* the set's schedule and x_T come from our denoiser too */
    sdc_denoiser d;
    sdc_denoiser_init(&d, kind == SET_EPS    ? SDC_PRED_EPS
                          : kind == SET_FLOW ? SDC_PRED_SD3_FLOW
                                             : SDC_PRED_MINIT2I_FLOW);
    sdc_schedule_params sp;
    sdc_schedule_params_init(&sp);
    sp.steps = NSTEPS;
    sp.scheduler = kind == SET_EPS ? SDC_SCHED_KARRAS : SDC_SCHED_DISCRETE;
    float sg[NSTEPS + 1], xt[NLAT];
    int len;
    CHECK(sdc_schedule_sigmas(&d, &sp, sg, &len) == SDC_OK && len == NSTEPS + 1, "schedule");
    CHECK(t_max_abs_diff(sg, sigmas, NSTEPS + 1) <= 1e-6 * sigmas[0], "%s: schedule differs",
          set_name);
    sdc_denoiser_noise_scaling(&d, sigmas[0], n0, NULL, xt, NLAT);
    CHECK(t_max_abs_diff(xt, x_T, NLAT) == 0, "%s: x_T differs", set_name);

    for (int ti = 0; ti < sdc_st_count(f); ti++) {
        const char *tn = sdc_st_at(f, ti)->name;
        size_t L = strlen(tn);
        if (L < 3 || strcmp(tn + L - 2, ".x") != 0) continue;
        char run[64], method[64], key[96];
        snprintf(run, sizeof run, "%.*s", (int)(L - 2), tn);
        snprintf(method, sizeof method, "%s", run);
        char *at = strchr(method, '@');
        if (at) *at = 0;
        sdc_sampler_params p;
        sdc_sampler_params_init(&p);
        CHECK(sdc_sample_method_from_name(method, &p.method) == SDC_OK, "method %s", method);
        p.eta = 1.0f;
        if (at && strcmp(at + 1, "eta0") == 0) p.eta = 0.0f;
        if (at && strcmp(at + 1, "shift0") == 0) p.lms_shift = 0;
        p.flow = sdc_denoiser_is_flow(&d);

        static run_ctx r;
        memset(&r, 0, sizeof r);
        r.kind = kind;
        int64_t nx, nn = 0, nms, nsd;
        float *own_x, *own_noise, *own_ms, *own_sd;
        const float *ref_x = tensor_f32(f, tn, &nx, &own_x);
        snprintf(key, sizeof key, "%s.noise", run);
        r.noise = tensor_f32(f, key, &nn, &own_noise);
        r.n_draws = r.noise ? (int)(nn / NLAT) : 0;
        snprintf(key, sizeof key, "%s.model_sigma", run);
        const float *ms = tensor_f32(f, key, &nms, &own_ms);
        snprintf(key, sizeof key, "%s.seed_draw", run);
        r.seed_draw = tensor_f32(f, key, &nsd, &own_sd);

        sdc_rng *rng = NULL;
        sdc_rng_create_custom(replay, &r, &rng);
        p.rng = rng;
        p.on_step = record_state;
        p.step_user = &r;
        float x[NLAT];
        memcpy(x, x_T, sizeof x);
        sdc_status st = sdc_sample(&p, sigmas, NSTEPS + 1, stand_in, &r, x, NLAT);
        CHECK(st == SDC_OK, "%s/%s: %s", set_name, run, sdc_last_error());
        CHECK(!r.bad_request, "%s/%s: unexpected noise request", set_name, run);
        CHECK(r.next_draw == r.n_draws, "%s/%s: used %d of %d noise draws", set_name, run,
              r.next_draw, r.n_draws);
        CHECK(ms && r.n_eval == nms, "%s/%s: %d model calls, expected %lld", set_name, run,
              r.n_eval, (long long)nms);
        if (ms && r.n_eval == nms) {
            bool same = true;
            for (int k = 0; k < nms && k < MAXEVAL; k++)
                same &= fabsf(r.model_sigma[k] - ms[k]) <= 1e-6f * fmaxf(1.0f, fabsf(ms[k]));
            CHECK(same, "%s/%s: model sigmas differ", set_name, run);
        }
        char label[128];
        snprintf(label, sizeof label, "%s/%s", set_name, run);
        double wl2 = 0, wmr = 0;
        for (int k = 1; k <= NSTEPS; k++) {
            double tol = 1e-5; /* README suggestion; the issue asks for 1e-4 */
            if (kind == SET_EPS && strcmp(run, "tcd") == 0 && k >= 9) tol = 5e-4;
            compare_state(label, k, r.states[k], ref_x + (size_t)k * NLAT, tol, &wl2, &wmr);
        }
        CHECK(memcmp(x, r.states[NSTEPS], sizeof x) == 0, "%s: final state != last step", label);
        printf("  %-40s evals %2d draws %d  max rel L2 %.2e  max rel %.2e\n", label, r.n_eval,
               r.next_draw, wl2, wmr);
        if (wl2 > worst_overall) worst_overall = wl2;
        runs_checked++;

        snprintf(key, sizeof key, "%s.%s.kdiff_x", set_name, run);
        int64_t nk;
        float *own_k = NULL;
        const float *kx = kdiff_file ? tensor_f32(kdiff_file, key, &nk, &own_k) : NULL;
        if (kx && !kdiff_by_design(set_name, run)) {
            double e = kdiff_max_rel((const float(*)[NLAT])r.states, kx);
            CHECK(e <= 1e-5, "%s vs k-diffusion: max rel %.3g", label, e);
            kdiff_worst = fmax(kdiff_worst, e);
            kdiff_checked++;
        }
        free(own_k);

        /* Stochastic runs again with a live generator instead of the replay: sd.cpp's
         * MT19937 seeded 42, so the draw count and order must match on their own. */
        if (r.n_draws > 0 || own_sd) {
            static run_ctx r2;
            memset(&r2, 0, sizeof r2);
            r2.kind = kind;
            sdc_rng *live;
            sdc_rng_create(SDC_RNG_CPU_SDCPP, 42, &live);
            p.rng = live;
            p.step_user = &r2;
            memcpy(x, x_T, sizeof x);
            CHECK(sdc_sample(&p, sigmas, NSTEPS + 1, stand_in, &r2, x, NLAT) == SDC_OK, "%s live",
                  label);
            double l2 = 0, mr = 0;
            char live_label[160];
            snprintf(live_label, sizeof live_label, "%s (live rng)", label);
            for (int k = 1; k <= NSTEPS; k++) {
                double tol = (kind == SET_EPS && strcmp(run, "tcd") == 0 && k >= 9) ? 5e-4 : 1e-5;
                compare_state(live_label, k, r2.states[k], ref_x + (size_t)k * NLAT, tol, &l2, &mr);
            }
            live_checked++;
            sdc_rng_free(live);
        }
        sdc_rng_free(rng);
        free(own_x);
        free(own_noise);
        free(own_ms);
        free(own_sd);
    }
done:
    free(own_sig);
    free(own_xt);
    free(own_n);
    sdc_st_close(f);
}

/* The Brownian tree built on our std_default generator must reproduce sd.cpp's
 * stored tree noise (libstdc++ minstd_rand0 + normal_distribution<float>). */
static void test_brownian_tree(const char *file, const char *set_name) {
    sdc_st_file *f = NULL;
    if (sdc_st_open(file, &f) != SDC_OK) return;
    int64_t c1, c2, c3;
    float *sig, *sd, *bn;
    tensor_f32(f, "sigmas", &c1, &sig);
    tensor_f32(f, "dpm++2m_sde_bt.seed_draw", &c2, &sd);
    tensor_f32(f, "dpm++2m_sde_bt.bt_noise", &c3, &bn);
    CHECK(sig && sd && bn, "%s: bt tensors missing", set_name);
    if (sig && sd && bn) {
        double smin = INFINITY, smax = 0;
        for (int i = 0; i <= NSTEPS; i++)
            if (sig[i] > 0) smin = fmin(smin, sig[i]), smax = fmax(smax, sig[i]);
        uint64_t seed;
        memcpy(&seed, sd, 8);
        sdc_btree bt;
        CHECK(sdc_btree_init(&bt, NLAT, smin, smax, seed) == SDC_OK, "bt init");
        float out[NLAT];
        double worst = 0;
        int exact = 0, draws = (int)(c3 / NLAT);
        for (int i = 0; i < draws; i++) {
            sdc_btree_noise(&bt, sig[i], sig[i + 1], out);
            double e = t_max_abs_diff(out, bn + (size_t)i * NLAT, NLAT);
            exact += e == 0;
            worst = fmax(worst, e);
        }
        CHECK(worst <= 1e-5, "%s: Brownian tree noise max err %.3g", set_name, worst);
        printf("  %-40s %d/%d draws bit-identical, max abs err %.3g\n", set_name, exact, draws,
               worst);
        sdc_btree_free(&bt);
    }
    free(sig);
    free(sd);
    free(bn);
    sdc_st_close(f);
}

static sdc_status never(void *u, const float *x, float s, float *d, float *un, int64_t n) {
    (void)u, (void)x, (void)s, (void)un;
    memcpy(d, x, sizeof(float) * (size_t)n);
    return SDC_OK;
}

static int cancel_at_2(void *user, int step, int steps, const float *x) {
    return step == 2;
}

static void test_errors(void) {
    sdc_sample_method m;
    CHECK(sdc_sample_method_from_name("dpm++2m_sde_bt", &m) == SDC_OK &&
              m == SDC_SAMPLE_DPMPP2M_SDE_BT,
          "name lookup");
    CHECK(sdc_sample_method_from_name("ddim", &m) == SDC_ERR_INVALID_ARG, "unknown accepted");
    CHECK(strstr(sdc_last_error(), "euler_a_cfg_pp") && strstr(sdc_last_error(), "lms"),
          "message lists names: %s", sdc_last_error());
    sdc_sampler_params p;
    sdc_sampler_params_init(&p);
    p.method = SDC_SAMPLE_EULER;
    float x[4] = {1, 2, 3, 4}, sg[3] = {2.0f, 1.0f, 0.0f};
    CHECK(sdc_sample(&p, sg, 1, never, NULL, x, 4) == SDC_ERR_INVALID_ARG, "1 sigma accepted");
    float bad[3] = {2.0f, NAN, 0.0f};
    CHECK(sdc_sample(&p, bad, 3, never, NULL, x, 4) == SDC_ERR_INVALID_ARG, "NaN sigma accepted");
    p.method = SDC_SAMPLE_EULER_A; /* needs noise, no rng given */
    CHECK(sdc_sample(&p, sg, 3, never, NULL, x, 4) == SDC_ERR_INVALID_ARG, "missing rng accepted");
    p.method = SDC_SAMPLE_EULER;
    p.on_step = cancel_at_2;
    float s4[5] = {4, 3, 2, 1, 0};
    CHECK(sdc_sample(&p, s4, 5, never, NULL, x, 4) == SDC_ERR_CANCELLED, "cancel ignored");
    CHECK(sdc_sampler_default_eta(SDC_SAMPLE_EULER_A) == 1.0f &&
              sdc_sampler_default_eta(SDC_SAMPLE_EULER_GE) == 0.0f &&
              sdc_sampler_default_eta(SDC_SAMPLE_TCD) == 0.0f,
          "default eta");
}

int main(void) {
    test_errors();
    CHECK(sdc_st_open(GOLDEN("sampling/kdiffusion_reference.safetensors"), &kdiff_file) == SDC_OK,
          "open kdiffusion_reference: %s", sdc_last_error());
    run_set(GOLDEN("sampling/trajectories_eps_karras10.safetensors"), "eps_karras10", SET_EPS);
    run_set(GOLDEN("sampling/trajectories_flow_sd3_discrete10.safetensors"), "flow_sd3_discrete10",
            SET_FLOW);
    run_set(GOLDEN("sampling/trajectories_minit2i10.safetensors"), "minit2i10", SET_MINIT2I);
    test_brownian_tree(GOLDEN("sampling/trajectories_eps_karras10.safetensors"), "bt eps_karras10");
    test_brownian_tree(GOLDEN("sampling/trajectories_flow_sd3_discrete10.safetensors"),
                       "bt flow_sd3_discrete10");
    printf("%d runs (%d also with a live rng), worst rel L2 %.3g\n", runs_checked, live_checked,
           worst_overall);
    printf("k-diffusion reference: %d comparable runs, max rel %.3g\n", kdiff_checked, kdiff_worst);
    CHECK(kdiff_checked >= 25, "only %d k-diffusion comparisons", kdiff_checked);
    sdc_st_close(kdiff_file);
    CHECK(runs_checked == 81, "expected 81 runs, checked %d", runs_checked);
    TEST_MAIN_END();
}
