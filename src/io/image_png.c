/* PNG output (sdc_save_png and the in-memory encoder, with the A1111 "parameters" text)
 * and input, via libpng.
 * libpng reports errors by longjmp; each entry point catches them and turns the
 * message into an sdc_status with the file name. */
#include <errno.h>
#include <png.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "io/image.h"

/* A zTXt/iCCP chunk may not expand beyond this (defends against compression bombs). */
#define PNG_CHUNK_MALLOC_MAX (4u << 20) /* ancillary chunks (text, ICC) are small */

typedef struct png_err {
    char msg[256];
} png_err;

static void on_png_error(png_structp png, png_const_charp msg) {
    png_err *e = png_get_error_ptr(png);
    if (e) snprintf(e->msg, sizeof e->msg, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
    (void)png;
    sdc_log(SDC_LOG_DEBUG, "libpng: %s", msg ? msg : "");
}

/* ---- writing ---- */

sdc_status sdc_image_check(const char *label, const sdc_image *img, bool allow_gray_alpha) {
    if (!img || !img->data) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: no image data", label);
    if (img->width == 0 || img->height == 0 || img->width > SDC_PNG_MAX_SIDE ||
        img->height > SDC_PNG_MAX_SIDE)
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: image size %ux%u outside 1..%d per side", label,
                        img->width, img->height, SDC_PNG_MAX_SIDE);
    if (img->channels != 3 && !(allow_gray_alpha && (img->channels == 1 || img->channels == 4)))
        return sdc_fail(SDC_ERR_INVALID_ARG, "%s: %u channels (expected %s)", label, img->channels,
                        allow_gray_alpha ? "1, 3 or 4" : "3");
    return SDC_OK;
}

static int color_type_of(uint32_t channels) {
    return channels == 1   ? PNG_COLOR_TYPE_GRAY
           : channels == 3 ? PNG_COLOR_TYPE_RGB
                           : PNG_COLOR_TYPE_RGB_ALPHA;
}

typedef struct mem_sink {
    uint8_t *data;
    size_t size, cap;
} mem_sink;

static void sink_write(png_structp png, png_bytep bytes, size_t n) {
    mem_sink *s = png_get_io_ptr(png);
    if (n > s->cap - s->size) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap - s->size < n) {
            if (cap > SIZE_MAX / 2) png_error(png, "encoded image too large");
            cap *= 2;
        }
        uint8_t *grown = realloc(s->data, cap);
        if (!grown) png_error(png, "out of memory");
        s->data = grown;
        s->cap = cap;
    }
    memcpy(s->data + s->size, bytes, n);
    s->size += n;
}

static void sink_flush(png_structp png) {
    (void)png;
}

/* Everything libpng may longjmp out of; returns 0 on success. */
static int write_png_stream(png_structp png, png_infop info, mem_sink *sink, const sdc_image *img,
                            const char *parameters) {
    if (setjmp(png_jmpbuf(png))) return -1;
    png_set_write_fn(png, sink, sink_write, sink_flush);
    png_set_IHDR(png, info, img->width, img->height, 8, color_type_of(img->channels),
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (parameters) {
        /* tEXt goes before IDAT, where readers (A1111, sd.cpp) look first */
        png_text text;
        memset(&text, 0, sizeof text);
        text.compression = PNG_TEXT_COMPRESSION_NONE;
        text.key = (png_charp) "parameters";
        text.text = (png_charp)parameters;
        text.text_length = strlen(parameters);
        png_set_text(png, info, &text, 1);
    }
    png_write_info(png, info);
    size_t stride = (size_t)img->width * img->channels;
    for (uint32_t y = 0; y < img->height; y++) png_write_row(png, img->data + (size_t)y * stride);
    png_write_end(png, info);
    return 0;
}

sdc_status sdc_png_encode(const sdc_image *img, const char *parameters, const char *label,
                          uint8_t **out, size_t *out_size) {
    if (!label) label = "<png>";
    if (!out || !out_size) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null output pointer", label);
    *out = NULL;
    *out_size = 0;
    sdc_status st = sdc_image_check(label, img, true);
    if (st != SDC_OK) return st;

    png_err err = {{0}};
    png_structp png =
        png_create_write_struct(PNG_LIBPNG_VER_STRING, &err, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_write_struct(&png, &info);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot create PNG writer", label);
    }
    mem_sink sink = {NULL, 0, 0};
    int rc = write_png_stream(png, info, &sink, img, parameters);
    png_destroy_write_struct(&png, &info);
    if (rc != 0) {
        free(sink.data);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot encode PNG: %s", label, err.msg);
    }
    *out = sink.data;
    *out_size = sink.size;
    return SDC_OK;
}

sdc_status sdc_write_whole_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return sdc_fail(SDC_ERR_IO, "%s: cannot open for writing: %s", path, strerror(errno));
    size_t put = fwrite(data, 1, size, f);
    /* a full disk often shows only at flush/close time */
    int failed = put != size || fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !failed) failed = 1, e = errno;
    if (failed) {
        remove(path);
        return sdc_fail(SDC_ERR_IO, "%s: write failed: %s", path, strerror(e));
    }
    return SDC_OK;
}

