/* 2-D convolution as an implicit GEMM over bounded tiles:
 *   out[co][p] = bias[co] + sum_k w[co][k] * col[p][k],  k = (kx, ky, ci) of one group.
 * The weights of a block of output channels are dequantised and packed once, by all
 * threads together, into micro-panels of SDC_GEMM_MR rows that every thread reads
 * (shared, never packed twice). Threads then take (pixel tile, channel range) units
 * from an atomic counter; for each reduction slice a unit gathers its pixels straight
 * into the [k][NR] panels the GEMM micro-kernel streams (im2col on the fly, no
 * intermediate copy) and runs the micro-kernel over them. With few tiles (under 8: the
 * UNet's 32x32 and smaller levels) units split the channels too, and each channel range
 * would gather the whole tile again: there all threads gather every tile's im2col panels
 * once, together, into the shared area (a quarter of CONV_WBUDGET of reduction slices at
 * a time), and units only multiply. With one or two tiles a packed weight would serve at
 * most two units: each unit converts its weight micro-panels where it uses them instead.
 * Scratch: the shared block (at most 1.25 x CONV_WBUDGET) plus CONV_NT x CONV_KC floats
 * per thread, whatever the image size. Depthwise convolutions take a direct path. */
#include <stdatomic.h>
#include <string.h>

#include "cpu/gemm.h"
#include "cpu/ops_util.h"

#define MR           SDC_GEMM_MR
#define NR           SDC_GEMM_NR
#define CONV_KC      SDC_GEMM_KC         /* reduction slice: a multiple of every quant block */
#define CONV_NT      256                 /* pixels per tile (16 panels) */
#define CONV_WBUDGET (32u << 20)         /* bytes of packed weights shared at once */
#define APANEL       (CONV_KC * MR + 16) /* floats per packed micro-panel (+ pack_a spill) */

typedef struct conv_geom {
    int64_t iw, ih, cin, n, kw, kh, cout, ow, oh, cin_g, cout_g, kdim, npix;
    int64_t nslices; /* reduction slices of CONV_KC */
    int64_t ngroups; /* micro-panels of MR output channels per group (cout_g rounded up) */
    int64_t bgroups; /* micro-panels per shared weight block */
    int64_t nt;      /* pixels per tile, a multiple of NR */
    bool fly;        /* one or two tiles: each unit packs its weights itself, in L1 */
    int64_t ntiles;  /* tiles of all images */
    int64_t fsc;     /* few tiles (< 8): reduction slices whose im2col panels all threads
                      * gather together into the shared area at once; 0: units gather */
    int sx, sy, px, py, dx, dy, groups;
} conv_geom;

static size_t g_wbudget = CONV_WBUDGET;

size_t sdc_cpu_conv2d_set_budget(size_t bytes) {
    size_t old = g_wbudget;
    g_wbudget = bytes ? bytes : CONV_WBUDGET;
    return old;
}

static int64_t min64(int64_t a, int64_t b) {
    return a < b ? a : b;
}

static conv_geom get_geom(const sdc_tensor *dst, int nth) {
    const sdc_tensor *x = dst->src[0], *w = dst->src[1];
    const int32_t *pi = dst->params.i;
    conv_geom c = {
        .iw = x->ne[0],
        .ih = x->ne[1],
        .cin = x->ne[2],
        .n = x->ne[3],
        .kw = w->ne[0],
        .kh = w->ne[1],
        .cout = w->ne[3],
        .ow = dst->ne[0],
        .oh = dst->ne[1],
        .sx = pi[0],
        .sy = pi[1],
        .px = pi[2],
        .py = pi[3],
        .dx = pi[4],
        .dy = pi[5],
        .groups = pi[6],
    };
    c.cin_g = c.cin / c.groups, c.cout_g = c.cout / c.groups;
    c.kdim = c.kw * c.kh * c.cin_g;
    c.npix = c.ow * c.oh;
    c.nslices = (c.kdim + CONV_KC - 1) / CONV_KC;
    c.ngroups = (c.cout_g + MR - 1) / MR;
    int64_t fit = (int64_t)(g_wbudget / sizeof(float)) / (c.nslices * APANEL);
    c.bgroups = fit < 8 ? 8 : fit; /* huge reductions: 48 channels at a time still */
    if (c.bgroups > c.ngroups) c.bgroups = c.ngroups;
    /* whole tiles even for small images: each weight value loaded is used for nt pixels,
     * and the driver splits channels rather than pixels when tiles are few */
    c.nt = min64(CONV_NT, (c.npix + NR - 1) / NR * NR);
    /* with one or two tiles a packed weight would serve at most two units: converting it
     * where it is used beats a round trip of the whole weight through memory */
    c.ntiles = c.n * ((c.npix + c.nt - 1) / c.nt);
    c.fly = c.ntiles <= 2;
    if (c.fly) c.bgroups = c.ngroups;
    /* few tiles: units split channels too, and each channel range of a tile would gather
     * the whole tile again; the shared panels take a quarter of the weight budget (L3) */
    const int64_t fsc = (int64_t)(g_wbudget / 4 / sizeof(float)) / (c.ntiles * c.nt * CONV_KC);
    c.fsc = c.ntiles < 8 ? (fsc < 1 ? 1 : fsc > c.nslices ? c.nslices : fsc) : 0;
    (void)nth;
    return c;
}

