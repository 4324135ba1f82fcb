/* Test helper: a weight source over one safetensors file (names as stored, F32/F16/BF16
 * tensors used in place), for model tests that must not depend on the full loader. */
#ifndef SDC_TEST_ST_WEIGHTS_H
#define SDC_TEST_ST_WEIGHTS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/safetensors.h"
#include "models/weights.h"

typedef struct st_weights {
    sdc_st_file *f;
    sdc_tensor *t;
    int n;
} st_weights;

static sdc_tensor *st_weights_find(void *user, const char *name) {
    st_weights *w = user;
    for (int i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name)) return &w->t[i];
    return NULL;
}

static int st_weights_open(st_weights *w, const char *path, sdc_weight_source *ws) {
    memset(w, 0, sizeof *w);
    if (sdc_st_open(path, &w->f) != SDC_OK) return -1;
    w->n = sdc_st_count(w->f);
    w->t = calloc((size_t)w->n, sizeof(sdc_tensor));
    for (int i = 0; i < w->n; i++) {
        const sdc_st_tensor *e = sdc_st_at(w->f, i);
        sdc_tensor *t = &w->t[i];
        int type = sdc_st_dtype_to_type(e->dtype);
        if (type < 0) return -1;
        t->type = (sdc_type)type;
        for (int d = 0; d < 4; d++) t->ne[d] = d < e->ndim ? e->shape[e->ndim - 1 - d] : 1;
        sdc_tensor_set_contiguous_strides(t);
        t->data = (void *)e->data;
        t->flags = SDC_TENSOR_PARAM;
        snprintf(t->name, sizeof t->name, "%s", e->name);
    }
    ws->find = st_weights_find;
    ws->user = w;
    return 0;
}

static void st_weights_close(st_weights *w) {
    free(w->t);
    sdc_st_close(w->f);
}

/* Reads a golden tensor as floats (malloc'ed); NULL if absent. */
static float *st_read_f32(sdc_st_file *f, const char *name, int64_t *numel) {
    const sdc_st_tensor *t = sdc_st_find(f, name);
    if (!t) return NULL;
    int64_t n = sdc_st_numel(t);
    float *out = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (sdc_st_to_f32(t, out) != SDC_OK) {
        free(out);
        return NULL;
    }
    if (numel) *numel = n;
    return out;
}

#endif
