/* The backend interface: what a device must offer to run graphs. CPU is the first
 * implementation; a second device (CUDA, another CPU NUMA node) is a new instance
 * of this interface, not a rewrite of the callers. */
#ifndef SDC_CORE_BACKEND_H
#define SDC_CORE_BACKEND_H

#include "core/graph.h"

typedef struct sdc_backend sdc_backend;

typedef struct sdc_backend_iface {
    const char *(*name)(const sdc_backend *b);
    void (*free)(sdc_backend *b);
    /* device memory for weights or scratch */
    sdc_status (*alloc)(sdc_backend *b, size_t size, void **ptr);
    void (*release)(sdc_backend *b, void *ptr);
    sdc_status (*copy_in)(sdc_backend *b, void *dst, const void *src, size_t size);
    sdc_status (*copy_out)(sdc_backend *b, void *dst, const void *src, size_t size);
    bool (*supports_op)(const sdc_backend *b, const sdc_tensor *node);
    /* plans (if needed), allocates scratch and runs every node in order */
    sdc_status (*compute)(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb, void *cb_user);
    void (*memory)(const sdc_backend *b, size_t *free_bytes, size_t *total_bytes);
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

/* The CPU backend with n_threads workers (<= 0: all cores). */
sdc_backend *sdc_backend_cpu_create(int n_threads);
/* Last compute's planner figures (CPU). */
sdc_plan_stats sdc_backend_cpu_last_plan(const sdc_backend *b);

#endif
