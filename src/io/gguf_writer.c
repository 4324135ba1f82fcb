/* GGUF v3 writer: KVs and tensor descriptions are collected in memory, tensor bytes are
 * pulled one tensor at a time while writing (from a pointer or a callback), so a model
 * being converted never needs to exist in memory as a whole. Layout as ggml writes it:
 * every tensor starts at a multiple of the alignment and is zero-padded to the next one. */
#include "io/gguf.h"

#include "io/name_index.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GGUF_WRITE_VERSION 3

typedef struct wkv {
    sdc_gguf_kv kv; /* all pointers owned */
} wkv;

typedef struct wtensor {
    char *name;
    sdc_type type;
    int n_dims;
    int64_t ne[SDC_GGUF_MAX_DIMS];
    size_t nbytes;
    uint64_t offset;
    const void *data;
    sdc_gguf_data_fn fn;
    void *user;
} wtensor;

struct sdc_gguf_writer {
    wkv *kvs;
    int n_kv, cap_kv;
    wtensor *tensors;
    int n_t, cap_t;
    sdc_name_index kv_index, t_index;
    uint32_t alignment;
};

sdc_status sdc_gguf_writer_create(sdc_gguf_writer **out) {
    sdc_gguf_writer *w = calloc(1, sizeof *w);
    if (!w || sdc_name_index_init(&w->kv_index, 16) || sdc_name_index_init(&w->t_index, 16)) {
        if (w) {
            sdc_name_index_free(&w->kv_index);
            free(w);
        }
        *out = NULL;
        return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
    }
    w->alignment = SDC_GGUF_DEFAULT_ALIGNMENT;
    *out = w;
    return SDC_OK;
}

static void free_kv_value(sdc_gguf_kv *kv) {
    free((void *)kv->str);
    if (kv->arr_str) {
        for (uint64_t i = 0; i < kv->arr_n; i++) free((void *)kv->arr_str[i]);
        free((void *)kv->arr_str);
        free((void *)kv->arr_str_len);
    } else {
        free((void *)kv->arr);
    }
    const char *key = kv->key;
    memset(kv, 0, sizeof *kv);
    kv->key = key;
}

void sdc_gguf_writer_free(sdc_gguf_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n_kv; i++) {
        free_kv_value(&w->kvs[i].kv);
        free((void *)w->kvs[i].kv.key);
    }
    for (int i = 0; i < w->n_t; i++) free(w->tensors[i].name);
    free(w->kvs);
    free(w->tensors);
    sdc_name_index_free(&w->kv_index);
    sdc_name_index_free(&w->t_index);
    free(w);
}

/* Returns the slot for key (new or emptied for replacement), or NULL with an error set. */
static sdc_gguf_kv *slot_for(sdc_gguf_writer *w, const char *key) {
    if (!key || !key[0]) {
        sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: empty key");
        return NULL;
    }
    if (strlen(key) > 65535) {
        sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: key longer than 65535 bytes");
        return NULL;
    }
    int i = sdc_name_index_find(&w->kv_index, key);
    if (i >= 0) {
        free_kv_value(&w->kvs[i].kv);
        return &w->kvs[i].kv;
    }
    if (w->n_kv == w->cap_kv) {
        int cap = w->cap_kv ? w->cap_kv * 2 : 16;
        wkv *k = realloc(w->kvs, (size_t)cap * sizeof *k);
        if (!k) {
            sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
            return NULL;
        }
        w->kvs = k;
        w->cap_kv = cap;
        /* the index points at key strings, which do not move with the array */
    }
    char *k = strdup(key);
    if (!k) {
        sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
        return NULL;
    }
    if (sdc_name_index_insert(&w->kv_index, k, w->n_kv) == -2) {
        free(k);
        sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
        return NULL;
    }
    sdc_gguf_kv *kv = &w->kvs[w->n_kv++].kv;
    memset(kv, 0, sizeof *kv);
    kv->key = k;
    return kv;
}

