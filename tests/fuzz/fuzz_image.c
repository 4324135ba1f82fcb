/* Image decoding (PNG or JPEG by magic bytes) and the metadata readers on arbitrary
 * bytes: each must return a status, never crash, overread or leak. */
#include <stdint.h>
#include <stdlib.h>

#include "io/image.h"
#include "sdc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sdc_image img;
    if (sdc_image_decode(data, size, "fuzz", &img) == SDC_OK) {
        /* touch every byte so that a wrong size shows under ASan */
        volatile uint8_t sum = 0;
        for (size_t i = 0; i < (size_t)img.width * img.height * img.channels; i++)
            sum += img.data[i];
        (void)sum;
        sdc_image_free(&img);
    }
    char *text = NULL;
    if (size >= 2 && data[0] == 0xFF &&
        sdc_jpeg_find_parameters(data, size, "fuzz", &text) == SDC_OK)
        free(text);
    text = NULL;
    if (size >= 1 && data[0] == 0x89 &&
        sdc_png_find_parameters(data, size, "fuzz", &text) == SDC_OK)
        free(text);
    return 0;
}
