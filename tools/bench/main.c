/* sdc-bench: measures this machine's FMA peak, GEMM throughput per weight type and
 * attention throughput, on 1 and N threads. Figures only; nothing here is a test.
 *   sdc-bench [-t N] [--quick] [--cpu-time] [filter...]
 * A filter selects GEMM/attention/conv rows whose label contains it ("q4_K", "1280x",
 * "attn", "conv", "vae"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/fp16.h"
#include "core/tensor.h"
#include "core/threadpool.h"
#include "cpu/cpu_features.h"
#include "cpu/cpu_ops.h"
#include "cpu/quant_dispatch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86_PEAK 1
#endif

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* --cpu-time: a run's time is the process CPU time divided by the thread count, which
 * leaves out the time threads wait for a core on a loaded machine (but still counts
 * imbalance and spinning). */
static int g_cpu_time;

static double run_clock(int nth) {
    if (!g_cpu_time) return now_s();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec) / nth;
}

static int g_quick;
static const char *g_filters[32];
static int g_nfilters;

static int selected(const char *label) {
    if (!g_nfilters) return 1;
    for (int i = 0; i < g_nfilters; i++)
        if (strcasestr(label, g_filters[i])) return 1;
    return 0;
}

/* ---- running a kernel on nth threads ---- */

typedef struct {
    sdc_cpu_kernel_fn fn;
    sdc_tensor *dst;
    void *work;
    size_t wsize;
    sdc_threadpool *pool;
} kernel_job;

static void kernel_task(void *arg, int ith, int nth) {
    kernel_job *j = arg;
    sdc_cpu_params p = {ith, nth, j->work, j->wsize, j->pool};
    j->fn(&p, j->dst);
}

static sdc_threadpool *g_pools[65];

static sdc_threadpool *pool_for(int nth) {
    if (!g_pools[nth]) g_pools[nth] = sdc_threadpool_create(nth);
    return g_pools[nth];
}

/* Best time of several runs (the machine is shared, so the minimum is the figure least
 * disturbed by others). */
static double time_kernel(sdc_cpu_kernel_fn fn, sdc_cpu_work_fn work_fn, sdc_tensor *dst, int nth) {
    sdc_threadpool *pool = pool_for(nth);
    size_t ws = work_fn ? work_fn(dst, nth) : 0;
    kernel_job job = {fn, dst, malloc(ws ? ws : 1), ws, pool};
    double budget = g_quick ? 0.15 : 1.0, best = 1e30, start = now_s();
    int runs = 0;
    do {
        double t0 = run_clock(nth);
        sdc_threadpool_run(pool, kernel_task, &job);
        double t = run_clock(nth) - t0;
        if (t < best) best = t;
        runs++;
    } while (runs < 2 || (now_s() - start < budget && runs < 50));
    free(job.work);
    return best;
}

/* ---- FMA peak: independent FMA chains on registers only ---- */

#ifdef HAVE_X86_PEAK
__attribute__((target("avx2,fma"))) static double fma_loop(long iters) {
    __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    /* distinct starting values and an empty asm per chain keep the compiler from merging
     * identical chains */
    __m256 c0 = _mm256_set1_ps(1.0f), c1 = _mm256_set1_ps(1.1f), c2 = _mm256_set1_ps(1.2f);
    __m256 c3 = _mm256_set1_ps(1.3f), c4 = _mm256_set1_ps(1.4f), c5 = _mm256_set1_ps(1.5f);
    __m256 c6 = _mm256_set1_ps(1.6f), c7 = _mm256_set1_ps(1.7f), c8 = _mm256_set1_ps(1.8f);
    __m256 c9 = _mm256_set1_ps(1.9f), c10 = _mm256_set1_ps(2.0f), c11 = _mm256_set1_ps(2.1f);
    for (long i = 0; i < iters; i++) {
        c0 = _mm256_fmadd_ps(c0, a, b), c1 = _mm256_fmadd_ps(c1, a, b);
        c2 = _mm256_fmadd_ps(c2, a, b), c3 = _mm256_fmadd_ps(c3, a, b);
        c4 = _mm256_fmadd_ps(c4, a, b), c5 = _mm256_fmadd_ps(c5, a, b);
        c6 = _mm256_fmadd_ps(c6, a, b), c7 = _mm256_fmadd_ps(c7, a, b);
        c8 = _mm256_fmadd_ps(c8, a, b), c9 = _mm256_fmadd_ps(c9, a, b);
        c10 = _mm256_fmadd_ps(c10, a, b), c11 = _mm256_fmadd_ps(c11, a, b);
        __asm__ volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
        __asm__ volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0];
}
#endif

