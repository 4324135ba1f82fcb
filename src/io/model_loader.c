/* Model loader: see model_loader.h. Adding a file is all or nothing: names, sizes and
 * conversions are checked and memory is reserved before the first tensor joins the
 * map, so a failed file leaves the loader as it was. Mapped weights are read-only:
 * sdc_tensor.data is not const, but writing through it faults. */
#include "io/model_loader.h"

#include "core/buffer.h"
#include "core/fp16.h"
#include "io/ckpt.h"
#include "io/name_index.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define LOADER_ALIGN 64

typedef struct entry {
    sdc_tensor t; /* first member: an sdc_tensor pointer is an entry pointer */
    int file;
    /* where the tensor lies in the file mapping (NULL if copied): what release_pages may
     * drop even after a caller points t.data at memory of its own */
    const void *mapped;
    size_t mapped_bytes;
} entry;

typedef struct lfile {
    char *path, *prefix;
    sdc_file_format fmt;
    sdc_gguf_file *gguf;
    sdc_st_file *st;
    sdc_ckpt_file *ckpt;
    entry *entries;
    int n;
    void *owned; /* converted or realigned data: owned_buf's memory */
    size_t owned_size;
    sdc_buffer *owned_buf; /* host weights buffer of the converted/realigned tensors */
    sdc_buffer *image_buf; /* host-mapped buffer spanning the tensors used in place */
    bool mapped;           /* opened from a path: tensor data lies in a read-only file mapping */
} lfile;

struct sdc_loader {
    lfile *files;
    int n_files, cap_files;
    entry **order;
    int n, cap;
    sdc_name_index index;
    char *tokenizer_dir[2]; /* a diffusers folder's tokenizer/ and tokenizer_2/ */
};

/* One tensor as the file describes it, before it becomes an sdc_tensor. */
typedef struct src_tensor {
    const char *name;
    bool is_st;
    int kind; /* sdc_st_dtype for safetensors, sdc_type for GGUF */
    int n_dims;
    int64_t ne[SDC_MAX_DIMS];
    const void *data;
    size_t nbytes;
    const sdc_st_tensor *st;
    sdc_type target;
    bool convert, copy;
    bool force_copy; /* data not in the file mapping (a checkpoint's own copy) */
    size_t owned_off;
    char full[SDC_MAX_NAME]; /* the name it is loaded under */
} src_tensor;

sdc_file_format sdc_detect_format(const void *head, size_t size) {
    const uint8_t *p = head;
    if (size >= 4 && memcmp(p, "GGUF", 4) == 0) return SDC_FORMAT_GGUF;
    if (size >= 9) {
        uint64_t n = 0;
        for (int i = 7; i >= 0; i--) n = n << 8 | p[i];
        char c = (char)p[8];
        if (n >= 2 && n <= (uint64_t)100 * 1024 * 1024 &&
            (c == '{' || c == ' ' || c == '\n' || c == '\r' || c == '\t'))
            return SDC_FORMAT_SAFETENSORS;
    }
    /* after safetensors: a header length such as 0x0280 starts with bytes a pickle could */
    if (sdc_ckpt_detect(head, size)) return SDC_FORMAT_CKPT;
    return SDC_FORMAT_UNKNOWN;
}

static sdc_status unknown_format(const char *label, const uint8_t *p, size_t size) {
    char hex[40] = "";
    for (size_t i = 0; i < size && i < 8; i++)
        snprintf(hex + 3 * i, sizeof hex - 3 * i, "%02x ", p[i]);
    return sdc_fail(
        SDC_ERR_FORMAT,
        "%s: not a safetensors or GGUF file, nor a PyTorch checkpoint (first bytes: %s)", label,
        size ? hex : "none, the file is empty");
}

sdc_status sdc_loader_create(sdc_loader **out) {
    sdc_loader *l = calloc(1, sizeof *l);
    if (!l || sdc_name_index_init(&l->index, 256)) {
        free(l);
        *out = NULL;
        return sdc_fail(SDC_ERR_NO_MEMORY, "loader: out of memory");
    }
    *out = l;
    return SDC_OK;
}

static void free_file(lfile *f) {
    sdc_gguf_close(f->gguf);
    sdc_st_close(f->st);
    sdc_ckpt_close(f->ckpt);
    free(f->entries);
    sdc_buffer_free(f->owned_buf);
    sdc_buffer_free(f->image_buf);
    free(f->path);
    free(f->prefix);
    memset(f, 0, sizeof *f);
}

