/* Matrix multiplication dst = x @ w^T (SDC_OP_MATMUL) and the block GEMM behind it.
 *
 * Many rows: the weight is packed a block at a time (dequantised to F32 in panels of NR
 * columns), activation rows a block at a time (MC x KC, in groups of MR; rows are found
 * through a row map, so strided x and broadcast batches need no copy), and a
 * register-blocked micro-kernel multiplies each row group by each panel. Threads split
 * along the dimension that gives each whole panels:
 *  - wide weights: columns. Each thread packs only its own panels (in its L2), so no
 *    panel is packed twice and no barrier is needed.
 *  - narrow weights (one packed block) with many rows: rows. The block is packed once, by
 *    all threads together, into one shared area; then threads take (row block, panel
 *    range) units from an atomic counter, so none idles behind an uneven split.
 * Few rows: one weight row is dequantised at a time and dotted with each activation row. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_ops.h"
#include "cpu/gemm.h"

#define MR       SDC_GEMM_MR
#define NR       SDC_GEMM_NR
#define KC       SDC_GEMM_KC
#define MC       72  /* activation rows per block: MC x KC floats stay in L2 */
#define NC       512 /* weight columns packed at once: KC x NC floats (512 KiB) */
#define MIN_ROWS 8   /* below this, dot products beat packing */

/* Maps a row index of the (merged) activation matrix to its x row and dst row. Rows of
 * the r2 x r3 batch items that share one weight slice are merged into one matrix. */
typedef struct row_map {
    int64_t m, r2, i2base, i3base;
    const char *a;
    size_t a_nb1, a_nb2, a_nb3;
    char *c;
    size_t c_nb1, c_nb2, c_nb3;
} row_map;

static inline void row_get(const row_map *rm, int64_t r, const float **a, float **c) {
    int64_t m = r, i2 = rm->i2base, i3 = rm->i3base;
    if (r >= rm->m) {
        int64_t q = r / rm->m;
        m = r - q * rm->m;
        i2 += q % rm->r2;
        i3 += q / rm->r2;
    }
    *a = (const float *)(rm->a + (size_t)m * rm->a_nb1 + (size_t)i2 * rm->a_nb2 +
                         (size_t)i3 * rm->a_nb3);
    *c = (float *)(rm->c + (size_t)m * rm->c_nb1 + (size_t)i2 * rm->c_nb2 + (size_t)i3 * rm->c_nb3);
}

static inline int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

#define SHARED_BYTES ((size_t)4 << 20) /* packed weight columns shared at once */
#define SHARED_NCMAX 1024              /* ... and at most this many columns */

/* Buffers of one thread: packed weight block (nc_max x KC), packed activation block
 * (MC x KC), dequantisation rows (NR x KC, quantised types only); 32-byte aligned. */
typedef struct gemm_bufs {
    float *bpack, *apack, *tmp;
    int64_t nc_max;
} gemm_bufs;

/* apack[(i / MR) * kc * MR + k * MR + i % MR] = rows[i][k]; rows past n are zero. */
static void pack_rows(const sdc_gemm_kernels *kern, const float *const *rows, int64_t n, int64_t kc,
                      float *apack) {
    for (int64_t ir = 0; ir < n; ir += MR, apack += kc * MR) {
        int64_t mr = min64(MR, n - ir);
        if (mr == MR) {
            kern->pack_a(rows + ir, kc, apack);
        } else {
            for (int64_t k = 0; k < kc; k++)
                for (int64_t i = 0; i < MR; i++)
                    apack[k * MR + i] = i < mr ? rows[ir + i][k] : 0.0f;
        }
    }
}

