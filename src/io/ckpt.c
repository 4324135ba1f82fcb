/* PyTorch zip checkpoints: see ckpt.h. */
#include "io/ckpt.h"

#include "io/file_map.h"
#include "io/pickle.h"
#include "io/zip.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKPT_MAX_DEPTH  16
#define CKPT_MAX_PICKLE ((uint64_t)256 << 20)

typedef struct ctensor {
    sdc_st_tensor t;
    bool in_file;
    void *owned;
} ctensor;

struct sdc_ckpt_file {
    char *label;
    void *map;
    size_t map_size;
    sdc_zip *zip;
    sdc_pickle *pk;
    char *archive; /* "<archive>/" */
    ctensor *tensors;
    int n, cap;
    char *names; /* arena */
    size_t names_used, names_cap;
    struct lstore {
        const char *key; /* in a pickle of ours */
        const uint8_t *data;
        uint64_t bytes;
    } * legacy; /* the legacy format's storages, in file order */
    int n_legacy;
    sdc_pickle *legacy_keys;
};

static const unsigned char k_legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c,
                                               0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

bool sdc_ckpt_detect(const void *head, size_t size) {
    const unsigned char *p = head;
    if (size >= 4 && p[0] == 'P' && p[1] == 'K' &&
        ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6)))
        return true;
    return size >= 2 && p[0] == 0x80 && p[1] >= 2 && p[1] <= 5;
}

static const sdc_st_dtype k_st_dtype[SDC_PK_NDTYPES] = {
    [SDC_PK_F64] = SDC_ST_F64,    [SDC_PK_F32] = SDC_ST_F32, [SDC_PK_F16] = SDC_ST_F16,
    [SDC_PK_BF16] = SDC_ST_BF16,  [SDC_PK_I64] = SDC_ST_I64, [SDC_PK_I32] = SDC_ST_I32,
    [SDC_PK_I16] = SDC_ST_I16,    [SDC_PK_I8] = SDC_ST_I8,   [SDC_PK_U8] = SDC_ST_U8,
    [SDC_PK_BOOL8] = SDC_ST_BOOL,
};

/* ---- one tensor ----------------------------------------------------------------------- */

/* Copies a strided view element by element (dims outermost first, like PyTorch). */
static void gather(const uint8_t *src, uint8_t *dst, size_t es, int nd, const int64_t *size,
                   const int64_t *stride) {
    int64_t idx[SDC_PK_MAX_DIMS] = {0};
    int64_t numel = 1;
    for (int d = 0; d < nd; d++) numel *= size[d];
    for (int64_t k = 0; k < numel; k++) {
        int64_t off = 0;
        for (int d = 0; d < nd; d++) off += idx[d] * stride[d];
        memcpy(dst + (size_t)k * es, src + (size_t)off * es, es);
        for (int d = nd - 1; d >= 0; d--) {
            if (++idx[d] < size[d]) break;
            idx[d] = 0;
        }
    }
}

static sdc_status terr(const sdc_ckpt_file *f, const char *name, const char *what) {
    return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': %s", f->label, name, what);
}

/* The bytes of storage `key`: a zip entry (in place when stored, else inflated) or a
 * legacy file's storage record. */
static sdc_status storage_data(sdc_ckpt_file *f, const char *key, const char *name,
                               const uint8_t **data, uint64_t *bytes, bool *in_file) {
    char msg[400];
    if (!f->zip) {
        for (int i = 0; i < f->n_legacy; i++)
            if (strcmp(f->legacy[i].key, key) == 0) {
                *data = f->legacy[i].data;
                *bytes = f->legacy[i].bytes;
                *in_file = true;
                return SDC_OK;
            }
        snprintf(msg, sizeof msg, "storage '%s' is not in the file", key);
        return terr(f, name, msg);
    }
    char entry[300];
    if ((size_t)snprintf(entry, sizeof entry, "%sdata/%s", f->archive, key) >= sizeof entry)
        return terr(f, name, "storage key too long");
    const sdc_zip_entry *e = sdc_zip_find(f->zip, entry);
    if (!e) {
        snprintf(msg, sizeof msg, "storage '%s' is not in the archive", entry);
        return terr(f, name, msg);
    }
    *bytes = e->size;
    *in_file = e->method == 0;
    return sdc_zip_data(f->zip, e, UINT64_MAX, false, data);
}