static sdc_status set_scalar(sdc_gguf_writer *w, const char *key, sdc_gguf_vtype t,
                             sdc_gguf_scalar v) {
    if (key && strcmp(key, "general.alignment") == 0) {
        if (t != SDC_GGUF_U32)
            return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: general.alignment must be u32");
        if (v.u32 == 0 || (v.u32 & (v.u32 - 1)) || v.u32 > SDC_GGUF_MAX_ALIGNMENT)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "gguf writer: general.alignment %u is not a power of two up to %u",
                            v.u32, SDC_GGUF_MAX_ALIGNMENT);
    }
    sdc_gguf_kv *kv = slot_for(w, key);
    if (!kv) return SDC_ERR_INVALID_ARG;
    kv->type = t;
    kv->v = v;
    if (strcmp(key, "general.alignment") == 0) w->alignment = v.u32;
    return SDC_OK;
}

#define GGUF_SETTER(fn, ctype, vt, field)                                                          \
    sdc_status fn(sdc_gguf_writer *w, const char *key, ctype v) {                                  \
        sdc_gguf_scalar s;                                                                         \
        memset(&s, 0, sizeof s);                                                                   \
        s.field = v;                                                                               \
        return set_scalar(w, key, vt, s);                                                          \
    }

GGUF_SETTER(sdc_gguf_set_u8, uint8_t, SDC_GGUF_U8, u8)
GGUF_SETTER(sdc_gguf_set_i8, int8_t, SDC_GGUF_I8, i8)
GGUF_SETTER(sdc_gguf_set_u16, uint16_t, SDC_GGUF_U16, u16)
GGUF_SETTER(sdc_gguf_set_i16, int16_t, SDC_GGUF_I16, i16)
GGUF_SETTER(sdc_gguf_set_u32, uint32_t, SDC_GGUF_U32, u32)
GGUF_SETTER(sdc_gguf_set_i32, int32_t, SDC_GGUF_I32, i32)
GGUF_SETTER(sdc_gguf_set_u64, uint64_t, SDC_GGUF_U64, u64)
GGUF_SETTER(sdc_gguf_set_i64, int64_t, SDC_GGUF_I64, i64)
GGUF_SETTER(sdc_gguf_set_f32, float, SDC_GGUF_F32, f32)
GGUF_SETTER(sdc_gguf_set_f64, double, SDC_GGUF_F64, f64)
GGUF_SETTER(sdc_gguf_set_bool, bool, SDC_GGUF_BOOL, b)

sdc_status sdc_gguf_set_strn(sdc_gguf_writer *w, const char *key, const char *v, uint64_t len) {
    if (!v && len) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: NULL string");
    if (key && strcmp(key, "general.alignment") == 0)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: general.alignment must be u32");
    char *copy = malloc((size_t)len + 1);
    if (!copy) return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
    if (len) memcpy(copy, v, (size_t)len);
    copy[len] = '\0';
    sdc_gguf_kv *kv = slot_for(w, key);
    if (!kv) {
        free(copy);
        return SDC_ERR_INVALID_ARG;
    }
    kv->type = SDC_GGUF_STRING;
    kv->str = copy;
    kv->str_len = len;
    return SDC_OK;
}

sdc_status sdc_gguf_set_str(sdc_gguf_writer *w, const char *key, const char *v) {
    if (!v) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: NULL string for '%s'", key);
    return sdc_gguf_set_strn(w, key, v, strlen(v));
}

sdc_status sdc_gguf_set_arr(sdc_gguf_writer *w, const char *key, sdc_gguf_vtype elem,
                            const void *data, uint64_t n) {
    size_t es = sdc_gguf_vtype_size(elem);
    if (!es)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: '%s': bad array element type %d", key,
                        (int)elem);
    if (n && !data) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: '%s': NULL array", key);
    if (n > SIZE_MAX / es) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: array too long");
    void *copy = malloc((size_t)n * es + 1);
    if (!copy) return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
    if (n) memcpy(copy, data, (size_t)n * es);
    if (elem == SDC_GGUF_BOOL)
        for (uint64_t i = 0; i < n; i++) ((uint8_t *)copy)[i] = ((uint8_t *)copy)[i] != 0;
    sdc_gguf_kv *kv = slot_for(w, key);
    if (!kv) {
        free(copy);
        return SDC_ERR_INVALID_ARG;
    }
    kv->type = SDC_GGUF_ARRAY;
    kv->arr_type = elem;
    kv->arr_n = n;
    kv->arr = copy;
    return SDC_OK;
}

