/* Backend-independent halves of the backend interface: argument and bounds checks, host
 * tensors, and filling a graph's inputs. */
#include "core/backend.h"

#include <stdint.h>
#include <string.h>

bool sdc_backend_supports_op(const sdc_backend *b, const sdc_tensor *node, char *why,
                             size_t why_size) {
    if (why && why_size) why[0] = 0;
    return b->iface->supports_op(b, node, why, why_size);
}

sdc_status sdc_backend_graph_alloc(sdc_backend *b, sdc_graph *g) {
    if (!b->iface->graph_alloc)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: cannot allocate graphs", sdc_backend_name(b));
    return b->iface->graph_alloc(b, g);
}

/* Checks a set/get of t's bytes [offset, offset+size) from backend b. *host: the bytes are
 * host memory (copied here); else they lie in b's own buffer (b copies). A tensor in
 * another device's buffer is an error. */
static sdc_status check_io(sdc_backend *b, const sdc_tensor *t, size_t offset, size_t size,
                           const char *what, bool *host, sdc_backend **via) {
    *via = b;
    if (!t) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: no tensor", what);
    size_t n = sdc_tensor_nbytes(t);
    if (offset > n || size > n - offset) {
        char shape[64];
        return sdc_fail(
            SDC_ERR_INVALID_ARG, "%s: bytes [%zu, %zu) are outside tensor '%s' %s of %zu bytes",
            what, offset, offset + size, t->name, sdc_tensor_shape_str(t, shape, sizeof shape), n);
    }
    if (!t->data)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "%s: tensor '%s' has no memory yet (allocate its graph first)", what,
                        t->name);
    const sdc_backend *owner = t->buffer ? t->buffer->backend : NULL;
    *host = !owner || (owner != b && sdc_buffer_is_host(t->buffer));
    if (!*host && owner != b && b->iface->contains && b->iface->contains(b, owner)) {
        *via = (sdc_backend *)owner; /* a part of b (a split's device) */
        return SDC_OK;
    }
    if (!*host && owner != b)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: tensor '%s' lives in %s's %s buffer, not %s's",
                        what, t->name, sdc_backend_name(owner),
                        sdc_buffer_usage_name(t->buffer->usage), sdc_backend_name(b));
    return SDC_OK;
}

sdc_status sdc_backend_tensor_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                                  size_t size) {
    bool host;
    sdc_backend *via;
    sdc_status s = check_io(b, t, offset, size, "tensor_set", &host, &via);
    if (s != SDC_OK) return s;
    if (t->buffer && t->buffer->usage == SDC_BUFFER_HOST_MAPPED)
        return sdc_fail(SDC_ERR_INVALID_ARG, "tensor_set: tensor '%s' is a read-only file mapping",
                        t->name);
    if (!size) return SDC_OK;
    if (host) {
        memcpy((char *)t->data + offset, src, size);
        return SDC_OK;
    }
    return via->iface->tensor_set(via, t, src, offset, size);
}

sdc_status sdc_backend_tensor_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                                  size_t size) {
    bool host;
    sdc_backend *via;
    sdc_status s = check_io(b, t, offset, size, "tensor_get", &host, &via);
    if (s != SDC_OK) return s;
    if (!size) return SDC_OK;
    if (host) {
        memcpy(dst, (const char *)t->data + offset, size);
        return SDC_OK;
    }
    return via->iface->tensor_get(via, t, dst, offset, size);
}

sdc_status sdc_backend_set_inputs(sdc_backend *b, sdc_graph *g, const sdc_input_data *in, int n) {
    enum { MAX_INPUTS = 64 };
    bool placed[MAX_INPUTS] = {0};
    if (n < 0 || n > MAX_INPUTS)
        return sdc_fail(SDC_ERR_INVALID_ARG, "set_inputs: %d inputs (at most %d)", n, MAX_INPUTS);
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) return sdc_fail(s, "set_inputs: graph: %s", sdc_graph_error(g));
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = in[i].t;
        if (!t || t->graph != g || t->op != SDC_OP_NONE || !(t->flags & SDC_TENSOR_INPUT))
            return sdc_fail(SDC_ERR_INVALID_ARG,
                            "set_inputs: entry %d is not an input of this graph", i);
        if (in[i].size != sdc_tensor_nbytes(t))
            return sdc_fail(SDC_ERR_INVALID_ARG, "set_inputs: input '%s' has %zu bytes, given %zu",
                            t->name, sdc_tensor_nbytes(t), in[i].size);
        /* zero-copy: the kernels only read inputs */
        if (!t->data && b->iface->tensor_use_host)
            placed[i] = b->iface->tensor_use_host(b, t, (void *)(uintptr_t)in[i].data, in[i].size);
    }
    bool all = true;
    for (int i = 0; i < n; i++) all = all && placed[i];
    if ((s = sdc_backend_graph_alloc(b, g)) != SDC_OK) return s;
    for (int i = 0; i < n && !all; i++)
        if (!placed[i] && (s = sdc_backend_tensor_set(b, in[i].t, in[i].data, 0, in[i].size)))
            return s;
    return SDC_OK;
}
