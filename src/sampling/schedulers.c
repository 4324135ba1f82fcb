/* Sigma schedulers, following sd.cpp's float/double operation order (the golden
 * tables are compared at 1e-5 relative). */
#include "sampling/schedulers.h"
#include "sampling/schedule_tables.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define T_MAX (SDC_TIMESTEPS - 1)

static const char *const sched_names[SDC_SCHED_COUNT] = {
    "discrete",     "karras",     "exponential", "ays",  "gits",         "sgm_uniform",
    "simple",       "smoothstep", "kl_optimal",  "lcm",  "bong_tangent", "ltx2",
    "logit_normal", "flux2",      "flux",        "beta",
};

const char *sdc_sched_name(sdc_scheduler s) {
    return ((int)s >= 0 && s < SDC_SCHED_COUNT) ? sched_names[s] : "unknown";
}

sdc_status sdc_scheduler_from_name(const char *name, sdc_scheduler *out) {
    if (name && strcmp(name, "normal") == 0) {
        *out = SDC_SCHED_DISCRETE;
        return SDC_OK;
    }
    for (int i = 0; name && i < SDC_SCHED_COUNT; i++) {
        if (strcmp(name, sched_names[i]) == 0) {
            *out = (sdc_scheduler)i;
            return SDC_OK;
        }
    }
    char list[256] = "";
    for (int i = 0; i < SDC_SCHED_COUNT; i++) {
        strcat(list, sched_names[i]);
        strcat(list, ", ");
    }
    strcat(list, "normal (= discrete)");
    return sdc_fail(SDC_ERR_INVALID_ARG, "scheduler: unknown name '%s' (valid: %s)",
                    name ? name : "(null)", list);
}

void sdc_schedule_params_init(sdc_schedule_params *p) {
    memset(p, 0, sizeof(*p));
    p->steps = 20;
    p->image_seq_len = 4096;
    p->ays = SDC_AYS_SD1;
    p->beta_alpha = 0.6;
    p->beta_beta = 0.6;
}

/* start, start+inc, ... accumulated in float like sd.cpp's linear_space. */
static void linear_space(float start, float end, int num, float *out) {
    const float inc = (end - start) / (float)(num - 1);
    out[0] = start;
    for (int i = 1; i < num; i++) out[i] = out[i - 1] + inc;
}

/* Stretches a descending table to new_len points, interpolating log sigma linearly. */
static void log_linear_interpolation(const float *in, int in_len, int new_len, float *out) {
    float *xs = malloc(sizeof(float) * (size_t)in_len),
          *ys = malloc(sizeof(float) * (size_t)in_len);
    float *nx = malloc(sizeof(float) * (size_t)new_len);
    double *ny = calloc((size_t)new_len, sizeof(double));
    if (!xs || !ys || !nx || !ny) {
        for (int i = 0; i < new_len; i++) out[i] = NAN;
        goto done;
    }
    linear_space(0.f, 1.f, in_len, xs);
    for (int i = 0; i < in_len; i++) ys[i] = logf(in[in_len - 1 - i]);
    linear_space(0.f, 1.f, new_len, nx);
    if (nx[0] < xs[0]) nx[0] = xs[0];
    if (nx[new_len - 1] > xs[in_len - 1]) nx[new_len - 1] = xs[in_len - 1];
    for (int i = 0, j = 0; i < new_len;) {
        if (j + 1 < in_len - 1 && (xs[j] > nx[i] || nx[i] > xs[j + 1])) {
            j++;
            continue;
        }
        double perc = (double)(nx[i] - xs[j]) / (double)(xs[j + 1] - xs[j]);
        ny[i] = (double)ys[j] * (1. - perc) + (double)ys[j + 1] * perc;
        i++;
    }
    for (int i = 0; i < new_len; i++) out[i] = (float)exp(ny[new_len - 1 - i]);
done:
    free(xs);
    free(ys);
    free(nx);
    free(ny);
}

static int sched_discrete(const sdc_denoiser *d, int n, float *o) {
    if (n == 1) {
        o[0] = sdc_denoiser_t_to_sigma(d, (float)T_MAX);
    } else {
        float step = (float)T_MAX / (float)(n - 1);
        for (int i = 0; i < n; i++) o[i] = sdc_denoiser_t_to_sigma(d, T_MAX - step * (float)i);
    }
    o[n] = 0;
    return n + 1;
}

