#include "models/esrgan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buffer.h"
#include "core/log.h"
#include "core/ops.h"

typedef struct conv {
    sdc_tensor *w, *b;
    sdc_tensor *w16; /* w in F16 for sd.cpp's numerics (w itself when stored so or quantised) */
} conv;

typedef enum layout { L_NEW, L_OLD, L_BSR } layout;
static const char *const layout_name[] = {"Real-ESRGAN", "old ESRGAN", "BSRGAN"};

typedef enum role { R_FIRST, R_RDB, R_BODY, R_UP, R_HR, R_LAST } role;

struct sdc_esrgan {
    sdc_esrgan_config cfg;
    conv first, body, up[2], hr, last;
    conv *rdb;         /* [num_block][3][5] */
    sdc_tensor *owned; /* F32 biases and F16 weights converted from what is stored */
    int n_owned, cap_owned;
    sdc_esrgan_numerics mode;
};

/* Base name (without .weight/.bias) of a conv in layout L. RDB: i block, k rdb (1..3),
 * j conv (1..5); BODY: i = num_block; UP: i = 1..2; HR/LAST: i = n_up. */
static void conv_name(layout L, role r, int i, int k, int j, char *buf, size_t n) {
    static const char *const fixed[3][6] = {
        {"conv_first", NULL, "conv_body", NULL, "conv_hr", "conv_last"},
        {"model.0", NULL, NULL, NULL, NULL, NULL},
        {"conv_first", NULL, "trunk_conv", NULL, "HRconv", "conv_last"},
    };
    if (fixed[L][r]) {
        snprintf(buf, n, "%s", fixed[L][r]);
    } else if (r == R_RDB) {
        snprintf(buf, n,
                 L == L_NEW   ? "body.%d.rdb%d.conv%d"
                 : L == L_OLD ? "model.1.sub.%d.RDB%d.conv%d.0"
                              : "RRDB_trunk.%d.RDB%d.conv%d",
                 i, k, j);
    } else if (r == R_BODY) { /* old layout only */
        snprintf(buf, n, "model.1.sub.%d", i);
    } else if (r == R_UP) {
        snprintf(buf, n,
                 L == L_NEW   ? "conv_up%d"
                 : L == L_OLD ? "model.%d"
                              : "upconv%d",
                 L == L_OLD ? 3 * i : i);
    } else { /* old layout: the Sequential's learned layers after the upsamplers */
        snprintf(buf, n, "model.%d", 3 * i + (r == R_HR ? 2 : 4));
    }
}

static bool has_conv(const sdc_weight_source *ws, const char *prefix, layout L, role r, int i,
                     int k, int j) {
    char base[96], name[112];
    conv_name(L, r, i, k, j, base, sizeof base);
    snprintf(name, sizeof name, "%s.weight", base);
    return sdc_weight_find(ws, prefix, name) != NULL;
}

/* A copy of t in `type` owned by the model (t itself when it has that type already). */
static sdc_status owned_copy(sdc_esrgan *m, sdc_tensor *b, sdc_type type, sdc_tensor **out) {
    if (b->type == type) {
        *out = b;
        return SDC_OK;
    }
    if (m->n_owned == m->cap_owned) return sdc_fail(SDC_ERR_INTERNAL, "esrgan: copy slots");
    sdc_tensor *t = &m->owned[m->n_owned];
    sdc_status s = sdc_weight_convert_copy(b, type, NULL, NULL, t);
    if (s != SDC_OK) return s;
    m->n_owned++;
    *out = t;
    return SDC_OK;
}

