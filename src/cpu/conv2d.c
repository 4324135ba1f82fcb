/* 2-D convolution as an implicit GEMM over bounded tiles:
 *   out[co][p] = bias[co] + sum_k w[co][k] * col[p][k],  k = (kw, kh, ci) of one group,
 * where col is built per tile of CONV_PT output pixels x CONV_KC values of k (im2col on
 * the fly) and w is dequantised per panel of CONV_MC output channels x CONV_KC. Each
 * thread owns a range of (channel block, pixel tile) units, so it dequantises each panel
 * once per range and never shares output.
 * Scratch per thread: (CONV_MC + CONV_PT) * CONV_KC floats, whatever the image size. */
#include <string.h>

#include "cpu/gemm.h"
#include "cpu/ops_util.h"

#define CONV_PT 128 /* output pixels per im2col tile */
#define CONV_KC 256 /* reduction slice: a multiple of every quant block size */
#define CONV_MC 256 /* output channels per weight panel */

typedef struct conv_geom {
    int64_t iw, ih, cin, n, kw, kh, cout, ow, oh, cin_g, cout_g, kdim, npix, ntiles;
    int64_t kstep; /* reduction slice: whole channels (kw*kh values) where possible */
    int sx, sy, px, py, dx, dy, groups;
} conv_geom;

static conv_geom get_geom(const sdc_tensor *dst) {
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
    c.ntiles = (c.npix + CONV_PT - 1) / CONV_PT;
    /* quantised rows must be cut at block edges; plain ones at channel edges, so that
     * im2col never starts a slice inside a kernel window */
    const int64_t khw = c.kw * c.kh;
    c.kstep = sdc_type_get(w->type)->is_quantized || khw > CONV_KC ? CONV_KC : CONV_KC / khw * khw;
    return c;
}

static size_t thread_floats(void) {
    return (size_t)(CONV_MC + CONV_PT) * CONV_KC;
}

size_t sdc_cpu_conv2d_work_size(const sdc_tensor *dst, int nth) {
    return (thread_floats() * sizeof(float) + 64) * (size_t)nth;
}

/* Window values of one pixel whose whole window lies inside the image, for the slice
 * starting at channel ci (kc a multiple of kw*kh): no bounds checks. */
static void window_inside(const float *xp, const conv_geom *c, int64_t ys, int64_t cs, int64_t ci,
                          int64_t kc, bool wide, float *row) {
    const int64_t khw = c->kw * c->kh;
    for (int64_t kk = 0; kk < kc; kk += khw, ci++) {
        const float *xc = xp + ci * cs;
        float *r = row + kk;
        if (wide) {
            /* 4-float moves: the 4th value is overwritten by the next move; the last one
             * lands past kc (< CONV_KC) and is never read; x[3] exists as !right edge */
            for (int64_t ky = 0; ky < c->kh; ky++, r += 3) memcpy(r, xc + ky * ys, 16);
        } else if (c->kw == 3 && c->dx == 1) {
            for (int64_t ky = 0; ky < c->kh; ky++, r += 3) {
                const float *xr = xc + ky * ys;
                r[0] = xr[0], r[1] = xr[1], r[2] = xr[2];
            }
        } else {
            for (int64_t ky = 0; ky < c->kh; ky++)
                for (int64_t kx = 0; kx < c->kw; kx++) *r++ = xc[ky * ys + kx * c->dx];
        }
    }
}

/* col[p][kk] for pixels [p0, p0+np) and k in [k0, k0+kc) of group g, batch n. */
static void im2col_tile(const sdc_tensor *x, const conv_geom *c, int64_t n, int64_t g, int64_t p0,
                        int64_t np, int64_t k0, int64_t kc, float *col) {
    const int64_t khw = c->kw * c->kh;
    const size_t xs0 = x->nb[0];
    const bool whole = k0 % khw == 0 && kc % khw == 0 && xs0 == sizeof(float);
    const int64_t ys = (int64_t)(x->nb[1] / sizeof(float)) * c->dy;
    const int64_t cs = (int64_t)(x->nb[2] / sizeof(float));
    for (int64_t pp = 0; pp < np; pp++) {
        const int64_t p = p0 + pp, oy = p / c->ow, ox = p % c->ow;
        const int64_t iy0 = oy * c->sy - c->py, ix0 = ox * c->sx - c->px;
        float *row = col + pp * CONV_KC;
        int64_t ci = k0 / khw, r = k0 % khw, ky = r / c->kw, kx = r % c->kw, kk = 0;
        if (whole && iy0 >= 0 && iy0 + (c->kh - 1) * c->dy < c->ih && ix0 >= 0 &&
            ix0 + (c->kw - 1) * c->dx < c->iw) {
            const float *xp = (const float *)sdc_row_ptr(x, iy0, g * c->cin_g, n) + ix0;
            const bool wide = c->kw == 3 && c->dx == 1 && ix0 + 3 < c->iw && kc < CONV_KC;
            window_inside(xp, c, ys, cs, ci, kc, wide, row);
            continue;
        }
        while (kk < kc) {
            const int64_t iy = iy0 + ky * c->dy;
            const char *xrow =
                iy >= 0 && iy < c->ih ? sdc_row_ptr(x, iy, g * c->cin_g + ci, n) : NULL;
            for (; kx < c->kw && kk < kc; kx++, kk++) {
                const int64_t ix = ix0 + kx * c->dx;
                row[kk] = xrow && ix >= 0 && ix < c->iw ? *(const float *)(xrow + ix * xs0) : 0.0f;
            }
            if (kx == c->kw) {
                kx = 0;
                if (++ky == c->kh) ky = 0, ci++;
            }
        }
    }
}

