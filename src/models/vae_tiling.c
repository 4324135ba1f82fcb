/* sd.cpp's tiled VAE: tile placement (sd_tiling_calc_tiles), per-side tile sizes from the flags
 * (VAE::get_tile_sizes) and the smootherstep blend (sd_tensor_merge_2d), non-circular. */
#include "models/vae_tiling.h"

#include "core/log.h"
#include "sdc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TILE_DEFAULT 32
#define TILE_MIN     4

void sdc_tiling_calc(int small_dim, int tile, float overlap, int *n_tiles, float *overlap_out) {
    int tile_overlap = (int)((float)tile * overlap);
    int non_overlap = tile - tile_overlap;
    if (non_overlap < 1) non_overlap = 1;
    int n = (small_dim - tile_overlap) / non_overlap;
    int overshoot = ((n + 1) * non_overlap + tile_overlap) % small_dim;
    /* one more tile if they do not fit exactly and there is room without overlap > 0.5 */
    if (overshoot != non_overlap && overshoot <= n * (tile / 2 - tile_overlap)) n++;
    float f = 0;
    if (n > 2) f = (float)(tile * n - small_dim) / (float)(tile * (n - 1));
    if (n <= 2) {
        if (small_dim <= tile) {
            n = 1, f = 0;
        } else {
            n = 2, f = (float)(2 * tile - small_dim) / (float)tile;
        }
    }
    *n_tiles = n;
    *overlap_out = f;
}

/* "A" or "AxB" into two numbers (integers if want_int); false on anything else. */
static bool parse_pair(const char *s, bool want_int, double *a, double *b) {
    char *end;
    errno = 0;
    *a = want_int ? (double)strtol(s, &end, 10) : strtod(s, &end);
    if (end == s || errno) return false;
    if (*end == 0) {
        *b = *a;
        return true;
    }
    if (*end != 'x' && *end != 'X') return false;
    const char *s2 = end + 1;
    *b = want_int ? (double)strtol(s2, &end, 10) : strtod(s2, &end);
    return end != s2 && *end == 0 && !errno && isfinite(*a) && isfinite(*b);
}

static int tile_side(int requested, float factor, float overlap, float enc_factor, int latent) {
    int tile = TILE_DEFAULT;
    if (factor > 0.f) {
        if (factor > 1.0f) factor = 1 / (factor - factor * overlap + overlap); /* tiles per side */
        tile = (int)lroundf((float)latent * factor);
    } else if (requested >= TILE_MIN) {
        tile = requested;
    }
    tile = (int)((float)tile * enc_factor);
    if (tile > latent) tile = latent;
    return tile < TILE_MIN ? TILE_MIN : tile;
}

sdc_status sdc_tiling_from_flags_ex(const char *tile_size, const char *relative, float overlap,
                                    float factor, int w, int h, sdc_tiling *out) {
    if (w < 1 || h < 1 || !(factor > 0) || !isfinite(overlap))
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: latent %dx%d, factor %g, overlap %g", w,
                        h, factor, overlap);
    double tx = 0, ty = 0, rx = 0, ry = 0;
    if (tile_size && *tile_size && !parse_pair(tile_size, true, &tx, &ty))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "--vae-tile-size '%s': expected a size like 32 or 32x48", tile_size);
    if (relative && *relative && !parse_pair(relative, false, &rx, &ry))
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "--vae-relative-tile-size '%s': expected a size like 0.5 or 0.5x0.25",
                        relative);
    if (tx > 1 << 20 || ty > 1 << 20 || rx > 1 << 20 || ry > 1 << 20)
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: tile size too large");
    float ov = overlap < 0 ? 0 : overlap > 0.5f ? 0.5f : overlap;
    out->overlap = ov;
    out->tile_w = tile_side((int)tx, (float)rx, ov, factor, w);
    out->tile_h = tile_side((int)ty, (float)ry, ov, factor, h);
    return SDC_OK;
}

sdc_status sdc_tiling_from_flags(const char *tile_size, const char *relative, float overlap, int w,
                                 int h, sdc_tiling *out) {
    return sdc_tiling_from_flags_ex(tile_size, relative, overlap, 1.0f, w, h, out);
}

static float smootherstep(float x) {
    return x * x * x * (x * (6.0f * x - 15.0f) + 10.0f);
}

/* Adds a tile's output at (x, y) of out, skipping its first xs columns / ys rows (already
 * covered by the previous tile when the last tile was moved back), with ramps over the overlap
 * on every side that has a neighbour. */
static void merge(const float *tile, int c, int tw, int th, float *out, int ow, int oh, int x,
                  int y, int ovx, int ovy, int xs, int ys) {
    for (int ch = 0; ch < c; ch++)
        for (int iy = ys; iy < th; iy++) {
            const float *src = tile + ((size_t)ch * th + iy) * tw;
            float *dst = out + ((size_t)ch * oh + y + iy) * ow + x;
            if (ovx <= 0 && ovy <= 0) {
                for (int ix = xs; ix < tw; ix++) dst[ix] = src[ix];
                continue;
            }
            float y0 = ovy > 0 && y > 0 ? (float)(iy - ys) / (float)ovy : 1.f;
            float y1 = ovy > 0 && y < oh - th ? (float)(th - iy) / (float)ovy : 1.f;
            float yf = fminf(fminf(y0, y1), 1.f);
            float wy = smootherstep(yf);
            for (int ix = xs; ix < tw; ix++) {
                float x0 = ovx > 0 && x > 0 ? (float)(ix - xs) / (float)ovx : 1.f;
                float x1 = ovx > 0 && x < ow - tw ? (float)(tw - ix) / (float)ovx : 1.f;
                float xf = fminf(fminf(x0, x1), 1.f);
                dst[ix] = dst[ix] + src[ix] * wy * smootherstep(xf);
            }
        }
}

