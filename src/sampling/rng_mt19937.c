/* mt19937 and torch's CPU normal sampling (ATen DistributionTemplates / DistributionsHelper
 * semantics): fewer than 16 values use the double Box-Muller pair with a cached spare that
 * survives across calls; 16 or more use the vectorised-layout float transform in blocks of
 * 16, redoing the last 16 from fresh uniforms when n is not a multiple of 16. */
#include "sampling/rng_impl.h"

void sdc_mt19937_seed(sdc_mt19937 *s, uint64_t seed) {
    s->mt[0] = (uint32_t)(seed & 0xffffffffu);
    for (int i = 1; i < SDC_MT_N; i++) {
        uint32_t p = s->mt[i - 1];
        s->mt[i] = 1812433253u * (p ^ (p >> 30)) + (uint32_t)i;
    }
    s->idx = SDC_MT_N; /* regenerate before the first output */
    s->has_gauss = false;
    s->next_gauss = 0.0;
}

static void mt_regenerate(sdc_mt19937 *s) {
    enum { M = 397 };
    for (int i = 0; i < SDC_MT_N; i++) {
        uint32_t y = (s->mt[i] & 0x80000000u) | (s->mt[(i + 1) % SDC_MT_N] & 0x7fffffffu);
        uint32_t v = s->mt[(i + M) % SDC_MT_N] ^ (y >> 1);
        s->mt[i] = (y & 1u) ? v ^ 0x9908b0dfu : v;
    }
    s->idx = 0;
}

uint32_t sdc_mt19937_u32(sdc_mt19937 *s) {
    if (s->idx >= SDC_MT_N) mt_regenerate(s);
    uint32_t y = s->mt[s->idx++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* 53-bit uniform in [0,1) from two words, high word first. */
static double mt_uniform_f64(sdc_mt19937 *s) {
    uint64_t hi = sdc_mt19937_u32(s);
    uint64_t lo = sdc_mt19937_u32(s);
    uint64_t v = ((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1);
    return (double)v * (1.0 / 9007199254740992.0);
}

static float mt_uniform_f32(sdc_mt19937 *s) {
    return (float)(sdc_mt19937_u32(s) & 0xffffffu) * (1.0f / 16777216.0f);
}

static float mt_normal_pair(sdc_mt19937 *s, bool sdcpp) {
    if (s->has_gauss) {
        s->has_gauss = false;
        return (float)s->next_gauss;
    }
    double u1 = mt_uniform_f64(s);
    double u2 = mt_uniform_f64(s);
    /* torch 1.13 takes log(1-u2); sd.cpp log1p(-u2). They differ in the last double bit
     * for a few percent of u2, which the rounding to float practically always hides. */
    double r = sqrt(-2.0 * (sdcpp ? log1p(-u2) : log(1.0 - u2)));
    double theta = 2.0 * 3.14159265358979323846 * u1;
    s->next_gauss = r * sin(theta);
    s->has_gauss = true;
    return (float)(r * cos(theta));
}

static void normal_fill_16(float *d, bool sdcpp) {
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - d[j];
        float u2 = d[j + 8];
        float r = sdc_f32_sqrt(-2.0f * sdc_f32_log(u1));
        /* torch forms theta in double and rounds once; sd.cpp multiplies in float. */
        float theta = sdcpp ? (2.0f * 3.14159265358979323846f) * u2
                            : (float)(2.0 * 3.14159265358979323846 * (double)u2);
        d[j] = r * sdc_f32_cos(theta);
        d[j + 8] = r * sdc_f32_sin(theta);
    }
}

void sdc_mt19937_randn(sdc_mt19937 *s, float *out, int64_t n, bool sdcpp) {
    if (n < 16) {
        for (int64_t i = 0; i < n; i++) out[i] = mt_normal_pair(s, sdcpp);
        return;
    }
    for (int64_t i = 0; i < n; i++) out[i] = mt_uniform_f32(s);
    for (int64_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out + i, sdcpp);
    if (n % 16 != 0) {
        float *tail = out + n - 16;
        for (int i = 0; i < 16; i++) tail[i] = mt_uniform_f32(s);
        normal_fill_16(tail, sdcpp);
    }
}
