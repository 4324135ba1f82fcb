/* safetensors reader. Layout: u64 little-endian header length N, N bytes of JSON,
 * then the data section. The JSON is parsed by a small parser of our own that only
 * knows what safetensors needs, so that every error can name the tensor and the
 * byte where it went wrong. Nothing in the data section is read before the whole
 * header has been validated. */
#include "io/file_map.h"
#include "io/safetensors.h"

#include "core/fp16.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER ((uint64_t)100 * 1024 * 1024)
#define ST_MAX_DEPTH  64 /* nesting allowed in values we skip (unknown keys) */

typedef struct st_meta {
    const char *key, *value;
} st_meta;

struct sdc_st_file {
    char *label;
    const uint8_t *image; /* whole file */
    size_t size;
    void *map; /* non-NULL when we mmapped it */
    size_t map_size;
    const uint8_t *data; /* data section */
    size_t data_size;
    char *strings; /* arena for decoded strings: names, metadata */
    size_t strings_used, strings_cap;
    sdc_st_tensor *tensors;
    int n, cap;
    int *hash; /* open addressing: index into tensors, -1 empty */
    size_t hash_cap;
    st_meta *meta;
    int n_meta, cap_meta;
};

/* ---- JSON cursor ---------------------------------------------------------------------- */

typedef struct jcur {
    const char *s;
    size_t n, pos;
    sdc_st_file *f;
    const char *tensor; /* tensor being parsed, for messages */
} jcur;

static sdc_status jerr(jcur *c, const char *what) {
    if (c->tensor)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': header JSON: %s at byte %zu", c->f->label,
                        c->tensor, what, c->pos);
    return sdc_fail(SDC_ERR_FORMAT, "%s: header JSON: %s at byte %zu", c->f->label, what, c->pos);
}

static void jws(jcur *c) {
    while (c->pos < c->n) {
        char ch = c->s[c->pos];
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') break;
        c->pos++;
    }
}

/* Skips whitespace and consumes `ch` if it is next. */
static int jeat(jcur *c, char ch) {
    jws(c);
    if (c->pos < c->n && c->s[c->pos] == ch) {
        c->pos++;
        return 1;
    }
    return 0;
}

static sdc_status jexpect(jcur *c, char ch) {
    if (jeat(c, ch)) return SDC_OK;
    char msg[48];
    if (c->pos >= c->n)
        snprintf(msg, sizeof msg, "expected '%c' but the header ends", ch);
    else
        snprintf(msg, sizeof msg, "expected '%c'", ch);
    return jerr(c, msg);
}

static int hexval(char ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static int read_hex4(jcur *c, uint32_t *out) {
    if (c->n - c->pos < 4) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(c->s[c->pos + i]);
        if (h < 0) return 0;
        v = v << 4 | (uint32_t)h;
    }
    c->pos += 4;
    *out = v;
    return 1;
}