/* Resolves a tensor record against its storage entry into out (name set by caller). */
static sdc_status make_tensor(sdc_ckpt_file *f, const sdc_pk_obj *to, const char *name,
                              ctensor *out) {
    const sdc_pk_obj *so = sdc_pickle_obj(f->pk, to->v.tensor.storage);
    sdc_pk_dtype dt = so->v.storage.dtype;
    size_t es = sdc_pk_dtype_size(dt);
    char msg[400];
    const uint8_t *sdata = NULL;
    uint64_t sbytes = 0;
    bool in_file = false;
    sdc_status st = storage_data(f, so->v.storage.key, name, &sdata, &sbytes, &in_file);
    if (st) return st;
    int64_t snumel = so->v.storage.numel;
    if ((uint64_t)snumel > sbytes / es) {
        snprintf(msg, sizeof msg, "storage '%s' has %llu bytes, fewer than %lld %s elements",
                 so->v.storage.key, (unsigned long long)sbytes, (long long)snumel,
                 sdc_pk_dtype_name(dt));
        return terr(f, name, msg);
    }
    int nd = to->v.tensor.ndim;
    const int64_t *size = to->v.tensor.size, *stride = to->v.tensor.stride;
    int64_t off = to->v.tensor.offset, numel = 1, last = off;
    if (off < 0) return terr(f, name, "negative storage offset");
    for (int d = 0; d < nd; d++) {
        if (size[d] < 0 || stride[d] < 0) return terr(f, name, "negative size or stride");
        if (size[d] && numel > INT64_MAX / size[d]) return terr(f, name, "too many elements");
        numel *= size[d];
    }
    if (numel > 0) {
        for (int d = 0; d < nd; d++) {
            if (stride[d] && size[d] - 1 > (INT64_MAX - last) / stride[d])
                return terr(f, name, "strides overflow");
            last += (size[d] - 1) * stride[d];
        }
        if (last >= snumel) {
            snprintf(msg, sizeof msg,
                     "elements up to %lld (offset %lld) lie outside its storage of %lld",
                     (long long)last, (long long)off, (long long)snumel);
            return terr(f, name, msg);
        }
    }
    bool contiguous = true;
    int64_t expect = 1;
    for (int d = nd - 1; d >= 0; d--) {
        if (size[d] != 1 && stride[d] != expect) contiguous = false;
        expect *= size[d];
    }
    if (!contiguous && numel > snumel)
        return terr(f, name, "overlapping strides (an expanded view) are not supported");
    out->t.dtype = k_st_dtype[dt];
    out->t.ndim = nd;
    for (int d = 0; d < nd; d++) out->t.shape[d] = size[d];
    out->t.nbytes = (size_t)numel * es;
    if (numel == 0) { /* the offset of an empty tensor need not lie inside its storage */
        out->t.data = sdata;
        out->in_file = in_file;
        return SDC_OK;
    }
    if (contiguous) {
        out->t.data = sdata + (size_t)off * es;
        out->in_file = in_file;
        return SDC_OK;
    }
    out->owned = malloc(out->t.nbytes ? out->t.nbytes : 1);
    if (!out->owned) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    gather(sdata + (size_t)off * es, out->owned, es, nd, size, stride);
    out->t.data = out->owned;
    out->in_file = false;
    return SDC_OK;
}

/* ---- walking the pickled dict --------------------------------------------------------- */

static sdc_status add_name(sdc_ckpt_file *f, const char *prefix, const char *key,
                           const char **out) {
    size_t need = strlen(prefix) + strlen(key) + 1;
    if (f->names_used + need > f->names_cap) {
        size_t cap = f->names_cap ? f->names_cap * 2 : 4096;
        while (cap < f->names_used + need) cap *= 2;
        /* names are referenced by offset until the walk ends (the arena moves) */
        char *nn = realloc(f->names, cap);
        if (!nn) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
        f->names = nn;
        f->names_cap = cap;
    }
    char *dst = f->names + f->names_used;
    snprintf(dst, need, "%s%s", prefix, key);
    *out = (const char *)(uintptr_t)f->names_used; /* an offset, fixed up after the walk */
    f->names_used += need;
    return SDC_OK;
}

/* `seen` marks dicts already walked: a dict reached twice (through the memo) is walked
 * once, so a crafted pickle cannot make the walk exponential. */
