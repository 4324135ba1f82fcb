/* Image files: PNG and JPEG in and out. The public face is sdc_image_* in sdc.h
 * (src/io/image_api.c); these are the format-level pieces behind it. */
#ifndef SDC_IO_IMAGE_H
#define SDC_IO_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "sdc.h"

/* Largest width or height we read or write; keeps w*h*3 far from overflow. */
#define SDC_PNG_MAX_SIDE   16384
#define SDC_PNG_MAX_PIXELS (8192ULL * 8192ULL) /* 192 MiB of RGB */
/* Files larger than this are not images we would want to read. */
#define SDC_IMAGE_FILE_MAX ((size_t)1 << 30)

/* Reads a PNG (gray, gray+alpha, palette, RGB or RGBA; 1..16 bits; interlaced or not)
 * as 8-bit RGB: alpha is dropped, 16-bit samples are reduced to 8 bits. On success
 * *rgb holds w*h*3 bytes, row-major, that the caller frees with free(). */
sdc_status sdc_png_read(const char *path, uint8_t **rgb, int *w, int *h);

/* The same from a file image in memory; `label` names it in error messages. */
sdc_status sdc_png_read_memory(const void *data, size_t size, const char *label, uint8_t **rgb,
                               int *w, int *h);

/* Encodes 8-bit gray (1), RGB (3) or RGBA (4) to PNG in memory, with a tEXt "parameters"
 * chunk when parameters != NULL. *out is malloc'd. */
sdc_status sdc_png_encode(const sdc_image *img, const char *parameters, const char *label,
                          uint8_t **out, size_t *out_size);

/* Reads a baseline or progressive JPEG (gray, YCbCr, RGB, CMYK or YCCK) as 8-bit RGB.
 * Truncated or corrupt data is an error, not a partly grey image. */
sdc_status sdc_jpeg_read_memory(const void *data, size_t size, const char *label, uint8_t **rgb,
                                int *w, int *h);

/* Encodes gray (1) or RGB (3) to JPEG at quality 1..100 (4:2:0 up to 90, 4:4:4 above, as
 * sd.cpp's writer). With parameters: an EXIF UserComment (A1111's place) and a COM
 * segment "parameters\0text" (sd.cpp's place). *out is malloc'd. */
sdc_status sdc_jpeg_encode(const sdc_image *img, int quality, const char *parameters,
                           const char *label, uint8_t **out, size_t *out_size);

/* The "parameters" text of a PNG (tEXt, zTXt, iTXt) or JPEG (EXIF UserComment, COM
 * "parameters\0...") file image, as UTF-8: *text malloc'd, or NULL with SDC_OK when
 * there is none. A malformed container is an error. */
sdc_status sdc_png_find_parameters(const uint8_t *data, size_t size, const char *label,
                                   char **text);
sdc_status sdc_jpeg_find_parameters(const uint8_t *data, size_t size, const char *label,
                                    char **text);

/* Validates an image to encode: 1..SDC_PNG_MAX_SIDE per side, channels 3 (or 1, 3, 4 when
 * allow_gray_alpha). */
sdc_status sdc_image_check(const char *label, const sdc_image *img, bool allow_gray_alpha);

/* UTF-8 helpers of the metadata code (src/io/image_text.c). */
/* Next code point at s[*pos] (len bytes in all); invalid bytes read as U+FFFD, one each. */
uint32_t sdc_utf8_next(const unsigned char *s, size_t len, size_t *pos);
/* Length of the longest prefix of s (len bytes) of at most max bytes that ends on a
 * code point boundary. */
size_t sdc_utf8_prefix(const char *s, size_t len, size_t max);
/* Appends the UTF-8 encoding of cp (<= 0x10FFFF) to buf; returns the byte count (1..4). */
size_t sdc_utf8_put(uint32_t cp, char *buf);

/* Whole-file helpers with errors that name the path. */
sdc_status sdc_read_whole_file(const char *path, size_t max_size, uint8_t **data, size_t *size);
sdc_status sdc_write_whole_file(const char *path, const void *data, size_t size);

#endif
