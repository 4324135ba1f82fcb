#include "io/safetensors_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct st_entry {
    char *name;
    sdc_st_dtype dtype;
    int ndim;
    int64_t shape[SDC_ST_MAX_DIMS];
    const void *data;
    size_t nbytes;
} st_entry;

struct sdc_st_writer {
    st_entry *e;
    int n, cap;
    char **meta; /* key, value pairs */
    int n_meta;
};

sdc_status sdc_st_writer_create(sdc_st_writer **out) {
    *out = calloc(1, sizeof **out);
    return *out ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
}

void sdc_st_writer_free(sdc_st_writer *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) free(w->e[i].name);
    for (int i = 0; i < 2 * w->n_meta; i++) free(w->meta[i]);
    free(w->meta);
    free(w->e);
    free(w);
}

sdc_status sdc_st_writer_set_metadata(sdc_st_writer *w, const char *key, const char *value) {
    char **m = realloc(w->meta, (size_t)(w->n_meta + 1) * 2 * sizeof(char *));
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
    w->meta = m;
    m[2 * w->n_meta] = strdup(key);
    m[2 * w->n_meta + 1] = strdup(value);
    w->n_meta++;
    return SDC_OK;
}

sdc_status sdc_st_writer_add(sdc_st_writer *w, const char *name, sdc_st_dtype dtype, int ndim,
                             const int64_t *shape, const void *data) {
    if (ndim < 0 || ndim > SDC_ST_MAX_DIMS)
        return sdc_fail(SDC_ERR_INVALID_ARG, "safetensors writer: '%s' has %d dims", name, ndim);
    if (w->n == w->cap) {
        int nc = w->cap ? w->cap * 2 : 64;
        st_entry *ne = realloc(w->e, (size_t)nc * sizeof *ne);
        if (!ne) return sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
        w->e = ne;
        w->cap = nc;
    }
    st_entry *e = &w->e[w->n];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    if (!e->name) return sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
    e->dtype = dtype;
    e->ndim = ndim;
    size_t count = 1;
    for (int i = 0; i < ndim; i++) {
        e->shape[i] = shape[i];
        count *= (size_t)shape[i];
    }
    e->nbytes = count * sdc_st_dtype_size(dtype);
    e->data = data;
    w->n++;
    return SDC_OK;
}

/* JSON string with the escapes the format needs */
static void put_json_string(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

sdc_status sdc_st_writer_write(sdc_st_writer *w, const char *path, sdc_st_fill_fn fill,
                               void *user) {
    /* header into a memory stream first: its length goes in front */
    char *hdr = NULL;
    size_t hlen = 0;
    FILE *hf = open_memstream(&hdr, &hlen);
    if (!hf) return sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
    fputc('{', hf);
    bool first = true;
    if (w->n_meta) {
        fputs("\"__metadata__\":{", hf);
        for (int i = 0; i < w->n_meta; i++) {
            if (i) fputc(',', hf);
            put_json_string(hf, w->meta[2 * i]);
            fputc(':', hf);
            put_json_string(hf, w->meta[2 * i + 1]);
        }
        fputc('}', hf);
        first = false;
    }
    size_t off = 0;
    for (int i = 0; i < w->n; i++) {
        const st_entry *e = &w->e[i];
        if (!first) fputc(',', hf);
        first = false;
        put_json_string(hf, e->name);
        fprintf(hf, ":{\"dtype\":\"%s\",\"shape\":[", sdc_st_dtype_name(e->dtype));
        for (int d = 0; d < e->ndim; d++)
            fprintf(hf, "%s%lld", d ? "," : "", (long long)e->shape[d]);
        fprintf(hf, "],\"data_offsets\":[%zu,%zu]}", off, off + e->nbytes);
        off += e->nbytes;
    }
    fputc('}', hf);
    /* pad the header with spaces so the data section starts 8-byte aligned */
    fflush(hf);
    while (hlen % 8) {
        fputc(' ', hf);
        fflush(hf);
    }
    fclose(hf);

    sdc_status s = SDC_OK;
    FILE *f = fopen(path, "wb");
    if (!f) {
        free(hdr);
        return sdc_fail(SDC_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
    }
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((uint64_t)hlen >> (8 * i));
    if (fwrite(len8, 1, 8, f) != 8 || fwrite(hdr, 1, hlen, f) != hlen)
        s = sdc_fail(SDC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    free(hdr);
    void *buf = NULL;
    size_t buf_size = 0;
    for (int i = 0; i < w->n && s == SDC_OK; i++) {
        const st_entry *e = &w->e[i];
        const void *src = e->data;
        if (!src) {
            if (!fill) {
                s = sdc_fail(SDC_ERR_INVALID_ARG, "safetensors writer: no data for '%s'", e->name);
                break;
            }
            if (e->nbytes > buf_size) {
                void *nb = realloc(buf, e->nbytes);
                if (!nb) {
                    s = sdc_fail(SDC_ERR_NO_MEMORY, "safetensors writer: out of memory");
                    break;
                }
                buf = nb;
                buf_size = e->nbytes;
            }
            if ((s = fill(user, i, buf, e->nbytes)) != SDC_OK) break;
            src = buf;
        }
        if (e->nbytes && fwrite(src, 1, e->nbytes, f) != e->nbytes)
            s = sdc_fail(SDC_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    free(buf);
    if (fclose(f) != 0 && s == SDC_OK) s = sdc_fail(SDC_ERR_IO, "%s: close failed", path);
    return s;
}
