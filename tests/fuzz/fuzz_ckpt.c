/* Fuzz target: the PyTorch checkpoint reader (zip directory, restricted pickle VM,
 * tensor resolution against storages) on arbitrary bytes, then every tensor it exposes
 * (all bytes read, f32 conversion) and the model loader on the same image; the same
 * bytes also run through the pickle VM alone, so that pickle opcodes are explored
 * without needing a valid zip around them. The bytes are also a diffusers tensor name
 * (mapped for every component) and a unet/config.json text. */
#include "io/ckpt.h"
#include "io/diffusers_names.h"
#include "io/model_loader.h"
#include "io/pickle.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t g_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sdc_pickle *p = NULL;
    if (sdc_pickle_load(data, size, "fuzz.pkl", &p) == SDC_OK) {
        for (int i = 0; i < sdc_pickle_obj_count(p); i++) g_sink += sdc_pickle_obj(p, i)->kind;
        if (!sdc_pickle_obj(p, sdc_pickle_root(p))) abort();
        sdc_pickle_free(p);
    }

    sdc_ckpt_file *f = NULL;
    if (sdc_ckpt_open_memory(data, size, "fuzz.ckpt", &f) == SDC_OK) {
        uint64_t acc = 0;
        for (int i = 0; i < sdc_ckpt_count(f); i++) {
            const sdc_st_tensor *t = sdc_ckpt_at(f, i);
            if ((size_t)sdc_st_numel(t) * sdc_st_dtype_size(t->dtype) != t->nbytes) abort();
            if (sdc_ckpt_in_file(f, i) && t->nbytes &&
                ((const uint8_t *)t->data < data ||
                 (const uint8_t *)t->data + t->nbytes > data + size))
                abort();
            for (size_t b = 0; b < t->nbytes; b++) acc += ((const uint8_t *)t->data)[b];
            float *out = malloc((size_t)sdc_st_numel(t) * sizeof(float) + 1);
            if (out && sdc_st_to_f32(t, out) == SDC_OK)
                for (int64_t k = 0; k < sdc_st_numel(t); k++) acc += (uint64_t)(out[k] == out[k]);
            free(out);
        }
        int64_t v;
        if (sdc_ckpt_int(f, "global_step", &v)) acc += (uint64_t)v;
        g_sink += acc;
        sdc_ckpt_close(f);
    }

    char name[256], out[128];
    size_t nl = size < sizeof name - 1 ? size : sizeof name - 1;
    memcpy(name, data, nl);
    name[nl] = '\0';
    sdc_unet_layout_hint h;
    sdc_unet_layout_hint_default(&h);
    if (sdc_unet_layout_hint_from_config((const char *)data, size, "fuzz.json", &h) == SDC_OK &&
        (h.n_levels < 1 || h.n_levels > SDC_UNET_MAX_LEVELS))
        abort();
    static const char *const comps[] = {"unet", "vae", "text_encoder", "text_encoder_2"};
    for (int c = 0; c < 4; c++)
        if (sdc_diffusers_to_ldm(comps[c], name, &h, out, sizeof out) &&
            strnlen(out, sizeof out) == sizeof out)
            abort();

    sdc_loader *l = NULL;
    if (sdc_loader_create(&l) == SDC_OK) {
        if (sdc_loader_add_memory(l, data, size, "fuzz.ckpt", "model.") == SDC_OK) {
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
