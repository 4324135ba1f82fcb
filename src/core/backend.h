/* The backend interface: what a device must offer to run graphs. CPU is the first
 * implementation; a second device (CUDA, another CPU NUMA node) is a new instance
 * of this interface, not a rewrite of the callers.
 *
 * Running a graph from a model: hand each input its host array with
 * sdc_backend_set_inputs (zero-copy where the device reads host memory, as the CPU does;
 * else planned in scratch and copied in), sdc_backend_compute, then read results with
 * sdc_backend_tensor_get or sdc_tensor_map_read. No model dereferences a graph tensor's
 * data itself. */
#ifndef SDC_CORE_BACKEND_H
#define SDC_CORE_BACKEND_H

#include "core/buffer.h"
#include "core/graph.h"

typedef struct sdc_backend sdc_backend;

typedef struct sdc_backend_iface {
    const char *(*name)(const sdc_backend *b);
    void (*free)(sdc_backend *b);
    /* device memory for weights or scratch */
    sdc_status (*alloc)(sdc_backend *b, size_t size, void **ptr);
    void (*release)(sdc_backend *b, void *ptr);
    /* true if the node's op and its source/destination types have a kernel; else false
     * with a reason in why (may be NULL) */
    bool (*supports_op)(const sdc_backend *b, const sdc_tensor *node, char *why, size_t why_size);
    /* plans (if not already allocated for this backend), allocates scratch and runs every
     * node in order */
    sdc_status (*compute)(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb, void *cb_user);
    void (*memory)(const sdc_backend *b, size_t *free_bytes, size_t *total_bytes);
    /* plans the graph and binds its inputs and intermediates into this backend's scratch
     * buffer, so inputs can be written before compute */
    sdc_status (*graph_alloc)(sdc_backend *b, sdc_graph *g);
    /* bytes [offset, offset+size) of t's data span (checked by the callers below) */
    sdc_status (*tensor_set)(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                             size_t size);
    sdc_status (*tensor_get)(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                             size_t size);
    /* Lets a not yet allocated graph input use host memory in place (true), when this device
     * computes on host memory; false: it must be copied after graph_alloc. NULL: never. */
    bool (*tensor_use_host)(sdc_backend *b, sdc_tensor *t, void *host, size_t size);
    /* whether memory from alloc is host memory (the host may dereference it) */
    bool host_memory;
    /* A backend made of others (a split): true when `other` is one of them, so reads and
     * writes of tensors in other's memory go through `other`. NULL: none. */
    bool (*contains)(const sdc_backend *b, const sdc_backend *other);
} sdc_backend_iface;

struct sdc_backend {
    const sdc_backend_iface *iface;
    void *impl;
};

static inline sdc_status sdc_backend_compute(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb,
                                             void *user) {
    return b->iface->compute(b, g, cb, user);
}
static inline void sdc_backend_free(sdc_backend *b) {
    if (b) b->iface->free(b);
}
static inline const char *sdc_backend_name(const sdc_backend *b) {
    return b ? b->iface->name(b) : "host";
}
/* Op and types of one node; why (may be NULL) gets the reason when false. */
bool sdc_backend_supports_op(const sdc_backend *b, const sdc_tensor *node, char *why,
                             size_t why_size);
/* Plans g and binds it into b's scratch (see graph_alloc); compute then reuses it as long
 * as no other graph was allocated on b in between. */
sdc_status sdc_backend_graph_alloc(sdc_backend *b, sdc_graph *g);

/* Writes/reads bytes [offset, offset+size) of t's data span (sdc_tensor_nbytes, its own
 * strides). t must have memory: a weight, an input given host memory, or a tensor of a graph
 * allocated on b. Host tensors (buffer NULL or host memory) are copied directly; a tensor of
 * another device's buffer is an error naming both. */
sdc_status sdc_backend_tensor_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                                  size_t size);
sdc_status sdc_backend_tensor_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                                  size_t size);

/* One graph input and the host array that fills it (size must be its byte size). The
 * array must stay valid and unchanged until compute returns: the CPU uses it in place. */
typedef struct sdc_input_data {
    sdc_tensor *t;
    const void *data;
    size_t size;
} sdc_input_data;
/* Gives every input its data: in place where the backend can (tensor_use_host), then
 * allocates g on b and copies the rest in with sdc_backend_tensor_set. */
sdc_status sdc_backend_set_inputs(sdc_backend *b, sdc_graph *g, const sdc_input_data *in, int n);

/* The CPU backend with n_threads workers (<= 0: all cores). */
sdc_backend *sdc_backend_cpu_create(int n_threads);
/* Scratch budget of a CPU backend standing for a budgeted device (--max-vram): a graph
 * whose planned scratch exceeds it fails with SDC_ERR_NO_MEMORY naming the device (0: none). */
void sdc_backend_cpu_set_budget(sdc_backend *b, const char *device, size_t bytes);
/* Last compute's planner figures (CPU). */
sdc_plan_stats sdc_backend_cpu_last_plan(const sdc_backend *b);

#endif