/* Output rows [m0, m1) x columns [n0, n1) through packed panels. */
static void gemm_block(const sdc_gemm_kernels *kern, const sdc_gemm_weight *w, int64_t K,
                       const row_map *rm, int64_t m0, int64_t m1, int64_t n0, int64_t n1,
                       const gemm_bufs *buf, bool accumulate) {
    const float *arow[MC];
    float *crow[MC];
    /* equal column blocks: a short last block would amortise its activation packing badly */
    int64_t nblocks = (n1 - n0 + buf->nc_max - 1) / buf->nc_max;
    int64_t nc = ((n1 - n0 + nblocks - 1) / nblocks + NR - 1) / NR * NR;
    for (int64_t nc0 = n0; nc0 < n1; nc0 += nc) {
        int64_t ncl = min64(nc, n1 - nc0), np = (ncl + NR - 1) / NR;
        for (int64_t kc0 = 0; kc0 < K; kc0 += KC) {
            int64_t kcl = min64(KC, K - kc0);
            for (int64_t p = 0; p < np; p++)
                sdc_gemm_pack_panel(kern, w, nc0 + p * NR, min64(NR, ncl - p * NR), kc0, kcl,
                                    buf->bpack + p * kcl * NR, buf->tmp);
            int load_c = accumulate || kc0 > 0;
            for (int64_t mc0 = m0; mc0 < m1; mc0 += MC) {
                int64_t mcl = min64(MC, m1 - mc0);
                for (int64_t i = 0; i < mcl; i++) {
                    row_get(rm, mc0 + i, &arow[i], &crow[i]);
                    arow[i] += kc0;
                    crow[i] += nc0;
                }
                pack_rows(kern, arow, mcl, kcl, buf->apack);
                for (int64_t p = 0; p < np; p++) {
                    const float *panel = buf->bpack + p * kcl * NR;
                    int64_t nr = min64(NR, ncl - p * NR);
                    for (int64_t ir = 0; ir < mcl; ir += MR) {
                        int64_t mr = min64(MR, mcl - ir);
                        const float *a = buf->apack + ir * kcl;
                        float *c[MR];
                        if (mr == MR && nr == NR) {
                            for (int i = 0; i < MR; i++) c[i] = crow[ir + i] + p * NR;
                            kern->ukernel(kcl, a, panel, c, load_c);
                            continue;
                        }
                        /* edge tile: compute into a full tile, copy the valid part */
                        float tile[MR][NR];
                        for (int i = 0; i < MR; i++) c[i] = tile[i];
                        if (load_c)
                            for (int64_t i = 0; i < mr; i++)
                                memcpy(tile[i], crow[ir + i] + p * NR, (size_t)nr * sizeof(float));
                        kern->ukernel(kcl, a, panel, c, load_c);
                        for (int64_t i = 0; i < mr; i++)
                            memcpy(crow[ir + i] + p * NR, tile[i], (size_t)nr * sizeof(float));
                    }
                }
            }
        }
    }
}

/* Output columns [n0, n1) for all rows by dot products; rowbuf holds K floats. */
static void dot_block(const sdc_gemm_kernels *kern, const sdc_gemm_weight *w, int64_t K,
                      const row_map *rm, int64_t rows, int64_t n0, int64_t n1, float *rowbuf,
                      bool accumulate) {
    sdc_to_float_fn conv = sdc_type_get(w->type)->to_float;
    for (int64_t n = n0; n < n1; n++) {
        const void *src = (const char *)w->data + (size_t)n * w->row_bytes;
        const float *wrow = src;
        if (w->type != SDC_TYPE_F32) {
            conv(src, rowbuf, K);
            wrow = rowbuf;
        }
        for (int64_t r = 0; r < rows; r++) {
            const float *a;
            float *c;
            row_get(rm, r, &a, &c);
            float v = kern->dot(a, wrow, K);
            c[n] = accumulate ? c[n] + v : v;
        }
    }
}

static size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

static size_t bpack_bytes(int64_t nc) {
    return align_up((size_t)nc * KC * sizeof(float), 64);
}
#define APACK_BYTES ((size_t)MC * KC * sizeof(float) + 64) /* + pack_a's spill */
#define TMP_BYTES   ((size_t)NR * KC * sizeof(float))

/* Columns of one shared block: equal blocks of whole panels, within the budget. */
static int64_t shared_cols(int64_t K, int64_t N) {
    const int64_t kpad = (K + KC - 1) / KC * KC;
    int64_t cap = (int64_t)(SHARED_BYTES / sizeof(float)) / (kpad ? kpad : 1) / NR * NR;
    cap = cap < NR ? NR : cap > SHARED_NCMAX ? SHARED_NCMAX : cap;
    const int64_t nblocks = (N + cap - 1) / cap;
    return ((N + nblocks - 1) / nblocks + NR - 1) / NR * NR;
}

/* Work area: [counter, 64 B] [shared weight panels] [per thread: activation block, dequant
 * rows, one weight row for the dot path]. */
static size_t shared_bytes(int64_t K, int64_t N) {
    const int64_t kpad = (K + KC - 1) / KC * KC;
    return 64 + align_up((size_t)(kpad * shared_cols(K, N)) * sizeof(float), 64);
}

static int64_t pack_cols(int64_t N) {
    return min64(NC, (N + NR - 1) / NR * NR);
}

