#include "core/buffer.h"

#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/tensor.h"

static size_t round_host(size_t size) {
    size_t a = SDC_HOST_BUFFER_ALIGN;
    return size ? (size + a - 1) / a * a : a;
}

sdc_status sdc_buffer_alloc(sdc_backend *be, size_t size, sdc_buffer_usage usage,
                            sdc_buffer **out) {
    *out = NULL;
    sdc_buffer *b = calloc(1, sizeof *b);
    if (!b) return sdc_fail(SDC_ERR_NO_MEMORY, "buffer: out of memory");
    if (size > SIZE_MAX - SDC_HOST_BUFFER_ALIGN) {
        free(b);
        return sdc_fail(SDC_ERR_NO_MEMORY, "buffer: %zu bytes is too large", size);
    }
    if (be) {
        sdc_status s = be->iface->alloc(be, size ? size : 1, &b->base);
        if (s != SDC_OK) {
            free(b);
            return s;
        }
    } else {
        b->base = aligned_alloc(SDC_HOST_BUFFER_ALIGN, round_host(size));
        if (!b->base) {
            free(b);
            return sdc_fail(SDC_ERR_NO_MEMORY, "buffer: cannot allocate %zu bytes of %s memory",
                            size, sdc_buffer_usage_name(usage));
        }
    }
    b->backend = be;
    b->size = size;
    b->usage = usage;
    b->owns_base = true;
    *out = b;
    return SDC_OK;
}

sdc_status sdc_buffer_wrap(sdc_backend *be, void *base, size_t size, sdc_buffer_usage usage,
                           sdc_buffer **out) {
    *out = calloc(1, sizeof **out);
    if (!*out) return sdc_fail(SDC_ERR_NO_MEMORY, "buffer: out of memory");
    **out = (sdc_buffer){.backend = be, .base = base, .size = size, .usage = usage};
    return SDC_OK;
}

void sdc_buffer_free(sdc_buffer *b) {
    if (!b) return;
    if (b->owns_base) {
        if (b->backend)
            b->backend->iface->release(b->backend, b->base);
        else
            free(b->base);
    }
    free(b);
}

const char *sdc_buffer_usage_name(sdc_buffer_usage u) {
    switch (u) {
    case SDC_BUFFER_WEIGHTS:
        return "weights";
    case SDC_BUFFER_SCRATCH:
        return "scratch";
    case SDC_BUFFER_HOST_MAPPED:
        return "host-mapped file";
    }
    return "?";
}

bool sdc_buffer_is_host(const sdc_buffer *b) {
    return !b || !b->backend || b->backend->iface->host_memory;
}

const char *sdc_buffer_device_name(const sdc_buffer *b) {
    return b && b->backend ? sdc_backend_name(b->backend) : "host";
}

sdc_status sdc_buffer_place(sdc_buffer *b, sdc_tensor *t, size_t offset) {
    size_t need = sdc_tensor_nbytes(t);
    if (offset > b->size || need > b->size - offset)
        return sdc_fail(SDC_ERR_INTERNAL,
                        "buffer: tensor '%s' (%zu bytes) at offset %zu does not fit in %s "
                        "buffer of %zu bytes",
                        t->name, need, offset, sdc_buffer_usage_name(b->usage), b->size);
    t->data = (char *)b->base + offset;
    t->buffer = b;
    return SDC_OK;
}

bool sdc_tensor_is_host(const sdc_tensor *t) {
    return sdc_buffer_is_host(t->buffer);
}

sdc_status sdc_tensor_read(const sdc_tensor *t, void *dst, size_t offset, size_t size) {
    return sdc_backend_tensor_get(t->buffer ? t->buffer->backend : NULL, t, dst, offset, size);
}

sdc_status sdc_tensor_map_read(const sdc_tensor *t, const void **ptr, void **tmp) {
    *ptr = NULL;
    *tmp = NULL;
    if (!t->data)
        return sdc_fail(SDC_ERR_INVALID_ARG, "tensor '%s' has no memory to read", t->name);
    if (sdc_tensor_is_host(t)) {
        *ptr = t->data;
        return SDC_OK;
    }
    size_t n = sdc_tensor_nbytes(t);
    void *copy = malloc(n ? n : 1);
    if (!copy) return sdc_fail(SDC_ERR_NO_MEMORY, "tensor '%s': out of memory", t->name);
    sdc_status s = sdc_tensor_read(t, copy, 0, n);
    if (s != SDC_OK) {
        free(copy);
        return s;
    }
    *ptr = *tmp = copy;
    return SDC_OK;
}

sdc_status sdc_tensor_copy(const sdc_tensor *src, sdc_tensor *dst) {
    size_t n = sdc_tensor_nbytes(src);
    if (sdc_tensor_nbytes(dst) != n)
        return sdc_fail(SDC_ERR_INVALID_ARG, "copy: '%s' has %zu bytes, '%s' %zu", src->name, n,
                        dst->name, sdc_tensor_nbytes(dst));
    sdc_backend *sb = src->buffer ? src->buffer->backend : NULL;
    sdc_backend *db = dst->buffer ? dst->buffer->backend : NULL;
    if (sdc_tensor_is_host(src)) return sdc_backend_tensor_set(db, dst, src->data, 0, n);
    if (sdc_tensor_is_host(dst)) return sdc_backend_tensor_get(sb, src, dst->data, 0, n);
    /* two devices: stage through the host */
    void *stage = malloc(n ? n : 1);
    if (!stage) return sdc_fail(SDC_ERR_NO_MEMORY, "copy '%s': out of memory", src->name);
    sdc_status s = sdc_backend_tensor_get(sb, src, stage, 0, n);
    if (s == SDC_OK) s = sdc_backend_tensor_set(db, dst, stage, 0, n);
    free(stage);
    return s;
}