static sdc_status set_arr_strn(sdc_gguf_writer *w, const char *key, const char *const *strs,
                               const uint64_t *lens, uint64_t n) {
    if (n && !strs) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: '%s': NULL array", key);
    if (n > SIZE_MAX / 16) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: array too long");
    char **copy = calloc((size_t)n + 1, sizeof *copy);
    uint64_t *cl = calloc((size_t)n + 1, sizeof *cl);
    int ok = copy && cl;
    for (uint64_t i = 0; ok && i < n; i++) {
        cl[i] = lens ? lens[i] : strlen(strs[i]);
        copy[i] = malloc((size_t)cl[i] + 1);
        if (!copy[i]) {
            ok = 0;
            break;
        }
        memcpy(copy[i], strs[i], (size_t)cl[i]);
        copy[i][cl[i]] = '\0';
    }
    sdc_gguf_kv *kv = ok ? slot_for(w, key) : NULL;
    if (!kv) {
        for (uint64_t i = 0; copy && i < n; i++) free(copy[i]);
        free(copy);
        free(cl);
        return ok ? SDC_ERR_INVALID_ARG : sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
    }
    kv->type = SDC_GGUF_ARRAY;
    kv->arr_type = SDC_GGUF_STRING;
    kv->arr_n = n;
    kv->arr_str = (const char *const *)copy;
    kv->arr_str_len = cl;
    kv->arr = copy;
    return SDC_OK;
}

sdc_status sdc_gguf_set_arr_str(sdc_gguf_writer *w, const char *key, const char *const *strs,
                                uint64_t n) {
    for (uint64_t i = 0; i < n; i++)
        if (!strs[i]) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: '%s': NULL string", key);
    return set_arr_strn(w, key, strs, NULL, n);
}

sdc_status sdc_gguf_set_kv(sdc_gguf_writer *w, const sdc_gguf_kv *kv) {
    switch (kv->type) {
    case SDC_GGUF_STRING:
        return sdc_gguf_set_strn(w, kv->key, kv->str, kv->str_len);
    case SDC_GGUF_ARRAY:
        if (kv->arr_type == SDC_GGUF_STRING)
            return set_arr_strn(w, kv->key, kv->arr_str, kv->arr_str_len, kv->arr_n);
        return sdc_gguf_set_arr(w, kv->key, kv->arr_type, kv->arr, kv->arr_n);
    default:
        if ((unsigned)kv->type >= SDC_GGUF_VTYPE_COUNT)
            return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: '%s': bad value type %d", kv->key,
                            (int)kv->type);
        return set_scalar(w, kv->key, kv->type, kv->v);
    }
}

sdc_status sdc_gguf_set_alignment(sdc_gguf_writer *w, uint32_t alignment) {
    return sdc_gguf_set_u32(w, "general.alignment", alignment);
}

/* ---- tensors -------------------------------------------------------------------------- */

