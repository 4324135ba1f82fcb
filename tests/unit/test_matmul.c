/* sdc_cpu_matmul for every weight type, odd sizes, broadcast batches, strided x, one and
 * two threads and every SIMD level this CPU runs, against a double-precision naive
 * product over the weights dequantised by the type traits' to_float. Also
 * sdc_gemm_f32_nt with and without accumulation (threads: the pool, nth 1..3). Error is measured
 * per output relative to sum_k |w||x| (the scale of the rounding error of any summation order). */
#include "core/fp16.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_ops.h"
#include "cpu/gemm.h"
#include "test_util.h"

static unsigned long long g_seed = 0x9e3779b97f4a7c15ull;

/* Offsets of the fp16 scale fields in each block: random bytes elsewhere are valid
 * quants, but a random fp16 scale may be inf or nan. */
static void scale_offsets(sdc_type t, int *off, int *n) {
    *n = 0;
    switch (t) {
    case SDC_TYPE_Q4_0:
    case SDC_TYPE_Q5_0:
    case SDC_TYPE_Q8_0:
        off[(*n)++] = 0;
        break;
    case SDC_TYPE_Q4_1:
    case SDC_TYPE_Q5_1:
    case SDC_TYPE_Q4_K:
    case SDC_TYPE_Q5_K:
        off[(*n)++] = 0, off[(*n)++] = 2;
        break;
    case SDC_TYPE_Q2_K:
        off[(*n)++] = 80, off[(*n)++] = 82;
        break;
    case SDC_TYPE_Q3_K:
        off[(*n)++] = 108;
        break;
    case SDC_TYPE_Q6_K:
        off[(*n)++] = 208;
        break;
    default:
        break;
    }
}

/* Random weight data of n elements: quantised types get random quants with sane scales
 * (independent of the quantiser). */
static void fill_weights(sdc_type t, void *data, int64_t n) {
    const sdc_type_traits *tr = sdc_type_get(t);
    if (t == SDC_TYPE_F32) {
        for (int64_t i = 0; i < n; i++) ((float *)data)[i] = t_randf(&g_seed);
    } else if (t == SDC_TYPE_F16) {
        for (int64_t i = 0; i < n; i++) ((sdc_fp16 *)data)[i] = sdc_f32_to_fp16(t_randf(&g_seed));
    } else if (t == SDC_TYPE_BF16) {
        for (int64_t i = 0; i < n; i++) ((sdc_bf16 *)data)[i] = sdc_f32_to_bf16(t_randf(&g_seed));
    } else {
        int64_t nblocks = n / tr->block_size;
        unsigned char *b = data;
        for (size_t i = 0; i < (size_t)nblocks * tr->block_bytes; i++)
            b[i] = (unsigned char)(t_randf(&g_seed) * 128 + 128);
        int off[2], no;
        scale_offsets(t, off, &no);
        for (int64_t k = 0; k < nblocks; k++)
            for (int j = 0; j < no; j++) {
                sdc_fp16 h = sdc_f32_to_fp16(0.02f + 0.01f * t_randf(&g_seed));
                memcpy(b + (size_t)k * tr->block_bytes + off[j], &h, 2);
            }
    }
}

/* nth = 1 calls the kernel directly; more threads run it on a pool, as the executor does */
static sdc_threadpool *g_pool[4];

typedef struct {
    sdc_tensor *dst;
    void *work;
    size_t ws;
} run_arg;

static void run_task(void *v, int ith, int nth) {
    run_arg *a = v;
    sdc_cpu_params p = {ith, nth, a->work, a->ws, g_pool[nth]};
    sdc_cpu_matmul(&p, a->dst);
}

static void run_matmul(sdc_tensor *dst, int nth) {
    run_arg a = {dst, NULL, sdc_cpu_matmul_work_size(dst, nth)};
    a.work = malloc(a.ws ? a.ws : 1);
    if (nth == 1) {
        run_task(&a, 0, 1);
    } else {
        if (!g_pool[nth]) g_pool[nth] = sdc_threadpool_create(nth);
        sdc_threadpool_run(g_pool[nth], run_task, &a);
    }
    free(a.work);
}

static int g_isas[3], g_nisa;

