/* IEEE half and bfloat16 conversions (portable; round to nearest even). */
#ifndef SDC_CORE_FP16_H
#define SDC_CORE_FP16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t sdc_fp16;
typedef uint16_t sdc_bf16;

static inline uint32_t sdc_f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static inline float sdc_bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline float sdc_fp16_to_f32(sdc_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: value = man * 2^-24 */
        float v = (float)man * 5.9604644775390625e-08f;
        return sdc_bits_f32(sdc_f32_bits(v) | sign);
    }
    if (exp == 31) return sdc_bits_f32(sign | 0x7f800000u | (man << 13));
    return sdc_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static inline sdc_fp16 sdc_f32_to_fp16(float f) {
    uint32_t x = sdc_f32_bits(f);
    uint32_t sign = (x >> 16) & 0x8000;
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf or nan */
        return (sdc_fp16)(sign | 0x7c00 | (ax > 0x7f800000u ? 0x200 : 0));
    if (ax >= 0x477ff000u) return (sdc_fp16)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (ax < 0x38800000u) {                                  /* below 2^-14: subnormal half */
        /* add 0.5 (magic) so the FPU rounds the mantissa to nearest even for us */
        float v = sdc_bits_f32(ax) + 0.5f;
        return (sdc_fp16)(sign | (sdc_f32_bits(v) - 0x3f000000u));
    }
    uint32_t mant_odd = (ax >> 13) & 1;
    ax += 0xc8000fffu + mant_odd; /* rebias exponent (-112<<23) and round */
    return (sdc_fp16)(sign | (ax >> 13));
}

static inline float sdc_bf16_to_f32(sdc_bf16 h) {
    return sdc_bits_f32((uint32_t)h << 16);
}

static inline sdc_bf16 sdc_f32_to_bf16(float f) {
    uint32_t x = sdc_f32_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (sdc_bf16)((x >> 16) | 64); /* quiet nan */
    return (sdc_bf16)((x + (0x7fff + ((x >> 16) & 1))) >> 16);
}

#endif
