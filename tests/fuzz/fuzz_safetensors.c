/* Fuzz target: the safetensors parser on arbitrary bytes, then everything it exposes
 * (names, shapes, data bytes, f32 conversion, lookups, metadata) and the model loader
 * on the same image, so that any accepted header is also safe to use. */
#include "io/model_loader.h"
#include "io/safetensors.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sdc_st_file *f = NULL;
    if (sdc_st_open_memory(data, size, "fuzz.safetensors", &f) == SDC_OK) {
        uint64_t acc = 0;
        for (int i = 0; i < sdc_st_count(f); i++) {
            const sdc_st_tensor *t = sdc_st_at(f, i);
            acc += strlen(t->name) + (uint64_t)t->ndim + sdc_st_dtype_size(t->dtype);
            for (int d = 0; d < t->ndim; d++) acc += (uint64_t)t->shape[d];
            for (size_t b = 0; b < t->nbytes; b++) acc += ((const uint8_t *)t->data)[b];
            if (sdc_st_find(f, t->name) != t) abort();
            int64_t n = sdc_st_numel(t);
            if ((size_t)n * sdc_st_dtype_size(t->dtype) != t->nbytes) abort();
            float *out = malloc((size_t)n * sizeof(float) + 1);
            if (out && sdc_st_to_f32(t, out) == SDC_OK)
                for (int64_t k = 0; k < n; k++) acc += (uint64_t)(out[k] == out[k]);
            free(out);
        }
        const char *m = sdc_st_metadata(f, "format");
        if (m) acc += strlen(m);
        g_sink += acc;
        sdc_st_close(f);
    }

    sdc_loader *l = NULL;
    if (sdc_loader_create(&l) == SDC_OK) {
        if (sdc_loader_add_memory(l, data, size, "fuzz.safetensors", "model.") == SDC_OK) {
            for (int i = 0; i < sdc_loader_tensor_count(l); i++) {
                const sdc_tensor *t = sdc_loader_tensor_at(l, i);
                size_t nb = sdc_tensor_nbytes(t);
                for (size_t b = 0; b < nb; b++) g_sink += ((const uint8_t *)t->data)[b];
                if (sdc_loader_find(l, t->name) != t) abort();
            }
        }
        sdc_loader_free(l);
    }
    return 0;
}