/* Per thread: own packed panels (column split), activation block, dequantisation rows;
 * or one weight row (dot path). */
static size_t thread_work_bytes(int64_t K, int64_t N) {
    size_t gemm = bpack_bytes(pack_cols(N)) + APACK_BYTES + TMP_BYTES;
    size_t dot = (size_t)K * sizeof(float);
    return align_up(gemm > dot ? gemm : dot, 64);
}

/* Rows are split (over shared panels) when the weight is one packed block per slice and
 * rows are many; otherwise columns are. */
static bool split_rows(int64_t N, int64_t nslices, int64_t rows, int nth) {
    return nth > 1 && nslices == 1 && N <= NC && rows >= 2 * MC * nth;
}

/* Only the row split uses the shared area. */
static size_t shared_part(const sdc_tensor *dst, int nth) {
    const sdc_tensor *w = dst->src[0];
    const int64_t rows = dst->ne[1] * dst->ne[2] * dst->ne[3];
    return split_rows(w->ne[1], w->ne[2] * w->ne[3], rows, nth) ? shared_bytes(w->ne[0], w->ne[1])
                                                                : 64;
}

size_t sdc_cpu_matmul_work_size(const sdc_tensor *dst, int nth) {
    const sdc_tensor *w = dst->src[0];
    if (!w || nth < 1) return 0;
    return 64 + shared_part(dst, nth) + (size_t)nth * thread_work_bytes(w->ne[0], w->ne[1]);
}

/* Rows [m0, m1) x panels [p0, p1) of a shared block whose panels start at column nb0:
 * panel p of k block kb sits at bshared + (kb * np + p) * KC * NR. */
static void shared_unit(const sdc_gemm_kernels *kern, const float *bshared, int64_t np, int64_t K,
                        int64_t N, const row_map *rm, int64_t m0, int64_t m1, int64_t nb0,
                        int64_t p0, int64_t p1, float *apack) {
    const float *arow[MC];
    float *crow[MC];
    for (int64_t kc0 = 0; kc0 < K; kc0 += KC) {
        const int64_t kcl = min64(KC, K - kc0);
        const float *bk = bshared + (kc0 / KC) * np * KC * NR;
        const int load_c = kc0 > 0;
        for (int64_t mc0 = m0; mc0 < m1; mc0 += MC) {
            const int64_t mcl = min64(MC, m1 - mc0);
            for (int64_t i = 0; i < mcl; i++) {
                row_get(rm, mc0 + i, &arow[i], &crow[i]);
                arow[i] += kc0;
            }
            pack_rows(kern, arow, mcl, kcl, apack);
            for (int64_t p = p0; p < p1; p++) {
                const float *panel = bk + p * KC * NR;
                const int64_t col = nb0 + p * NR, nr = min64(NR, N - col);
                for (int64_t ir = 0; ir < mcl; ir += MR) {
                    const int64_t mr = min64(MR, mcl - ir);
                    const float *a = apack + ir * kcl;
                    float *c[MR];
                    if (mr == MR && nr == NR) {
                        for (int i = 0; i < MR; i++) c[i] = crow[ir + i] + col;
                        kern->ukernel(kcl, a, panel, c, load_c);
                        continue;
                    }
                    /* edge tile: compute into a full tile, copy the valid part */
                    float tile[MR][NR];
                    for (int i = 0; i < MR; i++) c[i] = tile[i];
                    if (load_c)
                        for (int64_t i = 0; i < mr; i++)
                            memcpy(tile[i], crow[ir + i] + col, (size_t)nr * sizeof(float));
                    kern->ukernel(kcl, a, panel, c, load_c);
                    for (int64_t i = 0; i < mr; i++)
                        memcpy(crow[ir + i] + col, tile[i], (size_t)nr * sizeof(float));
                }
            }
        }
    }
}

