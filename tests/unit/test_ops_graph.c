/* The op builders through graphs on the CPU backend with 2 threads: each result vs a
 * double-precision reference computed here from the inputs; and the builders' shape
 * checks (errors recorded in the graph, NULL propagation). */
#include "core/backend.h"
#include "core/ops.h"
#include "ops_test_common.h"

static sdc_backend *g_be;
static void *g_bufs[64];
static int g_nbufs;

static sdc_tensor *input(sdc_graph *g, sdc_type type, int64_t n0, int64_t n1, int64_t n2,
                         int64_t n3, double lo, double hi) {
    int64_t ne[4] = {n0, n1, n2, n3};
    sdc_tensor *t = sdc_graph_input(g, type, 4, ne);
    t->data = g_bufs[g_nbufs++] = calloc(1, sdc_tensor_nbytes(t));
    if (type != SDC_TYPE_I32) t_fill(t, lo, hi);
    return t;
}

static void free_bufs(void) {
    while (g_nbufs) free(g_bufs[--g_nbufs]);
}

static bool compute(sdc_graph *g, sdc_tensor *out) {
    CHECK(out != NULL && sdc_graph_status(g) == SDC_OK, "build: %s", sdc_graph_error(g));
    if (!out) return false;
    sdc_graph_mark_output(g, out);
    sdc_status s = sdc_backend_compute(g_be, g, NULL, NULL);
    CHECK(s == SDC_OK, "compute: %s", sdc_last_error());
    return s == SDC_OK;
}

static void report(const char *what, const sdc_tensor *out, const double *ref, double tol) {
    double e = t_max_err(out, ref);
    printf("graph %-34s max err %.3g\n", what, e);
    CHECK(e <= tol, "%s: err %g > %g", what, e, tol);
}

/* permute + cont, transpose + cast, slice + cont, reshape */
static void test_layout(void) {
    sdc_graph *g = sdc_graph_create();
    sdc_tensor *x = input(g, SDC_TYPE_F32, 6, 5, 4, 3, -1, 1);
    sdc_tensor *p = sdc_cont(g, sdc_permute(g, x, 2, 0, 3, 1)); /* out dim i = in dim ax[i] */
    int64_t sne[4] = {3, 2, 4, 2}, soff[4] = {2, 1, 0, 1};
    sdc_tensor *s = sdc_cast(g, sdc_slice(g, sdc_transpose(g, x), sne, soff), SDC_TYPE_F16);
    sdc_tensor *r = sdc_reshape_2d(g, p, 4 * 6, 3 * 5);
    sdc_tensor *r2 = sdc_cont(g, r);
    sdc_graph_mark_output(g, s);
    if (compute(g, r2)) {
        double *ref = malloc(sizeof(double) * 360);
        int64_t k = 0;
        for (int64_t j3 = 0; j3 < 5; j3++)         /* p dim 3 = x dim 1 */
            for (int64_t j2 = 0; j2 < 3; j2++)     /* p dim 2 = x dim 3 */
                for (int64_t j1 = 0; j1 < 6; j1++) /* p dim 1 = x dim 0 */
                    for (int64_t j0 = 0; j0 < 4; j0++) ref[k++] = t_get(x, j1, j3, j0, j2);
        CHECK(p->ne[0] == 4 && p->ne[1] == 6 && p->ne[2] == 3 && p->ne[3] == 5, "permute shape");
        report("permute(2,0,3,1)+cont", p, ref, 0);
        report("reshape_2d+cont", r2, ref, 0);
        k = 0;
        for (int64_t i3 = 0; i3 < 2; i3++)
            for (int64_t i2 = 0; i2 < 4; i2++)
                for (int64_t i1 = 0; i1 < 2; i1++)
                    for (int64_t i0 = 0; i0 < 3; i0++) /* transpose: (i0,i1) of x^T = x(i1,i0) */
                        ref[k++] = sdc_fp16_to_f32(
                            sdc_f32_to_fp16((float)t_get(x, i1 + 1, i0 + 2, i2, i3 + 1)));
        report("transpose+slice+cast f16", s, ref, 0);
        free(ref);
    }
    sdc_graph_free(g);
    free_bufs();
}