typedef struct {
    long iters;
    volatile double sink;
} peak_job;

static void peak_task(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
#ifdef HAVE_X86_PEAK
    peak_job *j = arg;
    j->sink = fma_loop(j->iters);
#else
    (void)arg;
#endif
}

/* GFLOP/s of nth threads each running the FMA loop (best of a few). */
static double measure_peak(int nth) {
#ifdef HAVE_X86_PEAK
    if (sdc_cpu_isa_supported() < SDC_ISA_AVX2 || sdc_cpu_isa_supported() == SDC_ISA_NEON) return 0;
    peak_job job = {g_quick ? 5000000L : 10000000L, 0};
    sdc_threadpool *pool = pool_for(nth);
    double best = 1e30;
    for (int r = 0; r < (g_quick ? 5 : 15); r++) {
        double t0 = run_clock(nth);
        sdc_threadpool_run(pool, peak_task, &job);
        double t = run_clock(nth) - t0;
        if (t < best) best = t;
    }
    return (double)job.iters * 12 * 8 * 2 * nth / best * 1e-9;
#else
    (void)nth;
    return 0;
#endif
}

/* ---- GEMM ---- */

static unsigned long long g_seed = 0x2545f4914f6cdd1dull;
static float randf(void) {
    g_seed ^= g_seed << 13, g_seed ^= g_seed >> 7, g_seed ^= g_seed << 17;
    return (float)((double)(g_seed >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

/* Random weights in a type's layout: random quants, sane fp16 scales (so timings do not
 * depend on the quantiser). */
static void *make_weights(sdc_type t, int64_t k, int64_t n) {
    const sdc_type_traits *tr = sdc_type_get(t);
    size_t bytes = sdc_type_row_bytes(t, k) * (size_t)n;
    unsigned char *d = malloc(bytes);
    if (!d) {
        fprintf(stderr, "sdc-bench: out of memory\n");
        exit(1);
    }
    if (t == SDC_TYPE_F32) {
        for (int64_t i = 0; i < k * n; i++) ((float *)d)[i] = randf();
    } else if (t == SDC_TYPE_F16) {
        for (int64_t i = 0; i < k * n; i++) ((sdc_fp16 *)d)[i] = sdc_f32_to_fp16(randf());
    } else if (t == SDC_TYPE_BF16) {
        for (int64_t i = 0; i < k * n; i++) ((sdc_bf16 *)d)[i] = sdc_f32_to_bf16(randf());
    } else {
        for (size_t i = 0; i < bytes; i++) d[i] = (unsigned char)(randf() * 128 + 128);
        int off[2] = {0, 2}, no = 1;
        if (t == SDC_TYPE_Q4_1 || t == SDC_TYPE_Q5_1 || t == SDC_TYPE_Q4_K || t == SDC_TYPE_Q5_K)
            no = 2;
        else if (t == SDC_TYPE_Q2_K)
            off[0] = 80, off[1] = 82, no = 2;
        else if (t == SDC_TYPE_Q3_K)
            off[0] = 108;
        else if (t == SDC_TYPE_Q6_K)
            off[0] = 208;
        for (size_t b = 0; b < bytes / tr->block_bytes; b++)
            for (int j = 0; j < no; j++) {
                sdc_fp16 h = sdc_f32_to_fp16(0.01f + 0.005f * randf());
                memcpy(d + b * tr->block_bytes + off[j], &h, 2);
            }
    }
    return d;
}

static void bench_gemm(int nth, double peak1, double peakn) {
    static const sdc_type types[] = {SDC_TYPE_F32,  SDC_TYPE_F16,  SDC_TYPE_BF16, SDC_TYPE_Q8_0,
                                     SDC_TYPE_Q4_0, SDC_TYPE_Q4_K, SDC_TYPE_Q6_K};
    static const int64_t shapes[][3] = {
        {1280, 768, 2304}, {1280, 2048, 768}, {256, 1024, 2816}, {4096, 320, 320}}; /* M, K, N */
    int header = 0; /* printed before the first selected row only */
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
            int64_t M = shapes[si][0], K = shapes[si][1], N = shapes[si][2];
            char label[96];
            snprintf(label, sizeof label, "gemm %s %lldx%lldx%lld", sdc_type_name(types[ti]),
                     (long long)M, (long long)K, (long long)N);
            if (!selected(label)) continue;
            if (!header) {
                printf("\nGEMM dst[M,N] = x[M,K] w[N,K]^T, GFLOP/s (%% of measured FMA peak), ISA "
                       "%s\n",
                       sdc_isa_name(sdc_cpu_isa()));
                char hdr[32];
                snprintf(hdr, sizeof hdr, "%d thr", nth);
                printf("%-6s %-16s %9s %6s %9s %6s %8s\n", "weight", "MxKxN", "1 thr", "%peak", hdr,
                       "%peak", "speedup");
                header = 1;
            }
            if (K % sdc_type_get(types[ti])->block_size) {
                printf("%-6s %-16s %9s (K is not a multiple of the %lld-element block)\n",
                       sdc_type_name(types[ti]), label + 6 + strlen(sdc_type_name(types[ti])),
                       "n/a", (long long)sdc_type_get(types[ti])->block_size);
                continue;
            }
            sdc_tensor w = {0}, x = {0}, dst = {0};
            w.type = types[ti], w.ne[0] = K, w.ne[1] = N, w.ne[2] = w.ne[3] = 1;
            sdc_tensor_set_contiguous_strides(&w);
            w.data = make_weights(types[ti], K, N);
            x.type = SDC_TYPE_F32, x.ne[0] = K, x.ne[1] = M, x.ne[2] = x.ne[3] = 1;
            sdc_tensor_set_contiguous_strides(&x);
            x.data = malloc((size_t)(M * K) * 4);
            for (int64_t i = 0; i < M * K; i++) ((float *)x.data)[i] = randf();
            dst.type = SDC_TYPE_F32, dst.ne[0] = N, dst.ne[1] = M, dst.ne[2] = dst.ne[3] = 1;
            sdc_tensor_set_contiguous_strides(&dst);
            dst.data = malloc((size_t)(M * N) * 4);
            dst.op = SDC_OP_MATMUL, dst.src[0] = &w, dst.src[1] = &x;
            double flop = 2.0 * (double)M * (double)N * (double)K;
            double t1 = time_kernel(sdc_cpu_matmul, sdc_cpu_matmul_work_size, &dst, 1);
            double tn =
                nth > 1 ? time_kernel(sdc_cpu_matmul, sdc_cpu_matmul_work_size, &dst, nth) : t1;
            double g1 = flop / t1 * 1e-9, gn = flop / tn * 1e-9;
            printf("%-6s %-16s %9.1f %5.0f%% %9.1f %5.0f%% %7.2fx\n", sdc_type_name(types[ti]),
                   label + 6 + strlen(sdc_type_name(types[ti])), g1,
                   peak1 > 0 ? 100 * g1 / peak1 : 0, gn, peakn > 0 ? 100 * gn / peakn : 0, t1 / tn);
            fflush(stdout);
            free(w.data), free(x.data), free(dst.data);
        }
    }
}

/* ---- attention ---- */

static void bench_attention(int nth, double peak1, double peakn) {
    static const int64_t seqs[] = {1280, 4096};
    const int64_t D = 64, H = 12;
    int header = 0;
    for (size_t si = 0; si < sizeof seqs / sizeof seqs[0]; si++) {
        int64_t L = seqs[si];
        char label[64];
        snprintf(label, sizeof label, "attn seq %lld", (long long)L);
        if (!selected(label)) continue;
        if (!header) {
            printf("\nattention q,k,v F32 [D=%lld, L, H=%lld], no mask, GFLOP/s (4*L*L*D*H)\n",
                   (long long)D, (long long)H);
            char hdr[32];
            snprintf(hdr, sizeof hdr, "%d thr", nth);
            printf("%-16s %9s %6s %9s %6s %8s\n", "shape", "1 thr", "%peak", hdr, "%peak",
                   "speedup");
            header = 1;
        }
        sdc_tensor q = {0}, k = {0}, v = {0}, dst = {0};
        sdc_tensor *in[3] = {&q, &k, &v};
        for (int i = 0; i < 3; i++) {
            in[i]->type = SDC_TYPE_F32;
            in[i]->ne[0] = D, in[i]->ne[1] = L, in[i]->ne[2] = H, in[i]->ne[3] = 1;
            sdc_tensor_set_contiguous_strides(in[i]);
            in[i]->data = malloc((size_t)(D * L * H) * 4);
            for (int64_t j = 0; j < D * L * H; j++) ((float *)in[i]->data)[j] = randf();
        }
        dst.type = SDC_TYPE_F32, dst.ne[0] = D, dst.ne[1] = H, dst.ne[2] = L, dst.ne[3] = 1;
        sdc_tensor_set_contiguous_strides(&dst);
        dst.data = calloc((size_t)(D * L * H), 4);
        dst.op = SDC_OP_ATTENTION, dst.src[0] = &q, dst.src[1] = &k, dst.src[2] = &v;
        dst.params.f[0] = 1.0f / sqrtf((float)D);
        double flop = 4.0 * (double)L * (double)L * (double)D * (double)H;
        double t1 = time_kernel(sdc_cpu_attention, sdc_cpu_attention_work_size, &dst, 1);
        int nonzero = 0;
        for (int64_t j = 0; j < D * L * H && !nonzero; j++) nonzero = ((float *)dst.data)[j] != 0;
        if (!nonzero) {
            printf("%-16s %9s (kernel produced zeros: not implemented yet)\n", label + 5, "n/a");
        } else {
            double tn = nth > 1
                            ? time_kernel(sdc_cpu_attention, sdc_cpu_attention_work_size, &dst, nth)
                            : t1;
            double g1 = flop / t1 * 1e-9, gn = flop / tn * 1e-9;
            printf("%-16s %9.1f %5.0f%% %9.1f %5.0f%% %7.2fx\n", label + 5, g1,
                   peak1 > 0 ? 100 * g1 / peak1 : 0, gn, peakn > 0 ? 100 * gn / peakn : 0, t1 / tn);
        }
        for (int i = 0; i < 3; i++) free(in[i]->data);
        free(dst.data);
    }
}

/* ---- convolution: SD UNet / VAE 3x3 shapes, F16 weights ---- */

/* The GEMM an explicit im2col would run for the same convolution: dst[M=W*W, N=Cout] =
 * col[M, K=k*k*Cin] w[N, K]^T, weights F16 as the conv's; seconds per GFLOP on nth threads.
 * M is capped so that col stays under 256 MiB (the VAE's 512x512 conv would need 1.2 GB):
 * past a few thousand rows the GEMM's rate no longer depends on M. */
static double gemm_s_per_gflop(int64_t M, int64_t K, int64_t N, int nth) {
    if (M * K > (64LL << 20)) M = ((64LL << 20) / K) / 64 * 64;
    sdc_tensor w = {0}, x = {0}, dst = {0};
    w.type = SDC_TYPE_F16, w.ne[0] = K, w.ne[1] = N, w.ne[2] = w.ne[3] = 1;
    sdc_tensor_set_contiguous_strides(&w);
    w.data = make_weights(SDC_TYPE_F16, K, N);
    x.type = SDC_TYPE_F32, x.ne[0] = K, x.ne[1] = M, x.ne[2] = x.ne[3] = 1;
    sdc_tensor_set_contiguous_strides(&x);
    x.data = malloc((size_t)(M * K) * 4);
    dst.type = SDC_TYPE_F32, dst.ne[0] = N, dst.ne[1] = M, dst.ne[2] = dst.ne[3] = 1;
    sdc_tensor_set_contiguous_strides(&dst);
    dst.data = malloc((size_t)(M * N) * 4);
    if (!x.data || !dst.data) {
        fprintf(stderr, "sdc-bench: out of memory\n");
        exit(1);
    }
    for (int64_t i = 0; i < M * K; i++) ((float *)x.data)[i] = randf();
    dst.op = SDC_OP_MATMUL, dst.src[0] = &w, dst.src[1] = &x;
    double t = time_kernel(sdc_cpu_matmul, sdc_cpu_matmul_work_size, &dst, nth);
    free(w.data), free(x.data), free(dst.data);
    return t / (2e-9 * (double)M * (double)N * (double)K);
}

/* Each conv beside the GEMM of its M, N, K (the target: conv >= 80% of the GEMM
 * kernel's GFLOP/s); the GEMM column runs on the multi-threaded count only. */
static void bench_conv(int nth, double peak1, double peakn) {
    static const struct {
        int64_t w, cin, cout, k;
        const char *what;
    } cs[] = {
        {64, 320, 320, 3, "unet 64x64"},   {32, 640, 640, 3, "unet 32x32"},
        {16, 1280, 1280, 3, "unet 16x16"}, {16, 2560, 1280, 3, "unet skip"},
        {8, 1280, 1280, 3, "unet 8x8"},    {64, 512, 512, 3, "vae 64x64"},
        {128, 512, 512, 3, "vae 128x128"}, {256, 256, 256, 3, "vae 256x256"},
        {256, 128, 128, 3, "vae 512 /2"},  {512, 128, 128, 3, "vae 512x512"},
        {64, 320, 320, 1, "unet 1x1"},
    };
    int header = 0;
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        char label[96];
        snprintf(label, sizeof label, "conv %s %lld->%lld %lldx%lld", cs[i].what,
                 (long long)cs[i].cin, (long long)cs[i].cout, (long long)cs[i].k,
                 (long long)cs[i].k);
        if (!selected(label)) continue;
        if (g_quick && cs[i].w * cs[i].w * cs[i].cin * cs[i].cout > 64LL * 64 * 640 * 640) continue;
        char hdr[32];
        snprintf(hdr, sizeof hdr, "%d thr", nth);
        if (!header) {
            printf("\nconv2d x F32 [W, W, Cin], weights F16 [k, k, Cin, Cout], pad k/2, GFLOP/s;\n"
                   "gemm: the same M=W*W, K=k*k*Cin, N=Cout as a plain F16 GEMM on %d threads\n",
                   nth);
            printf("%-32s %9s %6s %9s %6s %8s %9s %9s\n", "shape", "1 thr", "%peak", hdr, "%peak",
                   "speedup", "gemm", "conv/gemm");
            header = 1;
        }
        const int64_t W = cs[i].w, ci = cs[i].cin, co = cs[i].cout, k = cs[i].k;
        sdc_tensor x = {0}, w = {0}, dst = {0};
        x.type = SDC_TYPE_F32, x.ne[0] = W, x.ne[1] = W, x.ne[2] = ci, x.ne[3] = 1;
        sdc_tensor_set_contiguous_strides(&x);
        x.data = malloc((size_t)(W * W * ci) * 4);
        for (int64_t j = 0; j < W * W * ci; j++) ((float *)x.data)[j] = randf();
        w.type = SDC_TYPE_F16, w.ne[0] = k, w.ne[1] = k, w.ne[2] = ci, w.ne[3] = co;
        sdc_tensor_set_contiguous_strides(&w);
        w.data = make_weights(SDC_TYPE_F16, k * k * ci, co);
        dst.type = SDC_TYPE_F32, dst.ne[0] = W, dst.ne[1] = W, dst.ne[2] = co, dst.ne[3] = 1;
        sdc_tensor_set_contiguous_strides(&dst);
        dst.data = malloc((size_t)(W * W * co) * 4);
        dst.op = SDC_OP_CONV2D, dst.src[0] = &x, dst.src[1] = &w;
        int32_t prm[7] = {1, 1, (int)(k / 2), (int)(k / 2), 1, 1, 1};
        memcpy(dst.params.i, prm, sizeof prm);
        double flop = 2.0 * (double)(W * W * co) * (double)(k * k * ci);
        double t1 = time_kernel(sdc_cpu_conv2d, sdc_cpu_conv2d_work_size, &dst, 1);
        double tn = nth > 1 ? time_kernel(sdc_cpu_conv2d, sdc_cpu_conv2d_work_size, &dst, nth) : t1;
        free(x.data), free(w.data), free(dst.data);
        double g1 = flop / t1 * 1e-9, gn = flop / tn * 1e-9;
        double gg = 1.0 / gemm_s_per_gflop(W * W, k * k * ci, co, nth);
        printf("%-32s %9.1f %5.0f%% %9.1f %5.0f%% %7.2fx %9.1f %8.0f%%\n", label + 5, g1,
               peak1 > 0 ? 100 * g1 / peak1 : 0, gn, peakn > 0 ? 100 * gn / peakn : 0, t1 / tn, gg,
               100 * gn / gg);
        fflush(stdout);
    }
}

