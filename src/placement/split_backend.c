/* The split backend: the backend interface over several devices' backends, so that a
 * module's graph runs across them without the model knowing.
 *
 * Per compute: the blocks' weight bytes (the weights their nodes read) and the devices'
 * budgets give the ranges (sdc_split_partition). Each node goes to the device of its block;
 * nodes outside blocks before the first or after the last block run on the main device,
 * those between blocks stay with the block before them. The node list is cut where the
 * device changes, and each segment is cloned into a graph of its own: a tensor it reads
 * from another segment becomes an input of that graph whose memory is a "transit" slot on
 * the segment's device, filled right after the producing segment ran (or before the first
 * one, for the caller's inputs). The producer marks it as an output, so its planner never
 * reuses that memory while the segment runs; the slot outlives the producer's scratch,
 * which the next segment on the same device re-plans. Weights are read where they are. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/ops.h"
#include "core/log.h"
#include "cpu/cpu_ops.h"
#include "placement/devices.h"
#include "placement/split.h"

#define ALIGN 64

typedef struct split_dev {
    sdc_backend *be;
    const sdc_device *dev;
    sdc_buffer *transit; /* imported tensors' slots, grown as needed */
} split_dev;

typedef struct split_impl {
    char label[32];
    int n;
    split_dev d[SDC_MAX_SPLIT];
    sdc_buffer *inputs; /* the caller's graph inputs that got no host array */
    sdc_split_mode mode;
    sdc_split_stats stats;
    char desc[512];
} split_impl;

/* A copy done around a segment: `from` (a producer's clone or a caller input) into
 * `to_off` of device `dev`'s transit buffer, after segment `after` (-1: before the first). */
typedef struct copy_job {
    int after, dev;
    const sdc_tensor *from;
    size_t off, size;
    bool cross; /* between two devices (else a stash on the same device) */
} copy_job;

typedef struct import_ref {
    sdc_tensor *t;
    int dev;
    size_t off;
} import_ref;

/* The state of one split compute. */
typedef struct split_run {
    split_impl *S;
    sdc_graph *g;
    int n, nin;
    int *node_seg; /* segment of each node */
    int n_seg;
    int *seg_dev;        /* device of each segment */
    const int *node_dev; /* row split: the device of each node (else from the blocks) */
    sdc_graph **sg;      /* each segment's graph */
    sdc_tensor **clone;  /* node index -> its clone in its segment */
    sdc_tensor ***imp;   /* [segment][id] -> import (or view over one) in that segment */
    int64_t *slot;       /* [dev][id] -> offset in the device's transit buffer, -1 none */
    size_t transit_size[SDC_MAX_SPLIT];
    copy_job *jobs;
    int n_jobs, cap_jobs;
    import_ref *refs;
    int n_refs, cap_refs;
    sdc_status status;
} split_run;

static const char *split_name(const sdc_backend *b) {
    return ((const split_impl *)b->impl)->label;
}

static void split_free(sdc_backend *b) {
    split_impl *S = b->impl;
    for (int i = 0; i < S->n; i++) sdc_buffer_free(S->d[i].transit);
    sdc_buffer_free(S->inputs);
    free(S);
    free(b);
}

/* memory of the split itself (its input buffer) comes from the main device */
static sdc_status split_alloc(sdc_backend *b, size_t size, void **ptr) {
    sdc_backend *m = ((split_impl *)b->impl)->d[0].be;
    return m->iface->alloc(m, size, ptr);
}
static void split_release(sdc_backend *b, void *ptr) {
    sdc_backend *m = ((split_impl *)b->impl)->d[0].be;
    m->iface->release(m, ptr);
}

static bool split_supports(const sdc_backend *b, const sdc_tensor *node, char *why,
                           size_t why_size) {
    const split_impl *S = b->impl;
    for (int i = 0; i < S->n; i++)
        if (!sdc_backend_supports_op(S->d[i].be, node, why, why_size)) return false;
    return true;
}

static void split_memory(const sdc_backend *b, size_t *free_bytes, size_t *total_bytes) {
    const split_impl *S = b->impl;
    size_t f = 0, t = 0;
    for (int i = 0; i < S->n; i++) {
        size_t fi = 0, ti = 0;
        S->d[i].be->iface->memory(S->d[i].be, &fi, &ti);
        f += fi, t += ti;
    }
    if (free_bytes) *free_bytes = f;
    if (total_bytes) *total_bytes = t;
}