static void test_copy_ops(void) {
    sdc_graph *g = sdc_graph_create();
    sdc_tensor *a = input(g, SDC_TYPE_F32, 4, 3, 2, 1, -1, 1);
    sdc_tensor *b = input(g, SDC_TYPE_F32, 4, 2, 2, 1, -1, 1);
    sdc_tensor *c = sdc_concat(g, a, b, 1);
    int64_t rne[4] = {8, 5, 4, 2};
    sdc_tensor *rep = sdc_repeat(g, c, rne);
    sdc_tensor *pad = sdc_pad(g, a, 1, 2, 0, 1);
    sdc_tensor *up = sdc_upsample_nearest(g, a, 2);
    sdc_tensor *tab = input(g, SDC_TYPE_F16, 8, 5, 1, 1, -1, 1);
    sdc_tensor *ids = input(g, SDC_TYPE_I32, 3, 1, 1, 1, 0, 0);
    int32_t idv[3] = {4, 0, 2};
    memcpy(ids->data, idv, sizeof idv);
    sdc_tensor *rows = sdc_get_rows(g, tab, ids);
    sdc_graph_mark_output(g, pad), sdc_graph_mark_output(g, up), sdc_graph_mark_output(g, rows);
    if (compute(g, rep)) {
        double ref[400];
        int64_t k = 0;
        for (int64_t i3 = 0; i3 < 2; i3++)
            for (int64_t i2 = 0; i2 < 4; i2++)
                for (int64_t i1 = 0; i1 < 5; i1++)
                    for (int64_t i0 = 0; i0 < 8; i0++) {
                        int64_t j0 = i0 % 4, j1 = i1 % 5, j2 = i2 % 2;
                        ref[k++] = j1 < 3 ? t_get(a, j0, j1, j2, 0) : t_get(b, j0, j1 - 3, j2, 0);
                    }
        report("concat(dim 1)+repeat", rep, ref, 0);
        k = 0;
        for (int64_t i3 = 0; i3 < 2; i3++)
            for (int64_t i2 = 0; i2 < 2; i2++)
                for (int64_t i1 = 0; i1 < 5; i1++)
                    for (int64_t i0 = 0; i0 < 5; i0++)
                        ref[k++] = i0 < 4 && i1 < 3 && i3 < 1 ? t_get(a, i0, i1, i2, i3) : 0;
        report("pad(1,2,0,1)", pad, ref, 0);
        k = 0;
        for (int64_t i2 = 0; i2 < 2; i2++)
            for (int64_t i1 = 0; i1 < 6; i1++)
                for (int64_t i0 = 0; i0 < 8; i0++) ref[k++] = t_get(a, i0 / 2, i1 / 2, i2, 0);
        report("upsample_nearest x2", up, ref, 0);
        k = 0;
        for (int j = 0; j < 3; j++)
            for (int64_t i0 = 0; i0 < 8; i0++) ref[k++] = t_get(tab, i0, idv[j], 0, 0);
        report("get_rows f16", rows, ref, 0);
    }
    sdc_graph_free(g);
    free_bufs();
}