static int sched_karras(float smin, float smax, int n, float *o) {
    const float rho = 7.f;
    if (smin <= 1e-6f) smin = 1e-6f;
    float min_inv = (float)pow(smin, 1.f / rho), max_inv = (float)pow(smax, 1.f / rho);
    for (int i = 0; i < n; i++) {
        float base = max_inv + (float)i / ((float)n - 1.f) * (min_inv - max_inv);
        o[i] = (float)pow(base, rho);
    }
    o[n] = 0;
    return n + 1;
}

static int sched_exponential(float smin, float smax, int n, float *o) {
    float lmin = logf(smin), lmax = logf(smax);
    float step = (lmax - lmin) / (float)(n - 1);
    for (int i = 0; i < n; i++) o[i] = expf(lmax - step * (float)i);
    o[n] = 0;
    return n + 1;
}

static int sched_ays(sdc_ays_table table, int n, float *o) {
    const float *lv = sdc_ays_levels[table - SDC_AYS_SD1];
    if (n + 1 == 11)
        memcpy(o, lv, sizeof(float) * 11);
    else
        log_linear_interpolation(lv, 11, n + 1, o);
    o[n] = 0;
    return n + 1;
}

static int sched_gits(int n, float *o) {
    if (n <= 20) {
        sdc_gits_row(n, o);
    } else {
        float last[21];
        sdc_gits_row(20, last);
        log_linear_interpolation(last, 21, n + 1, o);
    }
    o[n] = 0;
    return n + 1;
}

static int sched_sgm_uniform(const sdc_denoiser *d, int n, float *o) {
    float *ts = malloc(sizeof(float) * (size_t)(n + 1));
    if (!ts) return -1;
    linear_space((float)T_MAX, 0.f, n + 1, ts);
    for (int i = 0; i < n; i++) o[i] = sdc_denoiser_t_to_sigma(d, ts[i]);
    o[n] = 0;
    free(ts);
    return n + 1;
}

static int sched_simple(const sdc_denoiser *d, int n, float *o) {
    float factor = (float)SDC_TIMESTEPS / (float)n;
    for (int i = 0; i < n; i++) {
        int idx = SDC_TIMESTEPS - 1 - (int)((float)i * factor);
        if (idx < 0) idx = 0;
        o[i] = sdc_denoiser_t_to_sigma(d, (float)idx);
    }
    o[n] = 0;
    return n + 1;
}

static int sched_smoothstep(const sdc_denoiser *d, int n, float *o) {
    if (n == 1) {
        o[0] = sdc_denoiser_t_to_sigma(d, (float)T_MAX);
    } else {
        for (int i = 0; i < n; i++) {
            float u = 1.f - (float)i / (float)n;
            float s = u * u * (3.0f - 2.0f * u);
            o[i] = sdc_denoiser_t_to_sigma(d, roundf(s * (float)T_MAX));
        }
    }
    o[n] = 0;
    return n + 1;
}

static int sched_kl_optimal(float smin, float smax, int n, float *o) {
    if (n == 1) {
        o[0] = smax;
        o[1] = 0;
        return 2;
    }
    if (smin <= 1e-6f) smin = 1e-6f;
    float amin = atanf(smin), amax = atanf(smax);
    for (int i = 0; i < n; i++) {
        float t = (float)i / (float)(n - 1);
        o[i] = tanf(t * amin + (1.0f - t) * amax);
    }
    o[n] = 0;
    return n + 1;
}

static int sched_lcm(const sdc_denoiser *d, int n, float *o) {
    const int original_steps = 50, k = SDC_TIMESTEPS / original_steps;
    for (int i = 0; i < n; i++) {
        int index = (int)(((unsigned)i * (unsigned)original_steps) / (unsigned)n);
        o[i] = sdc_denoiser_t_to_sigma(d, (float)((original_steps - index) * k - 1));
    }
    o[n] = 0;
    return n + 1;
}

