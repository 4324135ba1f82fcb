/* Binary ops with broadcasting and strided inputs; unary activations on the scalar
 * and SIMD paths, vs double-precision references. */
#include "ops_test_common.h"

static double ref_binary(sdc_op op, double x, double y) {
    switch (op) {
    case SDC_OP_ADD:
        return x + y;
    case SDC_OP_SUB:
        return x - y;
    case SDC_OP_MUL:
        return x * y;
    default:
        return x / y;
    }
}

static void test_binary(void) {
    const sdc_op ops[4] = {SDC_OP_ADD, SDC_OP_SUB, SDC_OP_MUL, SDC_OP_DIV};
    /* b shapes dividing a = [31,6,4,2]; the last case also permutes a */
    const int64_t bshapes[6][4] = {{31, 6, 4, 2}, {1, 1, 1, 1},  {31, 1, 1, 1},
                                   {1, 6, 4, 1},  {31, 3, 2, 2}, {31, 6, 1, 2}};
    for (int oi = 0; oi < 4; oi++)
        for (int bi = 0; bi < 6; bi++)
            for (int variant = 0; variant < 4; variant++) {
                /* a: [31,6,4,2], contiguous or a permuted view; b f32 or f16 */
                const int strided = variant & 1;
                const sdc_type bt = variant & 2 ? SDC_TYPE_F16 : SDC_TYPE_F32;
                sdc_tensor *a0 =
                    strided ? t_new(SDC_TYPE_F32, 6, 31, 4, 2) : t_new(SDC_TYPE_F32, 31, 6, 4, 2);
                t_fill(a0, -2, 2);
                sdc_tensor *aa =
                    strided ? t_permute(a0, 1, 0, 2, 3) : t_view(a0, a0->ne, a0->nb, 0);
                const int64_t *bs = bshapes[bi];
                sdc_tensor *b0, *b;
                if (strided) { /* b as a permuted view too */
                    b0 = t_new(bt, bs[1], bs[0], bs[2], bs[3]);
                    b = t_permute(b0, 1, 0, 2, 3);
                } else {
                    b0 = t_new(bt, bs[0], bs[1], bs[2], bs[3]);
                    b = t_view(b0, b0->ne, b0->nb, 0);
                }
                t_fill(b0, 0.5, 2); /* away from 0 for div */
                sdc_tensor *d = t_node(ops[oi], SDC_TYPE_F32, aa->ne, aa, b, NULL, NULL);
                double *ref = malloc(sizeof(double) * T_N(d));
                int64_t k = 0;
                for (int64_t i3 = 0; i3 < 2; i3++)
                    for (int64_t i2 = 0; i2 < 4; i2++)
                        for (int64_t i1 = 0; i1 < 6; i1++)
                            for (int64_t i0 = 0; i0 < 31; i0++)
                                ref[k++] = ref_binary(
                                    ops[oi], t_get(aa, i0, i1, i2, i3),
                                    t_get(b, i0 % bs[0], i1 % bs[1], i2 % bs[2], i3 % bs[3]));
                t_run(d, 3);
                double e = t_max_err(d, ref);
                if (bi == 0 || bi == 4)
                    printf("binary op %d b=[%lld,%lld,%lld,%lld] %s strided=%d: max err %g\n",
                           (int)ops[oi], (long long)bs[0], (long long)bs[1], (long long)bs[2],
                           (long long)bs[3], sdc_type_name(bt), strided, e);
                CHECK(e < 1e-6, "binary op %d bshape %d strided %d err %g", (int)ops[oi], bi,
                      strided, e);
                free(ref), t_free(d), t_free(b), t_free(b0), t_free(aa), t_free(a0);
            }
}

/* Long rows: an f16 b converted in chunks whose edges do not align with b's length. */
static void test_binary_long_f16(void) {
    sdc_tensor *a = t_new(SDC_TYPE_F32, 700, 3, 1, 1), *b = t_new(SDC_TYPE_BF16, 7, 3, 1, 1);
    t_fill(a, -1, 1), t_fill(b, 0.5, 2);
    sdc_tensor *d = t_node(SDC_OP_MUL, SDC_TYPE_F32, a->ne, a, b, NULL, NULL);
    double *ref = malloc(sizeof(double) * T_N(d));
    for (int64_t i1 = 0; i1 < 3; i1++)
        for (int64_t i0 = 0; i0 < 700; i0++)
            ref[i1 * 700 + i0] = t_get(a, i0, i1, 0, 0) * t_get(b, i0 % 7, i1, 0, 0);
    t_run(d, 2);
    double e = t_max_err(d, ref);
    printf("binary mul [700,3] x bf16 [7,3]: max err %g\n", e);
    CHECK(e < 1e-6, "long bf16 b err %g", e);
    free(ref), t_free(d), t_free(b), t_free(a);
}

static double ref_unary(sdc_op op, double x, double f0, double f1) {
    switch (op) {
    case SDC_OP_SCALE:
        return x * f0 + f1;
    case SDC_OP_GELU:
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case SDC_OP_GELU_ERF:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case SDC_OP_SILU:
        return x / (1 + exp(-x));
    case SDC_OP_RELU:
        return x > 0 ? x : 0;
    case SDC_OP_SIGMOID:
        return 1 / (1 + exp(-x));
    case SDC_OP_TANH:
        return tanh(x);
    case SDC_OP_SQR:
        return x * x;
    case SDC_OP_SQRT:
        return sqrt(x);
    case SDC_OP_EXP:
        return exp(x);
    case SDC_OP_CLAMP:
        return x < f0 ? f0 : x > f1 ? f1 : x;
    default:
        return 0;
    }
}