void sdc_loader_free(sdc_loader *l) {
    if (!l) return;
    for (int i = 0; i < l->n_files; i++) free_file(&l->files[i]);
    free(l->files);
    free(l->order);
    sdc_name_index_free(&l->index);
    free(l->tokenizer_dir[0]);
    free(l->tokenizer_dir[1]);
    free(l);
}

/* ---- per-tensor decisions ------------------------------------------------------------- */

static bool st_is_int(sdc_st_dtype d) {
    return d == SDC_ST_I64 || d == SDC_ST_I16 || d == SDC_ST_I8 || d == SDC_ST_U8 ||
           d == SDC_ST_BOOL || d == SDC_ST_U16 || d == SDC_ST_U32 || d == SDC_ST_U64;
}

/* Target type and whether data must be converted or copied for alignment. */
static void plan_tensor(src_tensor *s) {
    s->convert = s->copy = false;
    if (s->is_st) {
        sdc_st_dtype d = (sdc_st_dtype)s->kind;
        if (d == SDC_ST_F32 || d == SDC_ST_F16 || d == SDC_ST_BF16 || d == SDC_ST_I32) {
            s->target = (sdc_type)sdc_st_dtype_to_type(d);
        } else {
            s->target = st_is_int(d) ? SDC_TYPE_I32 : SDC_TYPE_F32;
            s->convert = true;
        }
    } else {
        sdc_type t = (sdc_type)s->kind;
        s->target = t;
        if (t == SDC_TYPE_F64) {
            s->target = SDC_TYPE_F32;
            s->convert = true;
        } else if (t == SDC_TYPE_I64 || t == SDC_TYPE_I16 || t == SDC_TYPE_I8) {
            s->target = SDC_TYPE_I32;
            s->convert = true;
        }
    }
    /* kernels need each element aligned to its own size; F16/BF16 tensors of real checkpoints
     * are often only 2-byte aligned, and copying them would double the model's memory */
    uintptr_t align = s->target == SDC_TYPE_F16 || s->target == SDC_TYPE_BF16 ? 1 : 3;
    if (!s->convert && s->nbytes && (((uintptr_t)s->data & align) || s->force_copy)) s->copy = true;
}

static int64_t numel4(const int64_t *ne) {
    return ne[0] * ne[1] * ne[2] * ne[3];
}

/* Integer conversion with a range check (I64/U32/U64 may not fit I32). */
static sdc_status to_i32(const src_tensor *s, int32_t *dst, const char *label) {
    int64_t n = numel4(s->ne);
    const uint8_t *p = s->data;
    int kind = s->kind;
    for (int64_t i = 0; i < n; i++) {
        int64_t v;
        if (s->is_st) {
            switch ((sdc_st_dtype)kind) {
            case SDC_ST_I64:
                memcpy(&v, p + 8 * i, 8);
                break;
            case SDC_ST_U64: {
                uint64_t u;
                memcpy(&u, p + 8 * i, 8);
                v = u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)u;
                break;
            }
            case SDC_ST_U32: {
                uint32_t u;
                memcpy(&u, p + 4 * i, 4);
                v = u;
                break;
            }
            case SDC_ST_I16: {
                int16_t x;
                memcpy(&x, p + 2 * i, 2);
                v = x;
                break;
            }
            case SDC_ST_U16: {
                uint16_t x;
                memcpy(&x, p + 2 * i, 2);
                v = x;
                break;
            }
            case SDC_ST_I8:
                v = (int8_t)p[i];
                break;
            case SDC_ST_U8:
                v = p[i];
                break;
            case SDC_ST_BOOL:
                v = p[i] != 0;
                break;
            default:
                return sdc_fail(SDC_ERR_INTERNAL, "%s: tensor '%s': bad dtype", label, s->name);
            }
        } else {
            switch ((sdc_type)kind) {
            case SDC_TYPE_I64:
                memcpy(&v, p + 8 * i, 8);
                break;
            case SDC_TYPE_I16: {
                int16_t x;
                memcpy(&x, p + 2 * i, 2);
                v = x;
                break;
            }
            case SDC_TYPE_I8:
                v = (int8_t)p[i];
                break;
            default:
                return sdc_fail(SDC_ERR_INTERNAL, "%s: tensor '%s': bad type", label, s->name);
            }
        }
        if (v < INT32_MIN || v > INT32_MAX)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: tensor '%s': value %lld at index %lld does not fit in i32", label,
                            s->name, (long long)v, (long long)i);
        dst[i] = (int32_t)v;
    }
    return SDC_OK;
}

