/* Image files: PNG in (for tests and img2img) and out (sdc_save_png in sdc.h). */
#ifndef SDC_IO_IMAGE_H
#define SDC_IO_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* Largest width or height we read or write; keeps w*h*3 far from overflow. */
#define SDC_PNG_MAX_SIDE   16384
#define SDC_PNG_MAX_PIXELS (8192ULL * 8192ULL) /* 192 MiB of RGB */

/* Reads a PNG (gray, gray+alpha, palette, RGB or RGBA; 1..16 bits; interlaced or not)
 * as 8-bit RGB: alpha is dropped, 16-bit samples are reduced to 8 bits. On success
 * *rgb holds w*h*3 bytes, row-major, that the caller frees with free(). */
sdc_status sdc_png_read(const char *path, uint8_t **rgb, int *w, int *h);

/* The same from a file image in memory; `label` names it in error messages. */
sdc_status sdc_png_read_memory(const void *data, size_t size, const char *label, uint8_t **rgb,
                               int *w, int *h);

#endif