static size_t align_up(size_t x) {
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

/* Inputs without memory get it in the split's own buffer (host memory of the main device):
 * the segments' scratch is re-planned, the caller's inputs must survive that. */
static sdc_status split_graph_alloc(sdc_backend *b, sdc_graph *g) {
    split_impl *S = b->impl;
    size_t need = 0;
    for (int i = 0; i < sdc_graph_n_inputs(g); i++) {
        sdc_tensor *t = sdc_graph_get_input(g, i);
        if (!t->data) need += align_up(sdc_tensor_nbytes(t) ? sdc_tensor_nbytes(t) : 1);
    }
    if (!need) return SDC_OK;
    if (!S->inputs || S->inputs->size < need) {
        sdc_buffer_free(S->inputs);
        S->inputs = NULL;
        sdc_status s = sdc_buffer_alloc(b, need, SDC_BUFFER_SCRATCH, &S->inputs);
        if (s != SDC_OK) return s;
    }
    size_t off = 0;
    for (int i = 0; i < sdc_graph_n_inputs(g); i++) {
        sdc_tensor *t = sdc_graph_get_input(g, i);
        if (t->data) continue;
        sdc_status s = sdc_buffer_place(S->inputs, t, off);
        if (s != SDC_OK) return s;
        off += align_up(sdc_tensor_nbytes(t) ? sdc_tensor_nbytes(t) : 1);
    }
    return SDC_OK;
}

/* The split's own buffers (its inputs) come from the main device's alloc: its entries move
 * their bytes; memory of another device goes through that device. */
static sdc_backend *io_backend(sdc_backend *b, const sdc_tensor *t) {
    const sdc_backend *o = t->buffer ? t->buffer->backend : NULL;
    return o && o != b ? (sdc_backend *)o : ((split_impl *)b->impl)->d[0].be;
}
static sdc_status split_tensor_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                                   size_t size) {
    sdc_backend *m = io_backend(b, t);
    if (m->iface->host_memory) {
        memcpy((char *)t->data + offset, src, size);
        return SDC_OK;
    }
    return m->iface->tensor_set(m, t, src, offset, size);
}
static sdc_status split_tensor_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                                   size_t size) {
    sdc_backend *m = io_backend(b, t);
    if (m->iface->host_memory) {
        memcpy(dst, (const char *)t->data + offset, size);
        return SDC_OK;
    }
    return m->iface->tensor_get(m, t, dst, offset, size);
}
static bool split_contains(const sdc_backend *b, const sdc_backend *other) {
    const split_impl *S = b->impl;
    for (int i = 0; i < S->n; i++)
        if (S->d[i].be == other) return true;
    return false;
}
static bool split_use_host(sdc_backend *b, sdc_tensor *t, void *host, size_t size) {
    sdc_backend *m = ((split_impl *)b->impl)->d[0].be;
    return m->iface->tensor_use_host && m->iface->tensor_use_host(m, t, host, size);
}

/* ---- partition ---- */

typedef struct wref {
    const sdc_tensor *w;
    int block;
} wref;

static int cmp_wref(const void *a, const void *b) {
    const wref *x = a, *y = b;
    if (x->w != y->w) return x->w < y->w ? -1 : 1;
    return (x->block > y->block) - (x->block < y->block);
}

/* Weight bytes read by each block's nodes (a weight read by several counts once, in the
 * first block that reads it) and by the nodes outside blocks. */
static sdc_status block_weights(sdc_graph *g, int n_blocks, uint64_t *bytes, uint64_t *main) {
    int n = sdc_graph_n_nodes(g), nr = 0;
    wref *r = malloc(((size_t)n * SDC_MAX_SRC + 1) * sizeof *r);
    if (!r) return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    for (int i = 0; i < n; i++) {
        const sdc_tensor *t = sdc_graph_get_node(g, i);
        for (int s = 0; s < SDC_MAX_SRC; s++) {
            const sdc_tensor *w = t->src[s];
            if (w && w->graph != g && w->op == SDC_OP_NONE)
                r[nr++] = (wref){w, t->block < 0 ? n_blocks : t->block}; /* n_blocks: none */
        }
    }
    qsort(r, (size_t)nr, sizeof *r, cmp_wref);
    memset(bytes, 0, (size_t)n_blocks * sizeof *bytes);
    *main = 0;
    for (int i = 0; i < nr; i++) {
        if (i && r[i].w == r[i - 1].w) continue;
        uint64_t sz = sdc_tensor_nbytes(r[i].w);
        if (r[i].block < n_blocks)
            bytes[r[i].block] += sz;
        else
            *main += sz;
    }
    free(r);
    return SDC_OK;
}

/* The CPU kernels' per-node work bytes at the device's thread count (every child computes
 * on host memory: the CPU backend). */
static size_t work_of(const sdc_tensor *t, void *user) {
    sdc_cpu_work_fn f = sdc_cpu_work_for(t->op);
    return f ? f(t, *(const int *)user) : 0;
}

/* What the CPU backend allocates for a planned graph (cpu_graph_alloc's layout). */
static uint64_t plan_peak(const sdc_plan_stats *ps) {
    return align_up(ps->scratch_bytes) + ps->work_bytes;
}

/* The first guess of each device's compute headroom: g's peak planned on one device, an
 * upper bound of what one segment needs beside its imported tensors. */
static sdc_status base_headroom(split_impl *S, sdc_graph *g, uint64_t *head) {
    for (int d = 0; d < S->n; d++) {
        int nth = S->d[d].dev->n_threads > 0 ? S->d[d].dev->n_threads : 1;
        sdc_plan_stats ps = {0};
        sdc_status s = sdc_graph_plan(g, ALIGN, work_of, &nth, &ps);
        if (s != SDC_OK) return s;
        head[d] = plan_peak(&ps);
    }
    return SDC_OK;
}