static sdc_status convert(const src_tensor *s, void *dst, const char *label) {
    if (s->target == SDC_TYPE_I32) return to_i32(s, dst, label);
    if (s->is_st) return sdc_st_to_f32(s->st, dst);
    /* GGUF F64 -> F32 */
    int64_t n = numel4(s->ne);
    for (int64_t i = 0; i < n; i++) {
        double v;
        memcpy(&v, (const uint8_t *)s->data + 8 * i, 8);
        ((float *)dst)[i] = (float)v;
    }
    return SDC_OK;
}

/* ---- adding a file -------------------------------------------------------------------- */

/* Safetensors and checkpoint tensors (both sdc_st_tensor records); `ckpt` when the
 * records are a checkpoint's. */
static sdc_status collect_st(const sdc_st_file *st, const sdc_ckpt_file *ckpt, const char *label,
                             src_tensor *out) {
    int n = ckpt ? sdc_ckpt_count(ckpt) : sdc_st_count(st);
    for (int i = 0; i < n; i++) {
        const sdc_st_tensor *t = ckpt ? sdc_ckpt_at(ckpt, i) : sdc_st_at(st, i);
        src_tensor *s = &out[i];
        memset(s, 0, sizeof *s);
        s->force_copy = ckpt && !sdc_ckpt_in_file(ckpt, i);
        s->name = t->name;
        s->is_st = true;
        s->kind = (int)t->dtype;
        s->st = t;
        s->data = t->data;
        s->nbytes = t->nbytes;
        /* reversed shape; dims beyond the fourth fold into ne[3] (a Conv3d weight
         * [O, I, T, H, W] becomes ne = [W, H, T, O*I]), as sd.cpp holds them */
        int nd = t->ndim;
        for (int d = 0; d < SDC_MAX_DIMS; d++) s->ne[d] = d < nd ? t->shape[nd - 1 - d] : 1;
        for (int d = 0; d + SDC_MAX_DIMS < nd; d++) {
            if (t->shape[d] != 0 && s->ne[3] > INT64_MAX / t->shape[d])
                return sdc_fail(SDC_ERR_FORMAT, "%s: tensor '%s': shape too large", label, t->name);
            s->ne[3] *= t->shape[d];
        }
        s->n_dims = nd < SDC_MAX_DIMS ? nd : SDC_MAX_DIMS;
    }
    return SDC_OK;
}

static void collect_gguf(const sdc_gguf_file *g, src_tensor *out) {
    for (int i = 0; i < sdc_gguf_tensor_count(g); i++) {
        const sdc_gguf_tensor *t = sdc_gguf_tensor_at(g, i);
        src_tensor *s = &out[i];
        memset(s, 0, sizeof *s);
        s->name = t->name;
        s->kind = (int)t->type;
        s->n_dims = t->n_dims;
        for (int d = 0; d < SDC_MAX_DIMS; d++) s->ne[d] = t->ne[d];
        s->data = t->data;
        s->nbytes = t->nbytes;
    }
}

/* The host-mapped buffer of a file's tensors used in place: from the first byte of any of
 * them to the end of the last (the file's data section, whatever its format). */
static sdc_status wrap_image(lfile *nf, const src_tensor *src, int n, const char *label) {
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < n; i++) {
        if (src[i].convert || src[i].copy || !src[i].data) continue;
        uintptr_t a = (uintptr_t)src[i].data;
        if (a < lo) lo = a;
        if (a + src[i].nbytes > hi) hi = a + src[i].nbytes;
    }
    if (hi == 0) return SDC_OK; /* nothing in place */
    if (sdc_buffer_wrap(NULL, (void *)lo, hi - lo, SDC_BUFFER_HOST_MAPPED, &nf->image_buf))
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
    return SDC_OK;
}

/* Takes ownership of the opened file `nf` (freed on failure). `rename` (may be NULL)
 * gives each tensor's name instead of prefix + name. */
