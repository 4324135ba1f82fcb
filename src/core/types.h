/* Element types. Ids equal the GGUF/ggml type ids and block layouts are byte-identical,
 * so GGUF files from sd.cpp/llama.cpp load as they are and ours load there. */
#ifndef SDC_CORE_TYPES_H
#define SDC_CORE_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sdc_type {
    SDC_TYPE_F32 = 0,
    SDC_TYPE_F16 = 1,
    SDC_TYPE_Q4_0 = 2,
    SDC_TYPE_Q4_1 = 3,
    SDC_TYPE_Q5_0 = 6,
    SDC_TYPE_Q5_1 = 7,
    SDC_TYPE_Q8_0 = 8,
    SDC_TYPE_Q8_1 = 9,
    SDC_TYPE_Q2_K = 10,
    SDC_TYPE_Q3_K = 11,
    SDC_TYPE_Q4_K = 12,
    SDC_TYPE_Q5_K = 13,
    SDC_TYPE_Q6_K = 14,
    SDC_TYPE_Q8_K = 15,
    SDC_TYPE_I8 = 24,
    SDC_TYPE_I16 = 25,
    SDC_TYPE_I32 = 26,
    SDC_TYPE_I64 = 27,
    SDC_TYPE_F64 = 28,
    SDC_TYPE_BF16 = 30,
    SDC_TYPE_COUNT = 40, /* upper bound of ids, for tables */
} sdc_type;

#define SDC_QK4_0 32
#define SDC_QK4_1 32
#define SDC_QK5_0 32
#define SDC_QK5_1 32
#define SDC_QK8_0 32
#define SDC_QK8_1 32
#define SDC_QK_K  256

/* Row converters. n is a multiple of the block size. */
typedef void (*sdc_to_float_fn)(const void *src, float *dst, int64_t n);
/* Quantise one row of n values. `importance` (n per-column weights, may be NULL)
 * steers the scale search as ggml's imatrix quantisers do. */
typedef void (*sdc_from_float_fn)(const float *src, void *dst, int64_t n, const float *importance);

typedef struct sdc_type_traits {
    const char *name;   /* ggml_type_name spelling: "f32", "q4_K", ... */
    int64_t block_size; /* elements per block (1 for plain types) */
    size_t block_bytes; /* bytes per block */
    bool is_quantized;
    sdc_to_float_fn to_float;     /* NULL for integer types */
    sdc_from_float_fn from_float; /* NULL where not supported */
} sdc_type_traits;

/* Traits of a type, or NULL for an id we do not know (file loaders must check). */
const sdc_type_traits *sdc_type_get(int type);
const char *sdc_type_name(int type);
/* Parses a ggml type name (case-insensitive: "q4_k" works). Returns -1 if unknown. */
int sdc_type_from_name(const char *name);
/* Bytes of a row of n elements; 0 if n is not a multiple of the block size. */
size_t sdc_type_row_bytes(sdc_type type, int64_t n);

#endif