/* Row split over shared panels, on the pool's nth threads. */
static void matmul_shared(const sdc_cpu_params *p, const sdc_gemm_kernels *kern,
                          const sdc_tensor *w, row_map *rm, int64_t rows, int64_t r2, int64_t r3,
                          char *base, char *mine) {
    const int64_t K = w->ne[0], N = w->ne[1], w2 = w->ne[2], nslices = w->ne[2] * w->ne[3];
    const int nth = p->nth, ith = p->ith;
    const bool pooled = true;
    _Atomic int64_t *next = (_Atomic int64_t *)base;
    float *bshared = (float *)(base + 64);
    mine += bpack_bytes(pack_cols(N));
    float *apack = (float *)mine, *tmp = (float *)(mine + APACK_BYTES);
    const int64_t ncs = shared_cols(K, N), nkb = (K + KC - 1) / KC;
    const int64_t nrb = (rows + MC - 1) / MC;
    bool first = true;
    for (int64_t s = 0; s < nslices; s++) {
        rm->i2base = s % w2 * r2;
        rm->i3base = s / w2 * r3;
        sdc_gemm_weight wt = {(const char *)w->data + (size_t)(s % w2) * w->nb[2] +
                                  (size_t)(s / w2) * w->nb[3],
                              w->nb[1], w->type};
        for (int64_t nb0 = 0; nb0 < N; nb0 += ncs) {
            const int64_t ncl = min64(ncs, N - nb0), np = (ncl + NR - 1) / NR;
            /* few row blocks: split the panels too, so that every thread has work */
            const int64_t nsplit = min64(np, (4 * nth + nrb - 1) / nrb);
            if (!first && pooled) sdc_cpu_barrier(p); /* everyone is done with bshared */
            first = false;
            if (ith == 0) atomic_store_explicit(next, 0, memory_order_relaxed);
            int64_t lo, hi;
            sdc_cpu_split(nkb * np, ith, nth, &lo, &hi);
            for (int64_t i = lo; i < hi; i++) {
                const int64_t kb = i / np, q = i % np, k0 = kb * KC;
                sdc_gemm_pack_panel(kern, &wt, nb0 + q * NR, min64(NR, ncl - q * NR), k0,
                                    min64(KC, K - k0), bshared + i * KC * NR, tmp);
            }
            if (pooled) sdc_cpu_barrier(p);
            for (;;) {
                const int64_t u = atomic_fetch_add_explicit(next, 1, memory_order_relaxed);
                if (u >= nrb * nsplit) break;
                const int64_t rb = u / nsplit, cs = u % nsplit;
                shared_unit(kern, bshared, np, K, N, rm, rb * MC, min64(rows, (rb + 1) * MC), nb0,
                            cs * np / nsplit, (cs + 1) * np / nsplit, apack);
            }
        }
    }
}

void sdc_cpu_matmul(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *w = dst->src[0], *x = dst->src[1];
    const sdc_type_traits *tr = sdc_type_get(w->type);
    const int64_t K = w->ne[0], N = w->ne[1], M = x->ne[1];
    const int64_t w2 = w->ne[2], w3 = w->ne[3], b2 = x->ne[2], b3 = x->ne[3];
    /* The graph builder validated shapes; refuse what this kernel cannot read. */
    if (!tr || !tr->to_float || x->type != SDC_TYPE_F32 || dst->type != SDC_TYPE_F32 ||
        K % tr->block_size || w2 <= 0 || w3 <= 0 || b2 % w2 || b3 % w3)
        return;
    const int64_t r2 = b2 / w2, r3 = b3 / w3, rows = M * r2 * r3, nslices = w2 * w3;
    const sdc_gemm_kernels *kern = sdc_gemm_kernels_for(sdc_cpu_isa());

    if (!p->wdata || p->wsize < sdc_cpu_matmul_work_size(dst, p->nth)) return;
    char *base = (char *)align_up((size_t)p->wdata, 64);

    row_map rm = {.m = M,
                  .r2 = r2,
                  .a = x->data,
                  .a_nb1 = x->nb[1],
                  .a_nb2 = x->nb[2],
                  .a_nb3 = x->nb[3],
                  .c = dst->data,
                  .c_nb1 = dst->nb[1],
                  .c_nb2 = dst->nb[2],
                  .c_nb3 = dst->nb[3]};
    sdc_gemm_weight wt = {NULL, w->nb[1], w->type};

    char *work = base + shared_part(dst, p->nth) + (size_t)p->ith * thread_work_bytes(K, N);
    if (K == 0 || rows < MIN_ROWS) {
        int64_t lo, hi;
        sdc_cpu_split(nslices * N, p->ith, p->nth, &lo, &hi);
        for (int64_t i = lo; i < hi;) {
            int64_t s = i / N, n0 = i - s * N, n1 = min64(N, n0 + (hi - i));
            rm.i2base = s % w2 * r2;
            rm.i3base = s / w2 * r3;
            wt.data =
                (const char *)w->data + (size_t)(s % w2) * w->nb[2] + (size_t)(s / w2) * w->nb[3];
            dot_block(kern, &wt, K, &rm, rows, n0, n1, (float *)work, false);
            i += n1 - n0;
        }
        return;
    }
    /* (a pool is needed for the shared panels: shares run one after another, as in unit
     * tests, split columns) */
    if (split_rows(N, nslices, rows, p->nth) && p->pool) {
        matmul_shared(p, kern, w, &rm, rows, r2, r3, base, work);
        return;
    }

    /* Column split: items (slice, row chunk, panel); each thread packs its own panels and
     * all activation rows, amortised over its columns. Rows are split too when panels are
     * too few to keep every thread busy. */
    const int64_t panels = (N + NR - 1) / NR;
    int64_t nm = 1;
    if (nslices * panels < 4 * p->nth) {
        nm = (4 * p->nth + nslices * panels - 1) / (nslices * panels);
        nm = min64(nm, (rows + MR - 1) / MR);
    }
    int64_t mchunk = ((rows + nm - 1) / nm + MR - 1) / MR * MR;
    nm = (rows + mchunk - 1) / mchunk;

    gemm_bufs buf = {(float *)work, (float *)(work + bpack_bytes(pack_cols(N))),
                     (float *)(work + bpack_bytes(pack_cols(N)) + APACK_BYTES), pack_cols(N)};
    int64_t lo, hi;
    sdc_cpu_split(nslices * nm * panels, p->ith, p->nth, &lo, &hi);
    for (int64_t i = lo; i < hi;) {
        int64_t s = i / (nm * panels), rem = i - s * nm * panels;
        int64_t mc = rem / panels, p0 = rem - mc * panels, p1 = min64(panels, p0 + (hi - i));
        rm.i2base = s % w2 * r2;
        rm.i3base = s / w2 * r3;
        wt.data = (const char *)w->data + (size_t)(s % w2) * w->nb[2] + (size_t)(s / w2) * w->nb[3];
        gemm_block(kern, &wt, K, &rm, mc * mchunk, min64(rows, (mc + 1) * mchunk), p0 * NR,
                   min64(N, p1 * NR), &buf, false);
        i += p1 - p0;
    }
}

