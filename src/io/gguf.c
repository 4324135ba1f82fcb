/* GGUF reader: see gguf.h for the layout. Every count and length is checked against
 * the bytes still left in the file before anything is allocated for it, and every
 * tensor is checked (type, shape, size, alignment, bounds, overlap) before open returns.
 * Values are read as little-endian; we only build for little-endian hosts. */
#include "io/file_map.h"
#include "io/gguf.h"

#include "io/name_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define GGUF_MAX_KEY         65535 /* spec limit for keys */
#define GGUF_MAX_TENSOR_NAME 1023  /* ggml allows 63; sd.cpp builds use longer names */
#define GGUF_MIN_KV_BYTES    13    /* key length + 1 key byte + value type */
#define GGUF_MIN_INFO_BYTES  24    /* name length + n_dims + type + offset */

static const struct {
    const char *name;
    size_t size;
} k_vtypes[SDC_GGUF_VTYPE_COUNT] = {
    [SDC_GGUF_U8] = {"u8", 1},     [SDC_GGUF_I8] = {"i8", 1},     [SDC_GGUF_U16] = {"u16", 2},
    [SDC_GGUF_I16] = {"i16", 2},   [SDC_GGUF_U32] = {"u32", 4},   [SDC_GGUF_I32] = {"i32", 4},
    [SDC_GGUF_F32] = {"f32", 4},   [SDC_GGUF_BOOL] = {"bool", 1}, [SDC_GGUF_STRING] = {"str", 0},
    [SDC_GGUF_ARRAY] = {"arr", 0}, [SDC_GGUF_U64] = {"u64", 8},   [SDC_GGUF_I64] = {"i64", 8},
    [SDC_GGUF_F64] = {"f64", 8},
};

const char *sdc_gguf_vtype_name(sdc_gguf_vtype t) {
    return (unsigned)t < SDC_GGUF_VTYPE_COUNT ? k_vtypes[t].name : "unknown";
}
size_t sdc_gguf_vtype_size(sdc_gguf_vtype t) {
    return (unsigned)t < SDC_GGUF_VTYPE_COUNT ? k_vtypes[t].size : 0;
}

/* ---- arena: everything the parsed file owns, freed at once ----------------------------- */

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char mem[];
} arena_block;

static void *arena_alloc(arena_block **head, size_t n) {
    n = (n + 15) & ~(size_t)15;
    arena_block *b = *head;
    if (!b || b->cap - b->used < n) {
        /* blocks grow from 4 KiB to 1 MiB: small files stay small, vocabularies of
         * hundreds of thousands of strings need few blocks */
        size_t cap = b ? (b->cap < (1u << 19) ? b->cap * 2 : (size_t)1 << 20) : 4096;
        if (cap < n) cap = n;
        b = malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->next = *head;
        b->used = 0;
        b->cap = cap;
        *head = b;
    }
    void *p = b->mem + b->used;
    b->used += n;
    return p;
}

static void arena_free(arena_block *b) {
    while (b) {
        arena_block *next = b->next;
        free(b);
        b = next;
    }
}

struct sdc_gguf_file {
    char *label;
    const uint8_t *image;
    size_t size;
    void *map;
    size_t map_size;
    uint32_t version, alignment;
    size_t data_offset;
    sdc_gguf_kv *kvs;
    int n_kv;
    sdc_gguf_tensor *tensors;
    int n_tensors;
    sdc_name_index kv_index, tensor_index;
    arena_block *arena;
};

/* ---- cursor --------------------------------------------------------------------------- */

typedef struct rd {
    const uint8_t *p;
    size_t n, pos;
    sdc_gguf_file *f;
    char where[192]; /* "KV 3 'general.name'" etc., for messages */
} rd;

static sdc_status rd_fail(rd *r, const char *fmt, ...) SDC_PRINTF(2, 3);
static sdc_status rd_fail(rd *r, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return sdc_fail(SDC_ERR_FORMAT, "%s: %s: %s (at byte %zu)", r->f->label, r->where, msg, r->pos);
}

