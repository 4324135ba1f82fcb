#include "models/weights.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/buffer.h"

sdc_tensor *sdc_weight_find(const sdc_weight_source *ws, const char *prefix, const char *name) {
    char full[512];
    snprintf(full, sizeof full, "%s%s", prefix ? prefix : "", name);
    return ws->find(ws->user, full);
}

sdc_status sdc_weight_require(const sdc_weight_source *ws, const char *prefix, const char *name,
                              int ndims, const int64_t *ne, sdc_tensor **out) {
    sdc_tensor *t = sdc_weight_find(ws, prefix, name);
    *out = NULL;
    if (!t) return sdc_fail(SDC_ERR_FORMAT, "missing tensor '%s%s'", prefix ? prefix : "", name);
    bool ok = true;
    for (int i = 0; i < SDC_MAX_DIMS; i++) {
        int64_t want = i < ndims ? ne[i] : 1;
        if (want >= 0 && t->ne[i] != want) ok = false;
    }
    if (!ok) {
        char have[80], want[80];
        int64_t w[4];
        for (int i = 0; i < 4; i++) w[i] = i < ndims ? ne[i] : 1;
        /* PyTorch order (outermost first) is what users see in their files */
        snprintf(have, sizeof have, "[%lld,%lld,%lld,%lld]", (long long)t->ne[3],
                 (long long)t->ne[2], (long long)t->ne[1], (long long)t->ne[0]);
        snprintf(want, sizeof want, "[%lld,%lld,%lld,%lld]", (long long)w[3], (long long)w[2],
                 (long long)w[1], (long long)w[0]);
        return sdc_fail(SDC_ERR_FORMAT, "tensor '%s' has shape %s, expected %s (-1 = any)", t->name,
                        have, want);
    }
    *out = t;
    return SDC_OK;
}

sdc_status sdc_weight_to_f32(const sdc_tensor *w, float *dst) {
    const sdc_type_traits *tr = sdc_type_get(w->type);
    if (!tr || !tr->to_float)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "tensor '%s': type %s cannot be read as float",
                        w->name, sdc_type_name(w->type));
    if (!sdc_tensor_is_contiguous(w))
        return sdc_fail(SDC_ERR_INTERNAL, "tensor '%s' is not contiguous", w->name);
    if (sdc_tensor_nelements(w) == 0) return SDC_OK;
    /* the weight itself where it is host memory, else a copy through its backend */
    const void *p;
    void *tmp;
    sdc_status s = sdc_tensor_map_read(w, &p, &tmp);
    if (s != SDC_OK) return s;
    int64_t rows = sdc_tensor_nrows(w);
    for (int64_t r = 0; r < rows; r++)
        tr->to_float((const char *)p + (size_t)r * w->nb[1], dst + r * w->ne[0], w->ne[0]);
    free(tmp);
    return SDC_OK;
}
