#include "png_encode.h"

#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

typedef struct mem_sink {
    uint8_t *data;
    size_t size, cap;
    int failed;
} mem_sink;

static void sink_write(png_structp png, png_bytep bytes, size_t n) {
    mem_sink *s = png_get_io_ptr(png);
    if (s->failed) return;
    if (s->size + n > s->cap) {
        size_t cap = s->cap ? s->cap : 4096;
        while (cap < s->size + n) cap *= 2;
        uint8_t *grown = realloc(s->data, cap);
        if (!grown) {
            s->failed = 1;
            png_error(png, "out of memory");
        }
        s->data = grown;
        s->cap = cap;
    }
    memcpy(s->data + s->size, bytes, n);
    s->size += n;
}

static void sink_flush(png_structp png) {
    (void)png;
}

static void on_error(png_structp png, png_const_charp msg) {
    (void)msg;
    longjmp(png_jmpbuf(png), 1);
}

static void on_warning(png_structp png, png_const_charp msg) {
    (void)png, (void)msg;
}

uint8_t *sdc_srv_png_encode(const sdc_image *img, const char *parameters, size_t *size) {
    *size = 0;
    if (!img || !img->data || img->channels != 3 || !img->width || !img->height) return NULL;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, on_error, on_warning);
    if (!png) return NULL;
    png_infop info = png_create_info_struct(png);
    /* volatile: read after longjmp */
    mem_sink *volatile sink = calloc(1, sizeof(mem_sink));
    if (!info || !sink) {
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(sink);
        return NULL;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        free(sink->data);
        free(sink);
        return NULL;
    }
    png_set_write_fn(png, sink, sink_write, sink_flush);
    png_set_IHDR(png, info, img->width, img->height, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (parameters) {
        png_text text;
        memset(&text, 0, sizeof text);
        text.compression = PNG_TEXT_COMPRESSION_NONE;
        text.key = "parameters";
        text.text = (char *)parameters;
        text.text_length = strlen(parameters);
        png_set_text(png, info, &text, 1);
    }
    png_write_info(png, info);
    for (uint32_t y = 0; y < img->height; y++)
        png_write_row(png, img->data + (size_t)y * img->width * 3);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    uint8_t *out = sink->data;
    *size = sink->size;
    free(sink);
    return out;
}