static sdc_status rd_need(rd *r, size_t k, const char *what) {
    if (r->n - r->pos >= k) return SDC_OK;
    return rd_fail(r, "truncated: %s needs %zu bytes but the file ends at byte %zu", what, k, r->n);
}

static sdc_status rd_u32(rd *r, const char *what, uint32_t *v) {
    sdc_status st = rd_need(r, 4, what);
    if (st) return st;
    memcpy(v, r->p + r->pos, 4);
    r->pos += 4;
    return SDC_OK;
}

static sdc_status rd_u64(rd *r, const char *what, uint64_t *v) {
    sdc_status st = rd_need(r, 8, what);
    if (st) return st;
    memcpy(v, r->p + r->pos, 8);
    r->pos += 8;
    return SDC_OK;
}

/* A GGUF string copied into the arena with a NUL; `max` bounds its length. */
static sdc_status rd_str(rd *r, const char *what, uint64_t max, const char **out, uint64_t *len) {
    uint64_t n;
    char lenwhat[64];
    snprintf(lenwhat, sizeof lenwhat, "%s length", what);
    sdc_status st = rd_u64(r, lenwhat, &n);
    if (st) return st;
    if (n > max) {
        r->pos -= 8;
        return rd_fail(r, "%s length %llu exceeds the limit %llu", what, (unsigned long long)n,
                       (unsigned long long)max);
    }
    if (n > r->n - r->pos) {
        r->pos -= 8;
        return rd_fail(r, "truncated: %s of %llu bytes goes past the end of the file", what,
                       (unsigned long long)n);
    }
    char *s = arena_alloc(&r->f->arena, (size_t)n + 1);
    if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", r->f->label);
    memcpy(s, r->p + r->pos, (size_t)n);
    s[n] = '\0';
    r->pos += (size_t)n;
    *out = s;
    if (len) *len = n;
    return SDC_OK;
}

/* ---- KVs ------------------------------------------------------------------------------ */

static sdc_status check_bools(rd *r, const uint8_t *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (v[i] > 1) return rd_fail(r, "bool value %u is neither 0 nor 1", v[i]);
    return SDC_OK;
}

static sdc_status read_array(rd *r, sdc_gguf_kv *kv) {
    uint32_t et;
    uint64_t n;
    sdc_status st;
    if ((st = rd_u32(r, "array element type", &et))) return st;
    if (et >= SDC_GGUF_VTYPE_COUNT) {
        r->pos -= 4;
        return rd_fail(r, "unknown array element type %u", et);
    }
    if (et == SDC_GGUF_ARRAY) {
        r->pos -= 4;
        return rd_fail(r, "nested arrays are not supported");
    }
    if ((st = rd_u64(r, "array length", &n))) return st;
    kv->arr_type = (sdc_gguf_vtype)et;
    kv->arr_n = n;
    size_t left = r->n - r->pos;
    if (et == SDC_GGUF_STRING) {
        if (n > left / 8) {
            r->pos -= 8;
            return rd_fail(
                r, "truncated or corrupt: array of %llu strings cannot fit in the %zu bytes left",
                (unsigned long long)n, left);
        }
        const char **strs = arena_alloc(&r->f->arena, ((size_t)n + 1) * sizeof *strs);
        uint64_t *lens = arena_alloc(&r->f->arena, ((size_t)n + 1) * sizeof *lens);
        if (!strs || !lens) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", r->f->label);
        for (uint64_t i = 0; i < n; i++)
            if ((st = rd_str(r, "array string", UINT64_MAX, &strs[i], &lens[i]))) return st;
        kv->arr_str = strs;
        kv->arr_str_len = lens;
        kv->arr = strs;
        return SDC_OK;
    }
    size_t es = k_vtypes[et].size;
    if (n > left / es) {
        r->pos -= 8;
        return rd_fail(
            r, "truncated or corrupt: array of %llu %s values cannot fit in the %zu bytes left",
            (unsigned long long)n, k_vtypes[et].name, left);
    }
    void *dst = arena_alloc(&r->f->arena, (size_t)n * es + 1);
    if (!dst) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", r->f->label);
    memcpy(dst, r->p + r->pos, (size_t)n * es);
    if (et == SDC_GGUF_BOOL && (st = check_bools(r, dst, n))) return st;
    r->pos += (size_t)n * es;
    kv->arr = dst;
    return SDC_OK;
}

