/* Block-quantised formats (byte-identical to ggml's) and their row converters.
 * from_float_* take optional per-column importance weights (imatrix). */
#ifndef SDC_CORE_QUANT_H
#define SDC_CORE_QUANT_H

#include "core/fp16.h"
#include "core/types.h"

#define SDC_QUANT_TYPES(X)                                                                         \
    X(q4_0) X(q4_1) X(q5_0) X(q5_1) X(q8_0) X(q8_1) X(q2_K) X(q3_K) X(q4_K) X(q5_K) X(q6_K) X(q8_K)

#define SDC_DECLARE_QUANT(t)                                                                       \
    void sdc_dequant_##t(const void *src, float *dst, int64_t n);                                  \
    void sdc_quant_##t(const float *src, void *dst, int64_t n, const float *importance);
SDC_QUANT_TYPES(SDC_DECLARE_QUANT)
#undef SDC_DECLARE_QUANT

void sdc_f32_to_f16_row(const float *src, void *dst, int64_t n, const float *importance);
void sdc_f16_to_f32_row(const void *src, float *dst, int64_t n);
void sdc_f32_to_bf16_row(const float *src, void *dst, int64_t n, const float *importance);
void sdc_bf16_to_f32_row(const void *src, float *dst, int64_t n);

/* Block layouts, byte for byte as ggml stores them (fp16 fields are IEEE halves).
 * Row pointers must be 2-byte aligned (4-byte for q8_K), as GGUF data always is. */
typedef struct sdc_block_q4_0 {
    sdc_fp16 d;     /* x = d * (q - 8) */
    uint8_t qs[16]; /* element j in the low nibble of qs[j], element j+16 in the high one */
} sdc_block_q4_0;
typedef struct sdc_block_q4_1 {
    sdc_fp16 d, m; /* x = d * q + m */
    uint8_t qs[16];
} sdc_block_q4_1;
typedef struct sdc_block_q5_0 {
    sdc_fp16 d;    /* x = d * (q - 16) */
    uint8_t qh[4]; /* bit j (little-endian u32) = 5th bit of element j */
    uint8_t qs[16];
} sdc_block_q5_0;
typedef struct sdc_block_q5_1 {
    sdc_fp16 d, m;
    uint8_t qh[4];
    uint8_t qs[16];
} sdc_block_q5_1;
typedef struct sdc_block_q8_0 {
    sdc_fp16 d;
    int8_t qs[32];
} sdc_block_q8_0;
typedef struct sdc_block_q8_1 {
    sdc_fp16 d, s; /* s = d * sum(qs) */
    int8_t qs[32];
} sdc_block_q8_1;
typedef struct sdc_block_q2_K {
    uint8_t scales[16]; /* low nibble: scale, high nibble: min of each 16-element group */
    uint8_t qs[64];
    sdc_fp16 d, dmin;
} sdc_block_q2_K;
typedef struct sdc_block_q3_K {
    uint8_t hmask[32];  /* third bit of each element */
    uint8_t qs[64];     /* low two bits */
    uint8_t scales[12]; /* sixteen 6-bit signed scales (offset 32) */
    sdc_fp16 d;
} sdc_block_q3_K;
typedef struct sdc_block_q4_K {
    sdc_fp16 d, dmin;
    uint8_t scales[12]; /* eight 6-bit scales and eight 6-bit mins */
    uint8_t qs[128];
} sdc_block_q4_K;
typedef struct sdc_block_q5_K {
    sdc_fp16 d, dmin;
    uint8_t scales[12];
    uint8_t qh[32];
    uint8_t qs[128];
} sdc_block_q5_K;
typedef struct sdc_block_q6_K {
    uint8_t ql[128]; /* low four bits */
    uint8_t qh[64];  /* high two bits */
    int8_t scales[16];
    sdc_fp16 d;
} sdc_block_q6_K;
typedef struct sdc_block_q8_K {
    float d;
    int8_t qs[256];
    int16_t bsums[16]; /* sums of qs over each group of 16 */
} sdc_block_q8_K;

_Static_assert(sizeof(sdc_block_q4_0) == 18, "q4_0 layout");
_Static_assert(sizeof(sdc_block_q4_1) == 20, "q4_1 layout");
_Static_assert(sizeof(sdc_block_q5_0) == 22, "q5_0 layout");
_Static_assert(sizeof(sdc_block_q5_1) == 24, "q5_1 layout");
_Static_assert(sizeof(sdc_block_q8_0) == 34, "q8_0 layout");
_Static_assert(sizeof(sdc_block_q8_1) == 36, "q8_1 layout");
_Static_assert(sizeof(sdc_block_q2_K) == 84, "q2_K layout");
_Static_assert(sizeof(sdc_block_q3_K) == 110, "q3_K layout");
_Static_assert(sizeof(sdc_block_q4_K) == 144, "q4_K layout");
_Static_assert(sizeof(sdc_block_q5_K) == 176, "q5_K layout");
_Static_assert(sizeof(sdc_block_q6_K) == 210, "q6_K layout");
_Static_assert(sizeof(sdc_block_q8_K) == 292, "q8_K layout");

#endif
