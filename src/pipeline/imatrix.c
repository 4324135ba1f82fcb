#include "pipeline/imatrix.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/log.h"
#include "io/model_loader.h"
#include "io/name_index.h"

typedef struct entry {
    char *name;
    int64_t nval;
    int64_t ncall;
    double *sum;    /* sum of x^2 per column (loaded files add mean * ncall) */
    int64_t *count; /* values summed per column (loaded files add ncall) */
} entry;

struct sdc_imatrix {
    entry *e;
    int n, cap;
    sdc_name_index index;
    const sdc_loader *loader;
    sdc_status error;
    char error_msg[256];
};

sdc_status sdc_imatrix_create(sdc_imatrix **out) {
    sdc_imatrix *im = calloc(1, sizeof *im);
    if (!im || sdc_name_index_init(&im->index, 64)) {
        free(im);
        *out = NULL;
        return sdc_fail(SDC_ERR_NO_MEMORY, "imatrix: out of memory");
    }
    *out = im;
    return SDC_OK;
}

void sdc_imatrix_free(sdc_imatrix *im) {
    if (!im) return;
    for (int i = 0; i < im->n; i++) {
        free(im->e[i].name);
        free(im->e[i].sum);
        free(im->e[i].count);
    }
    free(im->e);
    sdc_name_index_free(&im->index);
    free(im);
}

int sdc_imatrix_entry_count(const sdc_imatrix *im) {
    return im ? im->n : 0;
}
int sdc_imatrix_find(const sdc_imatrix *im, const char *name) {
    return im ? sdc_name_index_find(&im->index, name) : -1;
}
const char *sdc_imatrix_name(const sdc_imatrix *im, int i) {
    return im->e[i].name;
}
int64_t sdc_imatrix_nval(const sdc_imatrix *im, int i) {
    return im->e[i].nval;
}
int64_t sdc_imatrix_ncall(const sdc_imatrix *im, int i) {
    return im->e[i].ncall;
}
void sdc_imatrix_set_loader(sdc_imatrix *im, const sdc_loader *l) {
    im->loader = l;
}
sdc_status sdc_imatrix_error(const sdc_imatrix *im) {
    if (im->error != SDC_OK) return sdc_fail(im->error, "%s", im->error_msg);
    return SDC_OK;
}

/* The entry for name with nval columns, created when new. */
static sdc_status get_entry(sdc_imatrix *im, const char *name, int64_t nval, entry **out) {
    int i = sdc_name_index_find(&im->index, name);
    if (i >= 0) {
        if (im->e[i].nval != nval)
            return sdc_fail(SDC_ERR_FORMAT, "imatrix: '%s' has %lld columns here, %lld before",
                            name, (long long)nval, (long long)im->e[i].nval);
        *out = &im->e[i];
        return SDC_OK;
    }
    if (nval < 1 || nval > INT32_MAX)
        return sdc_fail(SDC_ERR_FORMAT, "imatrix: '%s': bad column count %lld", name,
                        (long long)nval);
    if (im->n == im->cap) {
        int cap = im->cap ? im->cap * 2 : 64;
        entry *e = realloc(im->e, sizeof *e * (size_t)cap);
        if (!e) return sdc_fail(SDC_ERR_NO_MEMORY, "imatrix: out of memory");
        im->e = e;
        im->cap = cap;
    }
    entry *e = &im->e[im->n];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    e->sum = calloc((size_t)nval, sizeof *e->sum);
    e->count = calloc((size_t)nval, sizeof *e->count);
    e->nval = nval;
    if (!e->name || !e->sum || !e->count || sdc_name_index_reserve(&im->index, (size_t)im->n + 1)) {
        free(e->name);
        free(e->sum);
        free(e->count);
        return sdc_fail(SDC_ERR_NO_MEMORY, "imatrix: out of memory");
    }
    sdc_name_index_insert(&im->index, e->name, im->n);
    im->n++;
    *out = e;
    return SDC_OK;
}

sdc_status sdc_imatrix_add(sdc_imatrix *im, const char *name, const float *x, int64_t nval,
                           int64_t rows, int64_t planes, int64_t row_stride, int64_t plane_stride) {
    entry *e;
    sdc_status s = get_entry(im, name, nval, &e);
    if (s != SDC_OK) return s;
    for (int64_t p = 0; p < planes; p++) {
        e->ncall++;
        for (int64_t r = 0; r < rows; r++) {
            const float *row = x + p * plane_stride + r * row_stride;
            for (int64_t j = 0; j < nval; j++) {
                float v = row[j];
                if (!isfinite(v)) continue; /* as sd.cpp: masked positions */
                e->sum[j] += (double)v * (double)v;
                e->count[j]++;
            }
        }
    }
    return SDC_OK;
}