static bool is_depthwise(const sdc_tensor *dst, const conv_geom *c) {
    return c->cin_g == 1 && c->cout_g == 1 && c->kdim <= CONV_KC &&
           dst->src[0]->nb[0] == sizeof(float);
}

/* Work area: [counter (64 B)] [packed weight block (not on the fly path)] [shared im2col
 * panels (few tiles)] [per thread: its own col panels (many tiles), weight rows, a panel]. */
static size_t weight_floats(const conv_geom *c) {
    return c->fly ? 0 : (size_t)(c->bgroups * c->nslices * APANEL);
}
static size_t shared_bytes(const conv_geom *c) {
    return 64 + (weight_floats(c) + (size_t)(c->ntiles * c->fsc * c->nt * CONV_KC)) * sizeof(float);
}
static size_t thread_col_floats(const conv_geom *c) {
    return c->fsc ? 0 : (size_t)(c->nt * CONV_KC);
}
static size_t thread_bytes(const conv_geom *c) {
    return (thread_col_floats(c) + (size_t)MR * CONV_KC + APANEL) * sizeof(float) + 64;
}

size_t sdc_cpu_conv2d_work_size(const sdc_tensor *dst, int nth) {
    conv_geom c = get_geom(dst, nth);
    if (is_depthwise(dst, &c)) return ((size_t)CONV_KC * sizeof(float) + 64) * (size_t)nth;
    return 64 + shared_bytes(&c) + thread_bytes(&c) * (size_t)nth;
}

/* Pointer to weight row co's values [k0, k0+kc) as F32 (converted into tmp unless F32). */
static const float *weight_row(const sdc_tensor *w, const conv_geom *c, int64_t co, int64_t k0,
                               int64_t kc, float *tmp) {
    if (w->type == SDC_TYPE_F32) return (const float *)w->data + co * c->kdim + k0;
    const sdc_type_traits *tr = sdc_type_get(w->type);
    const char *src = (const char *)w->data + (size_t)co * sdc_type_row_bytes(w->type, c->kdim) +
                      (size_t)(k0 / tr->block_size) * tr->block_bytes;
    tr->to_float(src, tmp, kc);
    return tmp;
}

/* Packs micro-panel r of slice s of the weight block whose first output channel is co0
 * (valid channels end at co_end) into dst (APANEL floats). */
static void pack_weights(const sdc_gemm_kernels *kern, const sdc_tensor *w, const conv_geom *c,
                         int64_t co0, int64_t co_end, int64_t s, int64_t r, float *dst,
                         float *tmp) {
    static const float zero[CONV_KC];
    const int64_t k0 = s * CONV_KC, kc = min64(CONV_KC, c->kdim - k0);
    const float *rows[MR];
    for (int i = 0; i < MR; i++) {
        const int64_t co = co0 + r * MR + i;
        rows[i] = co < co_end ? weight_row(w, c, co, k0, kc, tmp + i * CONV_KC) : zero;
    }
    kern->pack_a(rows, kc, dst);
}

/* A run of panel columns that lies in one output row. */
typedef struct col_seg {
    int64_t j0, len, iy0, ix0;
} col_seg;

#define TILE_PANELS (CONV_NT / NR)