static size_t put_utf8(char *dst, uint32_t cp) {
    if (cp < 0x80) {
        dst[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        dst[0] = (char)(0xc0 | cp >> 6);
        dst[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        dst[0] = (char)(0xe0 | cp >> 12);
        dst[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        dst[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    dst[0] = (char)(0xf0 | cp >> 18);
    dst[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    dst[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    dst[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Parses a string into the arena (decoded UTF-8, NUL-terminated). The arena is as
 * large as the header plus one, and a decoded string plus its NUL is never longer
 * than its JSON spelling with quotes, so it cannot run out. */
static sdc_status jstring(jcur *c, const char **out) {
    jws(c);
    if (c->pos >= c->n || c->s[c->pos] != '"') return jerr(c, "expected a string");
    c->pos++;
    char *dst = c->f->strings + c->f->strings_used;
    size_t len = 0;
    for (;;) {
        if (c->pos >= c->n) return jerr(c, "unterminated string");
        unsigned char ch = (unsigned char)c->s[c->pos];
        if (ch == '"') {
            c->pos++;
            break;
        }
        if (ch < 0x20) return jerr(c, "control character in string");
        if (ch != '\\') {
            dst[len++] = (char)ch;
            c->pos++;
            continue;
        }
        c->pos++;
        if (c->pos >= c->n) return jerr(c, "unterminated string");
        char e = c->s[c->pos++];
        switch (e) {
        case '"':
            dst[len++] = '"';
            break;
        case '\\':
            dst[len++] = '\\';
            break;
        case '/':
            dst[len++] = '/';
            break;
        case 'b':
            dst[len++] = '\b';
            break;
        case 'f':
            dst[len++] = '\f';
            break;
        case 'n':
            dst[len++] = '\n';
            break;
        case 'r':
            dst[len++] = '\r';
            break;
        case 't':
            dst[len++] = '\t';
            break;
        case 'u': {
            uint32_t cp;
            if (!read_hex4(c, &cp)) return jerr(c, "bad \\u escape");
            if (cp >= 0xdc00 && cp <= 0xdfff) return jerr(c, "lone low surrogate in \\u escape");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                uint32_t lo;
                if (c->n - c->pos < 2 || c->s[c->pos] != '\\' || c->s[c->pos + 1] != 'u')
                    return jerr(c, "high surrogate without a low surrogate");
                c->pos += 2;
                if (!read_hex4(c, &lo) || lo < 0xdc00 || lo > 0xdfff)
                    return jerr(c, "bad low surrogate in \\u escape");
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            }
            if (cp == 0) return jerr(c, "\\u0000 in string");
            len += put_utf8(dst + len, cp);
            break;
        }
        default:
            return jerr(c, "bad escape in string");
        }
    }
    dst[len] = '\0';
    c->f->strings_used += len + 1;
    *out = dst;
    return SDC_OK;
}

/* A non-negative integer that fits int64. `what` names it in messages. */
static sdc_status jint(jcur *c, const char *what, int64_t *out) {
    char msg[96];
    jws(c);
    if (c->pos < c->n && c->s[c->pos] == '-') {
        snprintf(msg, sizeof msg, "negative %s", what);
        return jerr(c, msg);
    }
    size_t start = c->pos;
    uint64_t v = 0;
    while (c->pos < c->n && c->s[c->pos] >= '0' && c->s[c->pos] <= '9') {
        unsigned d = (unsigned)(c->s[c->pos] - '0');
        if (v > ((uint64_t)INT64_MAX - d) / 10) {
            snprintf(msg, sizeof msg, "%s does not fit in 64 bits", what);
            return jerr(c, msg);
        }
        v = v * 10 + d;
        c->pos++;
    }
    if (c->pos == start) {
        snprintf(msg, sizeof msg, "expected an integer for %s", what);
        return jerr(c, msg);
    }
    if (c->pos - start > 1 && c->s[start] == '0') {
        c->pos = start;
        return jerr(c, "leading zero in number");
    }
    if (c->pos < c->n && (c->s[c->pos] == '.' || c->s[c->pos] == 'e' || c->s[c->pos] == 'E')) {
        snprintf(msg, sizeof msg, "%s is not an integer", what);
        return jerr(c, msg);
    }
    *out = (int64_t)v;
    return SDC_OK;
}

/* Skips any JSON value (for keys we do not know). */
static sdc_status jskip(jcur *c, int depth) {
    if (depth > ST_MAX_DEPTH) return jerr(c, "nesting too deep");
    jws(c);
    if (c->pos >= c->n) return jerr(c, "expected a value but the header ends");
    char ch = c->s[c->pos];
    sdc_status st;
    if (ch == '"') {
        /* decode into the arena and give the space back */
        size_t used = c->f->strings_used;
        const char *tmp;
        st = jstring(c, &tmp);
        c->f->strings_used = used;
        return st;
    }
    if (ch == '{' || ch == '[') {
        char close = ch == '{' ? '}' : ']';
        c->pos++;
        if (jeat(c, close)) return SDC_OK;
        do {
            if (ch == '{') {
                size_t used = c->f->strings_used;
                const char *tmp;
                if ((st = jstring(c, &tmp))) return st;
                c->f->strings_used = used;
                if ((st = jexpect(c, ':'))) return st;
            }
            if ((st = jskip(c, depth + 1))) return st;
        } while (jeat(c, ','));
        return jexpect(c, close);
    }
    static const char *const words[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(words[i]);
        if (c->n - c->pos >= l && memcmp(c->s + c->pos, words[i], l) == 0) {
            c->pos += l;
            return SDC_OK;
        }
    }
    /* number: -?digits(.digits)?([eE][+-]?digits)? */
    size_t p = c->pos;
    if (p < c->n && c->s[p] == '-') p++;
    size_t d0 = p;
    while (p < c->n && c->s[p] >= '0' && c->s[p] <= '9') p++;
    if (p == d0) return jerr(c, "unexpected character");
    if (p < c->n && c->s[p] == '.') {
        size_t f0 = ++p;
        while (p < c->n && c->s[p] >= '0' && c->s[p] <= '9') p++;
        if (p == f0) return jerr(c, "bad number");
    }
    if (p < c->n && (c->s[p] == 'e' || c->s[p] == 'E')) {
        p++;
        if (p < c->n && (c->s[p] == '+' || c->s[p] == '-')) p++;
        size_t e0 = p;
        while (p < c->n && c->s[p] >= '0' && c->s[p] <= '9') p++;
        if (p == e0) return jerr(c, "bad number");
    }
    c->pos = p;
    return SDC_OK;
}

/* ---- dtypes --------------------------------------------------------------------------- */

static const struct {
    const char *name;
    size_t size;
    int type;
} k_dtypes[] = {
    [SDC_ST_F64] = {"F64", 8, SDC_TYPE_F64},
    [SDC_ST_F32] = {"F32", 4, SDC_TYPE_F32},
    [SDC_ST_F16] = {"F16", 2, SDC_TYPE_F16},
    [SDC_ST_BF16] = {"BF16", 2, SDC_TYPE_BF16},
    [SDC_ST_I64] = {"I64", 8, SDC_TYPE_I64},
    [SDC_ST_I32] = {"I32", 4, SDC_TYPE_I32},
    [SDC_ST_I16] = {"I16", 2, SDC_TYPE_I16},
    [SDC_ST_I8] = {"I8", 1, SDC_TYPE_I8},
    [SDC_ST_U8] = {"U8", 1, -1},
    [SDC_ST_BOOL] = {"BOOL", 1, -1},
    [SDC_ST_U16] = {"U16", 2, -1},
    [SDC_ST_U32] = {"U32", 4, -1},
    [SDC_ST_U64] = {"U64", 8, -1},
};
#define ST_NDTYPES ((int)(sizeof k_dtypes / sizeof k_dtypes[0]))

const char *sdc_st_dtype_name(sdc_st_dtype d) {
    return (int)d >= 0 && (int)d < ST_NDTYPES ? k_dtypes[d].name : "?";
}
size_t sdc_st_dtype_size(sdc_st_dtype d) {
    return (int)d >= 0 && (int)d < ST_NDTYPES ? k_dtypes[d].size : 0;
}
int sdc_st_dtype_to_type(sdc_st_dtype d) {
    return (int)d >= 0 && (int)d < ST_NDTYPES ? k_dtypes[d].type : -1;
}

int64_t sdc_st_numel(const sdc_st_tensor *t) {
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) n *= t->shape[i];
    return n;
}

/* ---- header parsing ------------------------------------------------------------------- */

static uint64_t hash_name(const char *s) {
    uint64_t h = 1469598103934665603ull;
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

typedef struct st_raw {
    int64_t begin, end;
    int order; /* position in the header, to keep sorting deterministic */
} st_raw;

static sdc_status parse_metadata(jcur *c) {
    sdc_status st;
    if ((st = jexpect(c, '{'))) return st;
    if (jeat(c, '}')) return SDC_OK;
    sdc_st_file *f = c->f;
    do {
        const char *key, *value;
        if ((st = jstring(c, &key))) return st;
        if ((st = jexpect(c, ':'))) return st;
        jws(c);
        if (c->pos < c->n && c->s[c->pos] != '"') {
            return sdc_fail(
                SDC_ERR_FORMAT,
                "%s: header JSON: __metadata__ value of '%s' is not a string at byte %zu", f->label,
                key, c->pos);
        }
        if ((st = jstring(c, &value))) return st;
        for (int i = 0; i < f->n_meta; i++)
            if (strcmp(f->meta[i].key, key) == 0)
                return sdc_fail(SDC_ERR_FORMAT, "%s: __metadata__ key '%s' appears twice", f->label,
                                key);
        if (f->n_meta == f->cap_meta) {
            int cap = f->cap_meta ? f->cap_meta * 2 : 8;
            st_meta *m = realloc(f->meta, (size_t)cap * sizeof *m);
            if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
            f->meta = m;
            f->cap_meta = cap;
        }
        f->meta[f->n_meta].key = key;
        f->meta[f->n_meta].value = value;
        f->n_meta++;
    } while (jeat(c, ','));
    return jexpect(c, '}');
}

static sdc_status parse_tensor(jcur *c, sdc_st_tensor *t, st_raw *raw) {
    sdc_status st;
    sdc_st_file *f = c->f;
    const char *name = t->name;
    int have_dtype = 0, have_shape = 0, have_offsets = 0;
    jws(c);
    if (c->pos < c->n && c->s[c->pos] != '{') return jerr(c, "tensor entry is not an object");
    if ((st = jexpect(c, '{'))) return st;
    if (!jeat(c, '}')) {
        do {
            size_t used = f->strings_used;
            const char *key;
            if ((st = jstring(c, &key))) return st;
            if ((st = jexpect(c, ':'))) return st;
            if (strcmp(key, "dtype") == 0) {
                if (have_dtype++) return jerr(c, "'dtype' given twice");
                const char *dt;
                if ((st = jstring(c, &dt))) return st;
                int found = -1;
                for (int i = 0; i < ST_NDTYPES; i++)
                    if (strcmp(dt, k_dtypes[i].name) == 0) found = i;
                if (found < 0)
                    return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%s'", f->label,
                                    name, dt);
                t->dtype = (sdc_st_dtype)found;
            } else if (strcmp(key, "shape") == 0) {
                if (have_shape++) return jerr(c, "'shape' given twice");
                if ((st = jexpect(c, '['))) return st;
                t->ndim = 0;
                if (!jeat(c, ']')) {
                    do {
                        if (t->ndim == SDC_ST_MAX_DIMS)
                            return sdc_fail(SDC_ERR_FORMAT,
                                            "%s: tensor '%s': shape has more than %d dimensions",
                                            f->label, name, SDC_ST_MAX_DIMS);
                        if ((st = jint(c, "shape dimension", &t->shape[t->ndim]))) return st;
                        t->ndim++;
                    } while (jeat(c, ','));
                    if ((st = jexpect(c, ']'))) return st;
                }
            } else if (strcmp(key, "data_offsets") == 0) {
                if (have_offsets++) return jerr(c, "'data_offsets' given twice");
                if ((st = jexpect(c, '['))) return st;
                if ((st = jint(c, "data offset", &raw->begin))) return st;
                if ((st = jexpect(c, ','))) return st;
                if ((st = jint(c, "data offset", &raw->end))) return st;
                if (!jeat(c, ']')) return jerr(c, "data_offsets must have exactly two entries");
            } else {
                if ((st = jskip(c, 0))) return st;
            }
            f->strings_used = used; /* keys and dtype strings are not kept */
        } while (jeat(c, ','));
        if ((st = jexpect(c, '}'))) return st;
    }
    if (!have_dtype)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': missing 'dtype'", f->label, name);
    if (!have_shape)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': missing 'shape'", f->label, name);
    if (!have_offsets)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': missing 'data_offsets'", f->label, name);
    return SDC_OK;
}

/* Checks one tensor's sizes and offsets against the data section. */
static sdc_status check_tensor(sdc_st_file *f, sdc_st_tensor *t, const st_raw *raw) {
    /* The product of the dims taken as at least 1 must fit, so that element counts
     * computed in any order (zero dims last, e.g. after reversing) never overflow. */
    uint64_t span = 1, numel = 1;
    for (int i = 0; i < t->ndim; i++) {
        uint64_t d = t->shape[i] ? (uint64_t)t->shape[i] : 1;
        if (span > (uint64_t)INT64_MAX / d)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: tensor '%s': shape element count overflows 64 bits", f->label,
                            t->name);
        span *= d;
        numel *= (uint64_t)t->shape[i];
    }
    size_t esz = k_dtypes[t->dtype].size;
    if (numel > (uint64_t)INT64_MAX / esz)
        return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': byte size overflows 64 bits", f->label,
                        t->name);
    uint64_t bytes = numel * esz;
    if (raw->end < raw->begin)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%lld, %lld] end before they begin",
                        f->label, t->name, (long long)raw->begin, (long long)raw->end);
    if ((uint64_t)raw->end > f->data_size)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: tensor '%s': data_offsets [%lld, %lld] outside the data section "
                        "(%zu bytes)",
                        f->label, t->name, (long long)raw->begin, (long long)raw->end,
                        f->data_size);
    if ((uint64_t)(raw->end - raw->begin) != bytes)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: tensor '%s': size mismatch: data_offsets span %lld bytes but %s "
                        "shape needs %llu",
                        f->label, t->name, (long long)(raw->end - raw->begin),
                        k_dtypes[t->dtype].name, (unsigned long long)bytes);
    t->data = f->data + raw->begin;
    t->nbytes = (size_t)bytes;
    return SDC_OK;
}

/* Inserts tensor i in the name hash; fails on a duplicate name. */
static sdc_status hash_insert(sdc_st_file *f, int i) {
    size_t mask = f->hash_cap - 1;
    for (size_t h = hash_name(f->tensors[i].name) & mask;; h = (h + 1) & mask) {
        if (f->hash[h] < 0) {
            f->hash[h] = i;
            return SDC_OK;
        }
        if (strcmp(f->tensors[f->hash[h]].name, f->tensors[i].name) == 0)
            return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': duplicate name", f->label,
                            f->tensors[i].name);
    }
}