static void usage(void) {
    fprintf(stderr,
            "usage: sdc-bench [-t N] [--quick] [--cpu-time] [filter...]\n"
            "  -t N      thread count for the multi-threaded column (default: physical cores)\n"
            "  --quick   shorter timing runs\n"
            "  --cpu-time  time runs by process CPU time / threads instead of the wall\n"
            "            clock (for a loaded machine: leaves out waiting for a core)\n"
            "  filter    only rows whose label contains one of these words, e.g.\n"
            "            q4_K, f32, 1280x, gemm, attn\n"
            "SDC_CPU_ISA=scalar|avx|avx2 caps the SIMD level of the kernels.\n");
}

int main(int argc, char **argv) {
    sdc_cpu_quant_init(); /* the SIMD row converters, as a CPU backend installs them */
    int nth = sdc_cpu_physical_cores();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) {
            nth = atoi(argv[++i]);
            if (nth < 1 || nth > 64) {
                fprintf(stderr, "sdc-bench: -t must be 1..64\n");
                return 1;
            }
        } else if (!strcmp(argv[i], "--quick")) {
            g_quick = 1;
        } else if (!strcmp(argv[i], "--cpu-time")) {
            g_cpu_time = 1;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage();
            return 0;
        } else if (argv[i][0] == '-') {
            usage();
            return 1;
        } else if (g_nfilters < 32) {
            g_filters[g_nfilters++] = argv[i];
        }
    }
    printf("sdc-bench: ISA %s, %d threads for the multi-threaded column, %d CPUs, %d physical "
           "cores, %s\n",
           sdc_isa_name(sdc_cpu_isa()), nth, sdc_cpu_count(), sdc_cpu_physical_cores(),
           g_cpu_time ? "times: process CPU time / threads" : "times: wall clock");
    double peak1 = measure_peak(1), peakn = nth > 1 ? measure_peak(nth) : peak1;
    if (peak1 > 0)
        printf("FMA peak (register-only AVX2 FMA loop): 1 thread %.1f GFLOP/s, %d threads %.1f "
               "GFLOP/s (%.2fx)\n",
               peak1, nth, peakn, peakn / peak1);
    else
        printf("FMA peak: not measured (needs AVX2+FMA); %% columns show 0\n");
    bench_gemm(nth, peak1, peakn);
    bench_attention(nth, peak1, peakn);
    bench_conv(nth, peak1, peakn);
    for (int i = 0; i <= 64; i++)
        if (g_pools[i]) sdc_threadpool_free(g_pools[i]);
    return 0;
}
