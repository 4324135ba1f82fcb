/* GGUF (v2/v3, little-endian) reader and writer.
 *
 * Layout: "GGUF", u32 version, u64 tensor count, u64 KV count, the KVs (key string, u32
 * value type, value), the tensor infos (name, u32 n_dims, u64 ne[n_dims], u32 type,
 * u64 offset), zero padding to the alignment, then the data section. Strings are a u64
 * length plus bytes. Tensor offsets are relative to the data section and multiples of
 * `general.alignment` (u32, default 32).
 *
 * The reader mmaps the file and validates everything (counts against the bytes left,
 * string lengths, type ids, sizes, offsets, alignment, overlaps) before returning, so a
 * hostile file cannot make it allocate more than a small multiple of its own size. KV
 * values are copied out (aligned, NUL-terminated strings); tensor data stays in the
 * mapping. */
#ifndef SDC_IO_GGUF_H
#define SDC_IO_GGUF_H

#include "core/status.h"
#include "core/types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum sdc_gguf_vtype {
    SDC_GGUF_U8 = 0,
    SDC_GGUF_I8 = 1,
    SDC_GGUF_U16 = 2,
    SDC_GGUF_I16 = 3,
    SDC_GGUF_U32 = 4,
    SDC_GGUF_I32 = 5,
    SDC_GGUF_F32 = 6,
    SDC_GGUF_BOOL = 7,
    SDC_GGUF_STRING = 8,
    SDC_GGUF_ARRAY = 9,
    SDC_GGUF_U64 = 10,
    SDC_GGUF_I64 = 11,
    SDC_GGUF_F64 = 12,
    SDC_GGUF_VTYPE_COUNT
} sdc_gguf_vtype;

#define SDC_GGUF_DEFAULT_ALIGNMENT 32
/* Largest general.alignment accepted (ggml allows any power of two; 64 KiB is far above
 * what writers use and keeps padding bounded). */
#define SDC_GGUF_MAX_ALIGNMENT 65536u
#define SDC_GGUF_MAX_DIMS      4

typedef union sdc_gguf_scalar {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    float f32;
    bool b;
    uint64_t u64;
    int64_t i64;
    double f64;
} sdc_gguf_scalar;

typedef struct sdc_gguf_kv {
    const char *key;
    sdc_gguf_vtype type;
    sdc_gguf_scalar v; /* scalar types */
    const char *str;   /* STRING: NUL-terminated copy (may hold inner NULs, see str_len) */
    uint64_t str_len;
    sdc_gguf_vtype arr_type; /* ARRAY: element type (never ARRAY: nested arrays are rejected) */
    uint64_t arr_n;          /* ARRAY: element count */
    const void *arr;         /* numeric ARRAY: arr_n elements of arr_type, aligned; bool = 1 byte */
    const char *const *arr_str;  /* string ARRAY: arr_n NUL-terminated strings */
    const uint64_t *arr_str_len; /* their byte lengths */
} sdc_gguf_kv;

typedef struct sdc_gguf_tensor {
    const char *name;
    sdc_type type;
    int n_dims;
    int64_t ne[SDC_GGUF_MAX_DIMS]; /* innermost first; unused dims are 1 */
    uint64_t offset;               /* relative to the data section */
    const void *data;              /* inside the mapping */
    size_t nbytes;
} sdc_gguf_tensor;

const char *sdc_gguf_vtype_name(sdc_gguf_vtype t);
/* Byte size of a fixed-size value type; 0 for STRING/ARRAY/unknown. */
size_t sdc_gguf_vtype_size(sdc_gguf_vtype t);

/* ---- reader --------------------------------------------------------------------------- */

typedef struct sdc_gguf_file sdc_gguf_file;

sdc_status sdc_gguf_open(const char *path, sdc_gguf_file **out);
/* Parses a file image in memory (not copied: keep it alive). `label` names it in errors. */
sdc_status sdc_gguf_open_memory(const void *data, size_t size, const char *label,
                                sdc_gguf_file **out);
void sdc_gguf_close(sdc_gguf_file *f);

const char *sdc_gguf_path(const sdc_gguf_file *f);
uint32_t sdc_gguf_version(const sdc_gguf_file *f);
uint32_t sdc_gguf_alignment(const sdc_gguf_file *f);
size_t sdc_gguf_data_offset(const sdc_gguf_file *f); /* data section start in the file */

int sdc_gguf_kv_count(const sdc_gguf_file *f);
const sdc_gguf_kv *sdc_gguf_kv_at(const sdc_gguf_file *f, int i); /* file order */
const sdc_gguf_kv *sdc_gguf_find_kv(const sdc_gguf_file *f, const char *key);

/* Typed getters: SDC_OK and *out set, or an error naming the file and key when the key
 * is missing (SDC_ERR_FORMAT) or has another type. */
