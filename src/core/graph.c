#include "core/graph.h"

#include "core/buffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Tensors live in fixed-size chunks so that pointers stay valid as the graph grows. */
#define CHUNK_TENSORS 256

typedef struct chunk {
    struct chunk *next;
    int used;
    sdc_tensor tensors[CHUNK_TENSORS];
} chunk;

struct sdc_graph {
    chunk *chunks;
    sdc_tensor **nodes;
    int n_nodes, cap_nodes;
    sdc_tensor **inputs; /* graph-owned leaves that need scratch memory */
    int n_inputs, cap_inputs;
    sdc_graph_binding binding;
    sdc_status status;
    char error[512];
    bool oom;
    int block; /* tag of the tensors being created, -1 outside blocks */
};

sdc_graph *sdc_graph_create(void) {
    sdc_graph *g = calloc(1, sizeof(sdc_graph));
    if (g) g->block = -1;
    return g;
}

void sdc_graph_set_block(sdc_graph *g, int block) {
    g->block = block < 0 ? -1 : block;
}
int sdc_graph_get_block(const sdc_graph *g) {
    return g->block;
}

void sdc_graph_free(sdc_graph *g) {
    if (!g) return;
    for (chunk *c = g->chunks, *n; c; c = n) {
        n = c->next;
        free(c);
    }
    free(g->nodes);
    free(g->inputs);
    free(g);
}

static sdc_tensor *new_tensor(sdc_graph *g) {
    if (!g->chunks || g->chunks->used == CHUNK_TENSORS) {
        chunk *c = calloc(1, sizeof(chunk));
        if (!c) {
            sdc_graph_set_error(g, "out of memory building the graph");
            g->status = SDC_ERR_NO_MEMORY;
            return NULL;
        }
        c->next = g->chunks;
        g->chunks = c;
    }
    sdc_tensor *t = &g->chunks->tensors[g->chunks->used++];
    t->graph = g;
    t->index = -1;
    t->plan_offset = -1;
    t->last_use = -1;
    t->block = g->block;
    return t;
}

static bool push(sdc_graph *g, sdc_tensor ***arr, int *n, int *cap, sdc_tensor *t) {
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 256;
        sdc_tensor **na = realloc(*arr, (size_t)nc * sizeof(*na));
        if (!na) {
            sdc_graph_set_error(g, "out of memory building the graph");
            g->status = SDC_ERR_NO_MEMORY;
            return false;
        }
        *arr = na;
        *cap = nc;
    }
    (*arr)[(*n)++] = t;
    return true;
}

static bool set_shape(sdc_graph *g, sdc_tensor *t, sdc_type type, int ndims, const int64_t *ne) {
    const sdc_type_traits *tr = sdc_type_get(type);
    if (!tr) {
        sdc_graph_set_error(g, "unknown tensor type %d", (int)type);
        return false;
    }
    if (ndims < 1 || ndims > SDC_MAX_DIMS) {
        sdc_graph_set_error(g, "bad number of dimensions %d", ndims);
        return false;
    }
    t->type = type;
    for (int i = 0; i < SDC_MAX_DIMS; i++) {
        t->ne[i] = i < ndims ? ne[i] : 1;
        if (t->ne[i] < 0) {
            sdc_graph_set_error(g, "negative dimension %lld", (long long)t->ne[i]);
            return false;
        }
    }
    if (t->ne[0] % tr->block_size) {
        sdc_graph_set_error(g, "row length %lld is not a multiple of %s's block size %lld",
                            (long long)t->ne[0], tr->name, (long long)tr->block_size);
        return false;
    }
    sdc_tensor_set_contiguous_strides(t);
    return true;
}

