/* PNG encoding into memory (HTTP responses carry images, not files): a thin wrapper of
 * sdc_image_encode. */
#ifndef SDC_SERVER_PNG_ENCODE_H
#define SDC_SERVER_PNG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "sdc.h"

/* Encodes an 8-bit RGB image, with a tEXt "parameters" chunk when parameters != NULL
 * (A1111 readers take the generation settings from it). Returns a malloc'd buffer
 * (size in *size) or NULL on failure. */
uint8_t *sdc_srv_png_encode(const sdc_image *img, const char *parameters, size_t *size);

#endif
