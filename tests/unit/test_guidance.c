/* CFG combination against a double-precision evaluation of the formulas (random data,
 * every combination of present passes, inside and outside the guidance interval), the
 * pass planning of sdc_cfg_resolve, the CFG++ base choice, the denoiser scalings and
 * timestep shifting, and the per-family defaults listed in golden/sampling/README.md. */
#include "test_util.h"

#include "sampling/defaults.h"
#include "sampling/guidance.h"

#define N 333

static void test_combine(void) {
    static float cond[N], unc[N], img[N], out[N];
    unsigned long long seed = 12345;
    for (int i = 0; i < N; i++) {
        cond[i] = t_randf(&seed) * 3;
        unc[i] = t_randf(&seed) * 3;
        img[i] = t_randf(&seed) * 3;
    }
    sdc_cfg_params p;
    sdc_cfg_params_init(&p);
    p.txt_cfg = 6.5f;
    p.img_cfg = 1.75f;
    p.sigma_lo = 0.5f;
    p.sigma_hi = 5.0f;
    double worst = 0;
    for (int mode = 0; mode < 4; mode++) {
        const float *u = (mode & 1) ? unc : NULL, *im = (mode & 2) ? img : NULL;
        for (int inside = 0; inside < 2; inside++) {
            float sigma = inside ? 1.0f : 7.0f;
            sdc_cfg_combine(&p, sigma, cond, u, im, out, N);
            double ref_l2[N];
            for (int i = 0; i < N; i++) {
                double c = cond[i], uu = unc[i], ii = img[i], s = p.txt_cfg, si = p.img_cfg, r;
                if (!inside || (!u && !im))
                    r = c;
                else if (u && im)
                    r = ii + si * (uu - ii) + s * (c - uu);
                else if (u)
                    r = uu + s * (c - uu);
                else
                    r = ii + s * (c - ii);
                ref_l2[i] = r;
            }
            double e = t_rel_l2(out, ref_l2, N);
            if (e > worst) worst = e;
            CHECK(e < 1e-6, "cfg mode %d inside %d: rel L2 %.3g", mode, inside, e);
        }
    }
    /* out may alias cond */
    memcpy(out, cond, sizeof out);
    sdc_cfg_combine(&p, 1.0f, out, unc, NULL, out, N);
    CHECK(fabsf(out[7] - (unc[7] + p.txt_cfg * (cond[7] - unc[7]))) < 1e-5f, "aliasing");
    printf("cfg combine: 8 cases, max rel L2 vs double %.3g\n", worst);
}

static void test_resolve(void) {
    sdc_cfg_params p;
    bool nu, ni;
    sdc_cfg_params_init(&p);
    p.txt_cfg = 7.0f;
    sdc_cfg_resolve(&p, false, &nu, &ni);
    CHECK(nu && !ni && p.img_cfg == 1.0f, "txt2img cfg 7");
    sdc_cfg_params_init(&p);
    p.txt_cfg = 1.0f;
    sdc_cfg_resolve(&p, false, &nu, &ni);
    CHECK(!nu && !ni, "cfg 1 needs only the conditional pass");
    sdc_cfg_params_init(&p);
    p.txt_cfg = 7.0f;
    p.img_cfg = 1.5f;
    sdc_cfg_resolve(&p, true, &nu, &ni);
    CHECK(nu && ni, "edit model with img cfg");
    p.img_cfg = 1.5f;
    sdc_cfg_resolve(&p, false, &nu, &ni);
    CHECK(nu && !ni && p.img_cfg == 1.0f, "img cfg ignored without image conditioning");
    float a = 1, b = 2, c = 3;
    CHECK(sdc_cfg_pp_base(&a, &b, &c) == &c && sdc_cfg_pp_base(&a, &b, NULL) == &b &&
              sdc_cfg_pp_base(&a, NULL, NULL) == &a,
          "cfg++ base order");
}

