/* Fuzz target: the GGUF parser on arbitrary bytes; every KV value, tensor and data byte
 * it accepts is read, and an accepted file is written again with our writer and must
 * parse back to the same KVs and tensors (reader and writer agree). The model loader
 * runs on the same bytes. */
#include "io/gguf.h"
#include "io/model_loader.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t g_sink;

static uint64_t touch_kv(const sdc_gguf_kv *kv) {
    uint64_t acc = strlen(kv->key);
    if (kv->type == SDC_GGUF_STRING) {
        for (uint64_t i = 0; i < kv->str_len; i++) acc += (uint8_t)kv->str[i];
    } else if (kv->type == SDC_GGUF_ARRAY) {
        if (kv->arr_type == SDC_GGUF_STRING) {
            for (uint64_t i = 0; i < kv->arr_n; i++)
                for (uint64_t k = 0; k < kv->arr_str_len[i]; k++) acc += (uint8_t)kv->arr_str[i][k];
        } else {
            size_t n = (size_t)kv->arr_n * sdc_gguf_vtype_size(kv->arr_type);
            for (size_t i = 0; i < n; i++) acc += ((const uint8_t *)kv->arr)[i];
        }
    } else {
        acc += kv->v.u8;
    }
    return acc;
}

/* The loader on the same image: conversions (f64, i64, i16, i8) and lookups. */
static void through_loader(const uint8_t *data, size_t size) {
    sdc_loader *l = NULL;
    if (sdc_loader_create(&l) != SDC_OK) return;
    if (sdc_loader_add_memory(l, data, size, "fuzz.gguf", "te.") == SDC_OK) {
        for (int i = 0; i < sdc_loader_tensor_count(l); i++) {
            const sdc_tensor *t = sdc_loader_tensor_at(l, i);
            size_t nb = sdc_tensor_nbytes(t);
            for (size_t b = 0; b < nb; b++) g_sink += ((const uint8_t *)t->data)[b];
            if (sdc_loader_find(l, t->name) != t) abort();
        }
        const sdc_gguf_kv *kv = sdc_loader_find_kv(l, "general.architecture", NULL);
        if (kv) g_sink += touch_kv(kv);
    }
    sdc_loader_free(l);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    through_loader(data, size);
    sdc_gguf_file *f = NULL;
    if (sdc_gguf_open_memory(data, size, "fuzz.gguf", &f) != SDC_OK) return 0;
    uint64_t acc = 0;
    sdc_gguf_writer *w = NULL;
    if (sdc_gguf_writer_create(&w) != SDC_OK) abort();
    for (int i = 0; i < sdc_gguf_kv_count(f); i++) {
        const sdc_gguf_kv *kv = sdc_gguf_kv_at(f, i);
        acc += touch_kv(kv);
        if (sdc_gguf_find_kv(f, kv->key) != kv) abort();
        if (sdc_gguf_set_kv(w, kv) != SDC_OK) abort();
    }
    for (int i = 0; i < sdc_gguf_tensor_count(f); i++) {
        const sdc_gguf_tensor *t = sdc_gguf_tensor_at(f, i);
        for (size_t b = 0; b < t->nbytes; b++) acc += ((const uint8_t *)t->data)[b];
        if (sdc_gguf_find_tensor(f, t->name) != t) abort();
        int nd = t->n_dims > 0 ? t->n_dims : 1;
        if (sdc_gguf_add_tensor(w, t->name, t->type, nd, t->ne, t->data) != SDC_OK) abort();
    }
    g_sink += acc;

    void *img = NULL;
    size_t img_size = 0;
    if (sdc_gguf_write_memory(w, &img, &img_size) != SDC_OK) abort();
    sdc_gguf_file *g = NULL;
    if (sdc_gguf_open_memory(img, img_size, "rewritten.gguf", &g) != SDC_OK) abort();
    if (sdc_gguf_kv_count(g) != sdc_gguf_kv_count(f) ||
        sdc_gguf_tensor_count(g) != sdc_gguf_tensor_count(f) ||
        sdc_gguf_alignment(g) != sdc_gguf_alignment(f))
        abort();
    for (int i = 0; i < sdc_gguf_tensor_count(f); i++) {
        const sdc_gguf_tensor *a = sdc_gguf_tensor_at(f, i), *b = sdc_gguf_tensor_at(g, i);
        if (strcmp(a->name, b->name) || a->type != b->type || a->nbytes != b->nbytes ||
            memcmp(a->ne, b->ne, sizeof a->ne) ||
            (a->nbytes && memcmp(a->data, b->data, a->nbytes)))
            abort();
    }
    sdc_gguf_close(g);
    free(img);
    sdc_gguf_writer_free(w);
    sdc_gguf_close(f);
    return 0;
}
