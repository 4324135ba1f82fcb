/* Buffers: the memory tensors live in. A buffer says which device holds it (the backend
 * that owns it, NULL for host memory), where it starts, how big it is and what it holds.
 * A tensor's `buffer` tells code that reads or writes its data whether a plain pointer
 * dereference is allowed (host memory) or the owning backend must copy (a device).
 * A tensor whose buffer is NULL lies in host memory outside any buffer: a caller's array
 * handed to a graph input, or a hand-made tensor in a test. */
#ifndef SDC_CORE_BUFFER_H
#define SDC_CORE_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

struct sdc_backend;
struct sdc_tensor;

typedef enum sdc_buffer_usage {
    SDC_BUFFER_WEIGHTS = 0, /* weights: loader copies, converted weights, model-made copies */
    SDC_BUFFER_SCRATCH,     /* a backend's planned graph inputs and intermediates */
    SDC_BUFFER_HOST_MAPPED, /* a weight file's image: a read-only mapping or caller memory */
} sdc_buffer_usage;

typedef struct sdc_buffer {
    struct sdc_backend *backend; /* the owner; NULL: host memory */
    void *base;
    size_t size;
    sdc_buffer_usage usage;
    bool owns_base; /* base is released with the buffer (by its backend, or free()) */
} sdc_buffer;

/* Alignment of host buffers from sdc_buffer_alloc(NULL, ...). */
#define SDC_HOST_BUFFER_ALIGN 64

/* `size` bytes from backend `be` (its alloc entry) or, for be == NULL, aligned host memory.
 * size 0 still gives a valid base. */
sdc_status sdc_buffer_alloc(struct sdc_backend *be, size_t size, sdc_buffer_usage usage,
                            sdc_buffer **out);
/* A buffer describing memory owned elsewhere (a file mapping): freeing it leaves base alone. */
sdc_status sdc_buffer_wrap(struct sdc_backend *be, void *base, size_t size, sdc_buffer_usage usage,
                           sdc_buffer **out);
void sdc_buffer_free(sdc_buffer *b);
const char *sdc_buffer_usage_name(sdc_buffer_usage u);
/* True when the host may dereference the buffer's memory (host memory, or a backend whose
 * memory is host memory, like the CPU's). NULL counts as host. */
bool sdc_buffer_is_host(const sdc_buffer *b);
/* "cpu", "host" for messages. */
const char *sdc_buffer_device_name(const sdc_buffer *b);
/* Puts t at `offset` in b (t->data, t->buffer); an error if t's bytes do not fit. */
sdc_status sdc_buffer_place(sdc_buffer *b, struct sdc_tensor *t, size_t offset);

/* ---- reading tensors wherever they live ---- */

/* True when t's data may be dereferenced on the host (see sdc_buffer_is_host). */
bool sdc_tensor_is_host(const struct sdc_tensor *t);
/* Host-readable bytes of t's data span (sdc_tensor_nbytes, t's own strides): t->data itself
 * when it is host memory (no copy), else a copy read through the owning backend into *tmp,
 * which the caller frees (free(NULL) when nothing was copied). */
sdc_status sdc_tensor_map_read(const struct sdc_tensor *t, const void **ptr, void **tmp);
/* Copies size bytes at offset of t's data span to dst through t's owning backend. */
sdc_status sdc_tensor_read(const struct sdc_tensor *t, void *dst, size_t offset, size_t size);
/* Copies all of src's data span into dst's (same byte size): through src's backend, dst's
 * backend, or a host staging copy between two devices. */
sdc_status sdc_tensor_copy(const struct sdc_tensor *src, struct sdc_tensor *dst);

#endif