/* Pointer to a weight panel rows [co0, co0+mc) x k [k0, k0+kc) as F32 with its row
 * stride; converts into `panel` unless the weights are F32 already. */
static const float *weight_panel(const sdc_tensor *w, const conv_geom *c, int64_t co0, int64_t mc,
                                 int64_t k0, int64_t kc, float *panel, int64_t *ld) {
    if (w->type == SDC_TYPE_F32) {
        *ld = c->kdim;
        return (const float *)w->data + co0 * c->kdim + k0;
    }
    const sdc_type_traits *tr = sdc_type_get(w->type);
    const size_t row_bytes = sdc_type_row_bytes(w->type, c->kdim);
    for (int64_t i = 0; i < mc; i++) {
        const char *src = (const char *)w->data + (size_t)(co0 + i) * row_bytes +
                          (size_t)(k0 / tr->block_size) * tr->block_bytes;
        tr->to_float(src, panel + i * CONV_KC, kc);
    }
    *ld = CONV_KC;
    return panel;
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

void sdc_cpu_conv2d(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *x = dst->src[0], *w = dst->src[1], *bias = dst->src[2];
    const conv_geom c = get_geom(dst);
    uintptr_t base =
        (uintptr_t)p->wdata + (uintptr_t)p->ith * (thread_floats() * sizeof(float) + 64);
    float *panel = (float *)((base + 63) & ~(uintptr_t)63);
    float *col = panel + (size_t)CONV_MC * CONV_KC;
    const int64_t plane = (int64_t)(dst->nb[2] / sizeof(float));
    const bool depthwise =
        c.cin_g == 1 && c.cout_g == 1 && c.kdim <= c.kstep && x->nb[0] == sizeof(float);

    int64_t lo, hi;
    /* units: (batch, group, block of CONV_MC output channels, pixel tile); a thread walks
     * its range in segments sharing the first three, reusing each weight panel */
    const int64_t ncb = (c.cout_g + CONV_MC - 1) / CONV_MC;
    sdc_cpu_split(c.n * c.groups * ncb * c.ntiles, p->ith, p->nth, &lo, &hi);
    for (int64_t u = lo; u < hi;) {
        const int64_t seg = u / c.ntiles, cb = seg % ncb, g = (seg / ncb) % c.groups,
                      n = seg / (ncb * c.groups);
        const int64_t t0 = u % c.ntiles,
                      t1 = hi - seg * c.ntiles < c.ntiles ? hi - seg * c.ntiles : c.ntiles;
        u = seg * c.ntiles + t1;
        const int64_t pix0 = t0 * CONV_PT, pix1 = t1 * CONV_PT < c.npix ? t1 * CONV_PT : c.npix;
        const int64_t m0 = cb * CONV_MC, mc = c.cout_g - m0 < CONV_MC ? c.cout_g - m0 : CONV_MC;
        const int64_t co0 = g * c.cout_g + m0;
        for (int64_t co = co0; co < co0 + mc; co++) {
            float *out = (float *)sdc_row_ptr(dst, 0, co, n) + pix0;
            const float b = bias ? ((const float *)bias->data)[co] : 0.0f;
            for (int64_t i = 0; i < pix1 - pix0; i++) out[i] = b;
        }
        if (depthwise) {
            int64_t lda;
            const float *wk = weight_panel(w, &c, co0, 1, 0, c.kdim, panel, &lda);
            depthwise_range(x, &c, n, g, pix0, pix1, wk, (float *)sdc_row_ptr(dst, 0, co0, n));
            continue;
        }
        for (int64_t k0 = 0; k0 < c.kdim; k0 += c.kstep) {
            const int64_t kc = c.kdim - k0 < c.kstep ? c.kdim - k0 : c.kstep;
            int64_t lda;
            const float *A = weight_panel(w, &c, co0, mc, k0, kc, panel, &lda);
            for (int64_t q0 = pix0; q0 < pix1; q0 += CONV_PT) {
                const int64_t np = pix1 - q0 < CONV_PT ? pix1 - q0 : CONV_PT;
                im2col_tile(x, &c, n, g, q0, np, k0, kc, col);
                float *C = (float *)sdc_row_ptr(dst, 0, co0, n) + q0;
                sdc_gemm_f32_nt(mc, np, kc, A, lda, col, CONV_KC, C, plane, true);
            }
        }
    }
}