/* The row runs of each panel of a tile: pixels [pix0, pix0+np), NR a panel. */
typedef struct tile_segs {
    int64_t npanels;
    int nseg[TILE_PANELS];
    col_seg seg[TILE_PANELS][NR];
} tile_segs;

static void tile_segments(const conv_geom *c, int64_t pix0, int64_t np, tile_segs *t) {
    t->npanels = (np + NR - 1) / NR;
    for (int64_t q = 0; q < t->npanels; q++) {
        const int64_t npx = min64(NR, np - q * NR);
        int nseg = 0;
        for (int64_t j = 0; j < npx;) {
            const int64_t p = pix0 + q * NR + j, oy = p / c->ow, ox = p % c->ow;
            const int64_t len = min64(npx - j, c->ow - ox);
            t->seg[q][nseg++] = (col_seg){j, len, oy * c->sy - c->py, ox * c->sx - c->px};
            j += len;
        }
        t->nseg[q] = nseg;
    }
}

/* One tap's row run of one panel: o[j] = input under tap (ky, kx) of the run's pixels in
 * the input channel plane xc. Inlined: it runs once per tap and panel, mostly a 64-byte copy. */
static inline void gather_run(const sdc_tensor *x, const conv_geom *c, const char *xc, int64_t ky,
                              int64_t kx, const col_seg *sg, float *o) {
    const int64_t iy = sg->iy0 + ky * c->dy, ix = sg->ix0 + kx * c->dx;
    if (iy < 0 || iy >= c->ih) {
        memset(o, 0, sizeof(float) * (size_t)sg->len);
        return;
    }
    const size_t nb0 = x->nb[0];
    const char *xr = xc + iy * x->nb[1];
    if (c->sx == 1 && nb0 == sizeof(float)) {
        const float *xf = (const float *)xr;
        if (sg->len == NR && ix >= 0 && ix + NR <= c->iw) {
            memcpy(o, xf + ix, sizeof(float) * NR);
            return;
        }
        /* columns [lo, hi) of the run are inside the image */
        int64_t lo = ix < 0 ? -ix : 0, hi = c->iw - ix;
        lo = min64(lo, sg->len), hi = hi < lo ? lo : min64(hi, sg->len);
        for (int64_t j = 0; j < lo; j++) o[j] = 0.0f;
        if (hi > lo) memcpy(o + lo, xf + ix + lo, sizeof(float) * (size_t)(hi - lo));
        for (int64_t j = hi; j < sg->len; j++) o[j] = 0.0f;
    } else if (nb0 == sizeof(float) && ix >= 0 && ix + (sg->len - 1) * c->sx < c->iw) {
        const float *xf = (const float *)xr + ix; /* strided, all inside */
        for (int64_t j = 0; j < sg->len; j++) o[j] = xf[j * c->sx];
    } else {
        for (int64_t j = 0; j < sg->len; j++) {
            const int64_t xx = ix + j * c->sx;
            o[j] = xx >= 0 && xx < c->iw ? *(const float *)(xr + (size_t)xx * nb0) : 0.0f;
        }
    }
}

/* col + q*kc*NR + kk*NR = input values under tap k0+kk of panel q's pixels (zero outside
 * the image and past the tile): im2col of a whole tile, straight into the micro-kernel
 * layout. Taps outside, panels inside: one tap reads one input row from left to right
 * across the panels, a stream the prefetcher follows (panel by panel, every tap would
 * start a new stream in another channel: a cache miss each with few output channels). */
static void pack_col_tile(const sdc_tensor *x, const conv_geom *c, int64_t n, int64_t g,
                          const tile_segs *t, int64_t np, int64_t k0, int64_t kc, float *col) {
    const int64_t khw = c->kw * c->kh;
    int64_t ci = k0 / khw, ky = k0 % khw / c->kw, kx = k0 % c->kw;
    const int64_t last = t->npanels - 1, npx_last = np - last * NR;
    for (int64_t kk = 0; kk < kc; kk++) {
        const char *xc = sdc_row_ptr(x, 0, g * c->cin_g + ci, n);
        for (int64_t q = 0; q <= last; q++) {
            float *d = col + q * kc * NR + kk * NR;
            for (int sI = 0; sI < t->nseg[q]; sI++) {
                const col_seg *sg = &t->seg[q][sI];
                gather_run(x, c, xc, ky, kx, sg, d + sg->j0);
            }
        }
        if (npx_last < NR)
            memset(col + last * kc * NR + kk * NR + npx_last, 0,
                   sizeof(float) * (size_t)(NR - npx_last));
        if (++kx == c->kw) {
            kx = 0;
            if (++ky == c->kh) ky = 0, ci++;
        }
    }
}

