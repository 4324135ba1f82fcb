#include "models/weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/buffer.h"
#include "core/fp16.h"
#include "core/lora_link.h"

sdc_tensor *sdc_weight_find(const sdc_weight_source *ws, const char *prefix, const char *name) {
    char full[512];
    snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
    return ws->find(ws->user, full);
}

sdc_status sdc_weight_require(const sdc_weight_source *ws, const char *prefix, const char *name,
                              int ndims, const int64_t *ne, sdc_tensor **out) {
    sdc_tensor *t = sdc_weight_find(ws, prefix, name);
    *out = NULL;
    if (!t) return sdc_fail(SDC_ERR_FORMAT, "missing tensor '%s%s'", prefix ? prefix : "", name);
    bool ok = true;
    for (int i = 0; i < SDC_MAX_DIMS; i++) {
        int64_t want = i < ndims ? ne[i] : 1;
        if (want >= 0 && t->ne[i] != want) ok = false;
    }
    if (!ok) {
        char have[80], want[80];
        int64_t w[4];
        for (int i = 0; i < 4; i++) w[i] = i < ndims ? ne[i] : 1;
        /* PyTorch order (outermost first) is what users see in their files */
        snprintf(have, sizeof have, "[%lld,%lld,%lld,%lld]", (long long)t->ne[3],
                 (long long)t->ne[2], (long long)t->ne[1], (long long)t->ne[0]);
        snprintf(want, sizeof want, "[%lld,%lld,%lld,%lld]", (long long)w[3], (long long)w[2],
                 (long long)w[1], (long long)w[0]);
        return sdc_fail(SDC_ERR_FORMAT, "tensor '%s' has shape %s, expected %s (-1 = any)", t->name,
                        have, want);
    }
    *out = t;
    return SDC_OK;
}

sdc_status sdc_weight_to_f32(const sdc_tensor *w, float *dst) {
    const sdc_type_traits *tr = sdc_type_get(w->type);
    if (!tr || !tr->to_float)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "tensor '%s': type %s cannot be read as float",
                        w->name, sdc_type_name(w->type));
    if (!sdc_tensor_is_contiguous(w))
        return sdc_fail(SDC_ERR_INTERNAL, "tensor '%s' is not contiguous", w->name);
    if (sdc_tensor_nelements(w) == 0) return SDC_OK;
    /* the weight itself where it is host memory, else a copy through its backend */
    const void *p;
    void *tmp;
    sdc_status s = sdc_tensor_map_read(w, &p, &tmp);
    if (s != SDC_OK) return s;
    int64_t rows = sdc_tensor_nrows(w);
    for (int64_t r = 0; r < rows; r++)
        tr->to_float((const char *)p + (size_t)r * w->nb[1], dst + r * w->ne[0], w->ne[0]);
    free(tmp);
    return SDC_OK;
}

sdc_status sdc_weight_convert_copy(const sdc_tensor *w, sdc_type type, const int64_t *ne,
                                   sdc_backend *be, sdc_tensor *out) {
    int64_t cnt = sdc_tensor_nelements(w);
    sdc_tensor t = {0};
    t.type = type;
    for (int i = 0; i < SDC_MAX_DIMS; i++) t.ne[i] = ne ? ne[i] : w->ne[i];
    sdc_tensor_set_contiguous_strides(&t);
    t.flags = SDC_TENSOR_PARAM;
    t.index = -1;
    t.plan_offset = -1;
    t.last_use = -1;
    snprintf(t.name, sizeof t.name, "%s", w->name);
    t.lora = w->lora;
    *out = t;
    if (type != SDC_TYPE_F32 && type != SDC_TYPE_F16)
        return sdc_fail(SDC_ERR_INTERNAL, "tensor '%s': copies are f32 or f16, not %s", w->name,
                        sdc_type_name(type));
    if (sdc_tensor_nelements(&t) != cnt)
        return sdc_fail(SDC_ERR_FORMAT, "tensor '%s': %lld values do not fill the shape %s",
                        w->name, (long long)cnt, sdc_tensor_shape_str(&t, (char[64]){0}, 64));
    size_t bytes = sdc_tensor_nbytes(&t);
    float *host = malloc(cnt ? (size_t)cnt * sizeof(float) : 1);
    sdc_fp16 *half = type == SDC_TYPE_F16 ? malloc(cnt ? (size_t)cnt * sizeof *half : 1) : NULL;
    if (!host || (type == SDC_TYPE_F16 && !half)) {
        free(host);
        free(half);
        return sdc_fail(SDC_ERR_NO_MEMORY, "tensor '%s': out of memory", w->name);
    }
    /* a weight with LoRAs merged in is copied as loaded: the copy keeps w's link and gets
     * the adapters at run time (core/lora_link.h) */
    sdc_tensor src = *w;
    if (w->lora && w->lora->pristine_data) {
        src.data = (void *)w->lora->pristine_data;
        src.buffer = w->lora->pristine_buffer;
    }
    sdc_status s = sdc_weight_to_f32(&src, host);
    if (s == SDC_OK && half)
        for (int64_t i = 0; i < cnt; i++) half[i] = sdc_f32_to_fp16(host[i]);
    sdc_buffer *buf = NULL;
    if (s == SDC_OK) s = sdc_buffer_alloc(be, bytes, SDC_BUFFER_WEIGHTS, &buf);
    if (s == SDC_OK) s = sdc_buffer_place(buf, &t, 0);
    if (s == SDC_OK) s = sdc_backend_tensor_set(be, &t, half ? (void *)half : host, 0, bytes);
    free(host);
    free(half);
    if (s != SDC_OK) {
        sdc_buffer_free(buf);
        return s;
    }
    *out = t;
    return SDC_OK;
}

sdc_status sdc_weight_copies_add(sdc_weight_copies *c, const sdc_tensor *w, sdc_type type,
                                 const int64_t *ne, sdc_tensor **out) {
    *out = NULL;
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        sdc_tensor **p = realloc(c->t, (size_t)cap * sizeof *p);
        if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "weights: out of memory");
        c->t = p, c->cap = cap;
    }
    sdc_tensor *t = calloc(1, sizeof *t);
    if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "weights: out of memory");
    sdc_status s = sdc_weight_convert_copy(w, type, ne, NULL, t);
    if (s != SDC_OK) {
        free(t);
        return s;
    }
    c->t[c->n++] = t;
    *out = t;
    return SDC_OK;
}

void sdc_weight_copies_free(sdc_weight_copies *c) {
    for (int i = 0; i < c->n; i++) {
        sdc_buffer_free(c->t[i]->buffer);
        free(c->t[i]);
    }
    free(c->t);
    memset(c, 0, sizeof *c);
}