/* A 3x3 conv of cin -> cout (cin or cout < 0: any, read from the weight). */
static sdc_status load_conv(sdc_esrgan *m, const sdc_weight_source *ws, const char *prefix,
                            layout L, role r, int i, int k, int j, int cin, int cout, conv *c) {
    char base[96], name[112];
    conv_name(L, r, i, k, j, base, sizeof base);
    snprintf(name, sizeof name, "%s.weight", base);
    int64_t wne[4] = {3, 3, cin, cout};
    sdc_status s = sdc_weight_require(ws, prefix, name, 4, wne, &c->w);
    if (s != SDC_OK) return s;
    int64_t bne[1] = {c->w->ne[3]};
    snprintf(name, sizeof name, "%s.bias", base);
    if ((s = sdc_weight_require(ws, prefix, name, 1, bne, &c->b)) != SDC_OK) return s;
    /* biases feed the conv op as F32 */
    if ((s = owned_copy(m, c->b, SDC_TYPE_F32, &c->b)) != SDC_OK) return s;
    bool plain = c->w->type == SDC_TYPE_F32 || c->w->type == SDC_TYPE_BF16;
    c->w16 = c->w;
    return plain ? owned_copy(m, c->w, SDC_TYPE_F16, &c->w16) : SDC_OK;
}

/* Layout, depth, widths and upsampling from the tensor names and shapes. */
static sdc_status detect(sdc_esrgan *m, const sdc_weight_source *ws, const char *prefix,
                         layout *out) {
    sdc_esrgan_config *c = &m->cfg;
    layout L;
    for (L = L_NEW; L <= L_BSR; L++)
        if (has_conv(ws, prefix, L, R_RDB, 0, 1, 1)) break;
    if (L > L_BSR)
        return sdc_fail(SDC_ERR_FORMAT,
                        "esrgan: not an ESRGAN model: no '%sbody.0.rdb1.conv1.weight' (nor the old "
                        "'model.1.sub.0.RDB1.conv1.0.weight' or BSRGAN layout)",
                        prefix);
    while (c->num_block < 4096 && has_conv(ws, prefix, L, R_RDB, c->num_block, 1, 1))
        c->num_block++;
    if (L == L_OLD) { /* x4: model.3 and model.6; x2: model.3; x1: neither */
        bool up1 = has_conv(ws, prefix, L, R_UP, 1, 0, 0);
        c->n_up = up1 ? 1 + has_conv(ws, prefix, L, R_UP, 2, 0, 0) : 0;
    } else {
        bool up1 = has_conv(ws, prefix, L, R_UP, 1, 0, 0);
        bool up2 = has_conv(ws, prefix, L, R_UP, 2, 0, 0);
        if (up2 && !up1) {
            char b[96];
            conv_name(L, R_UP, 1, 0, 0, b, sizeof b);
            return sdc_fail(SDC_ERR_FORMAT,
                            "esrgan: '%s%s.weight' is missing (the model has a "
                            "second upsampling conv)",
                            prefix, b);
        }
        c->n_up = up1 + up2;
    }
    *out = L;
    return SDC_OK;
}

