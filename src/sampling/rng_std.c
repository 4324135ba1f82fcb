/* sd.cpp's "std_default" generator as built with libstdc++: minstd_rand0
 * (x = 16807 x mod 2^31-1), generate_canonical<float> = (x-1) / 2^31 in float, and
 * normal_distribution<float>'s Marsaglia polar method, which returns y*m first and
 * keeps x*m as the spare. sd.cpp makes a new distribution per randn call, so a spare
 * left at the end of a call is dropped. */
#include "sampling/rng_impl.h"

#define MINSTD_M 2147483647u

void sdc_minstd_seed(sdc_minstd *g, uint64_t seed) {
    uint32_t s = (uint32_t)seed % MINSTD_M; /* sd.cpp truncates to unsigned int */
    g->x = s == 0 ? 1u : s;
}

static float minstd_canonical(sdc_minstd *g) {
    g->x = (uint32_t)(((uint64_t)g->x * 16807u) % MINSTD_M);
    /* range max-min+1 = 2147483646, which becomes 2^31 as a float */
    float r = (float)(g->x - 1u) / 2147483648.0f;
    if (r >= 1.0f) r = nextafterf(1.0f, 0.0f);
    return r;
}

void sdc_minstd_randn(sdc_minstd *g, float *out, int64_t n) {
    bool have_spare = false;
    float spare = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        if (have_spare) {
            out[i] = spare;
            have_spare = false;
            continue;
        }
        float x, y, r2;
        do {
            x = 2.0f * minstd_canonical(g) - 1.0f;
            y = 2.0f * minstd_canonical(g) - 1.0f;
            r2 = x * x + y * y;
        } while (r2 > 1.0f || r2 == 0.0f);
        float m = sdc_f32_sqrt(-2.0f * sdc_f32_log(r2) / r2);
        spare = x * m;
        have_spare = true;
        out[i] = y * m;
    }
}