sdc_tensor *sdc_graph_input(sdc_graph *g, sdc_type type, int ndims, const int64_t *ne) {
    if (g->status != SDC_OK) return NULL;
    sdc_tensor *t = new_tensor(g);
    if (!t || !set_shape(g, t, type, ndims, ne)) return NULL;
    t->op = SDC_OP_NONE;
    t->flags = SDC_TENSOR_INPUT;
    if (!push(g, &g->inputs, &g->n_inputs, &g->cap_inputs, t)) return NULL;
    return t;
}

sdc_tensor *sdc_graph_node(sdc_graph *g, sdc_op op, sdc_type type, int ndims, const int64_t *ne) {
    if (g->status != SDC_OK) return NULL;
    sdc_tensor *t = new_tensor(g);
    if (!t || !set_shape(g, t, type, ndims, ne)) return NULL;
    t->op = op;
    t->index = g->n_nodes;
    if (!push(g, &g->nodes, &g->n_nodes, &g->cap_nodes, t)) return NULL;
    return t;
}

sdc_tensor *sdc_graph_view_node(sdc_graph *g, sdc_tensor *src, int ndims, const int64_t *ne,
                                const size_t *nb, size_t offset) {
    if (!src || g->status != SDC_OK) return NULL;
    sdc_tensor *t = sdc_graph_node(g, SDC_OP_VIEW, src->type, ndims, ne);
    if (!t) return NULL;
    for (int i = 0; i < SDC_MAX_DIMS; i++)
        if (i < ndims) t->nb[i] = nb[i];
    /* strides of trailing size-1 dims: keep them consistent for contiguity checks */
    for (int i = ndims; i < SDC_MAX_DIMS; i++) t->nb[i] = t->nb[i - 1] * (size_t)t->ne[i - 1];
    t->src[0] = src;
    t->view_src = src->view_src ? src->view_src : src;
    t->view_offset = offset + (src->view_src ? src->view_offset : 0);
    size_t need = sdc_tensor_nbytes(t);
    size_t have = sdc_tensor_nbytes(t->view_src);
    if (need && t->view_offset + need > have) {
        char a[64], b[64];
        return sdc_graph_set_error(g, "view %s at offset %zu exceeds its source %s (%zu bytes)",
                                   sdc_tensor_shape_str(t, a, sizeof a), t->view_offset,
                                   sdc_tensor_shape_str(t->view_src, b, sizeof b), have);
    }
    if (t->view_src->data) {
        t->data = (char *)t->view_src->data + t->view_offset;
        t->buffer = t->view_src->buffer;
    }
    return t;
}

int sdc_graph_n_nodes(const sdc_graph *g) {
    return g->n_nodes;
}
sdc_tensor *sdc_graph_get_node(const sdc_graph *g, int i) {
    return i >= 0 && i < g->n_nodes ? g->nodes[i] : NULL;
}
int sdc_graph_n_inputs(const sdc_graph *g) {
    return g->n_inputs;
}
sdc_tensor *sdc_graph_get_input(const sdc_graph *g, int i) {
    return i >= 0 && i < g->n_inputs ? g->inputs[i] : NULL;
}
sdc_graph_binding *sdc_graph_get_binding(sdc_graph *g) {
    return &g->binding;
}

sdc_status sdc_graph_status(const sdc_graph *g) {
    return g->status;
}
const char *sdc_graph_error(const sdc_graph *g) {
    return g->error;
}

sdc_tensor *sdc_graph_set_error(sdc_graph *g, const char *fmt, ...) {
    if (g->status == SDC_OK) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g->error, sizeof g->error, fmt, ap);
        va_end(ap);
        g->status = SDC_ERR_INVALID_ARG;
        sdc_fail(g->status, "%s", g->error);
    }
    return NULL;
}

void sdc_graph_mark_output(sdc_graph *g, sdc_tensor *t) {
    (void)g;
    if (!t) return;
    t->flags |= SDC_TENSOR_OUTPUT;
    if (t->view_src) t->view_src->flags |= SDC_TENSOR_OUTPUT;
}

/* ---- planner ---- */

typedef struct span {
    size_t off, size;
} span;

