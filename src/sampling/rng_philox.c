/* sd.cpp's "cuda" generator: Philox4x32-10 with counter (offset, 0, i, 0) and key
 * (seed low, seed high), one offset per randn call; Box-Muller on the first two words
 * keeping only the sine branch. The float/double mix of each step is deliberate. */
#include "sampling/rng_impl.h"

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void sdc_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]) {
    uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int round = 0; round < 10; round++) {
        if (round > 0) {
            k0 += PHILOX_W0;
            k1 += PHILOX_W1;
        }
        uint64_t p0 = (uint64_t)c0 * PHILOX_M0;
        uint64_t p1 = (uint64_t)c2 * PHILOX_M1;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

void sdc_philox_randn(uint64_t seed, uint32_t offset, float *out, int64_t n) {
    const float inv32 = 2.3283064e-10f;
    const float inv32_2pi = 2.3283064e-10f * 6.2831855f;
    const uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    for (int64_t i = 0; i < n; i++) {
        uint32_t ctr[4] = {offset, 0, (uint32_t)i, 0}, w[4];
        sdc_philox4x32_10(ctr, key, w);
        float u = (float)w[0] * inv32 + inv32 / 2;
        float v = (float)w[1] * inv32_2pi + inv32_2pi / 2;
        float s = (float)sqrt(-2.0 * log((double)u));
        out[i] = (float)((double)s * sin((double)v));
    }
}