/* Partition of g's blocks with headroom head[]; dev_of_block[b] set. *n_blocks 0: none. */
static sdc_status partition(split_impl *S, sdc_graph *g, const uint64_t *head, int **dev_of_block,
                            int *n_blocks) {
    int n = sdc_graph_n_nodes(g), nb = 0;
    for (int i = 0; i < n; i++)
        if (sdc_graph_get_node(g, i)->block + 1 > nb) nb = sdc_graph_get_node(g, i)->block + 1;
    *n_blocks = nb;
    *dev_of_block = NULL;
    if (!nb) return SDC_OK;
    uint64_t *bytes = calloc((size_t)nb, sizeof *bytes), main_bytes = 0;
    int *dob = calloc((size_t)nb, sizeof *dob);
    if (!bytes || !dob) {
        free(bytes), free(dob);
        return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    }
    sdc_status s = block_weights(g, nb, bytes, &main_bytes);
    uint64_t budget[SDC_MAX_SPLIT];
    for (int d = 0; d < S->n; d++)
        budget[d] =
            S->d[d].dev->budget_bytes ? S->d[d].dev->budget_bytes : S->d[d].dev->total_bytes;
    int first[SDC_MAX_SPLIT + 1];
    if (s == SDC_OK) s = sdc_split_partition(bytes, nb, main_bytes, budget, head, S->n, first);
    if (s == SDC_OK) {
        S->stats.n_devices = S->n;
        for (int d = 0; d < S->n; d++) {
            sdc_split_device_stats *ds = &S->stats.dev[d];
            *ds = (sdc_split_device_stats){.first_block = first[d],
                                           .n_blocks = first[d + 1] - first[d],
                                           .budget = budget[d],
                                           .headroom = head[d],
                                           .weights = d ? 0 : main_bytes};
            for (int b = first[d]; b < first[d + 1]; b++) {
                dob[b] = d;
                ds->weights += bytes[b];
            }
        }
        *dev_of_block = dob;
    } else {
        free(dob);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", sdc_last_error());
        s = sdc_fail(s, "%s: %s", S->label, msg);
    }
    free(bytes);
    return s;
}

/* ---- cloning the segments ---- */

static int input_id(const split_run *R, const sdc_tensor *t) {
    for (int i = 0; i < R->nin; i++)
        if (sdc_graph_get_input(R->g, i) == t) return R->n + i;
    return -1;
}

static int id_of(const split_run *R, const sdc_tensor *t) {
    return t->index >= 0 ? t->index : input_id(R, t);
}

static bool push_job(split_run *R, copy_job j) {
    if (R->n_jobs == R->cap_jobs) {
        int nc = R->cap_jobs ? 2 * R->cap_jobs : 64;
        copy_job *nj = realloc(R->jobs, (size_t)nc * sizeof *nj);
        if (!nj) return false;
        R->jobs = nj, R->cap_jobs = nc;
    }
    R->jobs[R->n_jobs++] = j;
    return true;
}

static bool push_ref(split_run *R, import_ref r) {
    if (R->n_refs == R->cap_refs) {
        int nc = R->cap_refs ? 2 * R->cap_refs : 64;
        import_ref *nr = realloc(R->refs, (size_t)nc * sizeof *nr);
        if (!nr) return false;
        R->refs = nr, R->cap_refs = nc;
    }
    R->refs[R->n_refs++] = r;
    return true;
}

static sdc_tensor *fail_run(split_run *R, sdc_status s, const char *what) {
    if (R->status == SDC_OK) R->status = sdc_fail(s, "split: %s", what);
    return NULL;
}

/* A leaf in segment graph sg with X's type, shape and strides. */
static sdc_tensor *leaf_like(sdc_graph *sg, const sdc_tensor *X) {
    sdc_tensor *t = sdc_graph_input(sg, X->type, SDC_MAX_DIMS, X->ne);
    if (!t) return NULL;
    memcpy(t->nb, X->nb, sizeof t->nb);
    snprintf(t->name, sizeof t->name, "%s", X->name);
    return t;
}

/* A slot for X (id) on device dev, filled after segment `after` from `from`. */
static bool import_into(split_run *R, sdc_tensor *leaf, int id, int dev, int after,
                        const sdc_tensor *from, bool cross) {
    int64_t *slot = &R->slot[(size_t)dev * (R->n + R->nin) + id];
    if (*slot < 0) {
        size_t size = sdc_tensor_nbytes(from);
        *slot = (int64_t)R->transit_size[dev];
        R->transit_size[dev] += align_up(size ? size : 1);
        if (!push_job(R, (copy_job){after, dev, from, (size_t)*slot, size, cross})) return false;
    }
    return push_ref(R, (import_ref){leaf, dev, (size_t)*slot});
}

/* X as segment s sees it: a weight as is, a node of s as its clone, anything else of g as
 * an import (a view: a view over its owner's import). */
