/* Sigma schedules against golden/sampling/schedules.safetensors (sd.cpp 97d29908):
 * every scheduler x denoiser x steps, the resolution-dependent schedulers at several
 * image_seq_len, the denoisers' sigma range and SD1 table. Relative error <= 1e-5,
 * NaN entries must be NaN; AYS on flow models (zeros in sd.cpp) must be refused. */
#include "test_util.h"

#include "io/safetensors.h"
#include "sampling/schedulers.h"

static const float REL_TOL = 1e-5f;

typedef struct {
    const char *name;
    sdc_prediction pred;
    float shift;
    sdc_ays_table ays;
} den_spec;

static const den_spec dens[] = {
    {"sd1", SDC_PRED_EPS, 0, SDC_AYS_SD1},
    {"sdxl", SDC_PRED_EPS, 0, SDC_AYS_SDXL},
    {"svd", SDC_PRED_EPS, 0, SDC_AYS_SVD},
    {"edm_v", SDC_PRED_EDM_V, 0, SDC_AYS_SDXL},
    {"sd3_flow_shift3", SDC_PRED_SD3_FLOW, 3.0f, SDC_AYS_NONE},
    {"flux_shift1.15", SDC_PRED_FLUX_FLOW, 1.15f, SDC_AYS_NONE},
    {"flux_shift1.0", SDC_PRED_FLUX_FLOW, 1.0f, SDC_AYS_NONE},
    {"minit2i", SDC_PRED_MINIT2I_FLOW, 0, SDC_AYS_NONE},
};

static const den_spec *find_den(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof(dens) / sizeof(dens[0]); i++)
        if (strlen(dens[i].name) == len && strncmp(dens[i].name, name, len) == 0) return &dens[i];
    return NULL;
}

static void make_den(const den_spec *ds, sdc_denoiser *d) {
    sdc_denoiser_init(d, ds->pred);
    if (ds->shift > 0) sdc_denoiser_set_flow_shift(d, ds->shift);
}

/* max relative error; NaN must pair with NaN */
static double rel_err(const float *got, const float *ref, int n, bool *nan_ok) {
    double worst = 0;
    *nan_ok = true;
    for (int i = 0; i < n; i++) {
        if (isnan(ref[i]) || isnan(got[i])) {
            if (!(isnan(ref[i]) && isnan(got[i]))) *nan_ok = false;
            continue;
        }
        double scale = fabs((double)ref[i]) > 1e-30 ? fabs((double)ref[i]) : 1e-30;
        double e = fabs((double)got[i] - (double)ref[i]) / scale;
        if (ref[i] == 0.0f) e = got[i] == 0.0f ? 0 : INFINITY;
        if (e > worst) worst = e;
    }
    return worst;
}

static int n_cases, n_refused;
static double worst_all;
static char worst_name[128];

static void check_case(const char *name, const sdc_denoiser *d, sdc_schedule_params *sp,
                       const float *ref, int ref_len) {
    bool all_zero = true;
    for (int i = 0; i < ref_len; i++) all_zero &= ref[i] == 0.0f;
    float got[64];
    int len = 0;
    sdc_status st = sdc_schedule_sigmas(d, sp, got, &len);
    if (all_zero && sp->scheduler == SDC_SCHED_AYS) {
        CHECK(st == SDC_ERR_UNSUPPORTED, "%s: AYS without a table should be refused", name);
        n_refused++;
        return;
    }
    CHECK(st == SDC_OK, "%s: %s", name, sdc_last_error());
    CHECK(len == ref_len, "%s: length %d vs %d", name, len, ref_len);
    if (st != SDC_OK || len != ref_len) return;
    bool nan_ok;
    double e = rel_err(got, ref, len, &nan_ok);
    CHECK(nan_ok, "%s: NaN pattern differs", name);
    CHECK(e <= REL_TOL, "%s: max rel err %.3g", name, e);
    if (e > worst_all) {
        worst_all = e;
        snprintf(worst_name, sizeof worst_name, "%s", name);
    }
    n_cases++;
}

