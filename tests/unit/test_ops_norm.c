/* Reductions, softmax (scale, F32/F16 masks with -inf, broadcast), layer/rms/group
 * norm vs double-precision references, on strided inputs. */
#include "ops_test_common.h"

static void test_reduce(void) {
    for (int op = 0; op < 2; op++) {
        sdc_tensor *a0 = t_new(SDC_TYPE_F32, 5, 257, 3, 2);
        t_fill(a0, -1, 1);
        sdc_tensor *a = t_permute(a0, 1, 0, 2, 3); /* rows of 257 strided values */
        int64_t ne[4] = {1, 5, 3, 2};
        sdc_tensor *d =
            t_node(op ? SDC_OP_MEAN : SDC_OP_SUM_ROWS, SDC_TYPE_F32, ne, a, NULL, NULL, NULL);
        double *ref = malloc(sizeof(double) * T_N(d));
        int64_t k = 0;
        for (int64_t i3 = 0; i3 < 2; i3++)
            for (int64_t i2 = 0; i2 < 3; i2++)
                for (int64_t i1 = 0; i1 < 5; i1++) {
                    double s = 0;
                    for (int64_t i0 = 0; i0 < 257; i0++) s += t_get(a, i0, i1, i2, i3);
                    ref[k++] = op ? s / 257 : s;
                }
        t_run(d, 3);
        double e = t_max_err(d, ref);
        printf("%s: max err %g\n", op ? "mean" : "sum_rows", e);
        CHECK(e < 1e-5, "reduce err %g", e);
        free(ref), t_free(d), t_free(a), t_free(a0);
    }
}

static void test_softmax(void) {
    const int64_t n0 = 31, n1 = 7, n2 = 4, n3 = 2;
    for (int mk = 0; mk < 4;
         mk++) { /* no mask, f32 [n0,n1,1,1], f16 [n0,n1,n2,1], f32 [n0,n1,1,n3] */
        sdc_tensor *a0 = t_new(SDC_TYPE_F32, n1, n0, n2, n3);
        t_fill(a0, -3, 3);
        sdc_tensor *a = t_permute(a0, 1, 0, 2, 3);
        sdc_tensor *m = NULL;
        if (mk) {
            m = t_new(mk == 2 ? SDC_TYPE_F16 : SDC_TYPE_F32, n0, n1, mk == 2 ? n2 : 1,
                      mk == 3 ? n3 : 1);
            t_fill(m, -2, 2);
            /* -inf entries, and row 3 of the first slice fully masked */
            for (int64_t i3 = 0; i3 < m->ne[3]; i3++)
                for (int64_t i2 = 0; i2 < m->ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < n1; i1++)
                        for (int64_t i0 = 0; i0 < n0; i0++)
                            if ((i0 * 7 + i1) % 5 == 0 || (i1 == 3 && i2 == 0 && i3 == 0))
                                t_set(m, i0, i1, i2, i3, -INFINITY);
        }
        sdc_tensor *d = t_node(SDC_OP_SOFTMAX, SDC_TYPE_F32, a->ne, a, m, NULL, NULL);
        const float scale = 0.37f;
        d->params.f[0] = scale;
        double *ref = malloc(sizeof(double) * T_N(d)), *row = malloc(sizeof(double) * n0);
        int64_t k = 0;
        for (int64_t i3 = 0; i3 < n3; i3++)
            for (int64_t i2 = 0; i2 < n2; i2++)
                for (int64_t i1 = 0; i1 < n1; i1++) {
                    double mx = -INFINITY, s = 0;
                    for (int64_t i0 = 0; i0 < n0; i0++) {
                        row[i0] = t_get(a, i0, i1, i2, i3) * scale +
                                  (m ? t_get(m, i0, i1, i2 % m->ne[2], i3 % m->ne[3]) : 0);
                        if (row[i0] > mx) mx = row[i0];
                    }
                    for (int64_t i0 = 0; i0 < n0; i0++)
                        s += row[i0] = mx == -INFINITY ? 0 : exp(row[i0] - mx);
                    for (int64_t i0 = 0; i0 < n0; i0++) ref[k++] = s > 0 ? row[i0] / s : 0;
                }
        t_run(d, 3);
        double e = t_max_err(d, ref);
        printf("softmax mask case %d: max err %g\n", mk, e);
        CHECK(e < 1e-6, "softmax case %d err %g", mk, e);
        free(row), free(ref), t_free(d), t_free(m), t_free(a), t_free(a0);
    }
}