static sdc_tensor *map(split_run *R, int s, sdc_tensor *X) {
    if (!X || X->graph != R->g || R->status != SDC_OK) return X;
    if (X->index >= 0 && R->node_seg[X->index] == s) return R->clone[X->index];
    int id = id_of(R, X);
    if (id < 0) return fail_run(R, SDC_ERR_INTERNAL, "a tensor of the graph is not in it");
    sdc_tensor **imp = &R->imp[s][id];
    if (*imp) return *imp;
    sdc_graph *sg = R->sg[s];
    int dev = R->seg_dev[s];
    if (X->op == SDC_OP_VIEW) {
        sdc_tensor *src = map(R, s, X->src[0]);
        if (!src) return NULL;
        size_t base = X->src[0]->view_src ? X->src[0]->view_offset : 0;
        *imp = sdc_graph_view_node(sg, src, SDC_MAX_DIMS, X->ne, X->nb, X->view_offset - base);
        if (*imp) snprintf((*imp)->name, sizeof(*imp)->name, "%s", X->name);
        return *imp;
    }
    sdc_tensor *leaf = leaf_like(sg, X);
    if (!leaf) return fail_run(R, SDC_ERR_NO_MEMORY, sdc_graph_error(sg));
    if (X->index < 0 && dev == 0) { /* a caller input read on the main device: in place */
        leaf->data = X->data;
        leaf->buffer = X->buffer;
    } else {
        int p = X->index < 0 ? -1 : R->node_seg[X->index];
        const sdc_tensor *from = p < 0 ? X : R->clone[X->index];
        if (p >= 0) sdc_graph_mark_output(R->sg[p], R->clone[X->index]);
        bool cross = p < 0 ? dev != 0 : R->seg_dev[p] != dev;
        if (!import_into(R, leaf, id, dev, p, from, cross))
            return fail_run(R, SDC_ERR_NO_MEMORY, "out of memory");
    }
    return *imp = leaf;
}

static sdc_tensor *clone_node(split_run *R, int s, sdc_tensor *X) {
    sdc_graph *sg = R->sg[s];
    sdc_tensor *t;
    if (X->op == SDC_OP_VIEW) {
        sdc_tensor *src = map(R, s, X->src[0]);
        if (!src) return NULL;
        size_t base = X->src[0]->view_src ? X->src[0]->view_offset : 0;
        t = sdc_graph_view_node(sg, src, SDC_MAX_DIMS, X->ne, X->nb, X->view_offset - base);
    } else {
        t = sdc_graph_node(sg, X->op, X->type, SDC_MAX_DIMS, X->ne);
        if (t) {
            memcpy(t->nb, X->nb, sizeof t->nb);
            t->params = X->params;
            for (int k = 0; k < SDC_MAX_SRC; k++)
                if (X->src[k] && !(t->src[k] = map(R, s, X->src[k]))) return NULL;
        }
    }
    if (!t) return fail_run(R, SDC_ERR_INVALID_ARG, sdc_graph_error(sg));
    snprintf(t->name, sizeof t->name, "%s", X->name);
    t->block = X->block;
    if (X->flags & SDC_TENSOR_OUTPUT) sdc_graph_mark_output(sg, t);
    return t;
}

/* ---- running ---- */

/* Device of each node, then segments where it changes. */
static sdc_status cut(split_run *R, const int *dev_of_block) {
    int n = R->n, first_b = -1, last_b = -1;
    for (int i = 0; i < n; i++)
        if (sdc_graph_get_node(R->g, i)->block >= 0) {
            if (first_b < 0) first_b = i;
            last_b = i;
        }
    size_t cnt = n > 0 ? (size_t)n : 1;
    R->node_seg = malloc(cnt * sizeof(int));
    R->seg_dev = malloc(cnt * sizeof(int));
    if (!R->node_seg || !R->seg_dev) return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    int prev = 0;
    R->n_seg = 0;
    for (int i = 0; i < n; i++) {
        int b = sdc_graph_get_node(R->g, i)->block, d;
        if (R->node_dev)
            d = R->node_dev[i];
        else if (b >= 0)
            d = dev_of_block[b];
        else /* outside blocks: the main device, or stay with the block before */
            d = i > first_b && i < last_b ? prev : 0;
        if (!R->n_seg || R->seg_dev[R->n_seg - 1] != d) R->seg_dev[R->n_seg++] = d;
        R->node_seg[i] = R->n_seg - 1;
        prev = d;
    }
    return SDC_OK;
}

/* Whether output node i must leave its producer's scratch: its device runs again later. */
static bool output_moves(const split_run *R, int i) {
    int p = R->node_seg[i];
    for (int s = p + 1; s < R->n_seg; s++)
        if (R->seg_dev[s] == R->seg_dev[p]) return true;
    return false;
}

static sdc_status build_segments(split_run *R) {
    size_t ids = (size_t)R->n + R->nin;
    R->sg = calloc((size_t)R->n_seg, sizeof *R->sg);
    R->imp = calloc((size_t)R->n_seg, sizeof *R->imp);
    R->clone = calloc((size_t)(R->n ? R->n : 1), sizeof *R->clone);
    R->slot = malloc((size_t)R->S->n * ids * sizeof *R->slot);
    if (!R->sg || !R->imp || !R->clone || !R->slot)
        return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    for (size_t i = 0; i < (size_t)R->S->n * ids; i++) R->slot[i] = -1;
    for (int s = 0; s < R->n_seg; s++)
        if (!(R->sg[s] = sdc_graph_create()) || !(R->imp[s] = calloc(ids, sizeof **R->imp)))
            return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    for (int i = 0; i < R->n && R->status == SDC_OK; i++)
        R->clone[i] = clone_node(R, R->node_seg[i], sdc_graph_get_node(R->g, i));
    if (R->status != SDC_OK) return R->status;
    /* the caller's outputs: read where they were made when nothing runs on that device
     * after them, else kept in a slot on the main device */
    for (int i = 0; i < R->n; i++) {
        sdc_tensor *X = sdc_graph_get_node(R->g, i);
        if (!(X->flags & SDC_TENSOR_OUTPUT) || X->op == SDC_OP_VIEW) continue;
        int p = R->node_seg[i];
        if (!output_moves(R, i)) continue;
        if (!import_into(R, X, i, 0, p, R->clone[i], R->seg_dev[p] != 0))
            return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    }
    /* transit buffers, then every import points into its slot */
    for (int d = 0; d < R->S->n; d++) {
        split_dev *sd = &R->S->d[d];
        if (R->transit_size[d] && (!sd->transit || sd->transit->size < R->transit_size[d])) {
            sdc_buffer_free(sd->transit);
            sd->transit = NULL;
            sdc_status s =
                sdc_buffer_alloc(sd->be, R->transit_size[d], SDC_BUFFER_SCRATCH, &sd->transit);
            if (s != SDC_OK) return s;
        }
    }
    for (int i = 0; i < R->n_refs; i++) {
        import_ref *r = &R->refs[i];
        r->t->data = (char *)R->S->d[r->dev].transit->base + r->off;
        r->t->buffer = R->S->d[r->dev].transit;
    }
    return SDC_OK;
}