static int cmp_by_offset(const void *a, const void *b) {
    const st_raw *ra = a, *rb = b;
    if (ra->begin != rb->begin) return ra->begin < rb->begin ? -1 : 1;
    if (ra->end != rb->end) return ra->end < rb->end ? -1 : 1;
    return ra->order - rb->order;
}

static sdc_status parse_header(sdc_st_file *f, const char *json, size_t n) {
    jcur c = {json, n, 0, f, NULL};
    sdc_status st;
    st_raw *raw = NULL;
    st_raw *sorted_raw = NULL;

    f->strings_cap = n + 1;
    f->strings = malloc(f->strings_cap);
    if (!f->strings) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);

    jws(&c);
    if (c.pos >= c.n || c.s[c.pos] != '{') return jerr(&c, "header is not a JSON object");
    c.pos++;
    int have_meta = 0;
    if (!jeat(&c, '}')) {
        do {
            const char *key;
            if ((st = jstring(&c, &key))) goto done;
            if ((st = jexpect(&c, ':'))) goto done;
            if (strcmp(key, "__metadata__") == 0) {
                if (have_meta++) {
                    st = jerr(&c, "__metadata__ given twice");
                    goto done;
                }
                if ((st = parse_metadata(&c))) goto done;
                continue;
            }
            if (f->n == f->cap) {
                int cap = f->cap ? f->cap * 2 : 16;
                sdc_st_tensor *t = realloc(f->tensors, (size_t)cap * sizeof *t);
                st_raw *r = t ? realloc(raw, (size_t)cap * sizeof *r) : NULL;
                if (t) f->tensors = t;
                if (r) raw = r;
                if (!t || !r) {
                    st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
                    goto done;
                }
                f->cap = cap;
            }
            sdc_st_tensor *t = &f->tensors[f->n];
            memset(t, 0, sizeof *t);
            t->name = key;
            raw[f->n].order = f->n;
            c.tensor = key;
            st = parse_tensor(&c, t, &raw[f->n]);
            c.tensor = NULL;
            if (st) goto done;
            f->n++;
        } while (jeat(&c, ','));
        if ((st = jexpect(&c, '}'))) goto done;
    }
    jws(&c);
    if (c.pos != c.n) {
        st = jerr(&c, "trailing characters after the header object");
        goto done;
    }

    for (int i = 0; i < f->n; i++)
        if ((st = check_tensor(f, &f->tensors[i], &raw[i]))) goto done;

    /* name index (power of two, at most half full) */
    f->hash_cap = 16;
    while (f->hash_cap < (size_t)f->n * 2) f->hash_cap *= 2;
    f->hash = malloc(f->hash_cap * sizeof *f->hash);
    sorted_raw = malloc(((size_t)f->n + 1) * sizeof *sorted_raw);
    if (!f->hash || !sorted_raw) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
        goto done;
    }
    for (size_t h = 0; h < f->hash_cap; h++) f->hash[h] = -1;
    for (int i = 0; i < f->n; i++)
        if ((st = hash_insert(f, i))) goto done;

    /* data-offset order, then reject overlaps between neighbours (zero-size tensors
     * occupy nothing and may sit anywhere) */
    if (f->n) memcpy(sorted_raw, raw, (size_t)f->n * sizeof *raw);
    qsort(sorted_raw, (size_t)f->n, sizeof *sorted_raw, cmp_by_offset);
    int prev = -1;
    for (int k = 0; k < f->n; k++) {
        int i = sorted_raw[k].order;
        if (raw[i].end == raw[i].begin) continue;
        if (prev >= 0 && raw[i].begin < raw[prev].end) {
            st = sdc_fail(SDC_ERR_FORMAT,
                          "%s: tensor '%s': data_offsets [%lld, %lld] overlap tensor '%s' "
                          "[%lld, %lld]",
                          f->label, f->tensors[i].name, (long long)raw[i].begin,
                          (long long)raw[i].end, f->tensors[prev].name, (long long)raw[prev].begin,
                          (long long)raw[prev].end);
            goto done;
        }
        prev = i;
    }
    /* reorder the tensor array itself and rebuild the index */
    sdc_st_tensor *sorted = malloc(((size_t)f->n + 1) * sizeof *sorted);
    if (!sorted) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
        goto done;
    }
    for (int k = 0; k < f->n; k++) sorted[k] = f->tensors[sorted_raw[k].order];
    free(f->tensors);
    f->tensors = sorted;
    f->cap = f->n;
    for (size_t h = 0; h < f->hash_cap; h++) f->hash[h] = -1;
    for (int i = 0; i < f->n; i++) hash_insert(f, i);
    st = SDC_OK;