static sdc_status add_tensor(sdc_gguf_writer *w, const char *name, sdc_type type, int n_dims,
                             const int64_t *ne, const void *data, sdc_gguf_data_fn fn, void *user) {
    if (!name || !name[0]) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: empty tensor name");
    const sdc_type_traits *tr = sdc_type_get((int)type);
    if (!tr)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': unknown type %d", name,
                        (int)type);
    if (n_dims < 1 || n_dims > SDC_GGUF_MAX_DIMS)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': n_dims %d", name, n_dims);
    wtensor t = {0};
    t.type = type;
    t.n_dims = n_dims;
    uint64_t rows = 1, span = 1; /* same rule as the reader: dims as >= 1 must fit */
    for (int d = 0; d < SDC_GGUF_MAX_DIMS; d++) {
        t.ne[d] = d < n_dims ? ne[d] : 1;
        if (t.ne[d] < 0)
            return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': negative dimension",
                            name);
        uint64_t v = t.ne[d] ? (uint64_t)t.ne[d] : 1;
        if (span > (uint64_t)INT64_MAX / v)
            return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': too large", name);
        span *= v;
        if (d > 0) rows *= (uint64_t)t.ne[d];
    }
    if (t.ne[0] % tr->block_size)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "gguf writer: tensor '%s': ne[0] = %lld is not a multiple of the %s "
                        "block size %lld",
                        name, (long long)t.ne[0], tr->name, (long long)tr->block_size);
    size_t row_bytes = sdc_type_row_bytes(type, t.ne[0]);
    if (rows && row_bytes > SIZE_MAX / 2 / rows)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': too large", name);
    t.nbytes = row_bytes * (size_t)rows;
    if (t.nbytes && !data && !fn)
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': no data", name);
    t.data = data;
    t.fn = fn;
    t.user = user;
    if (w->n_t == w->cap_t) {
        int cap = w->cap_t ? w->cap_t * 2 : 16;
        wtensor *n = realloc(w->tensors, (size_t)cap * sizeof *n);
        if (!n) return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
        w->tensors = n;
        w->cap_t = cap;
    }
    t.name = strdup(name);
    if (!t.name) return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
    int old = sdc_name_index_insert(&w->t_index, t.name, w->n_t);
    if (old != -1) {
        free(t.name);
        if (old == -2) return sdc_fail(SDC_ERR_NO_MEMORY, "gguf writer: out of memory");
        return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s' added twice", name);
    }
    w->tensors[w->n_t++] = t;
    return SDC_OK;
}

sdc_status sdc_gguf_add_tensor(sdc_gguf_writer *w, const char *name, sdc_type type, int n_dims,
                               const int64_t *ne, const void *data) {
    return add_tensor(w, name, type, n_dims, ne, data, NULL, NULL);
}

sdc_status sdc_gguf_add_tensor_fn(sdc_gguf_writer *w, const char *name, sdc_type type, int n_dims,
                                  const int64_t *ne, sdc_gguf_data_fn fn, void *user) {
    if (!fn) return sdc_fail(SDC_ERR_INVALID_ARG, "gguf writer: tensor '%s': NULL callback", name);
    return add_tensor(w, name, type, n_dims, ne, NULL, fn, user);
}

/* ---- output --------------------------------------------------------------------------- */

/* Either a FILE or a growing memory buffer; the first error sticks. */
typedef struct sink {
    FILE *fp;
    const char *label;
    uint8_t *buf;
    size_t len, cap;
    uint64_t pos;
    sdc_status err;
} sink;

static void put(sink *s, const void *p, size_t n) {
    if (s->err || !n) return;
    if (s->fp) {
        if (fwrite(p, 1, n, s->fp) != n) {
            s->err = sdc_fail(SDC_ERR_IO, "%s: write failed: %s", s->label, strerror(errno));
            return;
        }
    } else {
        if (s->cap - s->len < n) {
            size_t cap = s->cap ? s->cap : 4096;
            while (cap - s->len < n) cap *= 2;
            uint8_t *b = realloc(s->buf, cap);
            if (!b) {
                s->err = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", s->label);
                return;
            }
            s->buf = b;
            s->cap = cap;
        }
        memcpy(s->buf + s->len, p, n);
        s->len += n;
    }
    s->pos += n;
}

static void put_u32(sink *s, uint32_t v) {
    put(s, &v, 4);
}
static void put_u64(sink *s, uint64_t v) {
    put(s, &v, 8);
}
static void put_str(sink *s, const char *str, uint64_t len) {
    put_u64(s, len);
    put(s, str, (size_t)len);
}
static void pad_to(sink *s, uint32_t alignment) {
    static const uint8_t zeros[256];
    uint64_t n = (alignment - s->pos % alignment) % alignment;
    while (n) {
        size_t k = n > sizeof zeros ? sizeof zeros : (size_t)n;
        put(s, zeros, k);
        n -= k;
    }
}