/* c_skip/c_out/c_in against the closed forms in double. */
static void test_scalings(void) {
    const float sigmas[] = {0.03f, 0.5f, 1.0f, 3.7f, 14.6f};
    double worst = 0;
    for (int pr = 0; pr < SDC_PRED_COUNT; pr++) {
        sdc_denoiser d;
        sdc_denoiser_init(&d, (sdc_prediction)pr);
        for (int k = 0; k < 5; k++) {
            double s = sigmas[k], cs, co, ci;
            float fs, fo, fi;
            if (pr != SDC_PRED_EPS && pr != SDC_PRED_V && pr != SDC_PRED_EDM_V && s >= 1) continue;
            sdc_denoiser_scalings(&d, sigmas[k], &fs, &fo, &fi);
            switch (pr) {
            case SDC_PRED_EPS:
                cs = 1, co = -s, ci = 1 / sqrt(s * s + 1);
                break;
            case SDC_PRED_V:
            case SDC_PRED_EDM_V:
                cs = 1 / (s * s + 1), co = -s / sqrt(s * s + 1), ci = 1 / sqrt(s * s + 1);
                break;
            case SDC_PRED_MINIT2I_FLOW:
                cs = 0, co = 1, ci = 1;
                break;
            default:
                cs = 1, co = -s, ci = 1;
                break;
            }
            double e = fmax(fabs(fs - cs), fmax(fabs(fo - co) / fmax(1, fabs(co)), fabs(fi - ci)));
            worst = fmax(worst, e);
            CHECK(e < 1e-6, "%s sigma %g: scalings off by %.3g", sdc_prediction_name(pr), s, e);
        }
    }
    /* sigma <-> t round trip on the SD1 table, and timestep shifting */
    sdc_denoiser d;
    sdc_denoiser_init(&d, SDC_PRED_EPS);
    double rt = 0;
    for (int t = 0; t < 1000; t += 37) {
        float s = sdc_denoiser_t_to_sigma(&d, (float)t);
        rt = fmax(rt, fabs(sdc_denoiser_sigma_to_t(&d, s) - t));
    }
    CHECK(rt < 2e-3, "sigma_to_t(t_to_sigma(t)) off by %.3g", rt);
    float ts, cs, co, ci;
    float s500 = sdc_denoiser_t_to_sigma(&d, 500.0f);
    sdc_denoiser_model_inputs(&d, s500, 0, &ts, &cs, &co, &ci);
    CHECK(fabsf(ts - 500.0f) < 1e-2f && cs == 1.0f && co == -s500, "unshifted inputs");
    sdc_denoiser_model_inputs(&d, s500, 600, &ts, &cs, &co, &ci);
    float s300 = sdc_denoiser_t_to_sigma(&d, 300.0f);
    CHECK(ts == 300.0f && co == -s300 && fabsf(cs - ci * sqrtf(s300 * s300 + 1)) < 1e-6f,
          "shifted timestep: t %g c_out %g", ts, co);
    printf("denoiser scalings: max err %.3g, t round trip %.3g\n", worst, rt);
}