done:
    free(raw);
    free(sorted_raw);
    return st;
}

/* ---- open / close --------------------------------------------------------------------- */

static sdc_status open_image(sdc_st_file *f) {
    if (f->size < 8)
        return sdc_fail(SDC_ERR_FORMAT, "%s: file too small for a safetensors header (%zu bytes)",
                        f->label, f->size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = n << 8 | f->image[i];
    if (n > ST_MAX_HEADER)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: header length %llu is larger than the 100 MB limit (not a "
                        "safetensors file?)",
                        f->label, (unsigned long long)n);
    if (n > f->size - 8)
        return sdc_fail(SDC_ERR_FORMAT,
                        "%s: header length %llu goes past the end of the file (%zu bytes): "
                        "truncated?",
                        f->label, (unsigned long long)n, f->size);
    if (n < 2)
        return sdc_fail(SDC_ERR_FORMAT, "%s: header length %llu is too small", f->label,
                        (unsigned long long)n);
    f->data = f->image + 8 + n;
    f->data_size = f->size - 8 - (size_t)n;
    return parse_header(f, (const char *)f->image + 8, (size_t)n);
}

static sdc_st_file *new_file(const char *label) {
    sdc_st_file *f = calloc(1, sizeof *f);
    if (!f) return NULL;
    f->label = strdup(label ? label : "<memory>");
    if (!f->label) {
        free(f);
        return NULL;
    }
    return f;
}

/* A file image (mapped by us when `map` is set, which the file then owns) to a parsed file. */
static sdc_status from_image(const char *label, const void *image, size_t size, void *map,
                             sdc_st_file **out) {
    sdc_st_file *f = new_file(label);
    if (!f) {
        sdc_unmap_file(map, size);
        return sdc_fail(SDC_ERR_NO_MEMORY, "out of memory");
    }
    f->image = image;
    f->size = size;
    f->map = map;
    f->map_size = map ? size : 0;
    sdc_status st = open_image(f);
    if (st) {
        sdc_st_close(f);
        return st;
    }
    *out = f;
    return SDC_OK;
}

sdc_status sdc_st_open_memory(const void *data, size_t size, const char *label, sdc_st_file **out) {
    *out = NULL;
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_st_open_memory: NULL data");
    return from_image(label, data, size, NULL, out);
}

sdc_status sdc_st_open(const char *path, sdc_st_file **out) {
    *out = NULL;
    void *map;
    size_t size;
    sdc_status st = sdc_map_file(path, &map, &size);
    return st != SDC_OK ? st : from_image(path, map, size, map, out);
}

void sdc_st_close(sdc_st_file *f) {
    if (!f) return;
    sdc_unmap_file(f->map, f->map_size);
    free(f->tensors);
    free(f->hash);
    free(f->meta);
    free(f->strings);
    free(f->label);
    free(f);
}

int sdc_st_count(const sdc_st_file *f) {
    return f ? f->n : 0;
}

const sdc_st_tensor *sdc_st_at(const sdc_st_file *f, int i) {
    return f && i >= 0 && i < f->n ? &f->tensors[i] : NULL;
}

const sdc_st_tensor *sdc_st_find(const sdc_st_file *f, const char *name) {
    if (!f || !f->hash || !name) return NULL;
    size_t mask = f->hash_cap - 1;
    for (size_t h = hash_name(name) & mask; f->hash[h] >= 0; h = (h + 1) & mask)
        if (strcmp(f->tensors[f->hash[h]].name, name) == 0) return &f->tensors[f->hash[h]];
    return NULL;
}

const char *sdc_st_metadata(const sdc_st_file *f, const char *key) {
    if (!f || !key) return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[i].key, key) == 0) return f->meta[i].value;
    return NULL;
}