static sdc_status walk(sdc_ckpt_file *f, int dict, const char *prefix, int depth, bool *seen) {
    if (depth > CKPT_MAX_DEPTH)
        return sdc_fail(SDC_ERR_FORMAT, "%s: dicts nested deeper than %d", f->label,
                        CKPT_MAX_DEPTH);
    if (seen[dict]) return SDC_OK;
    seen[dict] = true;
    const sdc_pk_obj *d = sdc_pickle_obj(f->pk, dict);
    for (int i = 0; i + 1 < d->v.seq.n; i += 2) {
        const sdc_pk_obj *k = sdc_pickle_obj(f->pk, d->v.seq.items[i]);
        const sdc_pk_obj *v = sdc_pickle_obj(f->pk, d->v.seq.items[i + 1]);
        if (k->kind != SDC_PK_STR) continue; /* e.g. optimizer state keyed by int */
        if (v->kind == SDC_PK_DICT) {
            char sub[512];
            bool plain = depth == 0 && strcmp(k->v.str.s, "state_dict") == 0;
            if ((size_t)snprintf(sub, sizeof sub, "%s%s.", prefix, plain ? "" : k->v.str.s) >=
                sizeof sub)
                return sdc_fail(SDC_ERR_FORMAT, "%s: key '%s%s' too long", f->label, prefix,
                                k->v.str.s);
            if (plain) sub[strlen(prefix)] = '\0';
            sdc_status st = walk(f, d->v.seq.items[i + 1], sub, depth + 1, seen);
            if (st) return st;
            continue;
        }
        if (v->kind != SDC_PK_TENSOR) continue;
        if (f->n == f->cap) {
            int cap = f->cap ? f->cap * 2 : 64;
            ctensor *t = realloc(f->tensors, (size_t)cap * sizeof *t);
            if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
            f->tensors = t;
            f->cap = cap;
        }
        ctensor *t = &f->tensors[f->n];
        memset(t, 0, sizeof *t);
        sdc_status st = add_name(f, prefix, k->v.str.s, &t->t.name);
        if (st) return st;
        f->n++; /* counted now so that close frees its copy on failure */
        if ((st = make_tensor(f, v, f->names + (uintptr_t)t->t.name, t))) return st;
    }
    return SDC_OK;
}

static int cmp_names(const void *a, const void *b) {
    const ctensor *x = *(const ctensor *const *)a, *y = *(const ctensor *const *)b;
    return strcmp(x->t.name, y->t.name);
}

/* Names were stored as arena offsets while the arena could move: now make them pointers
 * and check that no name appears twice. */
static sdc_status finish_names(sdc_ckpt_file *f) {
    for (int i = 0; i < f->n; i++)
        f->tensors[i].t.name = f->names + (uintptr_t)f->tensors[i].t.name;
    if (f->n < 2) return SDC_OK;
    ctensor **s = malloc((size_t)f->n * sizeof *s);
    if (!s) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    for (int i = 0; i < f->n; i++) s[i] = &f->tensors[i];
    qsort(s, (size_t)f->n, sizeof *s, cmp_names);
    for (int i = 1; i < f->n; i++)
        if (strcmp(s[i - 1]->t.name, s[i]->t.name) == 0) {
            sdc_status st =
                sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s' appears twice", f->label, s[i]->t.name);
            free(s);
            return st;
        }
    free(s);
    return SDC_OK;
}

/* ---- opening -------------------------------------------------------------------------- */

static sdc_status find_pickle(sdc_ckpt_file *f, const sdc_zip_entry **out) {
    for (int i = 0; i < sdc_zip_count(f->zip); i++) {
        const sdc_zip_entry *e = sdc_zip_at(f->zip, i);
        const char *slash = strchr(e->name, '/');
        if (slash && strcmp(slash + 1, "data.pkl") == 0) {
            size_t n = (size_t)(slash - e->name) + 1;
            f->archive = malloc(n + 1);
            if (!f->archive) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
            memcpy(f->archive, e->name, n);
            f->archive[n] = '\0';
            *out = e;
            return SDC_OK;
        }
    }
    return sdc_fail(SDC_ERR_FORMAT,
                    "%s: a zip archive without <archive>/data.pkl: not a PyTorch checkpoint",
                    f->label);
}

static sdc_status tensors_of_root(sdc_ckpt_file *f);

/* The legacy (pre-1.6) stream: pickles of the magic number, the protocol version
 * (1001), a sys_info dict (byte order), the object (persistent ids name storages by
 * key), the sorted storage keys; then each storage as an int64 element count and its
 * raw bytes, in key order. */