static sdc_status read_kv(rd *r, int i, sdc_gguf_kv *kv) {
    sdc_status st;
    uint32_t vt;
    snprintf(r->where, sizeof r->where, "KV %d", i);
    uint64_t klen;
    if ((st = rd_str(r, "key", GGUF_MAX_KEY, &kv->key, &klen))) return st;
    if (klen == 0 || strlen(kv->key) != klen) {
        r->pos -= (size_t)klen;
        return rd_fail(r, "empty key or key with a NUL byte");
    }
    snprintf(r->where, sizeof r->where, "KV %d '%.120s'", i, kv->key);
    if ((st = rd_u32(r, "value type", &vt))) return st;
    if (vt >= SDC_GGUF_VTYPE_COUNT) {
        r->pos -= 4;
        return rd_fail(r, "unknown value type %u", vt);
    }
    kv->type = (sdc_gguf_vtype)vt;
    if (vt == SDC_GGUF_STRING) return rd_str(r, "string value", UINT64_MAX, &kv->str, &kv->str_len);
    if (vt == SDC_GGUF_ARRAY) return read_array(r, kv);
    size_t es = k_vtypes[vt].size;
    if ((st = rd_need(r, es, "value"))) return st;
    memcpy(&kv->v, r->p + r->pos, es);
    if (vt == SDC_GGUF_BOOL && (st = check_bools(r, r->p + r->pos, 1))) return st;
    r->pos += es;
    return SDC_OK;
}

/* ---- tensors -------------------------------------------------------------------------- */