static sdc_status add_opened(sdc_loader *l, lfile *nf, sdc_loader_rename_fn rename, void *ctx) {
    const char *label = nf->path;
    size_t plen = strlen(nf->prefix);
    int n = nf->gguf   ? sdc_gguf_tensor_count(nf->gguf)
            : nf->ckpt ? sdc_ckpt_count(nf->ckpt)
                       : sdc_st_count(nf->st);
    src_tensor *src = calloc((size_t)n + 1, sizeof *src);
    sdc_status st = SDC_OK;
    if (!src) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
        goto fail;
    }
    if (nf->gguf)
        collect_gguf(nf->gguf, src);
    else if ((st = collect_st(nf->st, nf->ckpt, label, src)))
        goto fail;

    /* names, types and the owned memory needed, before anything changes */
    size_t owned = 0;
    bool any_owned = false;
    for (int i = 0; i < n; i++) {
        src_tensor *s = &src[i];
        size_t nlen = strlen(s->name);
        char *full = s->full;
        if (rename) {
            if (!rename(ctx, s->name, full, SDC_MAX_NAME)) {
                st = sdc_fail(SDC_ERR_UNSUPPORTED,
                              "%s: tensor '%s': no known name to load it under", label, s->name);
                goto fail;
            }
        } else if (plen + nlen >= SDC_MAX_NAME) {
            st = sdc_fail(SDC_ERR_UNSUPPORTED, "%s: tensor '%s%s': name longer than %d bytes",
                          label, nf->prefix, s->name, SDC_MAX_NAME - 1);
            goto fail;
        } else {
            memcpy(full, nf->prefix, plen);
            memcpy(full + plen, s->name, nlen + 1);
        }
        /* two tensors of this file under one name (a rename can do that) */
        for (int j = 0; rename && j < i; j++)
            if (strcmp(src[j].full, full) == 0) {
                st = sdc_fail(SDC_ERR_FORMAT, "%s: tensors '%s' and '%s' both load as '%s'", label,
                              src[j].name, s->name, full);
                goto fail;
            }
        int other = sdc_name_index_find(&l->index, full);
        if (other >= 0) {
            st = sdc_fail(SDC_ERR_FORMAT, "tensor '%s' is in both %s and %s", full,
                          l->files[l->order[other]->file].path, label);
            goto fail;
        }
        plan_tensor(s);
        if (s->convert || s->copy) {
            size_t bytes = s->convert ? (size_t)numel4(s->ne) * 4 : s->nbytes;
            s->owned_off = owned;
            any_owned = true;
            owned += (bytes + LOADER_ALIGN - 1) / LOADER_ALIGN * LOADER_ALIGN;
        }
    }
    if (any_owned && !owned) owned = LOADER_ALIGN; /* zero-size conversions still get a pointer */
    nf->entries = calloc((size_t)n + 1, sizeof *nf->entries);
    if (!nf->entries) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
        goto fail;
    }
    _Static_assert(SDC_HOST_BUFFER_ALIGN % LOADER_ALIGN == 0, "host buffers keep loader alignment");
    if (owned) {
        if (sdc_buffer_alloc(NULL, owned, SDC_BUFFER_WEIGHTS, &nf->owned_buf) != SDC_OK) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory (%zu bytes for converted tensors)",
                          label, owned);
            goto fail;
        }
        nf->owned = nf->owned_buf->base;
    }
    nf->owned_size = owned;
    if ((st = wrap_image(nf, src, n, label)) != SDC_OK) goto fail;
    if (l->n_files == l->cap_files) {
        int cap = l->cap_files ? l->cap_files * 2 : 8;
        lfile *fs = realloc(l->files, (size_t)cap * sizeof *fs);
        if (!fs) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
            goto fail;
        }
        l->files = fs;
        l->cap_files = cap;
    }
    if (l->n + n > l->cap) {
        int cap = l->cap ? l->cap : 256;
        while (cap < l->n + n) cap *= 2;
        entry **o = realloc(l->order, (size_t)cap * sizeof *o);
        if (!o) {
            st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
            goto fail;
        }
        l->order = o;
        l->cap = cap;
    }
    if (sdc_name_index_reserve(&l->index, (size_t)l->n + (size_t)n)) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
        goto fail;
    }

    /* fill the tensors (conversions can still fail on out-of-range integers) */
    int file_index = l->n_files;
    for (int i = 0; i < n; i++) {
        src_tensor *s = &src[i];
        entry *e = &nf->entries[i];
        sdc_tensor *t = &e->t;
        e->file = file_index;
        t->type = s->target;
        for (int d = 0; d < SDC_MAX_DIMS; d++) t->ne[d] = s->ne[d];
        sdc_tensor_set_contiguous_strides(t);
        t->op = SDC_OP_NONE;
        t->flags = SDC_TENSOR_PARAM;
        t->index = -1;
        t->plan_offset = -1;
        t->last_use = -1;
        memcpy(t->name, s->full, sizeof t->name);
        if (s->convert || s->copy) {
            void *dst = (uint8_t *)nf->owned + s->owned_off;
            if (s->copy)
                memcpy(dst, s->data, s->nbytes);
            else if ((st = convert(s, dst, label)))
                goto fail;
            t->data = dst;
            t->buffer = nf->owned_buf;
        } else {
            t->data = (void *)s->data;
            t->buffer = nf->image_buf;
            nf->entries[i].mapped = s->data;
            nf->entries[i].mapped_bytes = s->nbytes;
        }
    }
    for (int i = 0; i < n; i++) {
        l->order[l->n + i] = &nf->entries[i];
        sdc_name_index_insert(&l->index, nf->entries[i].t.name, l->n + i);
    }
    l->n += n;
    nf->n = n;
    l->files[l->n_files++] = *nf;
    free(src);
    return SDC_OK;