static sdc_status parse_legacy(sdc_ckpt_file *f, const uint8_t *img, size_t size) {
    size_t pos = sizeof k_legacy_magic;
    if (pos >= size || img[pos] != '.')
        return sdc_fail(SDC_ERR_FORMAT, "%s: bad legacy torch.save magic number", f->label);
    pos++;
    sdc_status st;
    sdc_pickle *p = NULL;
    for (int k = 0; k < 2; k++) { /* protocol version, sys_info */
        if ((st = sdc_pickle_load(img + pos, size - pos, f->label, &p))) return st;
        pos += sdc_pickle_end(p);
        const sdc_pk_obj *r = sdc_pickle_obj(p, sdc_pickle_root(p));
        bool ok = k == 0 ? r->kind == SDC_PK_INT && r->v.i == 1001 : r->kind == SDC_PK_DICT;
        for (int i = 0; ok && k == 1 && i + 1 < r->v.seq.n; i += 2) {
            const sdc_pk_obj *key = sdc_pickle_obj(p, r->v.seq.items[i]);
            const sdc_pk_obj *v = sdc_pickle_obj(p, r->v.seq.items[i + 1]);
            if (key->kind == SDC_PK_STR && !strcmp(key->v.str.s, "little_endian") &&
                (v->kind != SDC_PK_BOOL || !v->v.i))
                ok = false;
        }
        sdc_pickle_free(p);
        if (!ok)
            return sdc_fail(SDC_ERR_UNSUPPORTED,
                            "%s: legacy torch.save file with protocol version other than 1001 "
                            "or written big-endian",
                            f->label);
    }
    if ((st = sdc_pickle_load(img + pos, size - pos, f->label, &f->pk))) return st;
    pos += sdc_pickle_end(f->pk);
    if ((st = sdc_pickle_load(img + pos, size - pos, f->label, &f->legacy_keys))) return st;
    pos += sdc_pickle_end(f->legacy_keys);
    const sdc_pk_obj *keys = sdc_pickle_obj(f->legacy_keys, sdc_pickle_root(f->legacy_keys));
    if (keys->kind != SDC_PK_LIST)
        return sdc_fail(SDC_ERR_FORMAT, "%s: legacy storage key list missing", f->label);
    f->legacy = calloc((size_t)keys->v.seq.n + 1, sizeof *f->legacy);
    if (!f->legacy) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    for (int i = 0; i < keys->v.seq.n; i++) {
        const sdc_pk_obj *k = sdc_pickle_obj(f->legacy_keys, keys->v.seq.items[i]);
        if (k->kind != SDC_PK_STR)
            return sdc_fail(SDC_ERR_FORMAT, "%s: legacy storage key is not a string", f->label);
        /* the element size comes from a storage of that key in the object */
        size_t es = 0;
        for (int o = 0; o < sdc_pickle_obj_count(f->pk) && !es; o++) {
            const sdc_pk_obj *so = sdc_pickle_obj(f->pk, o);
            if (so->kind == SDC_PK_STORAGE && strcmp(so->v.storage.key, k->v.str.s) == 0)
                es = sdc_pk_dtype_size(so->v.storage.dtype);
        }
        if (!es)
            return sdc_fail(SDC_ERR_FORMAT, "%s: legacy storage '%s' is used by no tensor",
                            f->label, k->v.str.s);
        if (size - pos < 8)
            return sdc_fail(SDC_ERR_FORMAT, "%s: legacy storage '%s' is truncated", f->label,
                            k->v.str.s);
        uint64_t numel = 0;
        for (int b = 7; b >= 0; b--) numel = numel << 8 | img[pos + (size_t)b];
        pos += 8;
        if (numel > (size - pos) / es)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: legacy storage '%s' of %llu elements runs past the end", f->label,
                            k->v.str.s, (unsigned long long)numel);
        f->legacy[i].key = k->v.str.s;
        f->legacy[i].data = img + pos;
        f->legacy[i].bytes = numel * es;
        f->n_legacy++;
        pos += (size_t)(numel * es);
    }
    return SDC_OK;
}