static sdc_status read_tensor_info(rd *r, int i, sdc_gguf_tensor *t) {
    sdc_status st;
    uint32_t nd, type;
    snprintf(r->where, sizeof r->where, "tensor %d", i);
    uint64_t nlen;
    if ((st = rd_str(r, "tensor name", GGUF_MAX_TENSOR_NAME, &t->name, &nlen))) return st;
    if (nlen == 0 || strlen(t->name) != nlen) {
        r->pos -= (size_t)nlen;
        return rd_fail(r, "empty tensor name or a name with a NUL byte");
    }
    snprintf(r->where, sizeof r->where, "tensor '%.120s'", t->name);
    if ((st = rd_u32(r, "n_dims", &nd))) return st;
    if (nd > SDC_GGUF_MAX_DIMS) {
        r->pos -= 4;
        return rd_fail(r, "n_dims %u is more than %d", nd, SDC_GGUF_MAX_DIMS);
    }
    t->n_dims = (int)nd;
    for (int d = 0; d < SDC_GGUF_MAX_DIMS; d++) t->ne[d] = 1;
    for (uint32_t d = 0; d < nd; d++) {
        uint64_t v;
        if ((st = rd_u64(r, "dimension", &v))) return st;
        if (v > (uint64_t)INT64_MAX) {
            r->pos -= 8;
            return rd_fail(r, "dimension %u is %llu, too large", d, (unsigned long long)v);
        }
        t->ne[d] = (int64_t)v;
    }
    if ((st = rd_u32(r, "type", &type))) return st;
    const sdc_type_traits *tr = sdc_type_get((int)type);
    if (!tr) {
        r->pos -= 4;
        return rd_fail(r, "unknown type id %u", type);
    }
    t->type = (sdc_type)type;
    if ((st = rd_u64(r, "data offset", &t->offset))) return st;

    /* size from the type traits, every step checked for overflow */
    /* the product of all dims taken as at least 1 must fit int64, so that element
     * counts computed in any order never overflow (zero dims included) */
    uint64_t rows = 1, span = 1;
    for (int d = 0; d < SDC_GGUF_MAX_DIMS; d++) {
        uint64_t v = t->ne[d] ? (uint64_t)t->ne[d] : 1;
        if (span > (uint64_t)INT64_MAX / v)
            return rd_fail(r, "shape [%lld, %lld, %lld, %lld] overflows", (long long)t->ne[0],
                           (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3]);
        span *= v;
        if (d > 0) rows *= (uint64_t)t->ne[d];
    }
    if (t->ne[0] % tr->block_size)
        return rd_fail(r, "ne[0] = %lld is not a multiple of the %s block size %lld",
                       (long long)t->ne[0], tr->name, (long long)tr->block_size);
    uint64_t row_bytes = (uint64_t)(t->ne[0] / tr->block_size) * tr->block_bytes;
    if (row_bytes / tr->block_bytes != (uint64_t)(t->ne[0] / tr->block_size) ||
        (rows && row_bytes > (uint64_t)INT64_MAX / rows))
        return rd_fail(r, "byte size of shape [%lld, %lld, %lld, %lld] overflows",
                       (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                       (long long)t->ne[3]);
    if (row_bytes * rows > SIZE_MAX) return rd_fail(r, "tensor too large for this machine");
    t->nbytes = (size_t)(row_bytes * rows);
    return SDC_OK;
}

static int cmp_offset(const void *a, const void *b) {
    const sdc_gguf_tensor *x = *(const sdc_gguf_tensor *const *)a;
    const sdc_gguf_tensor *y = *(const sdc_gguf_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    return x->nbytes < y->nbytes ? -1 : x->nbytes > y->nbytes;
}

static uint64_t align_up(uint64_t v, uint64_t a) {
    return (v + a - 1) / a * a;
}

/* Alignment, data section, each tensor's bounds and alignment, no overlaps. */
static sdc_status place_tensors(sdc_gguf_file *f, size_t info_end) {
    const char *L = f->label;
    f->alignment = SDC_GGUF_DEFAULT_ALIGNMENT;
    const sdc_gguf_kv *a = sdc_gguf_find_kv(f, "general.alignment");
    if (a) {
        if (a->type != SDC_GGUF_U32)
            return sdc_fail(SDC_ERR_FORMAT, "%s: general.alignment has type %s, expected u32", L,
                            sdc_gguf_vtype_name(a->type));
        uint32_t v = a->v.u32;
        if (v == 0 || (v & (v - 1)) || v > SDC_GGUF_MAX_ALIGNMENT)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: general.alignment = %u is not a power of two up to %u", L, v,
                            SDC_GGUF_MAX_ALIGNMENT);
        f->alignment = v;
    }
    uint64_t data_off = align_up(info_end, f->alignment);
    size_t data_size = data_off <= f->size ? f->size - (size_t)data_off : 0;
    f->data_offset = (size_t)(data_off <= f->size ? data_off : f->size);
    for (int i = 0; i < f->n_tensors; i++) {
        sdc_gguf_tensor *t = &f->tensors[i];
        if (t->offset % f->alignment) {
            if (i > 0) {
                const sdc_gguf_tensor *p = &f->tensors[i - 1];
                return sdc_fail(SDC_ERR_FORMAT,
                                "%s: tensor '%s': data offset %llu is not a multiple of the "
                                "alignment %u (expected %llu after tensor '%s' at %llu)",
                                L, t->name, (unsigned long long)t->offset, f->alignment,
                                (unsigned long long)align_up(p->offset + p->nbytes, f->alignment),
                                p->name, (unsigned long long)p->offset);
            }
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: tensor '%s': data offset %llu is not a multiple of the "
                            "alignment %u",
                            L, t->name, (unsigned long long)t->offset, f->alignment);
        }
    }
    for (int i = 0; i < f->n_tensors; i++) {
        sdc_gguf_tensor *t = &f->tensors[i];
        if (t->offset > data_size || t->nbytes > data_size - t->offset)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: tensor '%s': data [%llu, %llu) lies outside the data section "
                            "(%zu bytes from byte %llu): truncated?",
                            L, t->name, (unsigned long long)t->offset,
                            (unsigned long long)t->offset + t->nbytes, data_size,
                            (unsigned long long)data_off);
        t->data = f->image + f->data_offset + t->offset;
    }
    /* overlap check in offset order; zero-size tensors occupy nothing */
    const sdc_gguf_tensor **order = malloc(((size_t)f->n_tensors + 1) * sizeof *order);
    if (!order) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", L);
    for (int i = 0; i < f->n_tensors; i++) order[i] = &f->tensors[i];
    qsort(order, (size_t)f->n_tensors, sizeof *order, cmp_offset);
    const sdc_gguf_tensor *prev = NULL;
    sdc_status st = SDC_OK;
    for (int i = 0; i < f->n_tensors; i++) {
        const sdc_gguf_tensor *t = order[i];
        if (!t->nbytes) continue;
        if (prev && t->offset < prev->offset + prev->nbytes) {
            st = sdc_fail(SDC_ERR_FORMAT,
                          "%s: tensor '%s': data [%llu, %llu) overlaps tensor '%s' [%llu, %llu)", L,
                          t->name, (unsigned long long)t->offset,
                          (unsigned long long)(t->offset + t->nbytes), prev->name,
                          (unsigned long long)prev->offset,
                          (unsigned long long)(prev->offset + prev->nbytes));
            break;
        }
        prev = t;
    }
    free(order);
    return st;
}