typedef struct free_list {
    span *s;
    int n, cap;
    size_t top; /* end of the highest block ever handed out */
} free_list;

static size_t align_up(size_t x, size_t a) {
    return (x + a - 1) / a * a;
}

/* Best fit among free spans; else grow at the top. */
static size_t fl_alloc(free_list *fl, size_t size) {
    int best = -1;
    for (int i = 0; i < fl->n; i++)
        if (fl->s[i].size >= size && (best < 0 || fl->s[i].size < fl->s[best].size)) best = i;
    if (best >= 0) {
        size_t off = fl->s[best].off;
        fl->s[best].off += size;
        fl->s[best].size -= size;
        if (fl->s[best].size == 0) fl->s[best] = fl->s[--fl->n];
        return off;
    }
    /* a free span touching the top can be extended */
    for (int i = 0; i < fl->n; i++) {
        if (fl->s[i].off + fl->s[i].size == fl->top) {
            size_t off = fl->s[i].off;
            fl->top = off + size;
            fl->s[i] = fl->s[--fl->n];
            return off;
        }
    }
    size_t off = fl->top;
    fl->top += size;
    return off;
}

static bool fl_free(free_list *fl, size_t off, size_t size) {
    /* merge with neighbours */
    for (int i = 0; i < fl->n; i++) {
        if (fl->s[i].off + fl->s[i].size == off) {
            off = fl->s[i].off;
            size += fl->s[i].size;
            fl->s[i--] = fl->s[--fl->n];
        } else if (off + size == fl->s[i].off) {
            size += fl->s[i].size;
            fl->s[i--] = fl->s[--fl->n];
        }
    }
    if (fl->n == fl->cap) {
        int nc = fl->cap ? fl->cap * 2 : 64;
        span *ns = realloc(fl->s, (size_t)nc * sizeof(span));
        if (!ns) return false;
        fl->s = ns;
        fl->cap = nc;
    }
    fl->s[fl->n++] = (span){off, size};
    return true;
}

/* Bytes a planned tensor occupies (never 0, so every node gets a distinct address). */
static size_t planned_size(const sdc_tensor *t, size_t alignment) {
    size_t sz = align_up(sdc_tensor_nbytes(t), alignment);
    return sz ? sz : alignment;
}

static bool needs_memory(const sdc_tensor *t) {
    return t->op != SDC_OP_VIEW && t->op != SDC_OP_NONE && !t->data;
}

