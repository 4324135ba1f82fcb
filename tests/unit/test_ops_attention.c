/* Fused attention vs a double-precision softmax(q k^T s + mask) v: Lq != Lk, GQA
 * (H != Hk), masks (F32/F16, -inf, fully masked rows, broadcast), F16 inputs, odd
 * lengths, permuted q; scalar, AVX2 and AVX-512 paths (AVX-512 equal to AVX2 bit for bit);
 * 1 thread, 3 shares one after another, and real pools of 2 and 3 threads (shared key/value
 * packing into a ring of head slots, units from an atomic counter: rings of 1, 2 and 3 slots
 * that wrap, and one head larger than the ring's budget). */
#include "core/threadpool.h"
#include "ops_test_common.h"

typedef struct pool_job {
    sdc_tensor *dst;
    void *work;
    size_t size;
    sdc_threadpool *pool;
} pool_job;

static void pool_task(void *arg, int ith, int nth) {
    pool_job *j = arg;
    sdc_cpu_params p = {
        .ith = ith, .nth = nth, .wdata = j->work, .wsize = j->size, .pool = j->pool};
    sdc_cpu_kernel_for(j->dst->op)(&p, j->dst);
}

/* Runs dst's kernel on a real pool of nth threads. */
static void run_pool(sdc_tensor *dst, int nth) {
    sdc_threadpool *pool = sdc_threadpool_create(nth);
    size_t ws = sdc_cpu_work_for(dst->op)(dst, sdc_threadpool_size(pool));
    pool_job j = {dst, malloc(ws), ws, pool};
    sdc_threadpool_run(pool, pool_task, &j);
    free(j.work);
    sdc_threadpool_free(pool);
}

/* Measured max abs error 1.5e-7 over all cases (scalar and AVX2, x86-64); about 10x that. */
static const double TOL = 1.5e-6;
static double g_worst;

typedef struct cfg {
    int64_t d, dv, lq, lk, h, hk, b;
    sdc_type qt, kvt;
    int mask; /* 0 none, 1 f32 [Lk,Lq,1,1], 2 f16 [Lk,Lq,H,B] */
    int permute_q;
    int permute_v; /* values strided: rows of one head dv * hk apart */
} cfg;

static void run_cfg(const cfg *c) {
    sdc_tensor *q0 = c->permute_q ? t_new(c->qt, c->d, c->h, c->lq, c->b)
                                  : t_new(c->qt, c->d, c->lq, c->h, c->b);
    sdc_tensor *q = c->permute_q ? t_permute(q0, 0, 2, 1, 3) : t_view(q0, q0->ne, q0->nb, 0);
    sdc_tensor *k = t_new(c->kvt, c->d, c->lk, c->hk, c->b);
    sdc_tensor *v0 = c->permute_v ? t_new(c->kvt, c->dv, c->hk, c->lk, c->b)
                                  : t_new(c->kvt, c->dv, c->lk, c->hk, c->b);
    sdc_tensor *v = c->permute_v ? t_permute(v0, 0, 2, 1, 3) : t_view(v0, v0->ne, v0->nb, 0);
    t_fill(q0, -1, 1), t_fill(k, -1, 1), t_fill(v0, -1, 1);
    sdc_tensor *m = NULL;
    if (c->mask) {
        m = c->mask == 1 ? t_new(SDC_TYPE_F32, c->lk, c->lq, 1, 1)
                         : t_new(SDC_TYPE_F16, c->lk, c->lq, c->h, c->b);
        t_fill(m, -1, 1);
        for (int64_t i3 = 0; i3 < m->ne[3]; i3++)
            for (int64_t i2 = 0; i2 < m->ne[2]; i2++)
                for (int64_t i = 0; i < c->lq; i++)
                    for (int64_t j = 0; j < c->lk; j++)
                        if (j > i + 3 || i == 1) /* causal-ish; row 1 fully masked */
                            t_set(m, j, i, i2, i3, -INFINITY);
    }
    const float scale = 1.0f / sqrtf((float)c->d);
    int64_t ne[4] = {c->dv, c->h, c->lq, c->b};
    sdc_tensor *dst = t_node(SDC_OP_ATTENTION, SDC_TYPE_F32, ne, q, k, v, m);
    dst->params.f[0] = scale;

    double *ref = malloc(sizeof(double) * T_N(dst)), *s = malloc(sizeof(double) * c->lk);
    for (int64_t b = 0; b < c->b; b++)
        for (int64_t i = 0; i < c->lq; i++)
            for (int64_t h = 0; h < c->h; h++) {
                const int64_t hk = h / (c->h / c->hk);
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < c->lk; j++) {
                    double x = 0;
                    for (int64_t d = 0; d < c->d; d++)
                        x += t_get(q, d, i, h, b) * t_get(k, d, j, hk, b);
                    x *= scale;
                    if (m) x += t_get(m, j, i, h % m->ne[2], b % m->ne[3]);
                    s[j] = x;
                    if (x > mx) mx = x;
                }
                for (int64_t j = 0; j < c->lk; j++)
                    sum += s[j] = mx == -INFINITY ? 0 : exp(s[j] - mx);
                double *r = ref + ((b * c->lq + i) * c->h + h) * c->dv;
                for (int64_t e = 0; e < c->dv; e++) {
                    double o = 0;
                    for (int64_t j = 0; j < c->lk; j++) o += s[j] * t_get(v, e, j, hk, b);
                    r[e] = sum > 0 ? o / sum : 0;
                }
            }
    /* scalar, then the SIMD levels this CPU has; AVX-512 must give AVX2's values bit for bit */
    sdc_isa isas[3] = {SDC_ISA_SCALAR};
    int n_isa = 1;
    const sdc_isa have = sdc_cpu_isa_supported();
    if (have == SDC_ISA_NEON) isas[n_isa++] = SDC_ISA_NEON;
    if (have >= SDC_ISA_AVX2 && have != SDC_ISA_NEON) isas[n_isa++] = SDC_ISA_AVX2;
    if (have >= SDC_ISA_AVX512 && have != SDC_ISA_NEON) isas[n_isa++] = SDC_ISA_AVX512;
    float *avx2_out = malloc(sdc_tensor_nbytes(dst));
    for (int ii = 0; ii < n_isa; ii++)
        for (int run = 0; run < 4; run++) {
            /* 1 thread, 3 shares in sequence, pools of 2 and 3 */
            const int nth = run == 0 ? 1 : run == 1 ? 3 : run, pooled = run >= 2;
            sdc_cpu_set_isa(isas[ii]);
            memset(dst->data, 0x7f, sdc_tensor_nbytes(dst));
            if (pooled)
                run_pool(dst, nth);
            else
                t_run(dst, nth);
            double e = t_max_err(dst, ref);
            printf("attention D=%lld Dv=%lld Lq=%lld Lk=%lld H=%lld Hk=%lld B=%lld q=%s kv=%s "
                   "mask=%d permq=%d permv=%d isa=%s nth=%d%s: max err %.3g\n",
                   (long long)c->d, (long long)c->dv, (long long)c->lq, (long long)c->lk,
                   (long long)c->h, (long long)c->hk, (long long)c->b, sdc_type_name(c->qt),
                   sdc_type_name(c->kvt), c->mask, c->permute_q, c->permute_v,
                   sdc_isa_name(isas[ii]), nth, pooled ? " pool" : "", e);
            CHECK(e < TOL, "attention err %g (tolerance %g)", e, TOL);
            if (e > g_worst || e != e) g_worst = e;
            if (isas[ii] == SDC_ISA_AVX2 && run == 0)
                memcpy(avx2_out, dst->data, sdc_tensor_nbytes(dst));
            if (isas[ii] == SDC_ISA_AVX512)
                CHECK(!memcmp(avx2_out, dst->data, sdc_tensor_nbytes(dst)),
                      "AVX-512 output differs from AVX2's (nth=%d)", nth);
        }
    free(avx2_out);
    sdc_cpu_set_isa(SDC_ISA_AVX512);
    free(s), free(ref);
    t_free(dst), t_free(m), t_free(v), t_free(v0), t_free(k), t_free(q), t_free(q0);
}