static sdc_status parse(sdc_gguf_file *f) {
    rd r = {f->image, f->size, 0, f, "header"};
    sdc_status st;
    uint32_t magic, version;
    uint64_t n_tensors, n_kv;
    if (f->size < 4 || memcmp(f->image, "GGUF", 4) != 0)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a GGUF file (bad magic)", f->label);
    if ((st = rd_u32(&r, "magic", &magic))) return st;
    if ((st = rd_u32(&r, "version", &version))) return st;
    if (version == 1)
        return sdc_fail(SDC_ERR_FORMAT, "%s: GGUF version 1 is not supported", f->label);
    if (version != 2 && version != 3) {
        if ((version & 0xffff) == 0)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: GGUF version %u: a big-endian file? only little-endian GGUF is "
                            "supported",
                            f->label, version);
        return sdc_fail(SDC_ERR_FORMAT, "%s: unsupported GGUF version %u (expected 2 or 3)",
                        f->label, version);
    }
    f->version = version;
    if ((st = rd_u64(&r, "tensor count", &n_tensors))) return st;
    if ((st = rd_u64(&r, "KV count", &n_kv))) return st;
    size_t left = r.n - r.pos;
    if (n_kv > left / GGUF_MIN_KV_BYTES || n_kv > INT32_MAX)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: KV count %llu is impossible for the %zu bytes left in the file",
                        f->label, (unsigned long long)n_kv, left);
    if (n_tensors > left / GGUF_MIN_INFO_BYTES || n_tensors > INT32_MAX)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: tensor count %llu is impossible for the %zu bytes left in the file",
                        f->label, (unsigned long long)n_tensors, left);

    f->kvs = calloc((size_t)n_kv + 1, sizeof *f->kvs);
    if (!f->kvs || sdc_name_index_init(&f->kv_index, (size_t)n_kv))
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    for (uint64_t i = 0; i < n_kv; i++) {
        sdc_gguf_kv *kv = &f->kvs[i];
        if ((st = read_kv(&r, (int)i, kv))) return st;
        int old = sdc_name_index_insert(&f->kv_index, kv->key, (int)i);
        if (old == -2) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
        if (old >= 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: KV %d: duplicate key '%s' (first at KV %d)",
                            f->label, (int)i, kv->key, old);
        f->n_kv++;
    }

    left = r.n - r.pos;
    if (n_tensors > left / GGUF_MIN_INFO_BYTES)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: tensor count %llu is impossible for the %zu bytes left after the KVs",
                        f->label, (unsigned long long)n_tensors, left);
    f->tensors = calloc((size_t)n_tensors + 1, sizeof *f->tensors);
    if (!f->tensors || sdc_name_index_init(&f->tensor_index, (size_t)n_tensors))
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    for (uint64_t i = 0; i < n_tensors; i++) {
        sdc_gguf_tensor *t = &f->tensors[i];
        if ((st = read_tensor_info(&r, (int)i, t))) return st;
        int old = sdc_name_index_insert(&f->tensor_index, t->name, (int)i);
        if (old == -2) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
        if (old >= 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': duplicate name (tensors %d and %d)",
                            f->label, t->name, old, (int)i);
        f->n_tensors++;
    }
    return place_tensors(f, r.pos);
}