sdc_status sdc_gguf_get_u8(const sdc_gguf_file *f, const char *key, uint8_t *out);
sdc_status sdc_gguf_get_i8(const sdc_gguf_file *f, const char *key, int8_t *out);
sdc_status sdc_gguf_get_u16(const sdc_gguf_file *f, const char *key, uint16_t *out);
sdc_status sdc_gguf_get_i16(const sdc_gguf_file *f, const char *key, int16_t *out);
sdc_status sdc_gguf_get_u32(const sdc_gguf_file *f, const char *key, uint32_t *out);
sdc_status sdc_gguf_get_i32(const sdc_gguf_file *f, const char *key, int32_t *out);
sdc_status sdc_gguf_get_u64(const sdc_gguf_file *f, const char *key, uint64_t *out);
sdc_status sdc_gguf_get_i64(const sdc_gguf_file *f, const char *key, int64_t *out);
sdc_status sdc_gguf_get_f32(const sdc_gguf_file *f, const char *key, float *out);
sdc_status sdc_gguf_get_f64(const sdc_gguf_file *f, const char *key, double *out);
sdc_status sdc_gguf_get_bool(const sdc_gguf_file *f, const char *key, bool *out);
sdc_status sdc_gguf_get_str(const sdc_gguf_file *f, const char *key, const char **out);
/* Any integer type whose value fits int64 (writers differ in which width they use). */
sdc_status sdc_gguf_get_int(const sdc_gguf_file *f, const char *key, int64_t *out);
/* An array of elements of type `elem`: its count and element pointer (for STRING
 * arrays, *data is a `const char *const *`). */
sdc_status sdc_gguf_get_arr(const sdc_gguf_file *f, const char *key, sdc_gguf_vtype elem,
                            uint64_t *n, const void **data);

int sdc_gguf_tensor_count(const sdc_gguf_file *f);
const sdc_gguf_tensor *sdc_gguf_tensor_at(const sdc_gguf_file *f, int i); /* file order */
const sdc_gguf_tensor *sdc_gguf_find_tensor(const sdc_gguf_file *f, const char *name);

/* ---- writer --------------------------------------------------------------------------- */

typedef struct sdc_gguf_writer sdc_gguf_writer;

/* Produces a tensor's bytes while writing: fill dst (nbytes) and return SDC_OK. Called
 * once per tensor, in order, so only one tensor's data needs to exist at a time. */
typedef sdc_status (*sdc_gguf_data_fn)(void *user, const char *name, void *dst, size_t nbytes);

sdc_status sdc_gguf_writer_create(sdc_gguf_writer **out);
void sdc_gguf_writer_free(sdc_gguf_writer *w);

/* KV setters copy the value. Setting an existing key replaces its value in place.
 * Setting "general.alignment" (u32, power of two) also sets the writer's alignment. */
sdc_status sdc_gguf_set_u8(sdc_gguf_writer *w, const char *key, uint8_t v);
sdc_status sdc_gguf_set_i8(sdc_gguf_writer *w, const char *key, int8_t v);
sdc_status sdc_gguf_set_u16(sdc_gguf_writer *w, const char *key, uint16_t v);
sdc_status sdc_gguf_set_i16(sdc_gguf_writer *w, const char *key, int16_t v);
sdc_status sdc_gguf_set_u32(sdc_gguf_writer *w, const char *key, uint32_t v);
sdc_status sdc_gguf_set_i32(sdc_gguf_writer *w, const char *key, int32_t v);
sdc_status sdc_gguf_set_u64(sdc_gguf_writer *w, const char *key, uint64_t v);
sdc_status sdc_gguf_set_i64(sdc_gguf_writer *w, const char *key, int64_t v);
sdc_status sdc_gguf_set_f32(sdc_gguf_writer *w, const char *key, float v);
sdc_status sdc_gguf_set_f64(sdc_gguf_writer *w, const char *key, double v);
sdc_status sdc_gguf_set_bool(sdc_gguf_writer *w, const char *key, bool v);
sdc_status sdc_gguf_set_str(sdc_gguf_writer *w, const char *key, const char *v);
/* String with an explicit length (may contain NULs). */
sdc_status sdc_gguf_set_strn(sdc_gguf_writer *w, const char *key, const char *v, uint64_t len);
/* Numeric/bool array: n elements of `elem` (bool as 1 byte 0/1). */
sdc_status sdc_gguf_set_arr(sdc_gguf_writer *w, const char *key, sdc_gguf_vtype elem,
                            const void *data, uint64_t n);
sdc_status sdc_gguf_set_arr_str(sdc_gguf_writer *w, const char *key, const char *const *strs,
                                uint64_t n);
/* Copies one KV as read from a file (e.g. to carry metadata over on conversion). */
sdc_status sdc_gguf_set_kv(sdc_gguf_writer *w, const sdc_gguf_kv *kv);
/* Alignment of the data section and of each tensor (power of two). Also records it as
 * "general.alignment" unless it is the default 32 and the key was never set. */
sdc_status sdc_gguf_set_alignment(sdc_gguf_writer *w, uint32_t alignment);

/* Adds a tensor whose bytes are at `data` (not copied: keep it alive until written). */
sdc_status sdc_gguf_add_tensor(sdc_gguf_writer *w, const char *name, sdc_type type, int n_dims,
                               const int64_t *ne, const void *data);
/* Adds a tensor whose bytes come from fn(user, ...) at write time. */
sdc_status sdc_gguf_add_tensor_fn(sdc_gguf_writer *w, const char *name, sdc_type type, int n_dims,
                                  const int64_t *ne, sdc_gguf_data_fn fn, void *user);

sdc_status sdc_gguf_write_file(sdc_gguf_writer *w, const char *path);
/* Writes into a malloc'ed buffer (*out, *size); the caller frees it. */
sdc_status sdc_gguf_write_memory(sdc_gguf_writer *w, void **out, size_t *size);

#endif