static void test_layer_rms(void) {
    const int64_t n0 = 257, n1 = 5, n2 = 3;
    for (int kind = 0; kind < 8; kind++) { /* layer w+b, layer none, rms w, rms none; x2 strided */
        const bool rms = (kind & 3) >= 2, has_w = (kind & 3) == 0 || (kind & 3) == 2,
                   has_b = (kind & 3) == 0, strided = kind >= 4;
        sdc_tensor *a0 =
            strided ? t_new(SDC_TYPE_F32, n1, n0, n2, 1) : t_new(SDC_TYPE_F32, n0, n1, n2, 1);
        t_fill(a0, -1, 3); /* non-zero mean */
        sdc_tensor *a = strided ? t_permute(a0, 1, 0, 2, 3) : t_view(a0, a0->ne, a0->nb, 0);
        sdc_tensor *w = has_w ? t_new(SDC_TYPE_F32, n0, 1, 1, 1) : NULL;
        sdc_tensor *b = has_b ? t_new(SDC_TYPE_F32, n0, 1, 1, 1) : NULL;
        if (w) t_fill(w, 0.5, 1.5);
        if (b) t_fill(b, -1, 1);
        const float eps = 1e-5f;
        sdc_tensor *d = t_node(rms ? SDC_OP_RMS_NORM : SDC_OP_LAYER_NORM, SDC_TYPE_F32, a->ne, a, w,
                               rms ? NULL : b, NULL);
        d->params.f[0] = eps;
        double *ref = malloc(sizeof(double) * T_N(d));
        int64_t k = 0;
        for (int64_t i2 = 0; i2 < n2; i2++)
            for (int64_t i1 = 0; i1 < n1; i1++) {
                double mean = 0, var = 0;
                for (int64_t i0 = 0; i0 < n0; i0++) mean += t_get(a, i0, i1, i2, 0);
                mean = rms ? 0 : mean / n0;
                for (int64_t i0 = 0; i0 < n0; i0++) {
                    double v = t_get(a, i0, i1, i2, 0) - mean;
                    var += v * v;
                }
                double rstd = 1 / sqrt(var / n0 + eps);
                for (int64_t i0 = 0; i0 < n0; i0++)
                    ref[k++] =
                        (t_get(a, i0, i1, i2, 0) - mean) * rstd * (w ? t_get(w, i0, 0, 0, 0) : 1) +
                        (b ? t_get(b, i0, 0, 0, 0) : 0);
            }
        t_run(d, 2);
        double e = t_max_err(d, ref);
        printf("%s w=%d b=%d strided=%d: max err %g\n", rms ? "rms_norm" : "layer_norm", has_w,
               has_b, strided, e);
        CHECK(e < 2e-5, "norm kind %d err %g", kind, e);
        free(ref), t_free(d), t_free(w), t_free(b), t_free(a), t_free(a0);
    }
}

static void test_group_norm(void) {
    for (int cs = 0; cs < 3; cs++) /* axis 1, axis 2, axis 2 with planes > 4096 values */
        for (int affine = 0; affine < 2; affine++) {
            const int axis = cs == 0 ? 1 : 2;
            const bool big = cs == 2;
            const int64_t W = big ? 80 : 9, H = axis == 2 ? (big ? 61 : 7) : 1, C = big ? 4 : 12,
                          N = 2, G = big ? 2 : 4;
            sdc_tensor *a =
                axis == 2 ? t_new(SDC_TYPE_F32, W, H, C, N) : t_new(SDC_TYPE_F32, W, C, N, 1);
            t_fill(a, -1, 4);
            sdc_tensor *w = affine ? t_new(SDC_TYPE_F32, C, 1, 1, 1) : NULL;
            sdc_tensor *b = affine ? t_new(SDC_TYPE_F32, C, 1, 1, 1) : NULL;
            if (affine) t_fill(w, 0.5, 1.5), t_fill(b, -1, 1);
            sdc_tensor *d = t_node(SDC_OP_GROUP_NORM, SDC_TYPE_F32, a->ne, a, w, b, NULL);
            d->params.i[0] = (int)G, d->params.f[1] = 1e-6f, d->params.i[2] = axis;
            double *ref = malloc(sizeof(double) * T_N(d));
            for (int64_t n = 0; n < N; n++)
                for (int64_t g = 0; g < G; g++) {
                    double s = 0, ss = 0, cnt = 0;
                    for (int pass = 0; pass < 3; pass++)
                        for (int64_t c = g * C / G; c < (g + 1) * C / G; c++)
                            for (int64_t y = 0; y < H; y++)
                                for (int64_t x = 0; x < W; x++) {
                                    double v =
                                        axis == 2 ? t_get(a, x, y, c, n) : t_get(a, x, c, n, 0);
                                    double mean = cnt > 0 ? s / cnt : 0;
                                    if (pass == 0)
                                        s += v, cnt += 1;
                                    else if (pass == 1)
                                        ss += (v - mean) * (v - mean);
                                    else {
                                        double r = (v - mean) / sqrt(ss / cnt + 1e-6);
                                        if (affine)
                                            r = r * t_get(w, c, 0, 0, 0) + t_get(b, c, 0, 0, 0);
                                        int64_t idx = axis == 2 ? ((n * C + c) * H + y) * W + x
                                                                : (n * C + c) * W + x;
                                        ref[idx] = r;
                                    }
                                }
                }
            t_run(d, 3);
            double e = t_max_err(d, ref);
            printf("group_norm axis=%d [%lld,%lld,%lld,%lld] affine=%d: max err %g\n", axis,
                   (long long)a->ne[0], (long long)a->ne[1], (long long)a->ne[2],
                   (long long)a->ne[3], affine, e);
            CHECK(e < 2e-5, "group norm err %g", e);
            free(ref), t_free(d), t_free(w), t_free(b), t_free(a);
        }
}

int main(void) {
    const sdc_isa isas[2] = {SDC_ISA_SCALAR,
                             sdc_cpu_isa_supported() == SDC_ISA_NEON ? SDC_ISA_NEON : SDC_ISA_AVX2};
    const int n_isa =
        (sdc_cpu_isa_supported() >= SDC_ISA_AVX2 || sdc_cpu_isa_supported() == SDC_ISA_NEON) ? 2
                                                                                             : 1;
    for (int i = 0; i < n_isa; i++) {
        sdc_cpu_set_isa(isas[i]);
        printf("-- isa %s\n", sdc_isa_name(isas[i]));
        test_reduce();
        test_softmax();
        test_layer_rms();
        test_group_norm();
    }
    sdc_cpu_set_isa(SDC_ISA_AVX512);
    TEST_MAIN_END();
}