sdc_status sdc_esrgan_load(const sdc_weight_source *ws, const char *prefix, sdc_esrgan **out) {
    *out = NULL;
    if (!prefix) prefix = "";
    sdc_esrgan *m = calloc(1, sizeof *m);
    if (!m) return sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
    sdc_esrgan_config *c = &m->cfg;
    layout L;
    sdc_status s = detect(m, ws, prefix, &L);
    if (s != SDC_OK) goto fail;
    int nconv = c->num_block * 15 + 6;
    m->rdb = calloc((size_t)c->num_block * 15, sizeof(conv));
    m->owned = calloc((size_t)nconv * 2, sizeof(sdc_tensor));
    m->cap_owned = nconv * 2;
    if (!m->rdb || !m->owned) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
        goto fail;
    }
    if ((s = load_conv(m, ws, prefix, L, R_FIRST, 0, 0, 0, -1, -1, &m->first)) != SDC_OK) goto fail;
    c->in_ch = (int)m->first.w->ne[2];
    c->num_feat = (int)m->first.w->ne[3];
    c->unshuffle = c->in_ch == 3 ? 1 : c->in_ch == 12 ? 2 : c->in_ch == 48 ? 4 : 0;
    if (!c->unshuffle) {
        s = sdc_fail(SDC_ERR_UNSUPPORTED,
                     "esrgan: the first conv takes %d channels; expected 3 (RGB), or 12 / 48 (RGB "
                     "after a pixel-unshuffle by 2 / 4)",
                     c->in_ch);
        goto fail;
    }
    const int nf = c->num_feat;
    conv probe;
    if ((s = load_conv(m, ws, prefix, L, R_RDB, 0, 1, 1, nf, -1, &probe)) != SDC_OK) goto fail;
    c->num_grow = (int)probe.w->ne[3];
    const int gc = c->num_grow;
    for (int i = 0; i < c->num_block; i++) {
        for (int k = 1; k <= 3; k++)
            for (int j = 1; j <= 5; j++) {
                conv *cv = &m->rdb[(i * 3 + (k - 1)) * 5 + (j - 1)];
                int cout = j < 5 ? gc : nf;
                if (i == 0 && k == 1 && j == 1) {
                    *cv = probe;
                    continue;
                }
                s = load_conv(m, ws, prefix, L, R_RDB, i, k, j, nf + (j - 1) * gc, cout, cv);
                if (s != SDC_OK) goto fail;
            }
    }
    if ((s = load_conv(m, ws, prefix, L, R_BODY, c->num_block, 0, 0, nf, nf, &m->body)) != SDC_OK)
        goto fail;
    for (int u = 0; u < c->n_up; u++)
        if ((s = load_conv(m, ws, prefix, L, R_UP, u + 1, 0, 0, nf, nf, &m->up[u])) != SDC_OK)
            goto fail;
    if ((s = load_conv(m, ws, prefix, L, R_HR, c->n_up, 0, 0, nf, nf, &m->hr)) != SDC_OK ||
        (s = load_conv(m, ws, prefix, L, R_LAST, c->n_up, 0, 0, nf, -1, &m->last)) != SDC_OK)
        goto fail;
    c->out_ch = (int)m->last.w->ne[3];
    if (c->out_ch != 3) {
        s = sdc_fail(SDC_ERR_UNSUPPORTED, "esrgan: the model outputs %d channels, expected 3 (RGB)",
                     c->out_ch);
        goto fail;
    }
    int up = 1 << c->n_up;
    if (up % c->unshuffle) {
        s = sdc_fail(SDC_ERR_UNSUPPORTED,
                     "esrgan: %d upsampling conv(s) after a pixel-unshuffle by %d would shrink "
                     "the image",
                     c->n_up, c->unshuffle);
        goto fail;
    }
    c->scale = up / c->unshuffle;
    SDC_LOGD("esrgan: %s layout, scale %d, %d blocks, %d features, %d growth, unshuffle %d",
             layout_name[L], c->scale, c->num_block, nf, gc, c->unshuffle);
    *out = m;
    return SDC_OK;
fail:
    sdc_esrgan_free(m);
    return s;
}

void sdc_esrgan_free(sdc_esrgan *m) {
    if (!m) return;
    for (int i = 0; i < m->n_owned; i++) sdc_buffer_free(m->owned[i].buffer);
    free(m->owned);
    free(m->rdb);
    free(m);
}

const sdc_esrgan_config *sdc_esrgan_get_config(const sdc_esrgan *m) {
    return &m->cfg;
}

void sdc_esrgan_set_numerics(sdc_esrgan *m, sdc_esrgan_numerics mode) {
    m->mode = mode;
}

/* ---- the network ---- */

typedef struct gctx {
    sdc_graph *g;
    bool sdcpp; /* sd.cpp's F16 weights and F16-rounded conv inputs */
} gctx;