static void test_defaults(void) {
    CHECK(sdc_default_sample_method(SDC_FAMILY_SD1) == SDC_SAMPLE_EULER_A, "sd1 sampler");
    CHECK(sdc_default_sample_method(SDC_FAMILY_SDXL) == SDC_SAMPLE_EULER_A, "sdxl sampler");
    CHECK(sdc_default_sample_method(SDC_FAMILY_FLUX) == SDC_SAMPLE_EULER, "flux sampler");
    CHECK(sdc_default_sample_method(SDC_FAMILY_MINIT2I) == SDC_SAMPLE_EULER, "minit2i sampler");
    CHECK(sdc_default_sample_method(SDC_FAMILY_PID) == SDC_SAMPLE_LCM, "pid sampler");
    CHECK(sdc_default_scheduler(SDC_FAMILY_SDXL, SDC_PRED_EDM_V, SDC_SAMPLE_LCM) ==
              SDC_SCHED_EXPONENTIAL,
          "edm-v first");
    CHECK(sdc_default_scheduler(SDC_FAMILY_FLUX, SDC_PRED_FLUX_FLOW, SDC_SAMPLE_TCD) ==
              SDC_SCHED_LCM,
          "tcd -> lcm");
    CHECK(sdc_default_scheduler(SDC_FAMILY_FLUX, SDC_PRED_FLUX_FLOW, SDC_SAMPLE_DDIM_TRAILING) ==
              SDC_SCHED_SIMPLE,
          "ddim -> simple");
    CHECK(sdc_default_scheduler(SDC_FAMILY_FLUX, SDC_PRED_FLUX_FLOW, SDC_SAMPLE_EULER) ==
              SDC_SCHED_FLUX,
          "flux");
    CHECK(sdc_default_scheduler(SDC_FAMILY_FLUX2, SDC_PRED_FLUX_FLOW, SDC_SAMPLE_EULER) ==
              SDC_SCHED_FLUX2,
          "flux2");
    CHECK(sdc_default_scheduler(SDC_FAMILY_LTXAV, SDC_PRED_FLUX_FLOW, SDC_SAMPLE_EULER) ==
              SDC_SCHED_LTX2,
          "ltx2");
    CHECK(sdc_default_scheduler(SDC_FAMILY_IDEOGRAM4, SDC_PRED_SD3_FLOW, SDC_SAMPLE_EULER) ==
              SDC_SCHED_LOGIT_NORMAL,
          "ideogram4");
    CHECK(sdc_default_scheduler(SDC_FAMILY_SD3, SDC_PRED_SD3_FLOW, SDC_SAMPLE_EULER) ==
              SDC_SCHED_DISCRETE,
          "sd3");
    CHECK(sdc_default_eta(SDC_FAMILY_HIDREAM_O1, SDC_SAMPLE_EULER) == 8.0f, "hidream eta");
    CHECK(sdc_default_eta(SDC_FAMILY_SD1, SDC_SAMPLE_DPMPP2M_SDE_BT) == 1.0f, "sde eta");
    CHECK(sdc_default_eta(SDC_FAMILY_SD1, SDC_SAMPLE_RES_2S) == 0.0f, "res_2s eta");
    CHECK(sdc_default_prediction(SDC_FAMILY_SDXL, true, true) == SDC_PRED_EDM_V, "edm");
    CHECK(sdc_default_prediction(SDC_FAMILY_SDXL, true, false) == SDC_PRED_V, "sdxl v");
    CHECK(sdc_default_prediction(SDC_FAMILY_SD2, true, false) == SDC_PRED_V, "sd2 v");
    CHECK(sdc_default_prediction(SDC_FAMILY_SD1, true, true) == SDC_PRED_EPS, "sd1 eps");
    CHECK(sdc_default_prediction(SDC_FAMILY_MINIT2I, false, false) == SDC_PRED_MINIT2I_FLOW,
          "minit2i");
    CHECK(sdc_default_prediction(SDC_FAMILY_FLUX, false, false) == SDC_PRED_FLUX_FLOW, "flux");
    CHECK(sdc_default_prediction(SDC_FAMILY_WAN, false, false) == SDC_PRED_SD3_FLOW, "wan");
    CHECK(sdc_default_flow_shift(SDC_FAMILY_SD3, false) == 3.0f, "sd3 shift");
    CHECK(sdc_default_flow_shift(SDC_FAMILY_FLUX, true) == 1.15f, "flux-dev shift");
    CHECK(sdc_default_flow_shift(SDC_FAMILY_FLUX, false) == 1.0f, "schnell shift");
    CHECK(sdc_default_flow_shift(SDC_FAMILY_WAN, false) == 5.0f, "wan shift");
    CHECK(sdc_default_flow_shift(SDC_FAMILY_LTXAV, false) == 2.37f, "ltxav shift");
    CHECK(sdc_family_ays_table(SDC_FAMILY_SDXL) == SDC_AYS_SDXL, "sdxl ays");
    CHECK(sdc_family_ays_table(SDC_FAMILY_SD3) == SDC_AYS_NONE, "sd3 ays");
}

int main(void) {
    test_combine();
    test_resolve();
    test_scalings();
    test_defaults();
    TEST_MAIN_END();
}
