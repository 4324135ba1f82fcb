/* Layout kernels: copy/convert, concat, repeat, pad, nearest upsample, get_rows.
 * All take any source strides and write dst row by row; threads split dst rows. */
#include <string.h>

#include "cpu/ops_util.h"

/* n elements of esize bytes from a strided source to a contiguous row. */
static void gather_row(char *d, const char *s, int64_t n, size_t esize, size_t snb0) {
    if (snb0 == esize) {
        memcpy(d, s, (size_t)n * esize);
        return;
    }
    for (int64_t i = 0; i < n; i++) memcpy(d + (size_t)i * esize, s + (size_t)i * snb0, esize);
}

/* One row with type conversion; strides in bytes. */
static void convert_row(sdc_type dt, char *d, size_t dnb0, sdc_type st, const char *s, size_t snb0,
                        int64_t n) {
    const sdc_type_traits *dtr = sdc_type_get(dt), *str = sdc_type_get(st);
    if (dt == st && dnb0 == dtr->block_bytes && snb0 == str->block_bytes) {
        memcpy(d, s, (size_t)(n / dtr->block_size) * dtr->block_bytes);
        return;
    }
    if (dt == st && dtr->block_bytes == 4 && dnb0 == 4) { /* strided gather, no conversion */
        uint32_t *d4 = (uint32_t *)d;
        for (int64_t i = 0; i < n; i++) memcpy(d4 + i, s + (size_t)i * snb0, 4);
        return;
    }
    if (dt == st && dtr->block_bytes == 2 && dnb0 == 2) {
        uint16_t *d2 = (uint16_t *)d;
        for (int64_t i = 0; i < n; i++) memcpy(d2 + i, s + (size_t)i * snb0, 2);
        return;
    }
    if (dt == st && dtr->is_quantized) { /* block-wise strided copy */
        for (int64_t b = 0; b < n / dtr->block_size; b++)
            memcpy(d + (size_t)b * dnb0, s + (size_t)b * snb0, dtr->block_bytes);
        return;
    }
    if (dnb0 == dtr->block_bytes && snb0 == str->block_bytes) {
        if (dt == SDC_TYPE_F32 && str->to_float) {
            str->to_float(s, (float *)d, n);
            return;
        }
        if (st == SDC_TYPE_F32 && dtr->from_float) {
            dtr->from_float((const float *)s, d, n, NULL);
            return;
        }
    }
    for (int64_t i = 0; i < n; i++)
        sdc_store_elem(dt, d + (size_t)i * dnb0, sdc_load_elem(st, s + (size_t)i * snb0));
}

void sdc_cpu_cpy(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *src = dst->src[0];
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    if (sdc_tensor_same_shape(src, dst)) {
        for (int64_t r = lo; r < hi; r++) {
            int64_t i1, i2, i3;
            sdc_row_index(dst, r, &i1, &i2, &i3);
            convert_row(dst->type, sdc_row_ptr(dst, i1, i2, i3), dst->nb[0], src->type,
                        sdc_row_ptr(src, i1, i2, i3), src->nb[0], dst->ne[0]);
        }
        return;
    }
    /* Same element count, different shapes: walk both in flat (row-major) order. */
    if (sdc_type_get(src->type)->is_quantized) {
        if (p->ith == 0) /* only contiguous-to-contiguous makes sense for blocks */
            memcpy(dst->data, src->data, sdc_tensor_nbytes(dst));
        return;
    }
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        char *d = sdc_row_ptr(dst, i1, i2, i3);
        for (int64_t i0 = 0; i0 < dst->ne[0]; i0++) {
            int64_t e = r * dst->ne[0] + i0;
            int64_t s0 = e % src->ne[0];
            e /= src->ne[0];
            int64_t s1 = e % src->ne[1];
            e /= src->ne[1];
            int64_t s2 = e % src->ne[2], s3 = e / src->ne[2];
            sdc_store_elem(
                dst->type, d + i0 * dst->nb[0],
                sdc_load_elem(src->type, (const char *)sdc_tensor_ptr(src, s0, s1, s2, s3)));
        }
    }
}

void sdc_cpu_concat(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0], *b = dst->src[1];
    const int dim = dst->params.i[0];
    const size_t es = sdc_type_get(dst->type)->block_bytes;
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i[4];
        sdc_row_index(dst, r, &i[1], &i[2], &i[3]);
        char *d = sdc_row_ptr(dst, i[1], i[2], i[3]);
        if (dim == 0) {
            gather_row(d, sdc_row_ptr(a, i[1], i[2], i[3]), a->ne[0], es, a->nb[0]);
            gather_row(d + (size_t)a->ne[0] * es, sdc_row_ptr(b, i[1], i[2], i[3]), b->ne[0], es,
                       b->nb[0]);
            continue;
        }
        const sdc_tensor *s = a;
        if (i[dim] >= a->ne[dim]) i[dim] -= a->ne[dim], s = b;
        gather_row(d, sdc_row_ptr(s, i[1], i[2], i[3]), dst->ne[0], es, s->nb[0]);
    }
}

void sdc_cpu_repeat(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *s = dst->src[0];
    const size_t es = sdc_type_get(dst->type)->block_bytes;
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        char *d = sdc_row_ptr(dst, i1, i2, i3);
        const char *sr = sdc_row_ptr(s, i1 % s->ne[1], i2 % s->ne[2], i3 % s->ne[3]);
        gather_row(d, sr, s->ne[0], es, s->nb[0]);
        for (int64_t k = s->ne[0]; k < dst->ne[0]; k += s->ne[0])
            memcpy(d + (size_t)k * es, d, (size_t)s->ne[0] * es);
    }
}

void sdc_cpu_pad(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *s = dst->src[0];
    const size_t es = sdc_type_get(dst->type)->block_bytes;
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        char *d = sdc_row_ptr(dst, i1, i2, i3);
        int64_t n = 0; /* zero bits are 0.0 in every float type */
        if (i1 < s->ne[1] && i2 < s->ne[2] && i3 < s->ne[3]) {
            n = s->ne[0];
            gather_row(d, sdc_row_ptr(s, i1, i2, i3), n, es, s->nb[0]);
        }
        memset(d + (size_t)n * es, 0, (size_t)(dst->ne[0] - n) * es);
    }
}

void sdc_cpu_upsample(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *s = dst->src[0];
    const int f = dst->params.i[0];
    const size_t es = sdc_type_get(dst->type)->block_bytes;
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        char *d = sdc_row_ptr(dst, i1, i2, i3);
        const char *sr = sdc_row_ptr(s, i1 / f, i2, i3);
        if (es == 4) {
            float *df = (float *)d;
            for (int64_t i0 = 0; i0 < s->ne[0]; i0++) {
                float v;
                memcpy(&v, sr + i0 * s->nb[0], 4);
                for (int k = 0; k < f; k++) df[i0 * f + k] = v;
            }
        } else {
            for (int64_t i0 = 0; i0 < dst->ne[0]; i0++)
                memcpy(d + (size_t)i0 * es, sr + (i0 / f) * s->nb[0], es);
        }
    }
}

void sdc_cpu_get_rows(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *table = dst->src[0], *ids = dst->src[1];
    const sdc_type_traits *tr = sdc_type_get(table->type);
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        int32_t id;
        memcpy(&id, (const char *)ids->data + i1 * ids->nb[0] + i2 * ids->nb[1], 4);
        if (id < 0 || id >= table->ne[1]) {
            memset(d, 0, (size_t)dst->ne[0] * sizeof(float));
            continue;
        }
        tr->to_float((const char *)table->data + (size_t)id * table->nb[1], d, table->ne[0]);
    }
}