/* One side's placement. */
typedef struct side {
    int small, tile, overlap, step; /* in small-side cells */
} side;

static side make_side(int small, int p_tile, float overlap) {
    int n;
    float f;
    sdc_tiling_calc(small, p_tile, overlap, &n, &f);
    side s = {.small = small};
    s.overlap = (int)((float)p_tile * f);
    s.step = p_tile - s.overlap;
    if (s.step < 1) s.step = 1;
    s.tile = p_tile < small ? p_tile : small;
    return s;
}

sdc_status sdc_tiled_apply(const float *in, int c_in, int w, int h, int c_out, int scale_num,
                           int scale_den, const sdc_tiling *t, sdc_tile_fn fn, void *user,
                           float *out) {
    if (!in || !out || !fn || !t || c_in < 1 || c_out < 1 || w < 1 || h < 1)
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: bad arguments");
    if (scale_num < 1 || scale_den < 1 || (scale_num != 1 && scale_den != 1))
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: scale %d/%d (want k/1 or 1/k)", scale_num,
                        scale_den);
    if (t->tile_w < 1 || t->tile_h < 1 || !(t->overlap >= 0 && t->overlap <= 0.5f))
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: tile %dx%d overlap %g", t->tile_w,
                        t->tile_h, t->overlap);
    bool decode = scale_den == 1;
    int sc = decode ? scale_num : scale_den;
    if (!decode && (w % sc || h % sc))
        return sdc_fail(SDC_ERR_INVALID_ARG, "vae tiling: input %dx%d is not a multiple of %d", w,
                        h, sc);
    int sw = decode ? w : w / sc, sh = decode ? h : h / sc; /* small side */
    int ow = decode ? w * sc : sw, oh = decode ? h * sc : sh;
    side sx = make_side(sw, t->tile_w, t->overlap), sy = make_side(sh, t->tile_h, t->overlap);
    int itw = decode ? sx.tile : sx.tile * sc, ith = decode ? sy.tile : sy.tile * sc;
    int otw = decode ? sx.tile * sc : sx.tile, oth = decode ? sy.tile * sc : sy.tile;
    int osc = decode ? sc : 1; /* output cells per small cell */
    float *tin = malloc((size_t)c_in * itw * ith * sizeof(float));
    float *tout = malloc((size_t)c_out * otw * oth * sizeof(float));
    if (!tin || !tout) {
        free(tin);
        free(tout);
        return sdc_fail(SDC_ERR_NO_MEMORY, "vae tiling: out of memory");
    }
    memset(out, 0, (size_t)c_out * ow * oh * sizeof(float));
    sdc_status s = SDC_OK;
    bool last_y = false;
    for (int y = 0; y < sh && !last_y && s == SDC_OK; y += sy.step) {
        int dy = 0;
        if (y + sy.tile >= sh) { /* the last row of tiles ends at the border */
            dy = (y - (sh - sy.tile)) * osc;
            y = sh - sy.tile;
            last_y = true;
        }
        bool last_x = false;
        for (int x = 0; x < sw && !last_x; x += sx.step) {
            int dx = 0;
            if (x + sx.tile >= sw) {
                dx = (x - (sw - sx.tile)) * osc;
                x = sw - sx.tile;
                last_x = true;
            }
            int xi = decode ? x : x * sc, yi = decode ? y : y * sc;
            for (int ch = 0; ch < c_in; ch++)
                for (int iy = 0; iy < ith; iy++)
                    memcpy(tin + ((size_t)ch * ith + iy) * itw,
                           in + ((size_t)ch * h + yi + iy) * w + xi, (size_t)itw * sizeof(float));
            if ((s = fn(user, tin, itw, ith, tout)) != SDC_OK) break;
            merge(tout, c_out, otw, oth, out, ow, oh, x * osc, y * osc, sx.overlap * osc,
                  sy.overlap * osc, dx, dy);
        }
    }
    free(tin);
    free(tout);
    return s;
}

sdc_status sdc_tiled_retry(const float *in, int c_in, int w, int h, int c_out, int scale_num,
                           int scale_den, const sdc_tiling *t, sdc_tile_fn fn, void *user,
                           float *out, const char *what) {
    sdc_status s = fn(user, in, w, h, out);
    if (s != SDC_ERR_NO_MEMORY) return s;
    SDC_LOGW("%s: out of memory (%s); retrying once with tiling", what ? what : "vae",
             sdc_last_error());
    sdc_tiling def;
    if (!t) {
        const int lw = scale_num > scale_den ? w : w * scale_num / scale_den;
        const int lh = scale_num > scale_den ? h : h * scale_num / scale_den;
        s = sdc_tiling_from_flags(NULL, NULL, 0.5f, lw, lh, &def);
        if (s != SDC_OK) return s;
        t = &def;
    }
    return sdc_tiled_apply(in, c_in, w, h, c_out, scale_num, scale_den, t, fn, user, out);
}