static void test_golden(void) {
    sdc_st_file *f = NULL;
    CHECK(sdc_st_open(GOLDEN("sampling/schedules.safetensors"), &f) == SDC_OK, "open: %s",
          sdc_last_error());
    if (!f) return;
    float ref[1000];
    int seen_den = 0, want_sched = 0, want_den = 0;
    for (int i = 0; i < sdc_st_count(f); i++) {
        const sdc_st_tensor *t = sdc_st_at(f, i);
        int n = (int)sdc_st_numel(t);
        /* every table of the file must be compared (or refused): count them first */
        if (strncmp(t->name, "sigmas", 6) == 0) want_sched++;
        if (strncmp(t->name, "denoiser.", 9) == 0) want_den++;
        CHECK(n <= 1000, "%s: %d values, more than the test's buffer", t->name, n);
        if (n > 1000) continue;
        sdc_st_to_f32(t, ref);
        sdc_schedule_params sp;
        sdc_schedule_params_init(&sp);
        sdc_denoiser d;
        if (strncmp(t->name, "sigmas.", 7) == 0) {
            const char *den = t->name + 7;
            const char *nstep = strrchr(t->name, '.');
            const char *sched = nstep - 1;
            while (*sched != '.') sched--;
            const den_spec *ds = find_den(den, (size_t)(sched - den));
            char sname[32];
            snprintf(sname, sizeof sname, "%.*s", (int)(nstep - sched - 1), sched + 1);
            CHECK(ds && sdc_scheduler_from_name(sname, &sp.scheduler) == SDC_OK, "bad name %s",
                  t->name);
            if (!ds) continue;
            make_den(ds, &d);
            sp.steps = atoi(nstep + 2);
            sp.ays = ds->ays;
            check_case(t->name, &d, &sp, ref, n);
        } else if (strncmp(t->name, "sigmas_seqlen.", 14) == 0) {
            char sname[32];
            int seq = 0, steps = 0;
            CHECK(sscanf(t->name + 14, "%31[^.].L%d.n%d", sname, &seq, &steps) == 3, "name %s",
                  t->name);
            CHECK(sdc_scheduler_from_name(sname, &sp.scheduler) == SDC_OK, "sched %s", sname);
            make_den(&dens[0], &d);
            sp.steps = steps;
            sp.image_seq_len = seq;
            check_case(t->name, &d, &sp, ref, n);
        } else if (strncmp(t->name, "denoiser.", 9) == 0) {
            const char *den = t->name + 9;
            const char *dot = strchr(den, '.');
            while (dot && !find_den(den, (size_t)(dot - den))) dot = strchr(dot + 1, '.');
            const den_spec *ds = dot ? find_den(den, (size_t)(dot - den)) : NULL;
            CHECK(ds != NULL, "denoiser name %s", t->name);
            if (!ds) continue;
            make_den(ds, &d);
            float got[1000];
            if (strcmp(dot + 1, "sigma_min_max") == 0) {
                got[0] = sdc_denoiser_sigma_min(&d);
                got[1] = sdc_denoiser_sigma_max(&d);
            } else {
                for (int k = 0; k < n; k++) got[k] = sdc_denoiser_t_to_sigma(&d, (float)k);
            }
            bool nan_ok;
            double e = rel_err(got, ref, n, &nan_ok);
            CHECK(nan_ok, "%s: NaN pattern differs", t->name);
            CHECK(e <= REL_TOL, "%s: rel err %.3g", t->name, e);
            seen_den++;
        }
    }
    printf("schedules: %d tables compared, %d AYS-on-flow refusals, %d denoiser tables; "
           "max rel err %.3g (%s)\n",
           n_cases, n_refused, seen_den, worst_all, worst_name);
    CHECK(n_cases > 500, "only %d schedule cases found", n_cases);
    CHECK(n_cases + n_refused == want_sched, "%d + %d schedule tables checked, file has %d",
          n_cases, n_refused, want_sched);
    CHECK(want_den >= 7 && seen_den == want_den, "%d denoiser tables checked, file has %d",
          seen_den, want_den);
    sdc_st_close(f);
}

static void test_errors(void) {
    sdc_denoiser d;
    sdc_denoiser_init(&d, SDC_PRED_EPS);
    sdc_schedule_params sp;
    sdc_schedule_params_init(&sp);
    float out[8];
    int len;
    sp.steps = 0;
    CHECK(sdc_schedule_sigmas(&d, &sp, out, &len) == SDC_ERR_INVALID_ARG, "steps 0 accepted");
    sp.steps = -3;
    CHECK(sdc_schedule_sigmas(&d, &sp, out, &len) == SDC_ERR_INVALID_ARG, "steps < 0 accepted");
    sdc_scheduler s;
    CHECK(sdc_scheduler_from_name("normal", &s) == SDC_OK && s == SDC_SCHED_DISCRETE, "alias");
    CHECK(sdc_scheduler_from_name("karras", &s) == SDC_OK && s == SDC_SCHED_KARRAS, "karras");
    CHECK(sdc_scheduler_from_name("fancy", &s) == SDC_ERR_INVALID_ARG, "unknown accepted");
    CHECK(strstr(sdc_last_error(), "bong_tangent") && strstr(sdc_last_error(), "beta"),
          "message lists names: %s", sdc_last_error());
    sdc_prediction p;
    CHECK(sdc_prediction_from_name("x0", &p) == SDC_ERR_INVALID_ARG, "prediction x0 accepted");
    CHECK(strstr(sdc_last_error(), "flux_flow") != NULL, "prediction list: %s", sdc_last_error());
    /* custom sigmas */
    int cnt = 0;
    CHECK(sdc_parse_sigmas("", out, 8, &cnt) == SDC_ERR_INVALID_ARG, "empty sigmas accepted");
    CHECK(sdc_parse_sigmas("[ ]", out, 8, &cnt) == SDC_ERR_INVALID_ARG, "[] accepted");
    CHECK(sdc_parse_sigmas("1.0,abc", out, 8, &cnt) == SDC_ERR_INVALID_ARG, "abc accepted");
    CHECK(sdc_parse_sigmas("1.0,-2", out, 8, &cnt) == SDC_ERR_INVALID_ARG, "negative accepted");
    CHECK(sdc_parse_sigmas("[14.61, 7.8,3.5 ,0.0]", out, 8, &cnt) == SDC_OK && cnt == 4 &&
              out[0] == 14.61f && out[3] == 0.0f,
          "parse list (%d)", cnt);
    /* img2img strength: sd.cpp keeps sigmas[steps - t_enc - 1 ..], t_enc = floor(steps*s) */
    float sg[11];
    for (int i = 0; i <= 10; i++) sg[i] = (float)(10 - i);
    int nl = sdc_sigmas_apply_strength(sg, 11, 0.75f);
    CHECK(nl == 9 && sg[0] == 8.0f && sg[8] == 0.0f, "strength 0.75: len %d first %g", nl, sg[0]);
    for (int i = 0; i <= 10; i++) sg[i] = (float)(10 - i);
    nl = sdc_sigmas_apply_strength(sg, 11, 1.0f);
    CHECK(nl == 11 && sg[0] == 10.0f, "strength 1 keeps all");
    nl = sdc_sigmas_apply_strength(sg, 11, 0.0f);
    CHECK(nl == 2 && sg[0] == 1.0f, "strength 0 keeps one step (len %d)", nl);
}

int main(void) {
    test_errors();
    test_golden();
    TEST_MAIN_END();
}