typedef struct {
    int64_t M, N, K, w2, w3, b2, b3, xpad;
    int xperm; /* x stored as [K, b2, M, b3] (a permuted view): nb[2] < nb[1] */
} mm_case;

static double test_case(sdc_type t, mm_case c, int max_nth) {
    const sdc_type_traits *tr = sdc_type_get(t);
    sdc_tensor w = {0}, x = {0}, dst = {0};
    w.type = t;
    w.ne[0] = c.K, w.ne[1] = c.N, w.ne[2] = c.w2, w.ne[3] = c.w3;
    sdc_tensor_set_contiguous_strides(&w);
    size_t wbytes = sdc_type_row_bytes(t, c.K) * (size_t)(c.N * c.w2 * c.w3);
    w.data = malloc(wbytes + 1);
    fill_weights(t, w.data, c.K * c.N * c.w2 * c.w3);

    /* x with padded rows and a gap between batch items */
    x.type = SDC_TYPE_F32;
    x.ne[0] = c.K, x.ne[1] = c.M, x.ne[2] = c.b2, x.ne[3] = c.b3;
    x.nb[0] = 4, x.nb[1] = (size_t)(c.K + c.xpad) * 4;
    x.nb[2] = x.nb[1] * (size_t)c.M + (size_t)c.xpad * 12, x.nb[3] = x.nb[2] * (size_t)c.b2;
    if (c.xperm) {
        x.nb[2] = (size_t)(c.K + c.xpad) * 4, x.nb[1] = x.nb[2] * (size_t)c.b2;
        x.nb[3] = x.nb[1] * (size_t)c.M;
    }
    size_t xfloats = x.nb[3] * (size_t)c.b3 / 4;
    float *xd = malloc(xfloats * 4 + 4);
    for (size_t i = 0; i < xfloats; i++) xd[i] = t_randf(&g_seed);
    x.data = xd;

    dst.type = SDC_TYPE_F32;
    dst.ne[0] = c.N, dst.ne[1] = c.M, dst.ne[2] = c.b2, dst.ne[3] = c.b3;
    sdc_tensor_set_contiguous_strides(&dst);
    int64_t nout = c.N * c.M * c.b2 * c.b3;
    float *out = malloc((size_t)nout * 4 + 4);
    dst.data = out;
    dst.op = SDC_OP_MATMUL;
    dst.src[0] = &w, dst.src[1] = &x;

    /* reference over the dequantised weights */
    int64_t nw = c.K * c.N * c.w2 * c.w3;
    float *wf = malloc((size_t)nw * 4 + 4);
    size_t rb = sdc_type_row_bytes(t, c.K);
    for (int64_t r = 0; r < c.N * c.w2 * c.w3; r++)
        tr->to_float((const char *)w.data + r * rb, wf + r * c.K, c.K);
    double *ref = malloc((size_t)nout * 8 + 8), *mag = malloc((size_t)nout * 8 + 8);
    for (int64_t i3 = 0; i3 < c.b3; i3++)
        for (int64_t i2 = 0; i2 < c.b2; i2++) {
            const float *ws = wf + ((i3 / (c.b3 / c.w3)) * c.w2 + i2 / (c.b2 / c.w2)) * c.N * c.K;
            for (int64_t m = 0; m < c.M; m++) {
                const float *xr = (const float *)((const char *)x.data + m * x.nb[1] +
                                                  i2 * x.nb[2] + i3 * x.nb[3]);
                for (int64_t n = 0; n < c.N; n++) {
                    double s = 0, a = 0;
                    for (int64_t k = 0; k < c.K; k++) {
                        double p = (double)ws[n * c.K + k] * xr[k];
                        s += p, a += fabs(p);
                    }
                    int64_t o = ((i3 * c.b2 + i2) * c.M + m) * c.N + n;
                    ref[o] = s, mag[o] = a;
                }
            }
        }

    double tol = 5e-7 * sqrt((double)c.K) + 1e-6, worst = 0;
    for (int ii = 0; ii < g_nisa; ii++) {
        sdc_cpu_set_isa((sdc_isa)g_isas[ii]);
        for (int nth = 1; nth <= max_nth; nth++) {
            for (int64_t i = 0; i < nout; i++) out[i] = NAN;
            run_matmul(&dst, nth);
            double maxe = 0;
            for (int64_t i = 0; i < nout; i++) {
                double e = fabs(out[i] - ref[i]) / (mag[i] + 1e-30);
                if (!(e <= maxe)) maxe = e; /* NaN (unwritten output) wins */
            }
            CHECK(maxe <= tol,
                  "%s M=%lld N=%lld K=%lld batch w[%lld,%lld] x[%lld,%lld] %s nth=%d: "
                  "rel err %.3g > %.3g",
                  tr->name, (long long)c.M, (long long)c.N, (long long)c.K, (long long)c.w2,
                  (long long)c.w3, (long long)c.b2, (long long)c.b3,
                  sdc_isa_name((sdc_isa)g_isas[ii]), nth, maxe, tol);
            if (!(maxe <= worst)) worst = maxe;
        }
    }
    free(w.data), free(xd), free(out), free(wf), free(ref), free(mag);
    return worst;
}