/* ---- open / close --------------------------------------------------------------------- */

static sdc_gguf_file *new_file(const char *label) {
    sdc_gguf_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->label = strdup(label ? label : "<memory>");
    if (!f->label) {
        free(f);
        return NULL;
    }
    f->alignment = SDC_GGUF_DEFAULT_ALIGNMENT;
    return f;
}

/* A file image (mapped by us when `map` is set, which the file then owns) to a parsed file. */
static sdc_status from_image(const char *label, const void *image, size_t size, void *map,
                             sdc_gguf_file **out) {
    sdc_gguf_file *f = new_file(label);
    if (!f) {
        sdc_unmap_file(map, size);
        return sdc_fail(SDC_ERR_NO_MEMORY, "out of memory");
    }
    f->image = image;
    f->size = size;
    f->map = map;
    f->map_size = map ? size : 0;
    sdc_status st = parse(f);
    if (st) {
        sdc_gguf_close(f);
        return st;
    }
    *out = f;
    return SDC_OK;
}

sdc_status sdc_gguf_open_memory(const void *data, size_t size, const char *label,
                                sdc_gguf_file **out) {
    *out = NULL;
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_gguf_open_memory: NULL data");
    return from_image(label, data, size, NULL, out);
}

sdc_status sdc_gguf_open(const char *path, sdc_gguf_file **out) {
    *out = NULL;
    void *map;
    size_t size;
    sdc_status st = sdc_map_file(path, &map, &size);
    return st != SDC_OK ? st : from_image(path, map, size, map, out);
}

void sdc_gguf_close(sdc_gguf_file *f) {
    if (!f) return;
    sdc_unmap_file(f->map, f->map_size);
    sdc_name_index_free(&f->kv_index);
    sdc_name_index_free(&f->tensor_index);
    arena_free(f->arena);
    free(f->kvs);
    free(f->tensors);
    free(f->label);
    free(f);
}

const char *sdc_gguf_path(const sdc_gguf_file *f) {
    return f->label;
}
uint32_t sdc_gguf_version(const sdc_gguf_file *f) {
    return f->version;
}
uint32_t sdc_gguf_alignment(const sdc_gguf_file *f) {
    return f->alignment;
}
size_t sdc_gguf_data_offset(const sdc_gguf_file *f) {
    return f->data_offset;
}

int sdc_gguf_kv_count(const sdc_gguf_file *f) {
    return f->n_kv;
}
const sdc_gguf_kv *sdc_gguf_kv_at(const sdc_gguf_file *f, int i) {
    return i >= 0 && i < f->n_kv ? &f->kvs[i] : NULL;
}
const sdc_gguf_kv *sdc_gguf_find_kv(const sdc_gguf_file *f, const char *key) {
    int i = sdc_name_index_find(&f->kv_index, key);
    return i >= 0 ? &f->kvs[i] : NULL;
}

int sdc_gguf_tensor_count(const sdc_gguf_file *f) {
    return f->n_tensors;
}
const sdc_gguf_tensor *sdc_gguf_tensor_at(const sdc_gguf_file *f, int i) {
    return i >= 0 && i < f->n_tensors ? &f->tensors[i] : NULL;
}
const sdc_gguf_tensor *sdc_gguf_find_tensor(const sdc_gguf_file *f, const char *name) {
    int i = sdc_name_index_find(&f->tensor_index, name);
    return i >= 0 ? &f->tensors[i] : NULL;
}

/* ---- typed getters -------------------------------------------------------------------- */

static sdc_status lookup(const sdc_gguf_file *f, const char *key, sdc_gguf_vtype want,
                         const sdc_gguf_kv **out) {
    const sdc_gguf_kv *kv = sdc_gguf_find_kv(f, key);
    if (!kv) return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' not found", f->label, key);
    if (kv->type != want)
        return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' has type %s, expected %s", f->label, key,
                        sdc_gguf_vtype_name(kv->type), sdc_gguf_vtype_name(want));
    *out = kv;
    return SDC_OK;
}