sdc_status sdc_save_png(const char *path, const sdc_image *img, const char *parameters) {
    if (!path || !*path) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_save_png: empty path");
    uint8_t *png = NULL;
    size_t n = 0;
    sdc_status st = sdc_png_encode(img, parameters, path, &png, &n);
    if (st == SDC_OK) st = sdc_write_whole_file(path, png, n);
    free(png);
    return st;
}

/* ---- reading ---- */

typedef struct mem_reader {
    const uint8_t *data;
    size_t size, pos;
} mem_reader;

static void read_from_memory(png_structp png, png_bytep out, size_t n) {
    mem_reader *r = png_get_io_ptr(png);
    if (n > r->size - r->pos) png_error(png, "file is truncated");
    memcpy(out, r->data + r->pos, n);
    r->pos += n;
}

typedef struct png_decoded {
    uint8_t *rgb;
    png_bytep *rows;
    int w, h;
} png_decoded;

/* Everything libpng may longjmp out of; returns 0 on success. On failure the caller frees
 * out->rgb and out->rows (set before anything can fail after their allocation). */
static int decode_png(png_structp png, png_infop info, mem_reader *r, png_decoded *out) {
    if (setjmp(png_jmpbuf(png))) return -1;
    png_set_read_fn(png, r, read_from_memory);
    png_set_user_limits(png, SDC_PNG_MAX_SIDE, SDC_PNG_MAX_SIDE);
    png_set_chunk_malloc_max(png, PNG_CHUNK_MALLOC_MAX);
    png_read_info(png, info);

    png_uint_32 w = 0, h = 0;
    int depth = 0, color = 0, interlace = 0;
    png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    /* a few bytes of deflate can claim gigapixels: cap the decoded size */
    if ((uint64_t)w * h > SDC_PNG_MAX_PIXELS) png_error(png, "image has too many pixels");

    /* Normalise every layout to 8-bit RGB. */
    if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    /* a tRNS chunk turns into an alpha channel during expansion: drop it like real alpha */
    bool trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
    if (trns) png_set_tRNS_to_alpha(png);
    if ((color & PNG_COLOR_MASK_ALPHA) || trns) png_set_strip_alpha(png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    if (interlace != PNG_INTERLACE_NONE) png_set_interlace_handling(png);
    png_read_update_info(png, info);

    if (png_get_rowbytes(png, info) != (size_t)w * 3)
        png_error(png, "unexpected row layout after conversion to RGB");

    out->rgb = malloc((size_t)w * h * 3);
    out->rows = malloc(sizeof(png_bytep) * h);
    if (!out->rgb || !out->rows) png_error(png, "out of memory");
    for (png_uint_32 y = 0; y < h; y++) out->rows[y] = out->rgb + (size_t)y * w * 3;
    png_read_image(png, out->rows);
    out->w = (int)w;
    out->h = (int)h;
    return 0;
}

/* Walks the chunk list before libpng sees it: libpng sizes some chunk buffers from the
 * declared length, so a few bytes claiming a 2 GB chunk would cost a 2 GB allocation. */
static sdc_status check_chunks(const uint8_t *p, size_t size, const char *label) {
    size_t pos = 8;
    while (pos + 8 <= size) {
        uint32_t len = (uint32_t)p[pos] << 24 | (uint32_t)p[pos + 1] << 16 |
                       (uint32_t)p[pos + 2] << 8 | p[pos + 3];
        char type[5] = {(char)p[pos + 4], (char)p[pos + 5], (char)p[pos + 6], (char)p[pos + 7], 0};
        for (int i = 0; i < 4; i++)
            if (!((type[i] >= 'a' && type[i] <= 'z') || (type[i] >= 'A' && type[i] <= 'Z')))
                type[i] = '?';
        if (len > size - pos - 8 || size - pos - 8 - len < 4)
            return sdc_fail(SDC_ERR_FORMAT,
                            "%s: invalid PNG: chunk '%s' of %u bytes at offset %zu "
                            "runs past the end of the file (%zu bytes)",
                            label, type, len, pos, size);
        if (!memcmp(type, "IEND", 4)) return SDC_OK;
        pos += 12 + (size_t)len;
    }
    return SDC_OK; /* no IEND: libpng reports what is missing */
}

sdc_status sdc_png_read_memory(const void *data, size_t size, const char *label, uint8_t **rgb,
                               int *w, int *h) {
    if (!label) label = "<memory>";
    if (!rgb || !w || !h) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null output pointer", label);
    *rgb = NULL;
    *w = *h = 0;
    if (!data && size) return sdc_fail(SDC_ERR_INVALID_ARG, "%s: null data", label);
    if (size < 8 || png_sig_cmp((png_const_bytep)data, 0, 8) != 0)
        return sdc_fail(SDC_ERR_FORMAT, "%s: not a PNG file (bad signature)", label);
    sdc_status cs = check_chunks(data, size, label);
    if (cs != SDC_OK) return cs;

    png_err err = {{0}};
    png_structp png =
        png_create_read_struct(PNG_LIBPNG_VER_STRING, &err, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!png || !info) {
        png_destroy_read_struct(&png, &info, NULL);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot create PNG reader", label);
    }
    mem_reader r = {data, size, 0};
    png_decoded out = {NULL, NULL, 0, 0};
    int rc = decode_png(png, info, &r, &out);
    png_destroy_read_struct(&png, &info, NULL);
    free(out.rows);
    if (rc != 0) {
        free(out.rgb);
        return sdc_fail(SDC_ERR_FORMAT, "%s: invalid PNG: %s", label, err.msg);
    }
    *rgb = out.rgb;
    *w = out.w;
    *h = out.h;
    return SDC_OK;
}

sdc_status sdc_read_whole_file(const char *path, size_t max_size, uint8_t **data, size_t *size) {
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return sdc_fail(SDC_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long n = -1;
    if (fseek(f, 0, SEEK_END) == 0) n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return sdc_fail(SDC_ERR_IO, "%s: cannot determine file size", path);
    }
    if ((unsigned long)n > max_size) {
        fclose(f);
        return sdc_fail(SDC_ERR_FORMAT, "%s: file too large for an image (%ld bytes, limit %zu)",
                        path, n, max_size);
    }
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf) {
        fclose(f);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot allocate %ld bytes", path, n);
    }
    size_t got = fread(buf, 1, (size_t)n, f);
    int read_failed = ferror(f);
    fclose(f);
    if (read_failed || got != (size_t)n) {
        free(buf);
        return sdc_fail(SDC_ERR_IO, "%s: read failed", path);
    }
    *data = buf;
    *size = got;
    return SDC_OK;
}

sdc_status sdc_png_read(const char *path, uint8_t **rgb, int *w, int *h) {
    if (!rgb || !w || !h) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_png_read: null output pointer");
    *rgb = NULL;
    *w = *h = 0;
    if (!path || !*path) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_png_read: empty path");
    uint8_t *buf = NULL;
    size_t n = 0;
    sdc_status st = sdc_read_whole_file(path, SDC_IMAGE_FILE_MAX, &buf, &n);
    if (st != SDC_OK) return st;
    st = sdc_png_read_memory(buf, n, path, rgb, w, h);
    free(buf);
    return st;
}