static void test_gemm_nt(void) {
    static const int64_t sz[][3] = {{1, 1, 1},     {5, 17, 33},    {8, 16, 8},
                                    {37, 50, 300}, {150, 70, 513}, {13, 300, 40}};
    double worst = 0;
    int count = 0;
    for (size_t s = 0; s < sizeof sz / sizeof sz[0]; s++) {
        int64_t m = sz[s][0], n = sz[s][1], k = sz[s][2];
        int64_t lda = k + 3, ldb = k + 5, ldc = n + 2;
        float *A = malloc((size_t)(m * lda) * 4), *B = malloc((size_t)(n * ldb) * 4);
        float *C0 = malloc((size_t)(m * ldc) * 4), *C = malloc((size_t)(m * ldc) * 4);
        for (int64_t i = 0; i < m * lda; i++) A[i] = t_randf(&g_seed);
        for (int64_t i = 0; i < n * ldb; i++) B[i] = t_randf(&g_seed);
        for (int64_t i = 0; i < m * ldc; i++) C0[i] = t_randf(&g_seed);
        double tol = 5e-7 * sqrt((double)k) + 1e-6;
        for (int ii = 0; ii < g_nisa; ii++) {
            sdc_cpu_set_isa((sdc_isa)g_isas[ii]);
            for (int acc = 0; acc <= 1; acc++) {
                memcpy(C, C0, (size_t)(m * ldc) * 4);
                sdc_gemm_f32_nt(m, n, k, A, lda, B, ldb, C, ldc, acc);
                double maxe = 0, pad_ok = 1;
                for (int64_t i = 0; i < m; i++) {
                    for (int64_t j = 0; j < n; j++) {
                        double s = acc ? C0[i * ldc + j] : 0, a = fabs(s);
                        for (int64_t kk = 0; kk < k; kk++) {
                            double p = (double)A[i * lda + kk] * B[j * ldb + kk];
                            s += p, a += fabs(p);
                        }
                        double e = fabs(C[i * ldc + j] - s) / (a + 1e-30);
                        if (!(e <= maxe)) maxe = e;
                    }
                    for (int64_t j = n; j < ldc; j++)
                        pad_ok = pad_ok && C[i * ldc + j] == C0[i * ldc + j];
                }
                CHECK(maxe <= tol, "gemm_f32_nt m=%lld n=%lld k=%lld acc=%d %s: rel err %.3g",
                      (long long)m, (long long)n, (long long)k, acc,
                      sdc_isa_name((sdc_isa)g_isas[ii]), maxe);
                CHECK(pad_ok, "gemm_f32_nt wrote outside the n columns (m=%lld n=%lld)",
                      (long long)m, (long long)n);
                if (maxe > worst) worst = maxe;
                count++;
            }
        }
        free(A), free(B), free(C0), free(C);
    }
    printf("gemm_f32_nt: %d runs, max rel err %.3g\n", count, worst);
}