static void test_unary(void) {
    const sdc_op ops[11] = {SDC_OP_SCALE, SDC_OP_GELU,    SDC_OP_GELU_ERF, SDC_OP_SILU,
                            SDC_OP_RELU,  SDC_OP_SIGMOID, SDC_OP_TANH,     SDC_OP_SQR,
                            SDC_OP_SQRT,  SDC_OP_EXP,     SDC_OP_CLAMP};
    const char *names[11] = {"scale", "gelu", "gelu_erf", "silu", "relu", "sigmoid",
                             "tanh",  "sqr",  "sqrt",     "exp",  "clamp"};
    const sdc_isa isas[2] = {SDC_ISA_SCALAR,
                             sdc_cpu_isa_supported() == SDC_ISA_NEON ? SDC_ISA_NEON : SDC_ISA_AVX2};
    const int n_isa =
        (sdc_cpu_isa_supported() >= SDC_ISA_AVX2 || sdc_cpu_isa_supported() == SDC_ISA_NEON) ? 2
                                                                                             : 1;
    for (int ii = 0; ii < n_isa; ii++) {
        sdc_cpu_set_isa(isas[ii]);
        for (int oi = 0; oi < 11; oi++)
            for (int strided = 0; strided < 2; strided++) {
                const double lo = ops[oi] == SDC_OP_SQRT ? 0 : -9, hi = 9;
                sdc_tensor *a0 = t_new(SDC_TYPE_F32, 7, 257, 3, 1);
                t_fill(a0, lo, hi);
                sdc_tensor *a = strided ? t_permute(a0, 1, 0, 2, 3) : t_view(a0, a0->ne, a0->nb, 0);
                sdc_tensor *d = t_node(ops[oi], SDC_TYPE_F32, a->ne, a, NULL, NULL, NULL);
                d->params.f[0] = ops[oi] == SDC_OP_CLAMP ? -1.5f : 0.7f;
                d->params.f[1] = ops[oi] == SDC_OP_CLAMP ? 2.25f : -0.3f;
                double *ref = malloc(sizeof(double) * T_N(d));
                double maxrel = 0;
                int64_t k = 0;
                for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < a->ne[0]; i0++)
                            ref[k++] = ref_unary(ops[oi], t_get(a, i0, i1, i2, 0), d->params.f[0],
                                                 d->params.f[1]);
                t_run(d, 2);
                k = 0;
                for (int64_t i2 = 0; i2 < a->ne[2]; i2++)
                    for (int64_t i1 = 0; i1 < a->ne[1]; i1++)
                        for (int64_t i0 = 0; i0 < a->ne[0]; i0++, k++) {
                            double got = t_get(d, i0, i1, i2, 0);
                            /* relative, with an absolute floor where float rounding of tiny values
                             * dominates */
                            double rel = fabs(got - ref[k]) / (fabs(ref[k]) + 0.1);
                            if (!(rel <= maxrel)) maxrel = rel != rel ? INFINITY : rel;
                        }
                if (!strided)
                    printf("unary %-8s isa=%s: max err/(|ref|+0.1) %.3g\n", names[oi],
                           sdc_isa_name(isas[ii]), maxrel);
                CHECK(maxrel < 3e-6, "unary %s isa %d strided %d rel err %g", names[oi], ii,
                      strided, maxrel);
                free(ref), t_free(d), t_free(a), t_free(a0);
            }
    }
    sdc_cpu_set_isa(SDC_ISA_AVX512);
}

/* NaN inputs stay NaN on every path; -inf gives exp and sigmoid ~0 (the vector exp
 * saturates at e^88, so sigmoid(-inf) is 6e-39 there). */
static void test_unary_nan(void) {
    const sdc_op ops[4] = {SDC_OP_EXP, SDC_OP_SIGMOID, SDC_OP_GELU, SDC_OP_SILU};
    const sdc_isa isas[2] = {SDC_ISA_SCALAR,
                             sdc_cpu_isa_supported() == SDC_ISA_NEON ? SDC_ISA_NEON : SDC_ISA_AVX2};
    for (int ii = 0;
         ii < ((sdc_cpu_isa_supported() >= SDC_ISA_AVX2 || sdc_cpu_isa_supported() == SDC_ISA_NEON)
                   ? 2
                   : 1);
         ii++) {
        sdc_cpu_set_isa(isas[ii]);
        for (int oi = 0; oi < 4; oi++) {
            sdc_tensor *a = t_new(SDC_TYPE_F32, 16, 1, 1, 1);
            t_fill(a, -1, 1);
            ((float *)a->data)[3] = NAN, ((float *)a->data)[9] = -INFINITY;
            sdc_tensor *d = t_node(ops[oi], SDC_TYPE_F32, a->ne, a, NULL, NULL, NULL);
            t_run(d, 1);
            const float *o = d->data;
            CHECK(isnan(o[3]), "op %d isa %d: NaN in, %g out", (int)ops[oi], ii, o[3]);
            if (ops[oi] == SDC_OP_EXP || ops[oi] == SDC_OP_SIGMOID)
                CHECK(o[9] >= 0.0f && o[9] < 1e-30f, "op %d isa %d: -inf in, %g out", (int)ops[oi],
                      ii, o[9]);
            t_free(d), t_free(a);
        }
    }
    printf("unary NaN/-inf propagation checked\n");
    sdc_cpu_set_isa(SDC_ISA_AVX512);
}

int main(void) {
    test_binary();
    test_binary_long_f16();
    test_unary();
    test_unary_nan();
    TEST_MAIN_END();
}
