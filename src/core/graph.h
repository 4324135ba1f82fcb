/* A compute graph: tensors created in an arena, op nodes kept in creation order
 * (which is a valid topological order). Nothing runs while building. */
#ifndef SDC_CORE_GRAPH_H
#define SDC_CORE_GRAPH_H

#include "core/status.h"
#include "core/tensor.h"

typedef struct sdc_graph sdc_graph;

sdc_graph *sdc_graph_create(void);
void sdc_graph_free(sdc_graph *g);

/* An input/leaf tensor owned by the graph. If `data` is NULL the planner gives it
 * scratch memory (flag SDC_TENSOR_INPUT: fill it after sdc_graph_plan/bind). */
sdc_tensor *sdc_graph_input(sdc_graph *g, sdc_type type, int ndims, const int64_t *ne);
static inline sdc_tensor *sdc_graph_input_1d(sdc_graph *g, sdc_type t, int64_t n0) {
    int64_t ne[1] = {n0};
    return sdc_graph_input(g, t, 1, ne);
}
/* A new op node (appended to the node list) with a contiguous layout. Used by builders. */
sdc_tensor *sdc_graph_node(sdc_graph *g, sdc_op op, sdc_type type, int ndims, const int64_t *ne);
/* A node that views `src` with its own shape/strides at a byte offset (no copy). */
sdc_tensor *sdc_graph_view_node(sdc_graph *g, sdc_tensor *src, int ndims, const int64_t *ne,
                                const size_t *nb, size_t offset);

/* Builders call this before building repeated block i (a transformer layer) and with -1
 * after the last: every tensor created in between is tagged with `block`, which tells a
 * layer split (placement/split.h) where the graph may be cut. */
void sdc_graph_set_block(sdc_graph *g, int block);
int sdc_graph_get_block(const sdc_graph *g);

int sdc_graph_n_nodes(const sdc_graph *g);
sdc_tensor *sdc_graph_get_node(const sdc_graph *g, int i);

/* Build errors: the first failing builder records its message; later builders given
 * a NULL source return NULL. Check once after building. */
sdc_status sdc_graph_status(const sdc_graph *g);
const char *sdc_graph_error(const sdc_graph *g);
sdc_tensor *sdc_graph_set_error(sdc_graph *g, const char *fmt, ...) SDC_PRINTF(2, 3);

/* Marks t as an output (kept alive to the end of compute, never overwritten). */
void sdc_graph_mark_output(sdc_graph *g, sdc_tensor *t);

/* Planner: computes each intermediate's lifetime and packs them into one scratch
 * buffer, reusing freed space. `work_size(node)` gives per-node temporary bytes,
 * which share one extra region sized by the largest. */
typedef size_t (*sdc_work_size_fn)(const sdc_tensor *node, void *user);
typedef struct sdc_plan_stats {
    size_t scratch_bytes; /* packed size (peak) of intermediates */
    size_t naive_bytes;   /* sum of all intermediates' sizes (no reuse) */
    size_t work_bytes;    /* largest per-node work buffer */
} sdc_plan_stats;
sdc_status sdc_graph_plan(sdc_graph *g, size_t alignment, sdc_work_size_fn work_size, void *user,
                          sdc_plan_stats *stats);
/* Points every planned tensor (and view) into `scratch` (of at least scratch_bytes). */
void sdc_graph_bind(sdc_graph *g, void *scratch);
/* The same into a buffer at byte `offset`, tagging each planned tensor (and views of them)
 * with that buffer. */
struct sdc_buffer;
void sdc_graph_bind_buffer(sdc_graph *g, struct sdc_buffer *buf, size_t offset);

/* Which backend allocated the graph's memory and when: a backend's compute reuses that
 * allocation (inputs already written) while `generation` is still its current one. */
typedef struct sdc_graph_binding {
    const void *owner; /* the backend, NULL: not allocated */
    unsigned long generation;
    size_t work_offset; /* per-node work area in the owner's scratch */
    size_t work_bytes;
} sdc_graph_binding;
sdc_graph_binding *sdc_graph_get_binding(sdc_graph *g);
/* Graph-owned inputs (SDC_TENSOR_INPUT leaves) in creation order. */
int sdc_graph_n_inputs(const sdc_graph *g);
sdc_tensor *sdc_graph_get_input(const sdc_graph *g, int i);

/* Eval callback: called with ask=true before a node; if it returns true it is called
 * again with ask=false after the node is computed (data valid). Returning false from
 * the observe call stops the computation (SDC_ERR_CANCELLED). */
typedef bool (*sdc_eval_fn)(sdc_tensor *t, bool ask, void *user);

#endif