/* The copies due after segment `after`; the destination is the slot's first import. */
static sdc_status run_copies(split_run *R, int after, double *secs) {
    double t0 = sdc_now_seconds();
    for (int i = 0; i < R->n_jobs; i++) {
        copy_job *j = &R->jobs[i];
        if (j->after != after) continue;
        sdc_tensor dst = *j->from;
        dst.data = (char *)R->S->d[j->dev].transit->base + j->off;
        dst.buffer = R->S->d[j->dev].transit;
        dst.view_src = NULL;
        sdc_status s = sdc_tensor_copy(j->from, &dst);
        if (s != SDC_OK) return s;
        R->S->stats.bytes_copied += j->size;
    }
    *secs += sdc_now_seconds() - t0;
    return SDC_OK;
}

static void describe(split_run *R, char *buf, size_t size) {
    split_impl *S = R->S;
    size_t n = (size_t)snprintf(buf, size, "%s: ", S->label);
    if (S->mode == SDC_SPLIT_ROW) {
        n += (size_t)snprintf(buf + n, size - n, "%d matmuls split by rows,",
                              S->stats.n_row_matmuls);
        for (int d = 0; d < S->n && n < size; d++)
            n += (size_t)snprintf(buf + n, size - n, " %.0f%% on %s",
                                  S->stats.dev[d].row_share * 100, S->d[d].dev->name);
    }
    for (int d = 0; d < S->n && n < size && S->mode != SDC_SPLIT_ROW; d++) {
        const sdc_split_device_stats *ds = &S->stats.dev[d];
        const char *sep = d ? ", " : "";
        if (!ds->n_blocks)
            n += (size_t)snprintf(buf + n, size - n, "%sno blocks on %s", sep, S->d[d].dev->name);
        else if (ds->n_blocks == 1)
            n += (size_t)snprintf(buf + n, size - n, "%sblock %d on %s", sep, ds->first_block,
                                  S->d[d].dev->name);
        else
            n += (size_t)snprintf(buf + n, size - n, "%sblocks %d-%d on %s", sep, ds->first_block,
                                  ds->first_block + ds->n_blocks - 1, S->d[d].dev->name);
    }
    char b[32];
    if (n < size)
        snprintf(buf + n, size - n, "; %d cut%s, %s copied per forward", R->n_seg - 1,
                 R->n_seg == 2 ? "" : "s", sdc_split_bytes_str(S->stats.bytes_copied, b, sizeof b));
}

static sdc_status run_segments(split_run *R, sdc_eval_fn cb, void *cb_user) {
    split_impl *S = R->S;
    double secs = 0;
    S->stats.bytes_copied = 0;
    for (int d = 0; d < S->n; d++) {
        S->stats.dev[d].scratch_peak = 0;
        S->stats.dev[d].transit = R->transit_size[d];
    }
    sdc_status s = run_copies(R, -1, &secs);
    for (int i = 0; i < R->n_seg && s == SDC_OK; i++) {
        split_dev *sd = &S->d[R->seg_dev[i]];
        if ((s = sdc_backend_compute(sd->be, R->sg[i], cb, cb_user)) != SDC_OK) break;
        if (!strcmp(sdc_backend_name(sd->be), "cpu")) { /* the allocator's own figures */
            sdc_plan_stats ps = sdc_backend_cpu_last_plan(sd->be);
            uint64_t peak = align_up(ps.scratch_bytes) + ps.work_bytes;
            sdc_split_device_stats *ds = &S->stats.dev[R->seg_dev[i]];
            if (peak > ds->scratch_peak) ds->scratch_peak = peak;
        }
        s = run_copies(R, i, &secs);
    }
    if (s != SDC_OK) return s;
    S->stats.n_segments = R->n_seg;
    S->stats.seconds_copying = secs;
    /* outputs not moved to a slot are read where their producer left them */
    for (int i = 0; i < R->n; i++) {
        sdc_tensor *X = sdc_graph_get_node(R->g, i);
        if (!(X->flags & SDC_TENSOR_OUTPUT) || X->op == SDC_OP_VIEW) continue;
        if (!output_moves(R, i)) {
            X->data = R->clone[i]->data;
            X->buffer = R->clone[i]->buffer;
        }
    }
    for (int i = 0; i < R->n; i++) { /* views of the outputs */
        sdc_tensor *X = sdc_graph_get_node(R->g, i);
        if (X->op == SDC_OP_VIEW && X->view_src->data) {
            X->data = (char *)X->view_src->data + X->view_offset;
            X->buffer = X->view_src->buffer;
        }
    }
    char d[512];
    describe(R, d, sizeof d);
    if (strcmp(d, S->desc)) { /* once per partition */
        snprintf(S->desc, sizeof S->desc, "%s", d);
        SDC_LOGI("%s", d);
    }
    return SDC_OK;
}