const char *sdc_st_path(const sdc_st_file *f) {
    return f ? f->label : NULL;
}

/* ---- conversion ----------------------------------------------------------------------- */

#define ST_CONVERT(ctype, expr)                                                                    \
    for (int64_t i = 0; i < n; i++) {                                                              \
        ctype v;                                                                                   \
        memcpy(&v, src + i * (int64_t)sizeof v, sizeof v);                                         \
        dst[i] = (float)(expr);                                                                    \
    }                                                                                              \
    break

sdc_status sdc_st_to_f32(const sdc_st_tensor *t, float *dst) {
    const uint8_t *src = t->data;
    int64_t n = sdc_st_numel(t);
    switch (t->dtype) {
    case SDC_ST_F64:
        ST_CONVERT(double, v);
    case SDC_ST_F32:
        memcpy(dst, src, (size_t)n * 4);
        break;
    case SDC_ST_F16:
        ST_CONVERT(uint16_t, sdc_fp16_to_f32(v));
    case SDC_ST_BF16:
        ST_CONVERT(uint16_t, sdc_bf16_to_f32(v));
    case SDC_ST_I64:
        ST_CONVERT(int64_t, v);
    case SDC_ST_I32:
        ST_CONVERT(int32_t, v);
    case SDC_ST_I16:
        ST_CONVERT(int16_t, v);
    case SDC_ST_I8:
        ST_CONVERT(int8_t, v);
    case SDC_ST_U8:
        ST_CONVERT(uint8_t, v);
    case SDC_ST_BOOL:
        ST_CONVERT(uint8_t, v != 0);
    case SDC_ST_U16:
        ST_CONVERT(uint16_t, v);
    case SDC_ST_U32:
        ST_CONVERT(uint32_t, v);
    case SDC_ST_U64:
        ST_CONVERT(uint64_t, v);
    default:
        return sdc_fail(SDC_ERR_INVALID_ARG, "tensor '%s': unknown dtype %d", t->name,
                        (int)t->dtype);
    }
    return SDC_OK;
}
