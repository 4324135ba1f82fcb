/* The public image API of sdc.h: decode/load (PNG or JPEG by magic bytes), encode/save
 * (by format or file extension), free, and reading stored generation parameters. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/image.h"

static const uint8_t PNG_SIG[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};

static int is_png(const uint8_t *p, size_t n) {
    return n >= 8 && !memcmp(p, PNG_SIG, 8);
}

static int is_jpeg(const uint8_t *p, size_t n) {
    return n >= 3 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF;
}

sdc_status sdc_image_decode(const void *data, size_t size, const char *label, sdc_image *out) {
    if (!label) label = "<memory>";
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null output image", label);
    memset(out, 0, sizeof *out);
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null data", label);
    uint8_t *rgb = NULL;
    int w = 0, h = 0;
    sdc_status st;
    if (data && is_png(data, size))
        st = sdc_png_read_memory(data, size, label, &rgb, &w, &h);
    else if (data && is_jpeg(data, size))
        st = sdc_jpeg_read_memory(data, size, label, &rgb, &w, &h);
    else
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a PNG or JPEG image (%zu bytes)", label, size);
    if (st != SDC_OK) return st;
    out->width = (uint32_t)w;
    out->height = (uint32_t)h;
    out->channels = 3;
    out->data = rgb;
    return SDC_OK;
}

sdc_status sdc_image_load(const char *path, sdc_image *out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_load: null output image");
    memset(out, 0, sizeof *out);
    if (!path || !*path) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_load: empty path");
    uint8_t *buf = NULL;
    size_t n = 0;
    sdc_status st = sdc_read_whole_file(path, SDC_IMAGE_FILE_MAX, &buf, &n);
    if (st != SDC_OK) return st;
    st = sdc_image_decode(buf, n, path, out);
    free(buf);
    return st;
}

static sdc_status encode(const sdc_image *img, sdc_image_format fmt, int quality,
                         const char *parameters, const char *label, uint8_t **out, size_t *size) {
    if (fmt == SDC_IMAGE_PNG) return sdc_png_encode(img, parameters, label, out, size);
    if (fmt == SDC_IMAGE_JPEG) return sdc_jpeg_encode(img, quality, parameters, label, out, size);
    return sdc_fail(SDC_ERR_INVALID_ARG, "%s: unknown image format %d", label, (int)fmt);
}

sdc_status sdc_image_encode(const sdc_image *img, sdc_image_format fmt, int quality,
                            const char *parameters, void **out, size_t *out_size) {
    if (!out || !out_size) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_encode: null output");
    uint8_t *buf = NULL;
    sdc_status st = encode(img, fmt, quality, parameters, "sdc_image_encode", &buf, out_size);
    *out = buf;
    return st;
}

/* .jpg/.jpeg/.jpe (any case) are JPEG, as in sd.cpp; everything else is PNG. */
static sdc_image_format format_of(const char *path) {
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (!dot || (slash && dot < slash)) return SDC_IMAGE_PNG;
    if (!strcasecmp(dot, ".jpg") || !strcasecmp(dot, ".jpeg") || !strcasecmp(dot, ".jpe"))
        return SDC_IMAGE_JPEG;
    return SDC_IMAGE_PNG;
}

sdc_status sdc_image_save(const char *path, const sdc_image *img, const char *parameters,
                          int quality) {
    if (!path || !*path) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_save: empty path");
    uint8_t *buf = NULL;
    size_t n = 0;
    sdc_status st = encode(img, format_of(path), quality, parameters, path, &buf, &n);
    if (st == SDC_OK) st = sdc_write_whole_file(path, buf, n);
    free(buf);
    return st;
}

void sdc_image_free(sdc_image *img) {
    if (!img) return;
    free(img->data);
    memset(img, 0, sizeof *img);
}

sdc_status sdc_image_read_parameters(const char *path, char **text) {
    if (!text) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_read_parameters: null output");
    *text = NULL;
    if (!path || !*path)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_image_read_parameters: empty path");
    uint8_t *buf = NULL;
    size_t n = 0;
    sdc_status st = sdc_read_whole_file(path, SDC_IMAGE_FILE_MAX, &buf, &n);
    if (st != SDC_OK) return st;
    if (is_png(buf, n))
        st = sdc_png_find_parameters(buf, n, path, text);
    else if (is_jpeg(buf, n))
        st = sdc_jpeg_find_parameters(buf, n, path, text);
    else
        st = sdc_fail(SDC_ERR_FORMAT, "%s: not a PNG or JPEG image", path);
    free(buf);
    return st;
}