#define GGUF_GETTER(fn, ctype, vt, field)                                                          \
    sdc_status fn(const sdc_gguf_file *f, const char *key, ctype *out) {                           \
        const sdc_gguf_kv *kv = NULL;                                                              \
        sdc_status st = lookup(f, key, vt, &kv);                                                   \
        if (!st) *out = kv->v.field;                                                               \
        return st;                                                                                 \
    }

GGUF_GETTER(sdc_gguf_get_u8, uint8_t, SDC_GGUF_U8, u8)
GGUF_GETTER(sdc_gguf_get_i8, int8_t, SDC_GGUF_I8, i8)
GGUF_GETTER(sdc_gguf_get_u16, uint16_t, SDC_GGUF_U16, u16)
GGUF_GETTER(sdc_gguf_get_i16, int16_t, SDC_GGUF_I16, i16)
GGUF_GETTER(sdc_gguf_get_u32, uint32_t, SDC_GGUF_U32, u32)
GGUF_GETTER(sdc_gguf_get_i32, int32_t, SDC_GGUF_I32, i32)
GGUF_GETTER(sdc_gguf_get_u64, uint64_t, SDC_GGUF_U64, u64)
GGUF_GETTER(sdc_gguf_get_i64, int64_t, SDC_GGUF_I64, i64)
GGUF_GETTER(sdc_gguf_get_f32, float, SDC_GGUF_F32, f32)
GGUF_GETTER(sdc_gguf_get_f64, double, SDC_GGUF_F64, f64)
GGUF_GETTER(sdc_gguf_get_bool, bool, SDC_GGUF_BOOL, b)

sdc_status sdc_gguf_get_str(const sdc_gguf_file *f, const char *key, const char **out) {
    const sdc_gguf_kv *kv = NULL;
    sdc_status st = lookup(f, key, SDC_GGUF_STRING, &kv);
    if (!st) *out = kv->str;
    return st;
}

sdc_status sdc_gguf_get_int(const sdc_gguf_file *f, const char *key, int64_t *out) {
    const sdc_gguf_kv *kv = sdc_gguf_find_kv(f, key);
    if (!kv) return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' not found", f->label, key);
    switch (kv->type) {
    case SDC_GGUF_U8:
        *out = kv->v.u8;
        return SDC_OK;
    case SDC_GGUF_I8:
        *out = kv->v.i8;
        return SDC_OK;
    case SDC_GGUF_U16:
        *out = kv->v.u16;
        return SDC_OK;
    case SDC_GGUF_I16:
        *out = kv->v.i16;
        return SDC_OK;
    case SDC_GGUF_U32:
        *out = kv->v.u32;
        return SDC_OK;
    case SDC_GGUF_I32:
        *out = kv->v.i32;
        return SDC_OK;
    case SDC_GGUF_I64:
        *out = kv->v.i64;
        return SDC_OK;
    case SDC_GGUF_U64:
        if (kv->v.u64 > (uint64_t)INT64_MAX)
            return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' = %llu does not fit int64", f->label, key,
                            (unsigned long long)kv->v.u64);
        *out = (int64_t)kv->v.u64;
        return SDC_OK;
    default:
        return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' has type %s, expected an integer", f->label,
                        key, sdc_gguf_vtype_name(kv->type));
    }
}

sdc_status sdc_gguf_get_arr(const sdc_gguf_file *f, const char *key, sdc_gguf_vtype elem,
                            uint64_t *n, const void **data) {
    const sdc_gguf_kv *kv = NULL;
    sdc_status st = lookup(f, key, SDC_GGUF_ARRAY, &kv);
    if (st) return st;
    if (kv->arr_type != elem)
        return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s' is an array of %s, expected %s", f->label,
                        key, sdc_gguf_vtype_name(kv->arr_type), sdc_gguf_vtype_name(elem));
    *n = kv->arr_n;
    *data = kv->arr;
    return SDC_OK;
}