/* Where a unit's work lies: pixels [pix0, pix0+np) of image n, reduction slices
 * [s0, s1), micro-panels [r0, r1) of the weight block whose first channel is co0 (valid
 * channels end at co_end). */
typedef struct conv_span {
    int64_t n, g, co0, co_end, r0, r1, pix0, np, s0, s1;
} conv_span;

/* One unit. wpack NULL: pack each weight micro-panel here (into abuf, with tmp for the
 * conversion). colsh NULL: gather each slice's im2col panels here (into col), else slice
 * s's are at colsh + (s - s0) * nt * KC. Slice 0 starts the outputs from the bias. */
static void conv_unit(const sdc_gemm_kernels *kern, const sdc_tensor *x, sdc_tensor *dst,
                      const conv_geom *c, const float *wpack, const conv_span *u,
                      const float *colsh, float *col, float *abuf, float *tmp) {
    const sdc_tensor *bias = dst->src[2];
    const int64_t n = u->n, co0 = u->co0, co_end = u->co_end, r0 = u->r0, r1 = u->r1;
    const int64_t pix0 = u->pix0, np = u->np, npanels = (np + NR - 1) / NR;
    tile_segs ts;
    if (!colsh) tile_segments(c, pix0, np, &ts);
    for (int64_t co = co0 + r0 * MR; u->s0 == 0 && co < min64(co_end, co0 + r1 * MR); co++) {
        float *out = (float *)sdc_row_ptr(dst, 0, co, n) + pix0;
        const float b = bias ? ((const float *)bias->data)[co] : 0.0f;
        for (int64_t i = 0; i < np; i++) out[i] = b;
    }
    for (int64_t s = u->s0; s < u->s1; s++) {
        const int64_t k0 = s * CONV_KC, kc = min64(CONV_KC, c->kdim - k0);
        if (colsh)
            col = (float *)colsh + (s - u->s0) * c->nt * CONV_KC;
        else
            pack_col_tile(x, c, n, u->g, &ts, np, k0, kc, col);
        for (int64_t r = r0; r < r1; r++) {
            const float *a = wpack + (s * c->bgroups + r) * APANEL;
            if (!wpack) {
                pack_weights(kern, dst->src[1], c, co0, co_end, s, r, abuf, tmp);
                a = abuf;
            }
            const int64_t cr = co0 + r * MR, mr = min64(MR, co_end - cr);
            float *crow[MR];
            for (int64_t i = 0; i < mr; i++)
                crow[i] = (float *)sdc_row_ptr(dst, 0, cr + i, n) + pix0;
            for (int64_t q = 0; q < npanels; q++) {
                const int64_t nr = min64(NR, np - q * NR);
                float *cp[MR];
                if (mr == MR && nr == NR) {
                    for (int i = 0; i < MR; i++) cp[i] = crow[i] + q * NR;
                    kern->ukernel(kc, a, col + q * kc * NR, cp, 1);
                    continue;
                }
                /* edge tile: compute into a full tile, copy the valid part */
                float tile[MR][NR] = {{0}};
                for (int i = 0; i < MR; i++) cp[i] = tile[i];
                for (int64_t i = 0; i < mr; i++)
                    memcpy(tile[i], crow[i] + q * NR, (size_t)nr * sizeof(float));
                kern->ukernel(kc, a, col + q * kc * NR, cp, 1);
                for (int64_t i = 0; i < mr; i++)
                    memcpy(crow[i] + q * NR, tile[i], (size_t)nr * sizeof(float));
            }
        }
    }
}

/* Depthwise (one input and one output channel per group): out[p] += sum of taps, done
 * directly, tap by tap over runs of an output row (no im2col; the inner loop is a
 * strided axpy the compiler vectorises). wk: the kw*kh taps in F32. */