/* One arctan ramp of bong_tangent from start to end over `steps` points. */
static int bong_ramp(int steps, float slope, float pivot, float start, float end, float *o) {
    const float k_pi = 3.14159265358979323846f;
    if (steps <= 0) return 0;
    float smax = ((2.0f / k_pi) * atanf(-slope * (0.0f - pivot)) + 1.0f) * 0.5f;
    float smin = ((2.0f / k_pi) * atanf(-slope * ((float)(steps - 1) - pivot)) + 1.0f) * 0.5f;
    float srange = smax - smin, sscale = start - end;
    if (fabsf(srange) < 1e-8f) {
        if (steps == 1) {
            o[0] = start;
            return 1;
        }
        for (int i = 0; i < steps; i++) {
            float t = (float)i / (float)(steps - 1);
            o[i] = start + (end - start) * t;
        }
        return steps;
    }
    float inv = 1.0f / srange;
    for (int x = 0; x < steps; x++) {
        float v = ((2.0f / k_pi) * atanf(-slope * ((float)x - pivot)) + 1.0f) * 0.5f;
        o[x] = ((v - smin) * inv) * sscale + end;
    }
    return steps;
}

static int sched_bong_tangent(float smin, float smax, int n, float *o) {
    float start = smax, end = smin, middle = smin + (smax - smin) * 0.5f;
    const float pivot = 0.6f;
    int steps = n + 2;
    int midpoint = (int)(((float)steps * pivot + (float)steps * pivot) * 0.5f);
    int pivot_i = (int)((float)steps * pivot);
    float slope = 0.2f / ((float)steps / 40.0f);
    int len2 = steps - midpoint, len1 = steps - len2;
    float *buf = malloc(sizeof(float) * (size_t)(steps + 1));
    if (!buf) return -1;
    int k = bong_ramp(len1, slope, (float)pivot_i, start, middle, buf);
    if (k > 0) k--; /* the first ramp's last point is the second's first */
    k += bong_ramp(len2, slope, (float)(pivot_i - len1), middle, end, buf + k);
    for (int i = 0; i <= n; i++) o[i] = i < k ? buf[i] : end;
    o[n] = 0.0f;
    free(buf);
    return n + 1;
}

static int sched_ltx2(int seq_len, int n, float *o) {
    const float max_shift = 2.05f, base_shift = 0.95f, terminal = 0.1f;
    float m = (max_shift - base_shift) / (4096.0f - 1024.0f);
    float b = base_shift - m * 1024.0f;
    float exp_shift = expf((float)seq_len * m + b);
    for (int i = 0; i <= n; i++) {
        float s = 1.0f - (float)i / (float)n;
        if (s != 0.0f) s = exp_shift / (exp_shift + (1.0f / s - 1.0f));
        o[i] = s;
    }
    if (n + 1 > 2) { /* stretch so the last nonzero sigma lands on the terminal value */
        float scale = (1.0f - o[n - 1]) / (1.0f - terminal);
        if (scale > 1e-8f)
            for (int i = 0; i < n; i++) o[i] = 1.0f - (1.0f - o[i]) / scale;
    }
    o[n] = 0.0f;
    return n + 1;
}

/* Acklam's rational approximation of the standard normal quantile. */
static double ndtri(double p) {
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                -2.759285104469687e+02, 1.383577518672690e+02,
                                -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[6] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                -1.556989798598866e+02, 6.680131188771972e+01,
                                -1.328068155288572e+01, 1.0};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                -2.400758277161838e+00, -2.549732539343734e+00,
                                4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[5] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00, 1.0};
    const double p_low = 0.02425, p_high = 1.0 - p_low;
    if (p <= 0.0) return -INFINITY;
    if (p >= 1.0) return INFINITY;
    if (p < p_low || p > p_high) {
        double q = sqrt(-2.0 * log(p < p_low ? p : 1.0 - p));
        double num = c[0], den = d[0];
        for (int i = 1; i < 6; i++) num = num * q + c[i];
        for (int i = 1; i < 5; i++) den = den * q + d[i];
        return p < p_low ? num / den : -(num / den);
    }
    double q = p - 0.5, r = q * q;
    double num = a[0], den = b[0];
    for (int i = 1; i < 6; i++) num = num * r + a[i];
    for (int i = 1; i < 6; i++) den = den * r + b[i];
    return num * q / den;
}

