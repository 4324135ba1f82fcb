/* Layout kernels vs naive references: cpy/cast (permuted sources, F32/F16/BF16),
 * reshaping copy, concat in each dim, repeat, pad, nearest upsample, get_rows. */
#include "core/quant.h"
#include "ops_test_common.h"

static const int NTH[2] = {1, 3};

static void test_cpy(void) {
    const sdc_type types[3] = {SDC_TYPE_F32, SDC_TYPE_F16, SDC_TYPE_BF16};
    for (int si = 0; si < 3; si++)
        for (int di = 0; di < 3; di++)
            for (int perm = 0; perm < 2; perm++) {
                sdc_tensor *a = t_new(types[si], 7, 31, 3, 2);
                t_fill(a, -2, 2);
                sdc_tensor *s = perm ? t_permute(a, 2, 0, 3, 1) : t_view(a, a->ne, a->nb, 0);
                sdc_tensor *d = t_node(SDC_OP_CPY, types[di], s->ne, s, NULL, NULL, NULL);
                double *ref = malloc(sizeof(double) * T_N(d));
                int64_t k = 0;
                for (int64_t i3 = 0; i3 < s->ne[3]; i3++)
                    for (int64_t i2 = 0; i2 < s->ne[2]; i2++)
                        for (int64_t i1 = 0; i1 < s->ne[1]; i1++)
                            for (int64_t i0 = 0; i0 < s->ne[0]; i0++) {
                                double v = t_get(s, i0, i1, i2, i3);
                                /* expected: v rounded to the destination type */
                                if (types[di] == SDC_TYPE_F16)
                                    v = sdc_fp16_to_f32(sdc_f32_to_fp16((float)v));
                                if (types[di] == SDC_TYPE_BF16)
                                    v = sdc_bf16_to_f32(sdc_f32_to_bf16((float)v));
                                ref[k++] = v;
                            }
                for (int t = 0; t < 2; t++) {
                    memset(d->data, 0xff, sdc_tensor_nbytes(d));
                    t_run(d, NTH[t]);
                    double e = t_max_err(d, ref);
                    printf("cpy %s->%s perm=%d nth=%d: max err %g\n", sdc_type_name(types[si]),
                           sdc_type_name(types[di]), perm, NTH[t], e);
                    CHECK(e == 0, "cpy err %g", e);
                }
                free(ref), t_free(d), t_free(s), t_free(a);
            }
    /* different shape, same count: flat order of a permuted source */
    sdc_tensor *a = t_new(SDC_TYPE_F32, 5, 6, 7, 1);
    t_fill(a, -1, 1);
    sdc_tensor *s = t_permute(a, 1, 0, 2, 3); /* [6,5,7] */
    int64_t ne[4] = {30, 7, 1, 1};
    sdc_tensor *d = t_node(SDC_OP_CPY, SDC_TYPE_F32, ne, s, NULL, NULL, NULL);
    double *ref = malloc(sizeof(double) * T_N(d));
    int64_t k = 0;
    for (int64_t i2 = 0; i2 < 7; i2++)
        for (int64_t i1 = 0; i1 < 5; i1++)
            for (int64_t i0 = 0; i0 < 6; i0++) ref[k++] = t_get(s, i0, i1, i2, 0);
    t_run(d, 3);
    double e = t_max_err(d, ref);
    printf("cpy reshape [6,5,7]->[30,7]: max err %g\n", e);
    CHECK(e == 0, "cpy reshape err %g", e);
    free(ref), t_free(d), t_free(s), t_free(a);
}

