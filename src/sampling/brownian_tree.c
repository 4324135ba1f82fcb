/* Brownian tree noise (see brownian_tree.h). */
#include "sampling/brownian_tree.h"
#include "sampling/rng_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BT_MAX_DEPTH 24

static uint64_t mix64(uint64_t v, uint64_t salt) {
    uint64_t z = v + salt;
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static void std_randn(uint64_t seed, float *out, int64_t n) {
    sdc_minstd g;
    sdc_minstd_seed(&g, seed);
    sdc_minstd_randn(&g, out, n);
}

void sdc_btree_free(sdc_btree *bt) {
    free(bt->w_max);
    free(bt->wa);
    free(bt->wc);
    free(bt->z);
    free(bt->cache_w);
    memset(bt, 0, sizeof(*bt));
}

sdc_status sdc_btree_init(sdc_btree *bt, int64_t n, double sigma_min, double sigma_max,
                          uint64_t seed) {
    memset(bt, 0, sizeof(*bt));
    bt->t_min = sigma_min;
    bt->t_max = sigma_max;
    bt->n = n;
    bt->root_seed = mix64(seed, UINT64_C(0x9E3779B97F4A7C15));
    size_t bytes = sizeof(float) * (size_t)n;
    bt->w_max = malloc(bytes);
    bt->wa = malloc(bytes);
    bt->wc = malloc(bytes);
    bt->z = malloc(bytes);
    bt->cache_w = malloc(bytes);
    if (!bt->w_max || !bt->wa || !bt->wc || !bt->z || !bt->cache_w) {
        sdc_btree_free(bt);
        return sdc_fail(SDC_ERR_NO_MEMORY, "brownian tree: out of memory");
    }
    std_randn(mix64(seed, UINT64_C(0xBF58476D1CE4E5B9)), bt->w_max, n);
    float scale = sqrtf((float)(sigma_max - sigma_min));
    for (int64_t k = 0; k < n; k++) bt->w_max[k] *= scale;
    return SDC_OK;
}

/* W(t) by bisection from (t_min, 0) and (t_max, W(t_max)). */
static void bt_w(sdc_btree *bt, double t, float *out) {
    const int64_t n = bt->n;
    double a = bt->t_min, c = bt->t_max;
    float *wa = bt->wa, *wc = bt->wc, *z = bt->z;
    memset(wa, 0, sizeof(float) * (size_t)n);
    memcpy(wc, bt->w_max, sizeof(float) * (size_t)n);
    uint64_t seed = bt->root_seed;
    for (int depth = BT_MAX_DEPTH; depth > 0 && !(c - a < 1e-9); depth--) {
        double m = 0.5 * (a + c);
        float sd = (float)sqrt((c - m) * (m - a) / (c - a));
        std_randn(seed, z, n);
        /* the midpoint value replaces the endpoint on the side t is not on */
        float *wm = t < m ? wc : wa;
        for (int64_t k = 0; k < n; k++) wm[k] = 0.5f * (wa[k] + wc[k]) + sd * z[k];
        if (t == m) {
            memcpy(out, wm, sizeof(float) * (size_t)n);
            return;
        }
        if (t < m) {
            c = m;
            seed = mix64(seed, 1);
        } else {
            a = m;
            seed = mix64(seed, 2);
        }
    }
    float alpha = c > a ? (float)((t - a) / (c - a)) : 0.5f;
    for (int64_t k = 0; k < n; k++) out[k] = (1.0f - alpha) * wa[k] + alpha * wc[k];
}

static double clampd(double v, double lo, double hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

sdc_status sdc_btree_noise(sdc_btree *bt, double sigma_a, double sigma_b, float *out) {
    double a = clampd(fmin(sigma_a, sigma_b), bt->t_min, bt->t_max);
    double b = clampd(fmax(sigma_a, sigma_b), bt->t_min, bt->t_max);
    /* out = W(b); cache_w ends up holding W(a), the next step's W(b) */
    if (bt->cache_valid && bt->cache_t == b)
        memcpy(out, bt->cache_w, sizeof(float) * (size_t)bt->n);
    else
        bt_w(bt, b, out);
    bt_w(bt, a, bt->cache_w);
    bt->cache_t = a;
    bt->cache_valid = 1;
    float span = (float)fmax(fabs(sigma_b - sigma_a), 1e-12);
    float inv = 1.0f / sqrtf(span);
    for (int64_t k = 0; k < bt->n; k++) out[k] = (out[k] - bt->cache_w[k]) * inv;
    return SDC_OK;
}