static sdc_tensor *conv3(const gctx *c, sdc_tensor *x, const conv *cv) {
    if (!c->sdcpp) return sdc_conv2d(c->g, x, cv->w, cv->b, 1, 1, 1, 1, 1, 1, 1);
    x = sdc_cast(c->g, sdc_cast(c->g, x, SDC_TYPE_F16), SDC_TYPE_F32);
    return sdc_conv2d(c->g, x, cv->w16, cv->b, 1, 1, 1, 1, 1, 1, 1);
}

/* leaky_relu(x, 0.2) = x + relu(-0.8 x): exact for x >= 0 */
static sdc_tensor *lrelu(sdc_graph *g, sdc_tensor *x) {
    return sdc_add(g, x, sdc_relu(g, sdc_scale(g, x, -0.8f, 0.0f)));
}

/* Residual dense block: five convs over the growing concatenation, out = x + 0.2 * conv5. */
static sdc_tensor *rdb(const gctx *gc, sdc_tensor *x, const conv *c) {
    sdc_graph *g = gc->g;
    sdc_tensor *cat = x;
    for (int j = 0; j < 4; j++) cat = sdc_concat(g, cat, lrelu(g, conv3(gc, cat, &c[j])), 2);
    return sdc_add(g, sdc_scale(g, conv3(gc, cat, &c[4]), 0.2f, 0.0f), x);
}

static sdc_tensor *forward(const sdc_esrgan *m, sdc_graph *g, sdc_tensor *x) {
    const sdc_esrgan_config *c = &m->cfg;
    const gctx gc = {g, m->mode == SDC_ESRGAN_SDCPP};
    sdc_tensor *feat = conv3(&gc, x, &m->first);
    sdc_tensor *h = feat;
    for (int i = 0; i < c->num_block; i++) {
        sdc_graph_set_block(g, i);
        sdc_tensor *b = h;
        for (int k = 0; k < 3; k++) b = rdb(&gc, b, &m->rdb[(i * 3 + k) * 5]);
        h = sdc_add(g, sdc_scale(g, b, 0.2f, 0.0f), h);
    }
    sdc_graph_set_block(g, -1);
    feat = sdc_add(g, feat, conv3(&gc, h, &m->body));
    for (int u = 0; u < c->n_up; u++)
        feat = lrelu(g, conv3(&gc, sdc_upsample_nearest(g, feat, 2), &m->up[u]));
    return conv3(&gc, lrelu(g, conv3(&gc, feat, &m->hr)), &m->last);
}

/* The model's input for an image: reflect-padded to a multiple of the unshuffle factor r
 * and pixel-unshuffled (channel c*r*r + i*r + j takes pixel (r*y + i, r*x + j) of c). */
static float *unshuffle_input(const float *x, int w, int h, int r, int *pw, int *ph) {
    int W = (w + r - 1) / r * r, H = (h + r - 1) / r * r;
    int ow = W / r, oh = H / r;
    float *o = malloc((size_t)W * H * 3 * sizeof(float));
    if (!o) return NULL;
    for (int c = 0; c < 3; c++)
        for (int i = 0; i < r; i++)
            for (int j = 0; j < r; j++) {
                float *dst = o + (size_t)((c * r + i) * r + j) * oh * ow;
                for (int yy = 0; yy < oh; yy++) {
                    int sy = yy * r + i;
                    if (sy >= h) sy = 2 * (h - 1) - sy; /* reflect, edge not repeated */
                    for (int xx = 0; xx < ow; xx++) {
                        int sx = xx * r + j;
                        if (sx >= w) sx = 2 * (w - 1) - sx;
                        dst[yy * ow + xx] = x[((size_t)c * h + sy) * w + sx];
                    }
                }
            }
    *pw = W;
    *ph = H;
    return o;
}