static void free_run(split_run *R) {
    for (int s = 0; R->sg && s < R->n_seg; s++) sdc_graph_free(R->sg[s]);
    for (int s = 0; R->imp && s < R->n_seg; s++) free(R->imp[s]);
    free(R->sg), free(R->imp), free(R->clone), free(R->slot), free(R->node_seg);
    free(R->seg_dev), free(R->jobs), free(R->refs);
}

/* Each device's planned peak over its segments (what the CPU allocator will take). */
static void plan_segments(split_run *R, uint64_t *peak) {
    for (int d = 0; d < R->S->n; d++) peak[d] = 0;
    for (int i = 0; i < R->n_seg; i++) {
        int d = R->seg_dev[i];
        int nth = R->S->d[d].dev->n_threads > 0 ? R->S->d[d].dev->n_threads : 1;
        sdc_plan_stats ps = {0};
        if (sdc_graph_plan(R->sg[i], ALIGN, work_of, &nth, &ps) == SDC_OK &&
            plan_peak(&ps) > peak[d])
            peak[d] = plan_peak(&ps);
    }
}

/* Partitions g, cuts and clones it; then plans every segment: a device whose weights,
 * planned peak and imported tensors exceed its budget gets that peak and transit as its
 * headroom and g is partitioned again (a few rounds at most). */
static sdc_status prepare(split_impl *S, sdc_graph *g, split_run *R, bool *split) {
    uint64_t head[SDC_MAX_SPLIT];
    sdc_status s = base_headroom(S, g, head);
    for (int round = 0; s == SDC_OK; round++) {
        int *dob = NULL, nb = 0;
        free_run(R);
        *R = (split_run){.S = S, .g = g, .n = sdc_graph_n_nodes(g), .nin = sdc_graph_n_inputs(g)};
        if ((s = partition(S, g, head, &dob, &nb)) != SDC_OK) break;
        if (nb) s = cut(R, dob);
        free(dob);
        *split = s == SDC_OK && nb && !(R->n_seg == 1 && R->seg_dev[0] == 0);
        if (s != SDC_OK || !*split || (s = build_segments(R)) != SDC_OK) break;
        uint64_t peak[SDC_MAX_SPLIT];
        plan_segments(R, peak);
        bool over = false;
        for (int d = 0; d < S->n; d++) {
            const sdc_split_device_stats *ds = &S->stats.dev[d];
            if (ds->weights + peak[d] + R->transit_size[d] <= ds->budget) continue;
            over = true;
            if (peak[d] + R->transit_size[d] > head[d]) head[d] = peak[d] + R->transit_size[d];
            if (round == 3) {
                char a[32], b[32], c[32], e[32];
                s = sdc_fail(SDC_ERR_NO_MEMORY,
                             "%s: split: %s would hold %s of weights, %s of scratch and %s of "
                             "imported tensors, over its budget of %s",
                             S->label, S->d[d].dev->name,
                             sdc_split_bytes_str(ds->weights, a, sizeof a),
                             sdc_split_bytes_str(peak[d], b, sizeof b),
                             sdc_split_bytes_str(R->transit_size[d], c, sizeof c),
                             sdc_split_bytes_str(ds->budget, e, sizeof e));
                break;
            }
        }
        if (!over || s != SDC_OK) break;
    }
    return s;
}

/* ---- row split ---- */

/* g rewritten for a row split: every block matmul of a 2-D weight becomes one matmul per
 * device over a row slice of the weight (slice structs in `slices`, not graph tensors:
 * weights) and a concat chain on the main device. map[id] is each tensor of g in g2;
 * dev[node of g2] its device. */
typedef struct row_graph {
    sdc_graph *g2;
    sdc_tensor **map;
    sdc_tensor *slices;
    int n_slices;
    int *dev;
    int n_split;
} row_graph;

static void row_free(row_graph *rg) {
    sdc_graph_free(rg->g2);
    free(rg->map), free(rg->slices), free(rg->dev);
}

static bool row_splittable(const sdc_graph *g, const sdc_tensor *X, int n_dev) {
    if (X->op != SDC_OP_MATMUL || X->block < 0) return false;
    const sdc_tensor *w = X->src[0];
    return w->graph != g && w->op == SDC_OP_NONE && w->data && w->ne[2] == 1 && w->ne[3] == 1 &&
           w->ne[1] >= n_dev && sdc_tensor_is_contiguous(w);
}

static sdc_tensor *row_src(const row_graph *rg, const split_run *R, sdc_tensor *t) {
    if (!t || t->graph != R->g) return t;
    int id = id_of(R, t);
    return id < 0 ? NULL : rg->map[id];
}

/* The nodes g2 gained since `from` run on device d. */
static void row_mark(row_graph *rg, int from, int d) {
    for (int i = from; i < sdc_graph_n_nodes(rg->g2); i++) rg->dev[i] = d;
}