static void test_concat(void) {
    for (int dim = 0; dim < 4; dim++) {
        int64_t na[4] = {5, 3, 4, 2}, nb[4] = {5, 3, 4, 2};
        nb[dim] = dim == 0 ? 7 : 1 + dim;
        sdc_tensor *a = t_new(SDC_TYPE_F32, na[0], na[1], na[2], na[3]);
        sdc_tensor *b0 = t_new(SDC_TYPE_F32, nb[1], nb[0], nb[2], nb[3]);
        sdc_tensor *b = t_permute(b0, 1, 0, 2, 3); /* non-contiguous second input */
        t_fill(a, -1, 1), t_fill(b0, -1, 1);
        int64_t ne[4] = {na[0], na[1], na[2], na[3]};
        ne[dim] += nb[dim];
        sdc_tensor *d = t_node(SDC_OP_CONCAT, SDC_TYPE_F32, ne, a, b, NULL, NULL);
        d->params.i[0] = dim;
        double *ref = malloc(sizeof(double) * T_N(d));
        int64_t k = 0;
        for (int64_t i3 = 0; i3 < ne[3]; i3++)
            for (int64_t i2 = 0; i2 < ne[2]; i2++)
                for (int64_t i1 = 0; i1 < ne[1]; i1++)
                    for (int64_t i0 = 0; i0 < ne[0]; i0++) {
                        int64_t i[4] = {i0, i1, i2, i3};
                        if (i[dim] < na[dim]) {
                            ref[k++] = t_get(a, i0, i1, i2, i3);
                        } else {
                            i[dim] -= na[dim];
                            ref[k++] = t_get(b, i[0], i[1], i[2], i[3]);
                        }
                    }
        t_run(d, 3);
        double e = t_max_err(d, ref);
        printf("concat dim %d: max err %g\n", dim, e);
        CHECK(e == 0, "concat dim %d err %g", dim, e);
        free(ref), t_free(d), t_free(b), t_free(b0), t_free(a);
    }
}

static void test_repeat_pad_upsample(void) {
    sdc_tensor *a0 = t_new(SDC_TYPE_F32, 3, 5, 2, 1);
    t_fill(a0, -1, 1);
    sdc_tensor *a = t_permute(a0, 1, 0, 2, 3); /* [5,3,2,1] strided */
    int64_t ne[4] = {10, 9, 4, 3};
    sdc_tensor *d = t_node(SDC_OP_REPEAT, SDC_TYPE_F32, ne, a, NULL, NULL, NULL);
    double *ref = malloc(sizeof(double) * T_N(d));
    int64_t k = 0;
    for (int64_t i3 = 0; i3 < ne[3]; i3++)
        for (int64_t i2 = 0; i2 < ne[2]; i2++)
            for (int64_t i1 = 0; i1 < ne[1]; i1++)
                for (int64_t i0 = 0; i0 < ne[0]; i0++)
                    ref[k++] = t_get(a, i0 % 5, i1 % 3, i2 % 2, 0);
    t_run(d, 3);
    double e = t_max_err(d, ref);
    printf("repeat [5,3,2,1]->[10,9,4,3]: max err %g\n", e);
    CHECK(e == 0, "repeat err %g", e);
    free(ref), t_free(d);

    int64_t np[4] = {5 + 2, 3 + 1, 2 + 3, 1 + 1};
    d = t_node(SDC_OP_PAD, SDC_TYPE_F32, np, a, NULL, NULL, NULL);
    d->params.i[0] = 2, d->params.i[1] = 1, d->params.i[2] = 3, d->params.i[3] = 1;
    ref = malloc(sizeof(double) * T_N(d));
    k = 0;
    for (int64_t i3 = 0; i3 < np[3]; i3++)
        for (int64_t i2 = 0; i2 < np[2]; i2++)
            for (int64_t i1 = 0; i1 < np[1]; i1++)
                for (int64_t i0 = 0; i0 < np[0]; i0++)
                    ref[k++] = i0 < 5 && i1 < 3 && i2 < 2 && i3 < 1 ? t_get(a, i0, i1, i2, i3) : 0;
    memset(d->data, 0x7f, sdc_tensor_nbytes(d));
    t_run(d, 3);
    e = t_max_err(d, ref);
    printf("pad: max err %g\n", e);
    CHECK(e == 0, "pad err %g", e);
    free(ref), t_free(d);

    for (int f = 1; f <= 3; f++) {
        int64_t nu[4] = {5 * f, 3 * f, 2, 1};
        d = t_node(SDC_OP_UPSAMPLE, SDC_TYPE_F32, nu, a, NULL, NULL, NULL);
        d->params.i[0] = f;
        ref = malloc(sizeof(double) * T_N(d));
        k = 0;
        for (int64_t i2 = 0; i2 < 2; i2++)
            for (int64_t i1 = 0; i1 < nu[1]; i1++)
                for (int64_t i0 = 0; i0 < nu[0]; i0++) ref[k++] = t_get(a, i0 / f, i1 / f, i2, 0);
        t_run(d, 2);
        e = t_max_err(d, ref);
        printf("upsample x%d: max err %g\n", f, e);
        CHECK(e == 0, "upsample err %g", e);
        free(ref), t_free(d);
    }
    /* F16 upsample takes the byte path */
    sdc_tensor *h = t_new(SDC_TYPE_F16, 4, 3, 2, 1);
    t_fill(h, -1, 1);
    int64_t nh[4] = {8, 6, 2, 1};
    d = t_node(SDC_OP_UPSAMPLE, SDC_TYPE_F16, nh, h, NULL, NULL, NULL);
    d->params.i[0] = 2;
    ref = malloc(sizeof(double) * T_N(d));
    k = 0;
    for (int64_t i2 = 0; i2 < 2; i2++)
        for (int64_t i1 = 0; i1 < 6; i1++)
            for (int64_t i0 = 0; i0 < 8; i0++) ref[k++] = t_get(h, i0 / 2, i1 / 2, i2, 0);
    t_run(d, 1);
    e = t_max_err(d, ref);
    printf("upsample f16 x2: max err %g\n", e);
    CHECK(e == 0, "upsample f16 err %g", e);
    free(ref), t_free(d), t_free(h);
    t_free(a), t_free(a0);
}