sdc_status sdc_esrgan_run(sdc_esrgan *m, sdc_backend *be, const float *x, int w, int h,
                          float *out) {
    const sdc_esrgan_config *c = &m->cfg;
    const int r = c->unshuffle, s = c->scale;
    if (w < 1 || h < 1) return sdc_fail(SDC_ERR_INVALID_ARG, "esrgan: image %dx%d", w, h);
    /* reflect padding needs more pixels than it adds */
    int pad_w = (r - w % r) % r, pad_h = (r - h % r) % r;
    if (pad_w >= w || pad_h >= h)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "esrgan: a %dx%d image (or tile) is too small for this model's "
                        "pixel-unshuffle",
                        w, h);
    int pw = w, ph = h;
    float *in = r > 1 ? unshuffle_input(x, w, h, r, &pw, &ph) : NULL;
    if (r > 1 && !in) return sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
    int64_t ne[4] = {pw / r, ph / r, c->in_ch, 1};
    size_t in_bytes = (size_t)pw * ph * 3 * sizeof(float);
    sdc_graph *g = sdc_graph_create();
    if (!g) {
        free(in);
        return sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
    }
    sdc_tensor *xt = sdc_graph_input(g, SDC_TYPE_F32, 4, ne);
    sdc_tensor *y = forward(m, g, xt);
    sdc_graph_mark_output(g, y);
    sdc_status st = sdc_graph_status(g);
    float *full = NULL;
    if (st != SDC_OK) {
        st = sdc_fail(st, "esrgan: building the graph: %s", sdc_graph_error(g));
        goto done;
    }
    const sdc_input_data inputs[] = {{xt, in ? in : x, in_bytes}};
    if ((st = sdc_backend_set_inputs(be, g, inputs, 1)) != SDC_OK ||
        (st = sdc_backend_compute(be, g, NULL, NULL)) != SDC_OK)
        goto done;
    size_t ow = (size_t)w * s, oh = (size_t)h * s, fw = (size_t)pw * s, fh = (size_t)ph * s;
    if (fw == ow && fh == oh) {
        st = sdc_backend_tensor_get(be, y, out, 0, ow * oh * 3 * sizeof(float));
        goto done;
    }
    full = malloc(fw * fh * 3 * sizeof(float));
    if (!full) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
        goto done;
    }
    if ((st = sdc_backend_tensor_get(be, y, full, 0, fw * fh * 3 * sizeof(float))) != SDC_OK)
        goto done;
    for (size_t ch = 0; ch < 3; ch++) /* crop the padding away */
        for (size_t yy = 0; yy < oh; yy++)
            memcpy(out + (ch * oh + yy) * ow, full + (ch * fh + yy) * fw, ow * sizeof(float));
done:
    free(full);
    free(in);
    sdc_graph_free(g);
    return st;
}

/* ---- sd.cpp's tiling ---- */

void sdc_esrgan_calc_tiles(int small, int tile, float overlap_factor, int *n_tiles, float *factor) {
    int overlap = (int)((float)tile * overlap_factor);
    int step = tile - overlap;
    int n = step > 0 ? (small - overlap) / step : 1;
    int overshoot = ((n + 1) * step + overlap) % small;
    if (overshoot != step && overshoot <= n * (tile / 2 - overlap)) n++;
    float f = n > 2 ? (float)(tile * n - small) / (float)(tile * (n - 1)) : 0.0f;
    if (n <= 2) {
        if (small <= tile) {
            n = 1;
            f = 0.0f;
        } else {
            n = 2;
            f = (float)(2 * tile - small) / (float)tile;
        }
    }
    *n_tiles = n;
    *factor = f;
}

static float smootherstep(float t) {
    return t * t * t * (t * (6.0f * t - 15.0f) + 10.0f);
}

typedef struct tile_place {
    int x, y, skip_x, skip_y; /* output position and first column/row to merge */
    int ov_x, ov_y;           /* overlap in output pixels */
} tile_place;

/* Adds tile t [3][th][tw] into out [3][oh][ow] with sd.cpp's ramp weights (or copies it
 * when there is no overlap). */
