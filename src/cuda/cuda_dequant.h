/* Element-wise readers of every weight type, shared by the CUDA kernels (compiled as
 * __device__ code) and by a host test that checks them against the CPU's row converters
 * (tests/unit/test_cuda_dequant_host.c): the bit layouts are ggml's (core/quant.h), read
 * here from raw bytes so the same code runs on both sides. */
#ifndef SDC_CUDA_DEQUANT_H
#define SDC_CUDA_DEQUANT_H

#include <stdint.h>

#if defined(__CUDACC__)
#define SDC_HD __host__ __device__ static inline
#else
#define SDC_HD static inline
#endif

/* type ids as core/types.h (kept literal: this header is also compiled by nvcc alone) */
enum {
    SDC_CT_F32 = 0,
    SDC_CT_F16 = 1,
    SDC_CT_Q4_0 = 2,
    SDC_CT_Q4_1 = 3,
    SDC_CT_Q5_0 = 6,
    SDC_CT_Q5_1 = 7,
    SDC_CT_Q8_0 = 8,
    SDC_CT_Q8_1 = 9,
    SDC_CT_Q2_K = 10,
    SDC_CT_Q3_K = 11,
    SDC_CT_Q4_K = 12,
    SDC_CT_Q5_K = 13,
    SDC_CT_Q6_K = 14,
    SDC_CT_Q8_K = 15,
    SDC_CT_BF16 = 30,
};