static bool wanted_name(const char *n) {
    return !strncmp(n, "model.", 6) || !strncmp(n, "cond_stage_model.", 17) ||
           !strncmp(n, "text_encoders.", 14);
}

bool sdc_imatrix_eval_cb(sdc_tensor *t, bool ask, void *user) {
    sdc_imatrix *im = user;
    if (t->op != SDC_OP_MATMUL) return ask ? false : true;
    const sdc_tensor *w = t->src[0], *x = t->src[1];
    if (ask) {
        if (!w || !x || !(w->flags & SDC_TENSOR_PARAM) || !wanted_name(w->name) ||
            x->type != SDC_TYPE_F32 || im->error != SDC_OK)
            return false;
        if (im->loader && sdc_loader_find(im->loader, w->name) != w) return false;
        return true;
    }
    /* rows and planes by strides (x may be a view); ne[0] is contiguous for matmul */
    if (x->nb[0] != sizeof(float) || x->nb[1] % sizeof(float) || x->nb[2] % sizeof(float))
        return true;
    /* x's bytes as the host sees them: in place for host memory, else a copy from its device */
    const void *xd;
    void *tmp;
    sdc_status s = sdc_tensor_map_read(x, &xd, &tmp);
    for (int64_t i3 = 0; i3 < x->ne[3] && s == SDC_OK; i3++)
        s = sdc_imatrix_add(im, w->name, (const float *)((const char *)xd + i3 * x->nb[3]),
                            x->ne[0], x->ne[1], x->ne[2], (int64_t)(x->nb[1] / sizeof(float)),
                            (int64_t)(x->nb[2] / sizeof(float)));
    free(tmp);
    if (s != SDC_OK) {
        im->error = s;
        snprintf(im->error_msg, sizeof im->error_msg, "%s", sdc_last_error());
        SDC_LOGW("%s", im->error_msg);
    }
    return true; /* on errors too: generation goes on; the save reports it */
}

bool sdc_imatrix_values(const sdc_imatrix *im, int i, float *out) {
    const entry *e = &im->e[i];
    for (int64_t j = 0; j < e->nval; j++) {
        if (e->count[j] == 0) return false;
        out[j] = (float)(e->sum[j] / (double)e->count[j] * (double)e->ncall);
    }
    return true;
}

/* ---- file format ---- */

typedef struct reader {
    const unsigned char *p, *end;
} reader;

static bool rd_i32(reader *r, int32_t *v) {
    if (r->end - r->p < 4) return false;
    memcpy(v, r->p, 4); /* little-endian hosts only, as the format */
    r->p += 4;
    return true;
}

sdc_status sdc_imatrix_load_memory(sdc_imatrix *im, const void *data, size_t size,
                                   const char *label) {
    reader r = {data, (const unsigned char *)data + size};
    int32_t n;
    if (!rd_i32(&r, &n) || n < 1)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not an imatrix file (no entries)", label);
    /* validate everything first so a bad file changes nothing */
    reader v = r;
    for (int32_t i = 0; i < n; i++) {
        int32_t len, ncall, nval;
        if (!rd_i32(&v, &len) || len < 1 || len >= SDC_MAX_NAME || v.end - v.p < len)
            return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: bad or truncated name", label, i);
        if (memchr(v.p, 0, (size_t)len))
            return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: name contains a NUL byte", label, i);
        v.p += len;
        if (!rd_i32(&v, &ncall) || !rd_i32(&v, &nval))
            return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: truncated header", label, i);
        if (ncall < 0 || nval < 1)
            return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: bad ncall %d or nval %d", label, i,
                            ncall, nval);
        if ((v.end - v.p) / 4 < nval)
            return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: %d values, file truncated", label, i,
                            nval);
        for (int32_t j = 0; j < nval; j++) {
            float f;
            memcpy(&f, v.p + 4 * (size_t)j, 4);
            if (!isfinite(f) || f < 0)
                return sdc_fail(SDC_ERR_FORMAT, "%s: entry %d: value %d is %g", label, i, j,
                                (double)f);
        }
        v.p += 4 * (size_t)nval;
        char name[SDC_MAX_NAME];
        memcpy(name, v.p - 4 * (size_t)nval - 8 - len, (size_t)len);
        name[len] = '\0';
        int k = sdc_name_index_find(&im->index, name);
        if (k >= 0 && im->e[k].nval != nval)
            return sdc_fail(SDC_ERR_FORMAT, "%s: '%s' has %d values, %lld already loaded", label,
                            name, nval, (long long)im->e[k].nval);
    }
    /* trailer: int32 last_call (ignored, as sd.cpp does); llama.cpp may add more */
    for (int32_t i = 0; i < n; i++) {
        int32_t len = 0, ncall = 0, nval = 0;
        rd_i32(&r, &len);
        char name[SDC_MAX_NAME];
        memcpy(name, r.p, (size_t)len);
        name[len] = '\0';
        r.p += len;
        rd_i32(&r, &ncall);
        rd_i32(&r, &nval);
        entry *e;
        sdc_status s = get_entry(im, name, nval, &e);
        if (s != SDC_OK) return sdc_fail_prefix(s, "%s: ", label);
        for (int32_t j = 0; j < nval; j++) {
            float f;
            memcpy(&f, r.p + 4 * (size_t)j, 4);
            e->sum[j] += f;
            e->count[j] += ncall;
        }
        e->ncall += ncall;
        r.p += 4 * (size_t)nval;
    }
    return SDC_OK;
}