/* sdc_gemm_f32_nt's buffers: allocated once per thread, freed when the thread exits. */
static pthread_key_t g_buf_key;
static pthread_once_t g_buf_once = PTHREAD_ONCE_INIT;
static _Thread_local gemm_bufs *t_bufs;

static void make_buf_key(void) {
    pthread_key_create(&g_buf_key, free);
}

static const gemm_bufs *thread_bufs(void) {
    if (t_bufs) return t_bufs;
    pthread_once(&g_buf_once, make_buf_key);
    size_t head = align_up(sizeof(gemm_bufs), 64);
    char *mem = NULL;
    if (posix_memalign((void **)&mem, 64, head + bpack_bytes(NC) + APACK_BYTES)) return NULL;
    gemm_bufs *b = (gemm_bufs *)mem;
    b->bpack = (float *)(mem + head);
    b->apack = (float *)(mem + head + bpack_bytes(NC));
    b->tmp = NULL; /* F32 weights need no dequantisation rows */
    b->nc_max = NC;
    pthread_setspecific(g_buf_key, mem);
    t_bufs = b;
    return b;
}

void sdc_gemm_f32_nt(int64_t m, int64_t n, int64_t k, const float *A, int64_t lda, const float *B,
                     int64_t ldb, float *C, int64_t ldc, bool accumulate) {
    if (m <= 0 || n <= 0) return;
    const sdc_gemm_kernels *kern = sdc_gemm_kernels_for(sdc_cpu_isa());
    row_map rm = {.m = m,
                  .r2 = 1,
                  .a = (const char *)A,
                  .a_nb1 = (size_t)lda * sizeof(float),
                  .c = (char *)C,
                  .c_nb1 = (size_t)ldc * sizeof(float)};
    sdc_gemm_weight wt = {B, (size_t)ldb * sizeof(float), SDC_TYPE_F32};
    if (k <= 0) {
        if (!accumulate)
            for (int64_t i = 0; i < m; i++) memset(C + i * ldc, 0, (size_t)n * sizeof(float));
        return;
    }
    if (m < MIN_ROWS) {
        dot_block(kern, &wt, k, &rm, m, 0, n, NULL, accumulate);
        return;
    }
    const gemm_bufs *buf = thread_bufs();
    if (!buf) { /* out of memory: still give the right answer, slowly */
        dot_block(kern, &wt, k, &rm, m, 0, n, NULL, accumulate);
        return;
    }
    gemm_block(kern, &wt, k, &rm, 0, m, 0, n, buf, accumulate);
}