int main(void) {
    sdc_isa top = sdc_cpu_isa_supported();
    g_isas[g_nisa++] = SDC_ISA_SCALAR;
    if (top >= SDC_ISA_AVX && top != SDC_ISA_NEON) g_isas[g_nisa++] = SDC_ISA_AVX;
    if (top >= SDC_ISA_AVX2 && top != SDC_ISA_NEON) g_isas[g_nisa++] = SDC_ISA_AVX2;
    if (top == SDC_ISA_NEON) g_isas[g_nisa++] = SDC_ISA_NEON;
    printf("ISA levels tested:");
    for (int i = 0; i < g_nisa; i++) printf(" %s", sdc_isa_name((sdc_isa)g_isas[i]));
    printf("\n");

    static const sdc_type types[] = {SDC_TYPE_F32,  SDC_TYPE_F16,  SDC_TYPE_BF16, SDC_TYPE_Q4_0,
                                     SDC_TYPE_Q4_1, SDC_TYPE_Q5_0, SDC_TYPE_Q5_1, SDC_TYPE_Q8_0,
                                     SDC_TYPE_Q2_K, SDC_TYPE_Q3_K, SDC_TYPE_Q4_K, SDC_TYPE_Q5_K,
                                     SDC_TYPE_Q6_K};
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        sdc_type t = types[ti];
        int64_t bs = sdc_type_get(t)->block_size;
        /* k sizes: odd for plain types, block multiples (crossing the 256 k block) else */
        int64_t k1 = bs == 1 ? 7 : bs, k2 = bs == 1 ? 300 : (bs == 32 ? 320 : 512);
        int64_t k3 = bs == 1 ? 33 : 3 * bs;
        mm_case cases[] = {
            {1, 1, k1, 1, 1, 1, 1, 0, 0},   {1, 31, k3, 1, 1, 1, 1, 5, 0},
            {7, 7, k2, 1, 1, 1, 1, 0, 0},   {31, 130, k2, 1, 1, 1, 1, 3, 0},
            {257, 7, k3, 1, 1, 1, 1, 1, 0}, {9, 17, k3, 1, 2, 3, 2, 2, 0},
            {3, 33, k1, 2, 1, 2, 1, 0, 0},  {20, 31, k2, 2, 1, 4, 1, 4, 0},
            {11, 40, k3, 1, 1, 3, 2, 1, 1},
        };
        double worst = 0;
        int n = (int)(sizeof cases / sizeof cases[0]);
        /* three threads (uneven splits) on a few types keep the run short under ASan */
        int max_nth = t == SDC_TYPE_F32 || t == SDC_TYPE_Q4_K || t == SDC_TYPE_Q5_0 ? 3 : 2;
        for (int ci = 0; ci < n; ci++) {
            double e = test_case(t, cases[ci], max_nth);
            if (e > worst) worst = e;
        }
        printf(
            "matmul %-5s: %d shapes x %d ISA x nth 1..%d vs double reference, max rel err %.3g\n",
            sdc_type_name(t), n, g_nisa, max_nth, worst);
    }
    /* one large F32 case: several k, row and column blocks, with tails */
    double e = test_case(SDC_TYPE_F32, (mm_case){100, 530, 600, 1, 1, 1, 1, 1, 0}, 3);
    printf("matmul f32 M=100 N=530 K=600: max rel err %.3g\n", e);
    /* narrow weights, many rows: the row split over shared panels (2 and 3 threads),
     * with a partial last row block, panel and k block */
    e = test_case(SDC_TYPE_F32, (mm_case){450, 130, 300, 1, 1, 1, 1, 2, 0}, 3);
    printf("matmul f32 M=450 N=130 K=300 (row split): max rel err %.3g\n", e);
    e = test_case(SDC_TYPE_Q4_K, (mm_case){440, 77, 512, 1, 1, 1, 1, 0, 0}, 3);
    printf("matmul q4_K M=440 N=77 K=512 (row split): max rel err %.3g\n", e);
    /* wide weights (1030 columns), two weight slices, few rows; F16 and Q8_0 */
    e = test_case(SDC_TYPE_F16, (mm_case){20, 1030, 40, 2, 1, 2, 1, 0, 0}, 3);
    printf("matmul f16 M=20 N=1030 K=40 2 slices: max rel err %.3g\n", e);
    e = test_case(SDC_TYPE_Q8_0, (mm_case){75, 1030, 64, 1, 1, 1, 1, 0, 0}, 3);
    printf("matmul q8_0 M=75 N=1030 K=64: max rel err %.3g\n", e);
    test_gemm_nt();
    sdc_cpu_set_isa(SDC_ISA_AVX512);
    for (int i = 0; i < 4; i++) sdc_threadpool_free(g_pool[i]);
    TEST_MAIN_END();
}