int main(void) {
    const cfg cfgs[] = {
        {64, 64, 77, 77, 2, 2, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
        {40, 24, 100, 37, 4, 2, 2, SDC_TYPE_F32, SDC_TYPE_F32, 1, 0, 0},
        {64, 64, 1, 130, 2, 1, 1, SDC_TYPE_F16, SDC_TYPE_F16, 2, 0, 0},
        {8, 8, 31, 257, 3, 3, 1, SDC_TYPE_F32, SDC_TYPE_F16, 1, 1, 0},
        {7, 5, 49, 1, 2, 2, 2, SDC_TYPE_F16, SDC_TYPE_F32, 0, 1, 0},
        {64, 48, 50, 600, 2, 1, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0}, /* 3 key blocks */
        /* one head of 4200 keys x 256 dims (8.7 MB packed) is over the ring's 2 MB; two such
         * heads share one slot: the second one's packing waits for the first one's queries */
        {256, 256, 13, 4200, 1, 1, 1, SDC_TYPE_F32, SDC_TYPE_F16, 0, 0, 0},
        {256, 256, 5, 4200, 2, 2, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
        /* a ring of 3 slots: 12 heads of 1280 keys x 64 (655 KB each) */
        {64, 64, 60, 1280, 12, 12, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
        /* F32 keys and values without a mask are read in place by the AVX-512 kernel: SD 1.x's
         * head sizes 40 and 80, key counts off the 8-key groups, strided values and queries */
        {40, 40, 70, 333, 8, 8, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
        {80, 80, 20, 77, 2, 2, 2, SDC_TYPE_F32, SDC_TYPE_F32, 0, 1, 1},
        {160, 160, 7, 600, 1, 1, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
        /* a ring of 2 slots wrapping 16 times: 16 x 2 heads of 2100 keys x 64 (1.1 MB each) */
        {64, 64, 7, 2100, 16, 16, 2, SDC_TYPE_F32, SDC_TYPE_F16, 1, 0, 0},
        /* key counts a multiple of 16 (no padding keys) with F32 values: contiguous and
         * strided (rows of all heads interleaved), grouped heads, fully masked rows */
        {64, 32, 50, 528, 4, 2, 2, SDC_TYPE_F32, SDC_TYPE_F32, 1, 0, 0},
        {32, 48, 37, 256, 3, 3, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 1, 1},
        {16, 16, 20, 64, 4, 2, 2, SDC_TYPE_F16, SDC_TYPE_F32, 2, 0, 1},
        /* F32 keys packed 16 at a time with a head size that is not a multiple of 8 */
        {20, 12, 9, 40, 2, 1, 1, SDC_TYPE_F32, SDC_TYPE_F32, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) run_cfg(&cfgs[i]);
    printf("attention: worst max err %.3g over all cases, tolerance %.3g\n", g_worst, TOL);
    TEST_MAIN_END();
}