static double gelu_ref(double x) {
    return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static void test_elementwise(void) {
    sdc_graph *g = sdc_graph_create();
    sdc_tensor *a0 = input(g, SDC_TYPE_F32, 7, 33, 3, 2, -2, 2);
    sdc_tensor *a = sdc_transpose(g, a0); /* [33,7,3,2] strided */
    sdc_tensor *b = input(g, SDC_TYPE_F32, 33, 1, 3, 1, 0.5, 2);
    sdc_tensor *t = sdc_div(g, sdc_sub(g, sdc_mul(g, sdc_add(g, a, b), b), b), b);
    sdc_tensor *u = sdc_clamp(g, sdc_gelu(g, sdc_scale(g, t, 1.5f, -0.25f)), -0.1f, 2.0f);
    sdc_tensor *m = sdc_mean(g, u);
    sdc_tensor *s = sdc_sum_rows(g, sdc_silu(g, a));
    sdc_graph_mark_output(g, u), sdc_graph_mark_output(g, s);
    if (compute(g, m)) {
        double *ref = malloc(sizeof(double) * 33 * 42), mref[42], sref[42];
        int64_t k = 0, r = 0;
        for (int64_t i3 = 0; i3 < 2; i3++)
            for (int64_t i2 = 0; i2 < 3; i2++)
                for (int64_t i1 = 0; i1 < 7; i1++, r++) {
                    double sum = 0, ssum = 0;
                    for (int64_t i0 = 0; i0 < 33; i0++) {
                        double x = t_get(a0, i1, i0, i2, i3), y = t_get(b, i0, 0, i2, 0);
                        double v = ((x + y) * y - y) / y;
                        v = gelu_ref(v * 1.5 - 0.25);
                        v = v < -0.1 ? -0.1 : v > 2.0 ? 2.0 : v;
                        ref[k++] = v, sum += v;
                        ssum += x / (1 + exp(-x));
                    }
                    mref[r] = sum / 33, sref[r] = ssum;
                }
        report("add/mul/sub/div bcast+scale+gelu+clamp", u, ref, 2e-6);
        report("mean", m, mref, 1e-6);
        report("silu+sum_rows", s, sref, 1e-5);
        free(ref);
    }
    sdc_graph_free(g);
    free_bufs();
}

static void test_norms(void) {
    sdc_graph *g = sdc_graph_create();
    const int64_t W = 5, H = 4, C = 6, N = 2, G = 3;
    sdc_tensor *x = input(g, SDC_TYPE_F32, W, H, C, N, -1, 3);
    sdc_tensor *w = input(g, SDC_TYPE_F32, C, 1, 1, 1, 0.5, 1.5);
    sdc_tensor *b = input(g, SDC_TYPE_F32, C, 1, 1, 1, -1, 1);
    sdc_tensor *gn = sdc_group_norm(g, x, (int)G, w, b, 1e-6f);
    sdc_tensor *lw = input(g, SDC_TYPE_F32, W, 1, 1, 1, 0.5, 1.5);
    sdc_tensor *ln = sdc_layer_norm(g, x, lw, NULL, 1e-5f);
    sdc_tensor *rn = sdc_rms_norm(g, x, lw, 1e-5f);
    sdc_tensor *mask = input(g, SDC_TYPE_F16, W, H, 1, N, -1, 1);
    t_set(mask, 2, 1, 0, 1, -INFINITY);
    sdc_tensor *sm = sdc_softmax(g, x, mask, 0.5f);
    /* group norm of a [L,C,N] tensor: channel axis 1 */
    sdc_tensor *x3 = input(g, SDC_TYPE_F32, W, C, N, 1, -1, 3);
    sdc_tensor *gn3 = sdc_group_norm(g, x3, (int)G, w, b, 1e-6f);
    sdc_graph_mark_output(g, ln), sdc_graph_mark_output(g, rn), sdc_graph_mark_output(g, sm);
    sdc_graph_mark_output(g, gn3);
    if (compute(g, gn)) {
        double ref[W * H * C * N], ref3[W * C * N];
        for (int64_t n = 0; n < N; n++)
            for (int64_t gi = 0; gi < G; gi++)
                for (int three = 0; three < 2; three++) {
                    double s = 0, ss = 0, cnt = 0;
                    const int64_t hh = three ? 1 : H;
                    for (int pass = 0; pass < 3; pass++)
                        for (int64_t c = gi * 2; c < gi * 2 + 2; c++)
                            for (int64_t y = 0; y < hh; y++)
                                for (int64_t i = 0; i < W; i++) {
                                    double v = three ? t_get(x3, i, c, n, 0) : t_get(x, i, y, c, n);
                                    if (pass == 0)
                                        s += v, cnt++;
                                    else if (pass == 1)
                                        ss += (v - s / cnt) * (v - s / cnt);
                                    else {
                                        double o = (v - s / cnt) / sqrt(ss / cnt + 1e-6) *
                                                       t_get(w, c, 0, 0, 0) +
                                                   t_get(b, c, 0, 0, 0);
                                        if (three)
                                            ref3[(n * C + c) * W + i] = o;
                                        else
                                            ref[((n * C + c) * H + y) * W + i] = o;
                                    }
                                }
                }
        report("group_norm [W,H,C,N]", gn, ref, 2e-5);
        report("group_norm [L,C,N]", gn3, ref3, 2e-5);
        double lref[W * H * C * N], rref[W * H * C * N], sref[W * H * C * N];
        for (int64_t r = 0; r < H * C * N; r++) {
            const int64_t i1 = r % H, i2 = (r / H) % C, i3 = r / (H * C);
            double mean = 0, var = 0, sq = 0, mx = -INFINITY, den = 0, e[W];
            for (int64_t i = 0; i < W; i++) mean += t_get(x, i, i1, i2, i3) / W;
            for (int64_t i = 0; i < W; i++) {
                double v = t_get(x, i, i1, i2, i3);
                var += (v - mean) * (v - mean) / W, sq += v * v / W;
                e[i] = v * 0.5 + t_get(mask, i, i1, 0, i3);
                if (e[i] > mx) mx = e[i];
            }
            for (int64_t i = 0; i < W; i++) den += e[i] = exp(e[i] - mx);
            for (int64_t i = 0; i < W; i++) {
                double v = t_get(x, i, i1, i2, i3), lwv = t_get(lw, i, 0, 0, 0);
                lref[r * W + i] = (v - mean) / sqrt(var + 1e-5) * lwv;
                rref[r * W + i] = v / sqrt(sq + 1e-5) * lwv;
                sref[r * W + i] = e[i] / den;
            }
        }
        report("layer_norm (w, no b)", ln, lref, 2e-5);
        report("rms_norm", rn, rref, 2e-5);
        report("softmax f16 mask bcast dim 2", sm, sref, 1e-6);
    }
    sdc_graph_free(g);
    free_bufs();
}

static void test_positions(void) {
    sdc_graph *g = sdc_graph_create();
    const int64_t D = 8, Hh = 2, L = 5;
    sdc_tensor *x = input(g, SDC_TYPE_F32, D, Hh, L, 1, -1, 1);
    sdc_tensor *ct = input(g, SDC_TYPE_F32, D / 2, L, 1, 1, -1, 1);
    sdc_tensor *st = input(g, SDC_TYPE_F32, D / 2, L, 1, 1, -1, 1);
    sdc_tensor *r = sdc_rope(g, x, ct, st, SDC_ROPE_HALF);
    sdc_tensor *t = input(g, SDC_TYPE_F32, 2, 1, 1, 1, 0, 1000);
    sdc_tensor *te = sdc_timestep_embedding(g, t, 9, 10000);
    sdc_graph_mark_output(g, r);
    if (compute(g, te)) {
        double ref[D * Hh * L], tref[18];
        for (int64_t l = 0; l < L; l++)
            for (int64_t h = 0; h < Hh; h++)
                for (int64_t i = 0; i < D / 2; i++) {
                    double c = t_get(ct, i, l, 0, 0), s = t_get(st, i, l, 0, 0);
                    double x0 = t_get(x, i, h, l, 0), x1 = t_get(x, i + D / 2, h, l, 0);
                    ref[(l * Hh + h) * D + i] = x0 * c - x1 * s;
                    ref[(l * Hh + h) * D + i + D / 2] = x0 * s + x1 * c;
                }
        report("rope half", r, ref, 1e-6);
        for (int j = 0; j < 2; j++) {
            for (int k = 0; k < 4; k++) {
                double arg = t_get(t, j, 0, 0, 0) * exp(-log(10000.0) * k / 4);
                tref[j * 9 + k] = cos(arg), tref[j * 9 + 4 + k] = sin(arg);
            }
            tref[j * 9 + 8] = 0;
        }
        report("timestep_embedding dim 9", te, tref, 2e-4);
    }
    sdc_graph_free(g);
    free_bufs();
}

static void test_heavy(void) {
    sdc_graph *g = sdc_graph_create();
    const int64_t D = 16, Lq = 53, Lk = 29, H = 4, Hk = 2;
    sdc_tensor *q = input(g, SDC_TYPE_F32, D, Lq, H, 1, -1, 1);
    sdc_tensor *k = input(g, SDC_TYPE_F16, D, Lk, Hk, 1, -1, 1);
    sdc_tensor *v = input(g, SDC_TYPE_F16, D, Lk, Hk, 1, -1, 1);
    sdc_tensor *m = input(g, SDC_TYPE_F32, Lk, Lq, 1, 1, -1, 1);
    t_set(m, 3, 0, 0, 0, -INFINITY);
    sdc_tensor *att = sdc_attention(g, q, k, v, m, 0.25f);
    sdc_tensor *x = input(g, SDC_TYPE_F32, 11, 9, 6, 1, -1, 1);
    sdc_tensor *w = input(g, SDC_TYPE_F16, 3, 3, 3, 4, -0.5, 0.5);
    sdc_tensor *bias = input(g, SDC_TYPE_F32, 4, 1, 1, 1, -1, 1);
    sdc_tensor *cv = sdc_conv2d(g, x, w, bias, 2, 1, 1, 2, 1, 2, 2);
    sdc_graph_mark_output(g, att);
    if (compute(g, cv)) {
        double *ref = malloc(sizeof(double) * D * H * Lq), s[64];
        for (int64_t i = 0; i < Lq; i++)
            for (int64_t h = 0; h < H; h++) {
                double mx = -INFINITY, den = 0;
                for (int64_t j = 0; j < Lk; j++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += t_get(q, d, i, h, 0) * t_get(k, d, j, h / 2, 0);
                    s[j] = dot * 0.25 + t_get(m, j, i, 0, 0);
                    if (s[j] > mx) mx = s[j];
                }
                for (int64_t j = 0; j < Lk; j++) den += s[j] = exp(s[j] - mx);
                for (int64_t d = 0; d < D; d++) {
                    double o = 0;
                    for (int64_t j = 0; j < Lk; j++) o += s[j] * t_get(v, d, j, h / 2, 0);
                    ref[(i * H + h) * D + d] = o / den;
                }
            }
        report("attention GQA f16 kv + mask", att, ref, 2e-5);
        /* conv: stride (2,1) pad (1,2) dilation (1,2) groups 2 */
        const int64_t ow = (11 + 2 - 3) / 2 + 1, oh = (9 + 4 - 4 - 1) / 1 + 1;
        CHECK(cv->ne[0] == ow && cv->ne[1] == oh && cv->ne[2] == 4, "conv2d shape");
        double *cref = malloc(sizeof(double) * (size_t)(ow * oh * 4));
        for (int64_t co = 0; co < 4; co++)
            for (int64_t oy = 0; oy < oh; oy++)
                for (int64_t ox = 0; ox < ow; ox++) {
                    double acc = t_get(bias, co, 0, 0, 0);
                    for (int64_t ci = 0; ci < 3; ci++)
                        for (int64_t ky = 0; ky < 3; ky++)
                            for (int64_t kx = 0; kx < 3; kx++) {
                                int64_t ix = ox * 2 - 1 + kx, iy = oy - 2 + ky * 2;
                                if (ix < 0 || ix >= 11 || iy < 0 || iy >= 9) continue;
                                acc += t_get(w, kx, ky, ci, co) *
                                       t_get(x, ix, iy, (co / 2) * 3 + ci, 0);
                            }
                    cref[(co * oh + oy) * ow + ox] = acc;
                }
        report("conv2d s(2,1) p(1,2) d(1,2) g2 f16 w", cv, cref, 2e-5);
        free(cref), free(ref);
    }
    sdc_graph_free(g);
    free_bufs();
}

static void expect_error(sdc_graph *g, sdc_tensor *t, const char *what) {
    CHECK(t == NULL && sdc_graph_status(g) != SDC_OK, "%s: expected a build error", what);
    printf("builder error (%s): %s\n", what, sdc_graph_error(g));
}

static void test_builder_errors(void) {
    struct {
        const char *what;
        int which;
    } cases[] = {{"add non-dividing", 0},  {"matmul K mismatch", 1}, {"concat shapes", 2},
                 {"reshape count", 3},     {"attention Dk", 4},      {"conv2d kernel > input", 5},
                 {"group_norm groups", 6}, {"rope tables", 7},       {"softmax mask", 8},
                 {"permute axes", 9},      {"slice bounds", 10},     {"get_rows ids type", 11}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sdc_graph *g = sdc_graph_create();
        sdc_tensor *a = input(g, SDC_TYPE_F32, 6, 4, 2, 1, -1, 1);
        sdc_tensor *b = input(g, SDC_TYPE_F32, 4, 4, 2, 1, -1, 1);
        sdc_tensor *t = NULL;
        int64_t ne[4] = {5, 5, 1, 1}, off[4] = {2, 0, 0, 0};
        switch (cases[c].which) {
        case 0:
            t = sdc_add(g, a, b);
            break;
        case 1:
            t = sdc_matmul(g, b, a);
            break;
        case 2:
            t = sdc_concat(g, a, b, 1);
            break;
        case 3:
            t = sdc_reshape(g, a, 2, ne);
            break;
        case 4:
            t = sdc_attention(g, a, b, b, NULL, 1.0f);
            break;
        case 5:
            t = sdc_conv2d(g, b, a, NULL, 1, 1, 0, 0, 1, 1, 1);
            break;
        case 6:
            t = sdc_group_norm(g, a, 3, NULL, NULL, 1e-5f);
            break;
        case 7:
            t = sdc_rope(g, a, b, b, SDC_ROPE_HALF);
            break;
        case 8:
            t = sdc_softmax(g, a, b, 1.0f);
            break;
        case 9:
            t = sdc_permute(g, a, 0, 1, 1, 3);
            break;
        case 10:
            t = sdc_slice(g, a, ne, off);
            break;
        case 11:
            t = sdc_get_rows(g, a, b);
            break;
        }
        expect_error(g, t, cases[c].what);
        /* later builders given the NULL return NULL; the first error is kept */
        char first[256];
        snprintf(first, sizeof first, "%s", sdc_graph_error(g));
        CHECK(sdc_silu(g, t) == NULL && strcmp(first, sdc_graph_error(g)) == 0,
              "NULL propagates, first error kept");
        sdc_graph_free(g);
        free_bufs();
    }
}

int main(void) {
    g_be = sdc_backend_cpu_create(2);
    CHECK(g_be != NULL, "cpu backend");
    if (!g_be) TEST_MAIN_END();
    test_layout();
    test_copy_ops();
    test_elementwise();
    test_norms();
    test_positions();
    test_heavy();
    test_builder_errors();
    sdc_backend_free(g_be);
    TEST_MAIN_END();
}