sdc_status sdc_imatrix_load(sdc_imatrix *im, const char *path) {
    if (!im || !path) return sdc_fail(SDC_ERR_INVALID_ARG, "imatrix load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (!f) return sdc_fail(SDC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    void *buf = NULL;
    size_t size = 0, cap = 0;
    sdc_status s = SDC_OK;
    for (;;) {
        if (size == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            void *nb = realloc(buf, cap);
            if (!nb) {
                s = sdc_fail(SDC_ERR_NO_MEMORY, "%s: out of memory", path);
                break;
            }
            buf = nb;
        }
        size_t got = fread((char *)buf + size, 1, cap - size, f);
        size += got;
        if (got == 0) {
            if (ferror(f)) s = sdc_fail(SDC_ERR_IO, "%s: read error", path);
            break;
        }
    }
    fclose(f);
    if (s == SDC_OK) s = sdc_imatrix_load_memory(im, buf, size, path);
    free(buf);
    if (s == SDC_OK) SDC_LOGI("imatrix: loaded %s (%d entries in total)", path, im->n);
    return s;
}

sdc_status sdc_imatrix_save_memory(const sdc_imatrix *im, void **out, size_t *size) {
    size_t cap = 8;
    for (int i = 0; i < im->n; i++) cap += 12 + strlen(im->e[i].name) + 4 * (size_t)im->e[i].nval;
    unsigned char *buf = malloc(cap), *p = buf + 4;
    float *vals = NULL;
    int64_t max_nval = 1;
    for (int i = 0; i < im->n; i++)
        if (im->e[i].nval > max_nval) max_nval = im->e[i].nval;
    vals = malloc((size_t)max_nval * sizeof *vals);
    if (!buf || !vals) {
        free(buf);
        free(vals);
        return sdc_fail(SDC_ERR_NO_MEMORY, "imatrix: out of memory");
    }
    int32_t stored = 0;
    for (int i = 0; i < im->n; i++) {
        const entry *e = &im->e[i];
        if (!sdc_imatrix_values(im, i, vals)) {
            SDC_LOGW("imatrix: entry '%s' has columns without data - skipping", e->name);
            continue;
        }
        int32_t len = (int32_t)strlen(e->name), ncall = (int32_t)e->ncall, nval = (int32_t)e->nval;
        memcpy(p, &len, 4), p += 4;
        memcpy(p, e->name, (size_t)len), p += len;
        memcpy(p, &ncall, 4), p += 4;
        memcpy(p, &nval, 4), p += 4;
        memcpy(p, vals, 4 * (size_t)nval), p += 4 * (size_t)nval;
        stored++;
    }
    int32_t last_call = 0;
    memcpy(p, &last_call, 4), p += 4;
    memcpy(buf, &stored, 4);
    free(vals);
    if (stored < im->n) SDC_LOGW("imatrix: storing only %d of %d entries", stored, im->n);
    if (stored == 0) SDC_LOGW("imatrix: nothing was collected; the file will not load anywhere");
    *out = buf;
    *size = (size_t)(p - buf);
    return SDC_OK;
}

sdc_status sdc_imatrix_save(const sdc_imatrix *im, const char *path) {
    if (!im || !path) return sdc_fail(SDC_ERR_INVALID_ARG, "imatrix save: NULL argument");
    if (im->error != SDC_OK) return sdc_imatrix_error(im);
    void *buf;
    size_t size;
    sdc_status s = sdc_imatrix_save_memory(im, &buf, &size);
    if (s != SDC_OK) return s;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(buf);
        return sdc_fail(SDC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    bool ok = fwrite(buf, 1, size, f) == size;
    ok = (fclose(f) == 0) && ok;
    free(buf);
    if (!ok) return sdc_fail(SDC_ERR_IO, "%s: write failed", path);
    return SDC_OK;
}