static void put_kv(sink *s, const sdc_gguf_kv *kv) {
    put_str(s, kv->key, strlen(kv->key));
    put_u32(s, (uint32_t)kv->type);
    if (kv->type == SDC_GGUF_STRING) {
        put_str(s, kv->str, kv->str_len);
    } else if (kv->type == SDC_GGUF_ARRAY) {
        put_u32(s, (uint32_t)kv->arr_type);
        put_u64(s, kv->arr_n);
        if (kv->arr_type == SDC_GGUF_STRING)
            for (uint64_t i = 0; i < kv->arr_n; i++) put_str(s, kv->arr_str[i], kv->arr_str_len[i]);
        else
            put(s, kv->arr, (size_t)kv->arr_n * sdc_gguf_vtype_size(kv->arr_type));
    } else {
        put(s, &kv->v, sdc_gguf_vtype_size(kv->type));
    }
}

static sdc_status write_all(sdc_gguf_writer *w, sink *s) {
    uint32_t al = w->alignment;
    uint64_t off = 0;
    for (int i = 0; i < w->n_t; i++) {
        w->tensors[i].offset = off;
        off += (w->tensors[i].nbytes + al - 1) / al * al;
    }
    put(s, "GGUF", 4);
    put_u32(s, GGUF_WRITE_VERSION);
    put_u64(s, (uint64_t)w->n_t);
    put_u64(s, (uint64_t)w->n_kv);
    for (int i = 0; i < w->n_kv; i++) put_kv(s, &w->kvs[i].kv);
    for (int i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->tensors[i];
        put_str(s, t->name, strlen(t->name));
        put_u32(s, (uint32_t)t->n_dims);
        for (int d = 0; d < t->n_dims; d++) put_u64(s, (uint64_t)t->ne[d]);
        put_u32(s, (uint32_t)t->type);
        put_u64(s, t->offset);
    }
    pad_to(s, al);
    uint64_t data_start = s->pos;
    void *tmp = NULL;
    size_t tmp_cap = 0;
    for (int i = 0; i < w->n_t && !s->err; i++) {
        const wtensor *t = &w->tensors[i];
        if (s->pos - data_start != t->offset) {
            s->err = sdc_fail(SDC_ERR_INTERNAL, "%s: tensor '%s' misplaced", s->label, t->name);
            break;
        }
        const void *src = t->data;
        if (t->fn && t->nbytes) {
            if (tmp_cap < t->nbytes) {
                free(tmp);
                tmp = malloc(t->nbytes);
                tmp_cap = tmp ? t->nbytes : 0;
                if (!tmp) {
                    s->err = sdc_fail(SDC_ERR_NO_MEMORY, "%s: tensor '%s': out of memory", s->label,
                                      t->name);
                    break;
                }
            }
            sdc_status st = t->fn(t->user, t->name, tmp, t->nbytes);
            if (st) {
                s->err = sdc_fail_prefix(st, "%s: tensor '%s': ", s->label, t->name);
                break;
            }
            src = tmp;
        }
        put(s, src, t->nbytes);
        pad_to(s, al);
    }
    free(tmp);
    return s->err;
}

sdc_status sdc_gguf_write_file(sdc_gguf_writer *w, const char *path) {
    FILE *fp = fopen(path, "wb");
    if (!fp) return sdc_fail(SDC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    sink s = {0};
    s.fp = fp;
    s.label = path;
    sdc_status st = write_all(w, &s);
    if (fclose(fp) != 0 && !st)
        st = sdc_fail(SDC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    if (st) remove(path);
    return st;
}

sdc_status sdc_gguf_write_memory(sdc_gguf_writer *w, void **out, size_t *size) {
    sink s = {0};
    s.label = "gguf writer";
    sdc_status st = write_all(w, &s);
    if (st) {
        free(s.buf);
        *out = NULL;
        *size = 0;
        return st;
    }
    *out = s.buf;
    *size = s.len;
    return SDC_OK;
}