static void depthwise_range(const sdc_tensor *x, const conv_geom *c, int64_t n, int64_t ch,
                            int64_t pix0, int64_t pix1, const float *wk, float *out) {
    for (int64_t p = pix0; p < pix1;) {
        const int64_t oy = p / c->ow, oxa = p % c->ow;
        const int64_t oxb = pix1 - oy * c->ow < c->ow ? pix1 - oy * c->ow : c->ow;
        float *o = out + oy * c->ow;
        for (int64_t ky = 0; ky < c->kh; ky++) {
            const int64_t iy = oy * c->sy - c->py + ky * c->dy;
            if (iy < 0 || iy >= c->ih) continue;
            const float *xr = (const float *)sdc_row_ptr(x, iy, ch, n);
            for (int64_t kx = 0; kx < c->kw; kx++) {
                /* output columns whose input column ox*sx - px + kx*dx lies in [0, iw) */
                const int64_t off = kx * c->dx - c->px, top = c->iw - 1 - off;
                int64_t lo = off >= 0 ? 0 : (-off + c->sx - 1) / c->sx;
                int64_t hi = top < 0 ? 0 : top / c->sx + 1;
                lo = lo > oxa ? lo : oxa, hi = hi < oxb ? hi : oxb;
                const float wv = wk[ky * c->kw + kx];
                for (int64_t ox = lo; ox < hi; ox++) o[ox] += wv * xr[ox * c->sx + off];
            }
        }
        p = oy * c->ow + oxb;
    }
}

#define DW_PT 128 /* pixels per depthwise unit */

static void conv_depthwise(const sdc_cpu_params *p, sdc_tensor *dst, const conv_geom *c) {
    const sdc_tensor *x = dst->src[0], *w = dst->src[1], *bias = dst->src[2];
    uintptr_t base = (uintptr_t)p->wdata + (uintptr_t)p->ith * (CONV_KC * sizeof(float) + 64);
    float *taps = (float *)((base + 63) & ~(uintptr_t)63);
    const int64_t ntiles = (c->npix + DW_PT - 1) / DW_PT;
    int64_t lo, hi;
    sdc_cpu_split(c->n * c->groups * ntiles, p->ith, p->nth, &lo, &hi);
    for (int64_t u = lo; u < hi;) { /* runs of tiles of one (image, channel) */
        const int64_t seg = u / ntiles, g = seg % c->groups, n = seg / c->groups;
        const int64_t t0 = u % ntiles, t1 = min64(ntiles, hi - seg * ntiles);
        u = seg * ntiles + t1;
        const int64_t pix0 = t0 * DW_PT, pix1 = min64(c->npix, t1 * DW_PT);
        float *out = (float *)sdc_row_ptr(dst, 0, g, n);
        const float b = bias ? ((const float *)bias->data)[g] : 0.0f;
        for (int64_t i = pix0; i < pix1; i++) out[i] = b;
        const float *wk = weight_row(w, c, g, 0, c->kdim, taps);
        depthwise_range(x, c, n, g, pix0, pix1, wk, out);
    }
}

/* Per-thread scratch of a conv2d share. */
typedef struct conv_thread {
    const sdc_gemm_kernels *kern;
    _Atomic int64_t *next; /* the shared unit counter */
    float *shared;         /* packed weight block, then the shared im2col panels */
    float *col, *tmp, *abuf;
    bool pooled;
    int ith, nth;
} conv_thread;

/* The convolution, weight block by weight block (fly: no packed weights, units convert
 * their own) and, with few tiles, fsc reduction slices at a time: all threads pack the
 * block's weight micro-panels / gather the slices' im2col panels of every tile into the
 * shared area, then take (tile, channel range) units from the counter. With many tiles a
 * unit gathers its own tile's panels slice by slice. */