sdc_status sdc_graph_plan(sdc_graph *g, size_t alignment, sdc_work_size_fn work_size, void *user,
                          sdc_plan_stats *stats) {
    if (g->status != SDC_OK) return sdc_fail(g->status, "graph: %s", g->error);
    if (alignment == 0) alignment = 64;
    sdc_plan_stats st = {0};
    int n = g->n_nodes;

    /* Lifetimes: a tensor (or the owner of a view) lives until the last node reading it. */
    for (int i = 0; i < g->n_inputs; i++) g->inputs[i]->last_use = -1;
    for (int i = 0; i < n; i++) g->nodes[i]->last_use = -1;
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = g->nodes[i];
        for (int s = 0; s < SDC_MAX_SRC; s++) {
            sdc_tensor *src = t->src[s];
            if (!src) continue;
            sdc_tensor *owner = src->view_src ? src->view_src : src;
            /* weights and other graphs' tensors are never planned nor written here */
            if (owner->graph == g && owner->last_use < i) owner->last_use = i;
        }
        /* a view keeps its owner alive as long as the view itself is used; handled by the
         * loop above via view_src when the view is read */
    }
    /* readers of views extend the owner's life to their own last use (views of views) */
    for (int i = n - 1; i >= 0; i--) {
        sdc_tensor *t = g->nodes[i];
        if (t->op == SDC_OP_VIEW && t->view_src && t->view_src->graph == g &&
            t->last_use > t->view_src->last_use)
            t->view_src->last_use = t->last_use;
    }

    /* SDC_PLAN_NO_REUSE=1 gives every tensor its own memory: a debugging aid that
     * tells planner bugs from kernel bugs */
    const char *no_reuse_env = getenv("SDC_PLAN_NO_REUSE");
    bool no_reuse = no_reuse_env && *no_reuse_env == '1';
    free_list fl = {0};
    /* inputs first: alive for the whole run (the caller fills them before compute) */
    for (int i = 0; i < g->n_inputs; i++) {
        sdc_tensor *t = g->inputs[i];
        if (t->data) continue;
        size_t sz = planned_size(t, alignment);
        t->plan_offset = (int64_t)fl_alloc(&fl, sz);
        st.naive_bytes += sz;
    }
    /* frees due at each node index */
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = g->nodes[i];
        if (work_size) {
            size_t w = work_size(t, user);
            if (w > st.work_bytes) st.work_bytes = w;
        }
        if (needs_memory(t)) {
            size_t sz = planned_size(t, alignment);
            t->plan_offset = (int64_t)fl_alloc(&fl, sz);
            st.naive_bytes += sz;
        }
        /* release sources whose last reader is this node (never outputs or inputs) */
        for (int s = 0; s < SDC_MAX_SRC && !no_reuse; s++) {
            sdc_tensor *src = t->src[s];
            if (!src) continue;
            sdc_tensor *owner = src->view_src ? src->view_src : src;
            if (owner->graph != g || owner->last_use != i || owner->index < 0 ||
                owner->plan_offset < 0)
                continue;
            if (owner->flags & (SDC_TENSOR_OUTPUT | SDC_TENSOR_INPUT)) continue;
            if (!fl_free(&fl, (size_t)owner->plan_offset, planned_size(owner, alignment))) {
                free(fl.s);
                return sdc_fail(SDC_ERR_NO_MEMORY, "planner: out of memory");
            }
            owner->last_use = -2; /* freed: do not free twice if read twice by this node */
        }
        /* a node nobody reads (and not an output) is dead right away */
        if (needs_memory(t) && t->last_use == -1 && !(t->flags & SDC_TENSOR_OUTPUT) && !no_reuse) {
            fl_free(&fl, (size_t)t->plan_offset, planned_size(t, alignment));
            t->last_use = -2;
        }
    }
    st.scratch_bytes = align_up(fl.top, alignment);
    free(fl.s);
    if (stats) *stats = st;
    return SDC_OK;
}

void sdc_graph_bind(sdc_graph *g, void *scratch) {
    for (int i = 0; i < g->n_inputs; i++) {
        sdc_tensor *t = g->inputs[i];
        if (t->plan_offset >= 0) t->data = (char *)scratch + t->plan_offset;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        sdc_tensor *t = g->nodes[i];
        if (t->op == SDC_OP_VIEW) {
            t->data = t->view_src->data ? (char *)t->view_src->data + t->view_offset : NULL;
        } else if (t->plan_offset >= 0) {
            t->data = (char *)scratch + t->plan_offset;
        }
    }
}

void sdc_graph_bind_buffer(sdc_graph *g, sdc_buffer *buf, size_t offset) {
    char *base = (char *)buf->base + offset;
    for (int i = 0; i < g->n_inputs; i++) {
        sdc_tensor *t = g->inputs[i];
        if (t->plan_offset >= 0) t->data = base + t->plan_offset, t->buffer = buf;
    }
    for (int i = 0; i < g->n_nodes; i++) {
        sdc_tensor *t = g->nodes[i];
        if (t->op == SDC_OP_VIEW) {
            t->data = t->view_src->data ? (char *)t->view_src->data + t->view_offset : NULL;
            t->buffer = t->view_src->buffer;
        } else if (t->plan_offset >= 0) {
            t->data = base + t->plan_offset;
            t->buffer = buf;
        }
    }
}