fail:
    free(src);
    free_file(nf);
    return st;
}

static sdc_status add_image(sdc_loader *l, const uint8_t *data, size_t size, const char *label,
                            const char *prefix, bool from_path, sdc_loader_rename_fn rename,
                            void *ctx) {
    lfile nf = {0};
    sdc_status st;
    nf.fmt = sdc_detect_format(data, size);
    if (nf.fmt == SDC_FORMAT_UNKNOWN) return unknown_format(label, data, size);
    nf.path = strdup(label);
    nf.prefix = strdup(prefix ? prefix : "");
    if (!nf.path || !nf.prefix) {
        free_file(&nf);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", label);
    }
    if (nf.fmt == SDC_FORMAT_GGUF)
        st = from_path ? sdc_gguf_open(label, &nf.gguf)
                       : sdc_gguf_open_memory(data, size, label, &nf.gguf);
    else if (nf.fmt == SDC_FORMAT_CKPT)
        st = from_path ? sdc_ckpt_open(label, &nf.ckpt)
                       : sdc_ckpt_open_memory(data, size, label, &nf.ckpt);
    else
        st = from_path ? sdc_st_open(label, &nf.st) : sdc_st_open_memory(data, size, label, &nf.st);
    if (st) {
        free_file(&nf);
        return st;
    }
    nf.mapped = from_path;
    return add_opened(l, &nf, rename, ctx);
}

static sdc_status add_path(sdc_loader *l, const char *path, const char *prefix,
                           sdc_loader_rename_fn rename, void *ctx) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return sdc_fail(SDC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t head[16];
    ssize_t got = read(fd, head, sizeof head);
    close(fd);
    if (got < 0) return sdc_fail(SDC_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    if (sdc_detect_format(head, (size_t)got) == SDC_FORMAT_UNKNOWN)
        return unknown_format(path, head, (size_t)got);
    return add_image(l, head, (size_t)got, path, prefix, true, rename, ctx);
}

sdc_status sdc_loader_add_file(sdc_loader *l, const char *path, const char *prefix) {
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        if (prefix && *prefix)
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "%s: a folder (diffusers layout) only loads as the whole model (-m)",
                            path);
        return sdc_loader_add_diffusers_folder(l, path);
    }
    return add_path(l, path, prefix, NULL, NULL);
}

sdc_status sdc_loader_add_file_renamed(sdc_loader *l, const char *path, sdc_loader_rename_fn rename,
                                       void *ctx) {
    return add_path(l, path, "", rename, ctx);
}

void sdc_loader_truncate(sdc_loader *l, int n_files) {
    if (n_files < 0 || n_files >= l->n_files) return;
    int n = 0;
    for (int i = 0; i < n_files; i++) n += l->files[i].n;
    for (int i = n_files; i < l->n_files; i++) free_file(&l->files[i]);
    l->n_files = n_files;
    l->n = n;
    /* the index has no removal: rebuild it from the tensors kept (it only shrinks, so the
     * slots it has suffice) */
    memset(l->index.slots, 0, l->index.cap * sizeof *l->index.slots);
    l->index.count = 0;
    for (int i = 0; i < n; i++) sdc_name_index_insert(&l->index, l->order[i]->t.name, i);
}

