/* Rotary embedding (interleaved and half pairs, per-batch tables, strided x) and the
 * sinusoidal timestep embedding (cos first, odd dim) vs double-precision references. */
#include "core/ops.h"
#include "ops_test_common.h"

static void test_rope(void) {
    const int64_t D = 10, H = 3, L = 7, B = 2;
    for (int mode = 0; mode < 2; mode++)
        for (int per_batch = 0; per_batch < 2; per_batch++) {
            /* x as a permuted view: of [D, L, H, B] storage (rows contiguous), or of
             * [H, D, L, B] storage for per_batch (strided elements) */
            sdc_tensor *x0 =
                per_batch ? t_new(SDC_TYPE_F32, H, D, L, B) : t_new(SDC_TYPE_F32, D, L, H, B);
            t_fill(x0, -1, 1);
            sdc_tensor *x = per_batch ? t_permute(x0, 1, 0, 2, 3) : t_permute(x0, 0, 2, 1, 3);
            sdc_tensor *ct = t_new(SDC_TYPE_F32, D / 2, L, 1, per_batch ? B : 1);
            sdc_tensor *st = t_new(SDC_TYPE_F32, D / 2, L, 1, per_batch ? B : 1);
            for (int64_t b = 0; b < ct->ne[3]; b++)
                for (int64_t l = 0; l < L; l++)
                    for (int64_t i = 0; i < D / 2; i++) {
                        double ang = (l + 3 * b + 1) * pow(100.0, -2.0 * i / D);
                        t_set(ct, i, l, 0, b, cos(ang)), t_set(st, i, l, 0, b, sin(ang));
                    }
            sdc_tensor *d = t_node(SDC_OP_ROPE, SDC_TYPE_F32, x->ne, x, ct, st, NULL);
            d->params.i[0] = mode == 0 ? SDC_ROPE_INTERLEAVED : SDC_ROPE_HALF;
            double *ref = malloc(sizeof(double) * T_N(d));
            for (int64_t b = 0; b < B; b++)
                for (int64_t l = 0; l < L; l++)
                    for (int64_t h = 0; h < H; h++)
                        for (int64_t i = 0; i < D / 2; i++) {
                            int64_t j0 = mode == 0 ? 2 * i : i,
                                    j1 = mode == 0 ? 2 * i + 1 : i + D / 2;
                            double ang =
                                (l + 3 * (per_batch ? b : 0) + 1) * pow(100.0, -2.0 * i / D);
                            double x0v = t_get(x, j0, h, l, b), x1v = t_get(x, j1, h, l, b);
                            double *r = ref + ((b * L + l) * H + h) * D;
                            r[j0] = x0v * cos(ang) - x1v * sin(ang);
                            r[j1] = x0v * sin(ang) + x1v * cos(ang);
                        }
            t_run(d, 3);
            double e = t_max_err(d, ref);
            printf("rope %s tables per batch=%d: max err %g\n", mode ? "half" : "interleaved",
                   per_batch, e);
            CHECK(e < 1e-6, "rope err %g", e);
            free(ref), t_free(d), t_free(ct), t_free(st), t_free(x), t_free(x0);
        }
}

static void test_timestep(void) {
    const int dims[3] = {256, 7, 1};
    for (int di = 0; di < 3; di++) {
        const int dim = dims[di], maxp = 10000, half = dim / 2;
        sdc_tensor *t = t_new(SDC_TYPE_F32, 3, 1, 1, 1);
        float ts[3] = {999.0f, 1.5f, 0.0f};
        memcpy(t->data, ts, sizeof ts);
        int64_t ne[4] = {dim, 3, 1, 1};
        sdc_tensor *d = t_node(SDC_OP_TIMESTEP_EMBED, SDC_TYPE_F32, ne, t, NULL, NULL, NULL);
        d->params.i[0] = dim, d->params.i[1] = maxp, d->params.f[2] = 1.0f;
        double *ref = malloc(sizeof(double) * T_N(d));
        for (int r = 0; r < 3; r++) {
            for (int k = 0; k < half; k++) {
                double arg = ts[r] * exp(-log((double)maxp) * k / half);
                ref[r * dim + k] = cos(arg);
                ref[r * dim + half + k] = sin(arg);
            }
            if (dim % 2) ref[r * dim + dim - 1] = 0;
        }
        memset(d->data, 0x7f, sdc_tensor_nbytes(d));
        t_run(d, 2);
        /* float arguments reach ~1000 rad: allow the float rounding of the argument */
        double e = t_max_err(d, ref);
        printf("timestep_embedding dim=%d: max err %g\n", dim, e);
        CHECK(e < 2e-4, "timestep err %g", e);
        free(ref), t_free(d), t_free(t);
    }
}

int main(void) {
    test_rope();
    test_timestep();
    TEST_MAIN_END();
}