static void test_get_rows(void) {
    const sdc_type types[4] = {SDC_TYPE_F32, SDC_TYPE_F16, SDC_TYPE_BF16, SDC_TYPE_Q8_0};
    for (int ti = 0; ti < 4; ti++) {
        const int64_t D = 64, V = 11;
        sdc_tensor *tab = t_new(types[ti], D, V, 1, 1);
        float *src = malloc(sizeof(float) * D * V);
        for (int64_t i = 0; i < D * V; i++) src[i] = t_randf(&g_seed);
        const sdc_type_traits *tr = sdc_type_get(types[ti]);
        for (int64_t r = 0; r < V; r++)
            tr->from_float(src + r * D, (char *)tab->data + r * tab->nb[1], D, NULL);
        sdc_tensor *ids = t_new(SDC_TYPE_I32, 5, 2, 1, 1);
        int32_t idv[10] = {3, 0, 10, 3, 7, 1, 1, 9, 2, 12 /* out of range: zeros */};
        memcpy(ids->data, idv, sizeof idv);
        int64_t ne[4] = {D, 5, 2, 1};
        sdc_tensor *d = t_node(SDC_OP_GET_ROWS, SDC_TYPE_F32, ne, tab, ids, NULL, NULL);
        double *ref = malloc(sizeof(double) * T_N(d));
        float *row = malloc(sizeof(float) * D);
        for (int j = 0; j < 10; j++) {
            /* reference: the table's own row decoded independently of the kernel */
            if (idv[j] >= V) {
                for (int64_t i = 0; i < D; i++) ref[j * D + i] = 0;
                continue;
            }
            tr->to_float((const char *)tab->data + idv[j] * tab->nb[1], row, D);
            for (int64_t i = 0; i < D; i++) {
                ref[j * D + i] = row[i];
                if (!tr->is_quantized) /* plain types: also against the source values */
                    CHECK(fabs(row[i] - src[idv[j] * D + i]) < 1e-2, "table decode");
            }
        }
        t_run(d, 3);
        double e = t_max_err(d, ref);
        printf("get_rows %s: max err %g\n", tr->name, e);
        CHECK(e == 0, "get_rows err %g", e);
        free(row), free(ref), free(src), t_free(d), t_free(ids), t_free(tab);
    }
}

int main(void) {
    test_cpy();
    test_concat();
    test_repeat_pad_upsample();
    test_get_rows();
    TEST_MAIN_END();
}