static sdc_tensor *row_matmul(split_impl *S, row_graph *rg, const split_run *R, sdc_tensor *X) {
    const sdc_tensor *w = X->src[0];
    sdc_tensor *x = row_src(rg, R, X->src[1]), *acc = NULL, *parts[SDC_MAX_SPLIT];
    int n_parts = 0;
    double total = 0, cum = 0;
    for (int d = 0; d < S->n; d++) total += (double)S->stats.dev[d].budget;
    int64_t r0 = 0;
    for (int d = 0; d < S->n; d++) {
        cum += (double)S->stats.dev[d].budget;
        int64_t r1 = d == S->n - 1 ? w->ne[1] : (int64_t)((double)w->ne[1] * cum / total);
        if (r1 <= r0) continue;
        sdc_tensor *ws = &rg->slices[rg->n_slices++];
        *ws = *w;
        ws->lora = NULL; /* the graph already holds w's run-time LoRA nodes */
        ws->ne[1] = r1 - r0;
        ws->nb[2] = ws->nb[3] = ws->nb[1] * (size_t)ws->ne[1];
        ws->data = (char *)w->data + (size_t)r0 * w->nb[1];
        S->stats.dev[d].weights += sdc_tensor_nbytes(ws);
        int from = sdc_graph_n_nodes(rg->g2);
        parts[n_parts++] = sdc_matmul(rg->g2, ws, x);
        row_mark(rg, from, d);
        r0 = r1;
    }
    /* every slice first, then the joins: one cut per device and matmul */
    int from = sdc_graph_n_nodes(rg->g2);
    for (int k = 0; k < n_parts; k++) acc = acc ? sdc_concat(rg->g2, acc, parts[k], 0) : parts[k];
    row_mark(rg, from, 0);
    return acc;
}

static sdc_tensor *row_clone(row_graph *rg, const split_run *R, sdc_tensor *X) {
    sdc_graph *g2 = rg->g2;
    if (X->op == SDC_OP_VIEW) {
        sdc_tensor *src = row_src(rg, R, X->src[0]);
        size_t base = X->src[0]->view_src ? X->src[0]->view_offset : 0;
        return src ? sdc_graph_view_node(g2, src, SDC_MAX_DIMS, X->ne, X->nb, X->view_offset - base)
                   : NULL;
    }
    sdc_tensor *t = sdc_graph_node(g2, X->op, X->type, SDC_MAX_DIMS, X->ne);
    if (!t) return NULL;
    memcpy(t->nb, X->nb, sizeof t->nb);
    t->params = X->params;
    for (int k = 0; k < SDC_MAX_SRC; k++)
        if (X->src[k] && !(t->src[k] = row_src(rg, R, X->src[k]))) return NULL;
    return t;
}

static sdc_status row_rewrite(split_impl *S, const split_run *R, row_graph *rg) {
    int n = R->n, nin = R->nin, n_mm = 0;
    for (int i = 0; i < n; i++) n_mm += row_splittable(R->g, sdc_graph_get_node(R->g, i), S->n);
    rg->g2 = sdc_graph_create();
    rg->map = calloc((size_t)(n + nin + 1), sizeof *rg->map);
    rg->slices = calloc((size_t)(n_mm * S->n + 1), sizeof *rg->slices);
    /* at most n + (2 * devices - 1) nodes per matmul (matmuls, concats, and their views) */
    rg->dev = calloc((size_t)(n + 2 * n_mm * S->n + 1), sizeof *rg->dev);
    if (!rg->g2 || !rg->map || !rg->slices || !rg->dev)
        return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
    for (int i = 0; i < nin; i++) {
        sdc_tensor *X = sdc_graph_get_input(R->g, i), *t = leaf_like(rg->g2, X);
        if (!t) return sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
        t->data = X->data, t->buffer = X->buffer;
        rg->map[n + i] = t;
    }
    for (int i = 0; i < n; i++) {
        sdc_tensor *X = sdc_graph_get_node(R->g, i), *t;
        int from = sdc_graph_n_nodes(rg->g2);
        if (row_splittable(R->g, X, S->n)) {
            t = row_matmul(S, rg, R, X);
            rg->n_split++;
        } else {
            t = row_clone(rg, R, X);
            row_mark(rg, from, 0);
        }
        if (!t) return sdc_fail(SDC_ERR_INVALID_ARG, "split: %s", sdc_graph_error(rg->g2));
        snprintf(t->name, sizeof t->name, "%s", X->name);
        if (X->flags & SDC_TENSOR_OUTPUT) sdc_graph_mark_output(rg->g2, t);
        rg->map[i] = t;
    }
    return sdc_graph_status(rg->g2);
}