static sdc_status parse(sdc_ckpt_file *f, const uint8_t *img, size_t size) {
    sdc_status st;
    if (size >= sizeof k_legacy_magic && memcmp(img, k_legacy_magic, sizeof k_legacy_magic) == 0) {
        if ((st = parse_legacy(f, img, size))) return st;
        return tensors_of_root(f);
    }
    if (size >= 1 && img[0] == 0x80)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: a bare pickle stream, not a PyTorch zip checkpoint", f->label);
    if ((st = sdc_zip_open(img, size, f->label, &f->zip))) return st;
    const sdc_zip_entry *pe = NULL;
    if ((st = find_pickle(f, &pe))) return st;
    /* torch records the writer's byte order; storages are raw bytes in it */
    char bo[300];
    snprintf(bo, sizeof bo, "%sbyteorder", f->archive);
    const sdc_zip_entry *be = sdc_zip_find(f->zip, bo);
    const uint8_t *bod;
    if (be && sdc_zip_data(f->zip, be, 16, false, &bod) == SDC_OK && be->size >= 3 &&
        memcmp(bod, "big", 3) == 0)
        return sdc_fail(SDC_ERR_UNSUPPORTED,
                        "%s: written on a big-endian machine (byteorder 'big'): not supported",
                        f->label);
    const uint8_t *pkl;
    if ((st = sdc_zip_data(f->zip, pe, CKPT_MAX_PICKLE, true, &pkl))) return st;
    char label[600];
    snprintf(label, sizeof label, "%s: %s", f->label, pe->name);
    if ((st = sdc_pickle_load(pkl, (size_t)pe->size, label, &f->pk))) return st;
    return tensors_of_root(f);
}

/* The tensors of the loaded pickle's dict. */
static sdc_status tensors_of_root(sdc_ckpt_file *f) {
    sdc_status st;
    int root = sdc_pickle_root(f->pk);
    if (sdc_pickle_obj(f->pk, root)->kind != SDC_PK_DICT)
        return sdc_fail(SDC_ERR_FORMAT, "%s: the pickled object is not a dict of tensors",
                        f->label);
    bool *seen = calloc((size_t)sdc_pickle_obj_count(f->pk), 1);
    if (!seen) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", f->label);
    st = walk(f, root, "", 0, seen);
    free(seen);
    if (st) {
        for (int i = 0; i < f->n; i++) f->tensors[i].t.name = NULL; /* still offsets */
        return st;
    }
    return finish_names(f);
}

sdc_status sdc_ckpt_open_memory(const void *data, size_t size, const char *label,
                                sdc_ckpt_file **out) {
    *out = NULL;
    if (!label) label = "<memory>";
    sdc_ckpt_file *f = calloc(1, sizeof *f);
    if (!f || !(f->label = strdup(label))) {
        free(f);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    sdc_status st = parse(f, data, size);
    if (st) {
        sdc_ckpt_close(f);
        return st;
    }
    *out = f;
    return SDC_OK;
}

sdc_status sdc_ckpt_open(const char *path, sdc_ckpt_file **out) {
    *out = NULL;
    void *map;
    size_t size;
    sdc_status st = sdc_map_file(path, &map, &size);
    if (st) return st;
    if ((st = sdc_ckpt_open_memory(map, size, path, out))) {
        sdc_unmap_file(map, size);
        return st;
    }
    (*out)->map = map;
    (*out)->map_size = size;
    return SDC_OK;
}

void sdc_ckpt_close(sdc_ckpt_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->tensors[i].owned);
    free(f->tensors);
    free(f->names);
    free(f->archive);
    sdc_pickle_free(f->pk);
    sdc_pickle_free(f->legacy_keys);
    free(f->legacy);
    sdc_zip_close(f->zip);
    sdc_unmap_file(f->map, f->map_size);
    free(f->label);
    free(f);
}

int sdc_ckpt_count(const sdc_ckpt_file *f) {
    return f->n;
}
const sdc_st_tensor *sdc_ckpt_at(const sdc_ckpt_file *f, int i) {
    return i >= 0 && i < f->n ? &f->tensors[i].t : NULL;
}
bool sdc_ckpt_in_file(const sdc_ckpt_file *f, int i) {
    return i >= 0 && i < f->n && f->tensors[i].in_file;
}
const sdc_st_tensor *sdc_ckpt_find(const sdc_ckpt_file *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->tensors[i].t.name, name) == 0) return &f->tensors[i].t;
    return NULL;
}

bool sdc_ckpt_int(const sdc_ckpt_file *f, const char *key, int64_t *value) {
    const sdc_pk_obj *d = sdc_pickle_obj(f->pk, sdc_pickle_root(f->pk));
    for (int i = 0; i + 1 < d->v.seq.n; i += 2) {
        const sdc_pk_obj *k = sdc_pickle_obj(f->pk, d->v.seq.items[i]);
        const sdc_pk_obj *v = sdc_pickle_obj(f->pk, d->v.seq.items[i + 1]);
        if (k->kind == SDC_PK_STR && strcmp(k->v.str.s, key) == 0 && v->kind == SDC_PK_INT) {
            *value = v->v.i;
            return true;
        }
    }
    return false;
}
