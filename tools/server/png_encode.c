#include "png_encode.h"

#include <stdlib.h>

uint8_t *sdc_srv_png_encode(const sdc_image *img, const char *parameters, size_t *size) {
    void *out = NULL;
    *size = 0;
    if (sdc_image_encode(img, SDC_IMAGE_PNG, 0, parameters, &out, size) != SDC_OK) return NULL;
    return out;
}
