/* Resizing as sd-cli does it for -i / --init-img of another size than -W x -H: first a
 * centred crop to the target aspect ratio, then stb_image_resize's box filter in linear
 * light (STBIR_FILTER_BOX, STBIR_COLORSPACE_SRGB, clamped edges).
 *
 * That box filter weighs each source pixel by the share of the target pixel's footprint
 * it covers, up and down alike: target pixel x spans source [x*s, (x+1)*s) with
 * s = source/target, and its value is the coverage-weighted mean. Samples are taken
 * from sRGB to linear light before averaging and back after (alpha stays linear). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/image.h"

typedef struct taps {
    int *first, *count; /* per target pixel: first source pixel and how many */
    float *w;           /* count weights per target pixel, max_taps apart */
    int max_taps;
} taps;

static void taps_free(taps *t) {
    free(t->first);
    free(t->count);
    free(t->w);
}

/* Coverage weights of one axis: src pixels onto dst pixels. */
static int taps_make(taps *t, int src, int dst) {
    double s = (double)src / dst;
    t->max_taps = (int)ceil(s) + 2;
    t->first = malloc(sizeof(int) * (size_t)dst);
    t->count = malloc(sizeof(int) * (size_t)dst);
    t->w = malloc(sizeof(float) * (size_t)dst * (size_t)t->max_taps);
    if (!t->first || !t->count || !t->w) return -1;
    for (int x = 0; x < dst; x++) {
        double a = x * s, b = (x + 1) * s;
        int i0 = (int)floor(a), i1 = (int)ceil(b);
        if (i1 > src) i1 = src;
        if (i0 < 0) i0 = 0;
        float *w = t->w + (size_t)x * t->max_taps;
        int n = 0;
        for (int i = i0; i < i1 && n < t->max_taps; i++) {
            double lo = a > i ? a : i, hi = b < i + 1 ? b : i + 1;
            w[n++] = (float)(hi > lo ? (hi - lo) / s : 0);
        }
        t->first[x] = i0;
        t->count[x] = n;
    }
    return 0;
}

static float srgb_to_linear(int v) {
    double c = v / 255.0;
    return (float)(c <= 0.04045 ? c / 12.92 : pow((c + 0.055) / 1.055, 2.4));
}

static uint8_t linear_to_srgb(float v) {
    double c = v <= 0 ? 0 : v >= 1 ? 1 : v;
    c = c <= 0.0031308 ? c * 12.92 : 1.055 * pow(c, 1 / 2.4) - 0.055;
    return (uint8_t)(c * 255.0 + 0.5);
}

static uint8_t linear_to_byte(float v) {
    return (uint8_t)(v <= 0 ? 0 : v >= 1 ? 255 : v * 255.0f + 0.5f);
}

/* Crop box of sd-cli: the largest centred region of the target's aspect ratio (computed
 * in float, truncated, as sd-cli does). */
static void crop_box(int iw, int ih, int w, int h, int *cx, int *cy, int *cw, int *ch) {
    float dst_aspect = (float)w / (float)h, src_aspect = (float)iw / (float)ih;
    *cx = *cy = 0;
    *cw = iw;
    *ch = ih;
    if (src_aspect > dst_aspect) {
        *cw = (int)((float)ih * dst_aspect);
        if (*cw < 1) *cw = 1;
        *cx = (iw - *cw) / 2;
    } else if (src_aspect < dst_aspect) {
        *ch = (int)((float)iw / dst_aspect);
        if (*ch < 1) *ch = 1;
        *cy = (ih - *ch) / 2;
    }
}

/* Resamples the crop (cx, cy, cw, ch) of `in` to out (w x h, same channels). */
static int resample(const sdc_image *in, int cx, int cy, int cw, int ch, uint8_t *out, int w,
                    int h) {
    const int C = (int)in->channels;
    const int alpha = C == 4 ? 3 : -1;
    float lut[256];
    for (int v = 0; v < 256; v++) lut[v] = srgb_to_linear(v);
    taps tx = {0}, ty = {0};
    float *mid = malloc(sizeof(float) * (size_t)ch * (size_t)w * (size_t)C);
    float *acc = malloc(sizeof(float) * (size_t)w * (size_t)C);
    int rc = -1;
    if (!mid || !acc || taps_make(&tx, cw, w) || taps_make(&ty, ch, h)) goto done;
    /* horizontal pass over the crop's rows, in linear light */
    for (int y = 0; y < ch; y++) {
        const uint8_t *row = in->data + ((size_t)(cy + y) * in->width + cx) * C;
        float *m = mid + (size_t)y * w * C;
        for (int x = 0; x < w; x++) {
            const float *wt = tx.w + (size_t)x * tx.max_taps;
            for (int c = 0; c < C; c++) {
                float s = 0;
                for (int k = 0; k < tx.count[x]; k++) {
                    uint8_t v = row[(size_t)(tx.first[x] + k) * C + c];
                    s += wt[k] * (c == alpha ? v / 255.0f : lut[v]);
                }
                m[(size_t)x * C + c] = s;
            }
        }
    }
    /* vertical pass, then back to bytes */
    for (int y = 0; y < h; y++) {
        const float *wt = ty.w + (size_t)y * ty.max_taps;
        memset(acc, 0, sizeof(float) * (size_t)w * C);
        for (int k = 0; k < ty.count[y]; k++) {
            const float *m = mid + (size_t)(ty.first[y] + k) * w * C;
            for (int i = 0; i < w * C; i++) acc[i] += wt[k] * m[i];
        }
        uint8_t *o = out + (size_t)y * w * C;
        for (int i = 0; i < w * C; i++)
            o[i] = i % C == alpha ? linear_to_byte(acc[i]) : linear_to_srgb(acc[i]);
    }
    rc = 0;
done:
    taps_free(&tx);
    taps_free(&ty);
    free(mid);
    free(acc);
    return rc;
}

sdc_status sdc_image_resize(const sdc_image *in, int w, int h, sdc_image *out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_resize: null output");
    memset(out, 0, sizeof *out);
    sdc_status st = sdc_image_check("sdc_image_resize", in, true);
    if (st != SDC_OK) return st;
    if (w < 1 || h < 1 || w > SDC_PNG_MAX_SIDE || h > SDC_PNG_MAX_SIDE ||
        (uint64_t)w * (uint64_t)h > SDC_PNG_MAX_PIXELS)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_resize: target size %dx%d outside 1..%d", w,
                        h, SDC_PNG_MAX_SIDE);
    const size_t bytes = (size_t)w * (size_t)h * in->channels;
    uint8_t *data = malloc(bytes);
    if (!data)
        return sdc_fail(SDC_ERR_NO_MEMORY, "sdc_image_resize: cannot allocate %zu bytes", bytes);
    if ((uint32_t)w == in->width && (uint32_t)h == in->height) {
        memcpy(data, in->data, bytes);
    } else {
        int cx, cy, cw, ch;
        crop_box((int)in->width, (int)in->height, w, h, &cx, &cy, &cw, &ch);
        if (resample(in, cx, cy, cw, ch, data, w, h) != 0) {
            free(data);
            return sdc_fail(SDC_ERR_NO_MEMORY, "sdc_image_resize: out of memory (%ux%u to %dx%d)",
                            in->width, in->height, w, h);
        }
    }
    out->width = (uint32_t)w;
    out->height = (uint32_t)h;
    out->channels = in->channels;
    out->data = data;
    out->seed = in->seed;
    return SDC_OK;
}