static void merge_tile(const float *t, int tw, int th, float *out, int ow, int oh,
                       const tile_place *p) {
    bool blend = p->ov_x > 0 || p->ov_y > 0;
    for (int c = 0; c < 3; c++)
        for (int iy = p->skip_y; iy < th; iy++) {
            float yf = 1.0f;
            if (blend) {
                float y0 =
                    (p->ov_y > 0 && p->y > 0) ? (float)(iy - p->skip_y) / (float)p->ov_y : 1.0f;
                float y1 =
                    (p->ov_y > 0 && p->y < oh - th) ? (float)(th - iy) / (float)p->ov_y : 1.0f;
                yf = smootherstep(fminf(fminf(y0, y1), 1.0f));
            }
            const float *src = t + ((size_t)c * th + iy) * tw;
            float *dst = out + ((size_t)c * oh + p->y + iy) * ow + p->x;
            for (int ix = p->skip_x; ix < tw; ix++) {
                if (!blend) {
                    dst[ix] = src[ix];
                    continue;
                }
                float x0 =
                    (p->ov_x > 0 && p->x > 0) ? (float)(ix - p->skip_x) / (float)p->ov_x : 1.0f;
                float x1 =
                    (p->ov_x > 0 && p->x < ow - tw) ? (float)(tw - ix) / (float)p->ov_x : 1.0f;
                float xf = smootherstep(fminf(fminf(x0, x1), 1.0f));
                dst[ix] = dst[ix] + src[ix] * yf * xf;
            }
        }
}

sdc_status sdc_esrgan_upscale(sdc_esrgan *m, sdc_backend *be, const float *x, int w, int h,
                              int tile, float *out) {
    const int s = m->cfg.scale;
    if (tile <= 0 || (w <= tile && h <= tile)) return sdc_esrgan_run(m, be, x, w, h, out);
    int nx, ny;
    float fx, fy;
    sdc_esrgan_calc_tiles(w, tile, 0.25f, &nx, &fx);
    sdc_esrgan_calc_tiles(h, tile, 0.25f, &ny, &fy);
    const int ov_x = (int)((float)tile * fx), ov_y = (int)((float)tile * fy);
    const int step_x = tile - ov_x, step_y = tile - ov_y;
    const int tw = tile < w ? tile : w, th = tile < h ? tile : h;
    const int ow = w * s, oh = h * s;
    float *tin = malloc((size_t)tw * th * 3 * sizeof(float));
    float *tout = malloc((size_t)tw * th * s * s * 3 * sizeof(float));
    if (!tin || !tout) {
        free(tin);
        free(tout);
        return sdc_fail(SDC_ERR_NO_MEMORY, "esrgan: out of memory");
    }
    memset(out, 0, (size_t)ow * oh * 3 * sizeof(float));
    SDC_LOGD("esrgan: %d x %d tiles of %d, overlap %d x %d", nx, ny, tile, ov_x, ov_y);
    sdc_status st = SDC_OK;
    bool last_y = false;
    for (int y = 0; y < h && !last_y && st == SDC_OK; y += step_y) {
        int dy = 0;
        if (y + th >= h) { /* the last row of tiles ends at the border */
            dy = (y - (h - th)) * s;
            y = h - th;
            last_y = true;
        }
        bool last_x = false;
        for (int xx = 0; xx < w && !last_x; xx += step_x) {
            int dx = 0;
            if (xx + tw >= w) {
                dx = (xx - (w - tw)) * s;
                xx = w - tw;
                last_x = true;
            }
            for (int c = 0; c < 3; c++)
                for (int iy = 0; iy < th; iy++)
                    memcpy(tin + ((size_t)c * th + iy) * tw, x + ((size_t)c * h + y + iy) * w + xx,
                           (size_t)tw * sizeof(float));
            if ((st = sdc_esrgan_run(m, be, tin, tw, th, tout)) != SDC_OK) break;
            tile_place p = {xx * s, y * s, dx, dy, ov_x * s, ov_y * s};
            merge_tile(tout, tw * s, th * s, out, ow, oh, &p);
        }
    }
    free(tin);
    free(tout);
    return st;
}