sdc_status sdc_loader_set_tokenizer_dir(sdc_loader *l, int i, const char *dir) {
    if (i < 0 || i > 1) return sdc_fail(SDC_ERR_INVALID_ARG, "tokenizer index %d", i);
    char *d = dir ? strdup(dir) : NULL;
    if (dir && !d) return sdc_fail(SDC_ERR_NO_MEMORY, "loader: out of memory");
    free(l->tokenizer_dir[i]);
    l->tokenizer_dir[i] = d;
    return SDC_OK;
}

const char *sdc_loader_tokenizer_dir(const sdc_loader *l, int i) {
    return i >= 0 && i <= 1 ? l->tokenizer_dir[i] : NULL;
}

sdc_status sdc_loader_add_memory(sdc_loader *l, const void *data, size_t size, const char *label,
                                 const char *prefix) {
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_loader_add_memory: NULL data");
    return add_image(l, data, size, label ? label : "<memory>", prefix, false, NULL, NULL);
}

/* ---- queries -------------------------------------------------------------------------- */

int sdc_loader_tensor_count(const sdc_loader *l) {
    return l->n;
}

sdc_tensor *sdc_loader_tensor_at(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n ? &l->order[i]->t : NULL;
}

sdc_tensor *sdc_loader_find(const sdc_loader *l, const char *name) {
    int i = sdc_name_index_find(&l->index, name);
    return i >= 0 ? &l->order[i]->t : NULL;
}

int sdc_loader_tensor_file(const sdc_loader *l, const sdc_tensor *t) {
    if (!t) return -1;
    /* only trust the entry layout for tensors that are really ours */
    sdc_tensor *mine = sdc_loader_find(l, t->name);
    return mine == t ? ((const entry *)t)->file : -1;
}

int sdc_loader_file_count(const sdc_loader *l) {
    return l->n_files;
}

const char *sdc_loader_file_path(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].path : NULL;
}
const char *sdc_loader_file_prefix(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].prefix : NULL;
}
sdc_file_format sdc_loader_file_format(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].fmt : SDC_FORMAT_UNKNOWN;
}
const sdc_gguf_file *sdc_loader_file_gguf(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].gguf : NULL;
}
const sdc_st_file *sdc_loader_file_st(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].st : NULL;
}
const sdc_ckpt_file *sdc_loader_file_ckpt(const sdc_loader *l, int i) {
    return i >= 0 && i < l->n_files ? l->files[i].ckpt : NULL;
}

const sdc_gguf_kv *sdc_loader_find_kv(const sdc_loader *l, const char *key, int *file) {
    for (int i = 0; i < l->n_files; i++) {
        if (!l->files[i].gguf) continue;
        const sdc_gguf_kv *kv = sdc_gguf_find_kv(l->files[i].gguf, key);
        if (kv) {
            if (file) *file = i;
            return kv;
        }
    }
    return NULL;
}

/* Drops the resident pages of a file's mapped weights (they are re-read from the file,
 * usually the page cache, when touched again): a text encoder used once per prompt need
 * not stay in memory while the diffusion model samples. Owned (converted) data stays. */
/* madvise(DONTNEED) the pages wholly inside one entry's file data; only the file mapping,
 * never heap memory, which DONTNEED would zero */
static void release_entry(const entry *e, uintptr_t page) {
    if (!e->mapped) return;
    uintptr_t a = (uintptr_t)e->mapped, b = a + e->mapped_bytes;
    a = (a + page - 1) / page * page;
    b = b / page * page;
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

void sdc_loader_release_tensor_pages(sdc_loader *l, const sdc_tensor *t) {
    int file = sdc_loader_tensor_file(l, t);
    if (file < 0 || !l->files[file].mapped) return;
    release_entry((const entry *)t, (uintptr_t)sysconf(_SC_PAGESIZE));
}

void sdc_loader_release_pages(sdc_loader *l, int file) {
    if (!l || file < 0 || file >= l->n_files) return;
    const lfile *f = &l->files[file];
    if (!f->mapped) return;
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    for (int i = 0; i < f->n; i++) release_entry(&f->entries[i], page);
}