static float sigmoidf(float x) {
    return 1.0f / (1.0f + expf(-x));
}

static int sched_logit_normal(int seq_len, int n, float *o) {
    float mean = 0.0f, std = 1.75f;
    if (seq_len > 0) mean += 0.5f * logf((float)seq_len / (float)((512 * 512) / (16 * 16)));
    float hi = sigmoidf(0.5f * 18.0f), lo = sigmoidf(0.5f * -15.0f);
    for (int i = 0; i <= n; i++) {
        float t = (float)i / (float)n;
        float z = (float)(-ndtri(t));
        float s = sigmoidf(mean + std * z);
        if (s > hi) s = hi;
        if (s < lo) s = lo;
        o[i] = s;
    }
    o[n] = 0.0f;
    return n + 1;
}

static int sched_flux2(int seq_len, int n, float *o) {
    const float a1 = 8.73809524e-05f, b1 = 1.89833333f, a2 = 0.00016927f, b2 = 0.45666666f;
    float mu;
    if (seq_len > 4300) {
        mu = a2 * (float)seq_len + b2;
    } else {
        float m200 = a2 * (float)seq_len + b2, m10 = a1 * (float)seq_len + b1;
        float a = (m200 - m10) / 190.0f, b = m200 - 200.0f * a;
        mu = a * (float)n + b;
    }
    for (int i = 0; i <= n; i++) {
        float t = 1.0f - (float)i / (float)n;
        o[i] = t <= 0.0f ? 0.0f : t >= 1.0f ? 1.0f : sdc_flux_time_shift(mu, 1.0f, t);
    }
    o[n] = 0.0f;
    return n + 1;
}

static int sched_flux(int seq_len, int n, float *o) {
    const float base_shift = 0.5f, max_shift = 1.15f;
    float m = (max_shift - base_shift) / (4096.0f - 256.0f);
    float b = base_shift - m * 256.0f;
    float mu = (float)seq_len * m + b;
    for (int i = 0; i <= n; i++) {
        float t = 1.0f - (float)i / (float)n;
        o[i] = t <= 0.0f ? 0.0f : sdc_flux_time_shift(mu, 1.0f, t);
    }
    o[n] = 0.0f;
    return n + 1;
}

static int sched_beta(const sdc_denoiser *d, double alpha, double beta, int n, float *o) {
    if (n == 1) {
        o[0] = sdc_denoiser_t_to_sigma(d, (float)T_MAX);
        o[1] = 0.f;
        return 2;
    }
    int k = 0, last_t = -1;
    for (int i = 0; i < n; i++) {
        double u = 1.0 - (double)i / (double)n;
        int t = (int)lround(sdc_beta_ppf(u, alpha, beta) * T_MAX);
        if (t != last_t) {
            o[k++] = sdc_denoiser_t_to_sigma(d, (float)t);
            last_t = t;
        }
    }
    o[k++] = 0.f;
    return k;
}

