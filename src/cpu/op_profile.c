/* SDC_PROFILE=1: seconds, share and GFLOP/s per op kind, printed when the CPU backend is
 * freed. SDC_PROFILE=2 adds one row per op and operand shapes (the heaviest first), which
 * is what tells a slow GEMM shape from a slow op kind. */
#include "cpu/op_profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPE_ROWS 512 /* distinct (op, shapes) rows kept; later ones count as "other" */
#define SHAPE_KEY  160

typedef struct shape_row {
    char key[SHAPE_KEY];
    double seconds, flops;
    long count;
} shape_row;

struct sdc_op_profile {
    double seconds[SDC_OP_COUNT];
    long count[SDC_OP_COUNT];
    double flops[SDC_OP_COUNT];
    bool by_shape;
    int n_rows;
    shape_row *rows;
    double other_seconds;
};

sdc_op_profile *sdc_op_profile_from_env(void) {
    const char *v = getenv("SDC_PROFILE");
    if (!v || (*v != '1' && *v != '2')) return NULL;
    sdc_op_profile *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    if (*v == '2') {
        p->rows = calloc(SHAPE_ROWS, sizeof *p->rows);
        p->by_shape = p->rows != NULL;
    }
    return p;
}

/* multiply-adds x 2 of the ops that dominate, for the GFLOP/s column */
static double node_flops(const sdc_tensor *t) {
    if (t->op == SDC_OP_MATMUL)
        return 2.0 * (double)t->src[0]->ne[0] * (double)sdc_tensor_nelements(t);
    if (t->op == SDC_OP_ATTENTION) {
        const sdc_tensor *q = t->src[0], *k = t->src[1], *v = t->src[2];
        return 2.0 * (double)q->ne[1] * (double)k->ne[1] * (double)(q->ne[0] + v->ne[0]) *
               (double)q->ne[2] * (double)q->ne[3];
    }
    if (t->op == SDC_OP_CONV2D) {
        const sdc_tensor *w = t->src[1];
        return 2.0 * (double)sdc_tensor_nelements(t) * (double)(w->ne[0] * w->ne[1] * w->ne[2]);
    }
    return 0;
}

/* "matmul f32[768,1280] f16[768,2304]": the op and each operand's type and extents */
static void shape_key(const sdc_tensor *t, char *buf, size_t size) {
    int n = snprintf(buf, size, "%s", sdc_op_name(t->op));
    for (int i = 0; i < SDC_MAX_SRC && t->src[i] && n >= 0 && (size_t)n < size; i++) {
        const sdc_tensor *s = t->src[i];
        int dims = 4;
        while (dims > 1 && s->ne[dims - 1] == 1) dims--;
        n += snprintf(buf + n, size - (size_t)n, " %s[", sdc_type_name(s->type));
        for (int d = 0; d < dims && n >= 0 && (size_t)n < size; d++)
            n += snprintf(buf + n, size - (size_t)n, d ? ",%lld" : "%lld", (long long)s->ne[d]);
        if (n >= 0 && (size_t)n < size) n += snprintf(buf + n, size - (size_t)n, "]");
    }
}

void sdc_op_profile_add(sdc_op_profile *p, const sdc_tensor *t, double seconds) {
    const double f = node_flops(t);
    p->seconds[t->op] += seconds;
    p->count[t->op]++;
    p->flops[t->op] += f;
    if (!p->by_shape) return;
    char key[SHAPE_KEY];
    shape_key(t, key, sizeof key);
    int i = 0;
    while (i < p->n_rows && strcmp(p->rows[i].key, key) != 0) i++;
    if (i == p->n_rows) {
        if (p->n_rows == SHAPE_ROWS) {
            p->other_seconds += seconds;
            return;
        }
        memcpy(p->rows[i].key, key, sizeof key);
        p->n_rows++;
    }
    p->rows[i].seconds += seconds;
    p->rows[i].flops += f;
    p->rows[i].count++;
}

static int by_seconds(const void *a, const void *b) {
    const double x = ((const shape_row *)a)->seconds, y = ((const shape_row *)b)->seconds;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_shapes(sdc_op_profile *p, double total) {
    qsort(p->rows, (size_t)p->n_rows, sizeof *p->rows, by_seconds);
    fprintf(stderr, "profile by shape (operands: type[extents], innermost first):\n%8s %9s %6s %9s  %s\n",
            "calls", "seconds", "share", "GFLOP/s", "op and operands");
    for (int i = 0; i < p->n_rows; i++) {
        const shape_row *r = &p->rows[i];
        if (r->seconds < total * 1e-3 && i >= 20) break; /* the long tail of tiny rows */
        fprintf(stderr, "%8ld %9.3f %5.1f%% %9.1f  %s\n", r->count, r->seconds,
                100.0 * r->seconds / (total > 0 ? total : 1),
                r->seconds > 0 ? r->flops / r->seconds * 1e-9 : 0.0, r->key);
    }
    if (p->other_seconds > 0)
        fprintf(stderr, "%8s %9.3f (shapes past the first %d)\n", "", p->other_seconds, SHAPE_ROWS);
}

void sdc_op_profile_print_free(sdc_op_profile *p) {
    if (!p) return;
    double total = 0;
    for (int i = 0; i < SDC_OP_COUNT; i++) total += p->seconds[i];
    fprintf(stderr, "profile: %.3f s in kernels\n%-12s %8s %9s %6s %9s\n", total, "op", "calls",
            "seconds", "share", "GFLOP/s");
    for (int i = 0; i < SDC_OP_COUNT; i++) {
        if (!p->count[i]) continue;
        fprintf(stderr, "%-12s %8ld %9.3f %5.1f%% %9.1f\n", sdc_op_name(i), p->count[i],
                p->seconds[i], 100.0 * p->seconds[i] / (total > 0 ? total : 1),
                p->seconds[i] > 0 ? p->flops[i] / p->seconds[i] * 1e-9 : 0.0);
    }
    if (p->by_shape) print_shapes(p, total);
    free(p->rows);
    free(p);
}