static void conv_run(const sdc_cpu_params *p, sdc_tensor *dst, const conv_geom *c,
                     const conv_thread *t) {
    const sdc_tensor *x = dst->src[0], *w = dst->src[1];
    const int64_t tiles_img = (c->npix + c->nt - 1) / c->nt, tile_floats = c->nt * CONV_KC;
    float *wpack = c->fly ? NULL : t->shared;
    float *colsh = c->fsc ? t->shared + weight_floats(c) : NULL;
    const int64_t step = c->fsc ? c->fsc : c->nslices;
    bool first = true;
    for (int64_t g = 0; g < c->groups; g++) {
        for (int64_t b0 = 0; b0 < c->ngroups; b0 += c->bgroups) {
            const int64_t nb = min64(c->bgroups, c->ngroups - b0);
            const int64_t co0 = g * c->cout_g + b0 * MR, co_end = (g + 1) * c->cout_g;
            /* few tiles: split the channels too, so that no thread idles (finer when the
             * tiles' panels are shared: a channel range then only multiplies) */
            const int64_t want = (colsh ? 8 : 4) * t->nth;
            const int64_t rsplit =
                c->ntiles >= want ? 1 : min64(nb, (want + c->ntiles - 1) / c->ntiles);
            for (int64_t s0 = 0; s0 < c->nslices; s0 += step) {
                const int64_t s1 = min64(c->nslices, s0 + step), ns = s1 - s0;
                if (!first && t->pooled) sdc_cpu_barrier(p); /* everyone is done with it */
                first = false;
                if (t->ith == 0) atomic_store_explicit(t->next, 0, memory_order_relaxed);
                int64_t lo, hi;
                sdc_cpu_split(wpack && s0 == 0 ? c->nslices * nb : 0, t->ith, t->nth, &lo, &hi);
                for (int64_t u = lo; u < hi; u++) {
                    const int64_t s = u / nb, r = u % nb;
                    pack_weights(t->kern, w, c, co0, co_end, s, r,
                                 wpack + (s * c->bgroups + r) * APANEL, t->tmp);
                }
                sdc_cpu_split(colsh ? c->ntiles * ns : 0, t->ith, t->nth, &lo, &hi);
                for (int64_t j = lo; j < hi; j++) { /* (tile, slice) gathers */
                    const int64_t tile = j / ns, s = s0 + j % ns, img = tile / tiles_img;
                    const int64_t pix0 = tile % tiles_img * c->nt, k0 = s * CONV_KC;
                    tile_segs ts;
                    tile_segments(c, pix0, min64(c->nt, c->npix - pix0), &ts);
                    pack_col_tile(x, c, img, g, &ts, min64(c->nt, c->npix - pix0), k0,
                                  min64(CONV_KC, c->kdim - k0),
                                  colsh + (tile * c->fsc + s - s0) * tile_floats);
                }
                if (t->pooled) sdc_cpu_barrier(p);
                const int64_t units = c->ntiles * rsplit;
                for (;;) {
                    const int64_t u = atomic_fetch_add_explicit(t->next, 1, memory_order_relaxed);
                    if (u >= units) break;
                    const int64_t tile = u / rsplit, rc = u % rsplit;
                    const int64_t pix0 = tile % tiles_img * c->nt;
                    const conv_span sp = {
                        .n = tile / tiles_img,
                        .g = g,
                        .co0 = co0,
                        .co_end = co_end,
                        .r0 = rc * nb / rsplit,
                        .r1 = (rc + 1) * nb / rsplit,
                        .pix0 = pix0,
                        .np = min64(c->nt, c->npix - pix0),
                        .s0 = s0,
                        .s1 = s1,
                    };
                    conv_unit(t->kern, x, dst, c, wpack, &sp,
                              colsh ? colsh + tile * c->fsc * tile_floats : NULL, t->col, t->abuf,
                              t->tmp);
                }
            }
        }
    }
}

void sdc_cpu_conv2d(const sdc_cpu_params *p, sdc_tensor *dst) {
    const conv_geom c = get_geom(dst, p->nth);
    if (is_depthwise(dst, &c)) {
        conv_depthwise(p, dst, &c);
        return;
    }
    /* shares run one after another (no pool, as in unit tests): the first does it all */
    const bool pooled = p->nth > 1 && p->pool;
    if (p->nth > 1 && !pooled && p->ith > 0) return;
    char *base = (char *)(((uintptr_t)p->wdata + 63) & ~(uintptr_t)63);
    uintptr_t tb = (uintptr_t)base + shared_bytes(&c) + (size_t)p->ith * thread_bytes(&c);
    float *col = (float *)((tb + 63) & ~(uintptr_t)63);
    conv_thread t = {
        .kern = sdc_gemm_kernels_for(sdc_cpu_isa()),
        .next = (_Atomic int64_t *)base,
        .shared = (float *)(base + 64),
        .col = col,
        .tmp = col + thread_col_floats(&c),
        .pooled = pooled,
        .ith = pooled ? p->ith : 0,
        .nth = pooled ? p->nth : 1,
    };
    t.abuf = t.tmp + MR * CONV_KC;
    conv_run(p, dst, &c, &t);
}
