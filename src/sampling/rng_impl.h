/* Generator cores behind sdc_rng (internal to src/sampling). */
#ifndef SDC_SAMPLING_RNG_IMPL_H
#define SDC_SAMPLING_RNG_IMPL_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* torch's kernel and sd.cpp call the C library's single-precision functions. glibc's
 * logf/sinf/cosf are not correctly rounded (about 0.8 ulp), so a double evaluation
 * rounded to float differs in the last bit for a few percent of values; bit-exactness
 * with the golden streams therefore relies on glibc's float libm (TODO: a portable
 * port of those algorithms would make the stream independent of the C library). */
static inline float sdc_f32_log(float x) {
    return logf(x);
}
static inline float sdc_f32_cos(float x) {
    return cosf(x);
}
static inline float sdc_f32_sin(float x) {
    return sinf(x);
}
static inline float sdc_f32_sqrt(float x) {
    return sqrtf(x);
}

#define SDC_MT_N 624

typedef struct sdc_mt19937 {
    uint32_t mt[SDC_MT_N];
    int idx;
    bool has_gauss; /* the pair path's cached second value */
    double next_gauss;
} sdc_mt19937;

void sdc_mt19937_seed(sdc_mt19937 *s, uint64_t seed);
uint32_t sdc_mt19937_u32(sdc_mt19937 *s);
/* torch CPU randn(n); sdcpp selects sd.cpp's MT19937RNG variant. */
void sdc_mt19937_randn(sdc_mt19937 *s, float *out, int64_t n, bool sdcpp);

/* Philox4x32-10 randn(n) at stream position `offset` (one offset per call). */
void sdc_philox_randn(uint64_t seed, uint32_t offset, float *out, int64_t n);
void sdc_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2], uint32_t out[4]);

typedef struct sdc_minstd {
    uint32_t x;
} sdc_minstd;
void sdc_minstd_seed(sdc_minstd *g, uint64_t seed);
/* libstdc++ std::normal_distribution<float> over minstd_rand0, a fresh
 * distribution object per call (its spare value is dropped at the end). */
void sdc_minstd_randn(sdc_minstd *g, float *out, int64_t n);

#endif