sdc_status sdc_schedule_sigmas(const sdc_denoiser *d, const sdc_schedule_params *p, float *out,
                               int *len) {
    int n = p->steps;
    *len = 0;
    if (n <= 0) return sdc_fail(SDC_ERR_INVALID_ARG, "scheduler: steps must be > 0, got %d", n);
    if ((int)p->scheduler < 0 || p->scheduler >= SDC_SCHED_COUNT)
        return sdc_fail(SDC_ERR_INVALID_ARG, "scheduler: unknown scheduler %d", (int)p->scheduler);
    int seq_len = p->image_seq_len > 0 ? p->image_seq_len : 4096;
    if (d->pred == SDC_PRED_MINIT2I_FLOW) { /* MiniT2I ignores the scheduler */
        for (int i = 0; i < n; i++) out[i] = 1.0f - (float)i / (float)n;
        out[n] = 0.0f;
        *len = n + 1;
        return SDC_OK;
    }
    float smin = sdc_denoiser_sigma_min(d), smax = sdc_denoiser_sigma_max(d);
    int k = -1;
    switch (p->scheduler) {
    case SDC_SCHED_DISCRETE:
        k = sched_discrete(d, n, out);
        break;
    case SDC_SCHED_KARRAS:
        k = sched_karras(smin, smax, n, out);
        break;
    case SDC_SCHED_EXPONENTIAL:
        k = sched_exponential(smin, smax, n, out);
        break;
    case SDC_SCHED_AYS:
        if (p->ays < SDC_AYS_SD1 || p->ays > SDC_AYS_SVD)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "scheduler: ays has tables only for SD1.x, SDXL and SVD models");
        k = sched_ays(p->ays, n, out);
        break;
    case SDC_SCHED_GITS:
        if (n < 2) return sdc_fail(SDC_ERR_INVALID_ARG, "scheduler: gits needs at least 2 steps");
        k = sched_gits(n, out);
        break;
    case SDC_SCHED_SGM_UNIFORM:
        k = sched_sgm_uniform(d, n, out);
        break;
    case SDC_SCHED_SIMPLE:
        k = sched_simple(d, n, out);
        break;
    case SDC_SCHED_SMOOTHSTEP:
        k = sched_smoothstep(d, n, out);
        break;
    case SDC_SCHED_KL_OPTIMAL:
        k = sched_kl_optimal(smin, smax, n, out);
        break;
    case SDC_SCHED_LCM:
        k = sched_lcm(d, n, out);
        break;
    case SDC_SCHED_BONG_TANGENT:
        k = sched_bong_tangent(smin, smax, n, out);
        break;
    case SDC_SCHED_LTX2:
        k = sched_ltx2(seq_len, n, out);
        break;
    case SDC_SCHED_LOGIT_NORMAL:
        k = sched_logit_normal(p->image_seq_len, n, out);
        break;
    case SDC_SCHED_FLUX2:
        k = sched_flux2(seq_len, n, out);
        break;
    case SDC_SCHED_FLUX:
        k = sched_flux(seq_len, n, out);
        break;
    case SDC_SCHED_BETA:
        k = sched_beta(d, p->beta_alpha > 0 ? p->beta_alpha : 0.6,
                       p->beta_beta > 0 ? p->beta_beta : 0.6, n, out);
        break;
    default:
        break;
    }
    if (k < 0) return sdc_fail(SDC_ERR_NO_MEMORY, "scheduler: out of memory");
    *len = k;
    return SDC_OK;
}

int sdc_image_seq_len(int width, int height, int vae_scale_factor) {
    if (vae_scale_factor <= 0) return 0;
    return (height / vae_scale_factor) * (width / vae_scale_factor);
}

sdc_status sdc_parse_sigmas(const char *text, float *out, int cap, int *count) {
    *count = 0;
    if (!text) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: no value");
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '[') p++;
    int n = 0;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (*p == ']' || *p == 0) break;
        if (*p == ',') { /* empty item, as sd.cpp skips them */
            p++;
            continue;
        }
        char *end;
        float v = strtof(p, &end);
        if (end == p) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: bad number at '%.20s'", p);
        if (!isfinite(v) || v < 0.0f)
            return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: value %g must be finite and >= 0",
                            (double)v);
        if (n >= cap) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: more than %d values", cap);
        out[n++] = v;
        p = end;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == ',')
            p++;
        else if (*p != ']' && *p != 0)
            return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: expected ',' at '%.20s'", p);
    }
    if (*p == ']') p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p != 0) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: trailing text '%.20s'", p);
    if (n == 0) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: the list is empty");
    if (n < 2) return sdc_fail(SDC_ERR_INVALID_ARG, "sigmas: need at least 2 values (1 step)");
    *count = n;
    return SDC_OK;
}

int sdc_sigmas_apply_strength(float *sigmas, int len, float strength) {
    int steps = len - 1;
    if (steps <= 0 || !(strength < 1.0f)) return len;
    if (strength < 0.0f) strength = 0.0f;
    int t_enc = (int)((float)steps * strength);
    if (t_enc == steps) t_enc--;
    int start = steps - t_enc - 1;
    memmove(sigmas, sigmas + start, sizeof(float) * (size_t)(len - start));
    return len - start;
}