SDC_HD float sdc_hd_half(uint16_t h) {
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: normalise */
            int e = -1;
            do {
                man <<= 1;
                e++;
            } while (!(man & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    union {
        uint32_t u;
        float f;
    } v;
    v.u = bits;
    return v.f;
}

SDC_HD float sdc_hd_bf16(uint16_t h) {
    union {
        uint32_t u;
        float f;
    } v;
    v.u = (uint32_t)h << 16;
    return v.f;
}

SDC_HD uint16_t sdc_hd_u16(const uint8_t *p) {
    return (uint16_t)(p[0] | (p[1] << 8));
}

/* Elements per block and bytes per block of the types above (0: not a weight type). */
SDC_HD int sdc_hd_block_size(int type) {
    switch (type) {
    case SDC_CT_F32:
    case SDC_CT_F16:
    case SDC_CT_BF16:
        return 1;
    case SDC_CT_Q4_0:
    case SDC_CT_Q4_1:
    case SDC_CT_Q5_0:
    case SDC_CT_Q5_1:
    case SDC_CT_Q8_0:
    case SDC_CT_Q8_1:
        return 32;
    case SDC_CT_Q2_K:
    case SDC_CT_Q3_K:
    case SDC_CT_Q4_K:
    case SDC_CT_Q5_K:
    case SDC_CT_Q6_K:
    case SDC_CT_Q8_K:
        return 256;
    default:
        return 0;
    }
}

SDC_HD int sdc_hd_block_bytes(int type) {
    switch (type) {
    case SDC_CT_F32:
        return 4;
    case SDC_CT_F16:
    case SDC_CT_BF16:
        return 2;
    case SDC_CT_Q4_0:
        return 18;
    case SDC_CT_Q4_1:
        return 20;
    case SDC_CT_Q5_0:
        return 22;
    case SDC_CT_Q5_1:
        return 24;
    case SDC_CT_Q8_0:
        return 34;
    case SDC_CT_Q8_1:
        return 36;
    case SDC_CT_Q2_K:
        return 84;
    case SDC_CT_Q3_K:
        return 110;
    case SDC_CT_Q4_K:
        return 144;
    case SDC_CT_Q5_K:
        return 176;
    case SDC_CT_Q6_K:
        return 210;
    case SDC_CT_Q8_K:
        return 292;
    default:
        return 0;
    }
}

/* The 6-bit scale and min k (0..7) of a q4_K / q5_K block's 12 scale bytes. */
SDC_HD void sdc_hd_scale_min_k4(int k, const uint8_t *q, int *sc, int *mn) {
    if (k < 4) {
        *sc = q[k] & 63;
        *mn = q[k + 4] & 63;
    } else {
        *sc = (q[k + 4] & 0xf) | ((q[k - 4] >> 6) << 4);
        *mn = (q[k + 4] >> 4) | ((q[k] >> 6) << 4);
    }
}

/* Element j (0 <= j < block size) of the block at b. */
SDC_HD float sdc_hd_block_elem(int type, const uint8_t *b, int j) {
    switch (type) {
    case SDC_CT_F32: {
        union {
            uint32_t u;
            float f;
        } v;
        v.u = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
              ((uint32_t)b[3] << 24);
        return v.f;
    }
    case SDC_CT_F16:
        return sdc_hd_half(sdc_hd_u16(b));
    case SDC_CT_BF16:
        return sdc_hd_bf16(sdc_hd_u16(b));
    case SDC_CT_Q4_0: { /* d, qs[16]: j < 16 low nibbles, j >= 16 high */
        const uint8_t q = b[2 + (j & 15)];
        return sdc_hd_half(sdc_hd_u16(b)) * (float)((j < 16 ? q & 0xf : q >> 4) - 8);
    }
    case SDC_CT_Q4_1: { /* d, m, qs[16] */
        const uint8_t q = b[4 + (j & 15)];
        return sdc_hd_half(sdc_hd_u16(b)) * (float)(j < 16 ? q & 0xf : q >> 4) +
               sdc_hd_half(sdc_hd_u16(b + 2));
    }
    case SDC_CT_Q5_0: { /* d, qh (u32: bit j = 5th bit of element j), qs[16] */
        const uint32_t qh = (uint32_t)b[2] | ((uint32_t)b[3] << 8) | ((uint32_t)b[4] << 16) |
                            ((uint32_t)b[5] << 24);
        const uint8_t q = b[6 + (j & 15)];
        const int v = (j < 16 ? q & 0xf : q >> 4) | (int)(((qh >> j) & 1) << 4);
        return sdc_hd_half(sdc_hd_u16(b)) * (float)(v - 16);
    }
    case SDC_CT_Q5_1: { /* d, m, qh, qs[16] */
        const uint32_t qh = (uint32_t)b[4] | ((uint32_t)b[5] << 8) | ((uint32_t)b[6] << 16) |
                            ((uint32_t)b[7] << 24);
        const uint8_t q = b[8 + (j & 15)];
        const int v = (j < 16 ? q & 0xf : q >> 4) | (int)(((qh >> j) & 1) << 4);
        return sdc_hd_half(sdc_hd_u16(b)) * (float)v + sdc_hd_half(sdc_hd_u16(b + 2));
    }
    case SDC_CT_Q8_0:
        return sdc_hd_half(sdc_hd_u16(b)) * (float)(int8_t)b[2 + j];
    case SDC_CT_Q8_1:
        return sdc_hd_half(sdc_hd_u16(b)) * (float)(int8_t)b[4 + j];
    case SDC_CT_Q2_K: { /* scales[16], qs[64], d, dmin */
        const int h = j / 128, r = j % 128, g = r / 32, l = r % 32;
        const int sc = b[h * 8 + g * 2 + l / 16];
        const int q = (b[16 + h * 32 + l] >> (2 * g)) & 3;
        const float d = sdc_hd_half(sdc_hd_u16(b + 80)), dmin = sdc_hd_half(sdc_hd_u16(b + 82));
        return d * (float)(sc & 0xf) * (float)q - dmin * (float)(sc >> 4);
    }
    case SDC_CT_Q3_K: { /* hmask[32], qs[64], scales[12], d */
        const int h = j / 128, r = j % 128, g = r / 32, l = r % 32;
        const int k = h * 8 + g * 2 + l / 16;
        const uint8_t *s = b + 96;
        const int lo = k < 8 ? s[k] & 0xf : s[k - 8] >> 4;
        const int hi = (s[8 + k % 4] >> (2 * (k / 4))) & 3;
        const int sc = (lo | (hi << 4)) - 32;
        const int q = (b[32 + h * 32 + l] >> (2 * g)) & 3;
        const int high = (b[l] >> (h * 4 + g)) & 1;
        return sdc_hd_half(sdc_hd_u16(b + 108)) * (float)sc * (float)(q - (high ? 0 : 4));
    }
    case SDC_CT_Q4_K: { /* d, dmin, scales[12], qs[128] */
        const int c = j / 64, r = j % 64, sub = r / 32, l = r % 32;
        int sc, mn;
        sdc_hd_scale_min_k4(2 * c + sub, b + 4, &sc, &mn);
        const uint8_t q = b[16 + c * 32 + l];
        const int v = sub ? q >> 4 : q & 0xf;
        return sdc_hd_half(sdc_hd_u16(b)) * (float)sc * (float)v -
               sdc_hd_half(sdc_hd_u16(b + 2)) * (float)mn;
    }
    case SDC_CT_Q5_K: { /* d, dmin, scales[12], qh[32], qs[128] */
        const int c = j / 64, r = j % 64, sub = r / 32, l = r % 32;
        int sc, mn;
        sdc_hd_scale_min_k4(2 * c + sub, b + 4, &sc, &mn);
        const uint8_t q = b[48 + c * 32 + l];
        const int v = (sub ? q >> 4 : q & 0xf) + (((b[16 + l] >> (2 * c + sub)) & 1) << 4);
        return sdc_hd_half(sdc_hd_u16(b)) * (float)sc * (float)v -
               sdc_hd_half(sdc_hd_u16(b + 2)) * (float)mn;
    }
    case SDC_CT_Q6_K: { /* ql[128], qh[64], scales[16] (int8), d */
        const int h = j / 128, r = j % 128, g = r / 32, l = r % 32;
        const uint8_t qlb = b[h * 64 + l + (g & 1) * 32];
        const int lo = g < 2 ? qlb & 0xf : qlb >> 4;
        const int hi = (b[128 + h * 32 + l] >> (2 * g)) & 3;
        const int sc = (int8_t)b[192 + h * 8 + l / 16 + 2 * g];
        return sdc_hd_half(sdc_hd_u16(b + 208)) * (float)sc * (float)((lo | (hi << 4)) - 32);
    }
    case SDC_CT_Q8_K: { /* float d, qs[256], bsums[16] */
        union {
            uint32_t u;
            float f;
        } d;
        d.u = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) |
              ((uint32_t)b[3] << 24);
        return d.f * (float)(int8_t)b[4 + j];
    }
    default:
        return 0.0f;
    }
}

/* Element i of a row of `type` starting at row (i counts elements, not blocks). */
SDC_HD float sdc_hd_row_elem(int type, const void *row, int64_t i) {
    const int bs = sdc_hd_block_size(type);
    const uint8_t *p = (const uint8_t *)row + (i / bs) * sdc_hd_block_bytes(type);
    return sdc_hd_block_elem(type, p, (int)(i % bs));
}

#endif