static sdc_status row_compute(split_impl *S, sdc_graph *g, sdc_eval_fn cb, void *cb_user) {
    S->stats = (sdc_split_stats){.n_devices = S->n};
    double total = 0;
    for (int d = 0; d < S->n; d++) {
        const sdc_device *dv = S->d[d].dev;
        S->stats.dev[d].budget = dv->budget_bytes ? dv->budget_bytes : dv->total_bytes;
        total += (double)S->stats.dev[d].budget;
    }
    for (int d = 0; d < S->n; d++) S->stats.dev[d].row_share = S->stats.dev[d].budget / total;
    split_run R0 = {.S = S, .g = g, .n = sdc_graph_n_nodes(g), .nin = sdc_graph_n_inputs(g)};
    row_graph rg = {0};
    sdc_status s = row_rewrite(S, &R0, &rg);
    if (s == SDC_OK && !rg.n_split) { /* nothing to split */
        row_free(&rg);
        return sdc_backend_compute(S->d[0].be, g, cb, cb_user);
    }
    S->stats.n_row_matmuls = rg.n_split;
    split_run R = {.S = S,
                   .g = rg.g2,
                   .n = sdc_graph_n_nodes(rg.g2),
                   .nin = sdc_graph_n_inputs(rg.g2),
                   .node_dev = rg.dev};
    if (s == SDC_OK) s = cut(&R, NULL);
    if (s == SDC_OK) s = build_segments(&R);
    if (s == SDC_OK) s = run_segments(&R, cb, cb_user);
    for (int i = 0; i < R0.n && s == SDC_OK; i++) { /* g's outputs and their views */
        sdc_tensor *X = sdc_graph_get_node(g, i);
        if (!(X->flags & SDC_TENSOR_OUTPUT) && X->op != SDC_OP_VIEW) continue;
        if (X->op == SDC_OP_VIEW) {
            if (X->view_src->data) X->data = (char *)X->view_src->data + X->view_offset;
            X->buffer = X->view_src->buffer;
        } else {
            X->data = rg.map[i]->data, X->buffer = rg.map[i]->buffer;
        }
    }
    free_run(&R);
    row_free(&rg);
    return s;
}

static sdc_status split_compute(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb, void *cb_user) {
    split_impl *S = b->impl;
    sdc_status s = sdc_graph_status(g);
    if (s != SDC_OK) return sdc_fail(s, "graph: %s", sdc_graph_error(g));
    if ((s = split_graph_alloc(b, g)) != SDC_OK) return s;
    if (S->mode == SDC_SPLIT_ROW) return row_compute(S, g, cb, cb_user);
    split_run R = {0};
    bool split = false;
    s = prepare(S, g, &R, &split);
    if (s == SDC_OK && !split) { /* nothing to split */
        free_run(&R);
        S->stats.n_segments = 0;
        S->stats.bytes_copied = 0;
        return sdc_backend_compute(S->d[0].be, g, cb, cb_user);
    }
    if (s == SDC_OK) s = run_segments(&R, cb, cb_user);
    free_run(&R);
    return s;
}

static const sdc_backend_iface g_split_iface = {
    .name = split_name,
    .free = split_free,
    .alloc = split_alloc,
    .release = split_release,
    .supports_op = split_supports,
    .compute = split_compute,
    .memory = split_memory,
    .graph_alloc = split_graph_alloc,
    .tensor_set = split_tensor_set,
    .tensor_get = split_tensor_get,
    .tensor_use_host = split_use_host,
    .host_memory = true, /* every child computes on host memory */
    .contains = split_contains,
};
/* the same over devices with their own memory (GPUs) */
static const sdc_backend_iface g_split_dev_iface = {
    .name = split_name,
    .free = split_free,
    .alloc = split_alloc,
    .release = split_release,
    .supports_op = split_supports,
    .compute = split_compute,
    .memory = split_memory,
    .graph_alloc = split_graph_alloc,
    .tensor_set = split_tensor_set,
    .tensor_get = split_tensor_get,
    .tensor_use_host = split_use_host,
    .host_memory = false,
    .contains = split_contains,
};

static bool is_split(const sdc_backend *b) {
    return b && (b->iface == &g_split_iface || b->iface == &g_split_dev_iface);
}

sdc_backend *sdc_split_backend_create(const char *label, sdc_backend *const *children,
                                      const int *devices, int n) {
    if (n < 2 || n > SDC_MAX_SPLIT) {
        sdc_fail(SDC_ERR_INVALID_ARG, "split: %d devices (2 to %d)", n, SDC_MAX_SPLIT);
        return NULL;
    }
    bool host = true;
    for (int i = 0; i < n; i++) {
        if (!children[i] || !sdc_devices_get(devices[i])) {
            sdc_fail(SDC_ERR_INVALID_ARG, "split: no backend or device %d", i);
            return NULL;
        }
        host = host && children[i]->iface->host_memory;
    }
    sdc_backend *b = calloc(1, sizeof *b);
    split_impl *S = calloc(1, sizeof *S);
    if (!b || !S) {
        free(b), free(S);
        sdc_fail(SDC_ERR_NO_MEMORY, "split: out of memory");
        return NULL;
    }
    snprintf(S->label, sizeof S->label, "%s", label ? label : "split");
    S->n = n;
    for (int i = 0; i < n; i++)
        S->d[i] = (split_dev){children[i], sdc_devices_get(devices[i]), NULL};
    b->iface = host ? &g_split_iface : &g_split_dev_iface;
    b->impl = S;
    return b;
}

void sdc_split_backend_set_mode(sdc_backend *b, sdc_split_mode mode) {
    if (b && is_split(b)) ((split_impl *)b->impl)->mode = mode;
}

bool sdc_split_backend_stats(const sdc_backend *b, sdc_split_stats *out) {
    if (!b || !is_split(b)) return false;
    *out = ((const split_impl *)b->impl)->stats;
    return true;
}

const char *sdc_split_backend_describe(const sdc_backend *b) {
    if (!b || !is_split(b)) return "";
    return ((const split_impl *)b->impl)->desc;
}
