/* The public upscaler (sd.cpp's upscaler.cpp): an ESRGAN model from any weight file the
 * loader reads, run on 8-bit RGB images with sd.cpp's tiling and pixel conversions. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/backend.h"
#include "core/log.h"
#include "io/model_loader.h"
#include "models/esrgan.h"
#include "sdc.h"

#define MAX_OUTPUT_SIDE 32768

struct sdc_upscaler {
    sdc_loader *loader;
    sdc_esrgan *model;
    sdc_backend *be;
    int tile;
};

static sdc_tensor *loader_find(void *user, const char *name) {
    return sdc_loader_find(user, name);
}

/* Checkpoints wrap the state dict at times (Real-ESRGAN's .pth: "params_ema", some also
 * "params"): the prefix is whatever comes before the first dense block's first conv, the
 * EMA weights preferred (as Real-ESRGAN and spandrel load them). */
static bool find_prefix(const sdc_loader *l, char *prefix, size_t n) {
    static const char *const first[] = {"body.0.rdb1.conv1.weight",
                                        "model.1.sub.0.RDB1.conv1.0.weight",
                                        "RRDB_trunk.0.RDB1.conv1.weight"};
    bool found = false;
    for (int i = 0; i < sdc_loader_tensor_count(l); i++) {
        const char *name = sdc_loader_tensor_at(l, i)->name;
        size_t len = strlen(name);
        for (size_t k = 0; k < sizeof first / sizeof first[0]; k++) {
            size_t fl = strlen(first[k]);
            if (len < fl || strcmp(name + len - fl, first[k])) continue;
            size_t pl = len - fl;
            if ((pl && name[pl - 1] != '.') || pl >= n) continue;
            bool ema = pl == strlen("params_ema.") && !strncmp(name, "params_ema.", pl);
            if (found && !ema) continue;
            memcpy(prefix, name, pl);
            prefix[pl] = '\0';
            if (ema) return true;
            found = true;
        }
    }
    return found;
}

sdc_status sdc_upscaler_create(const char *path, int n_threads, int tile_size, sdc_upscaler **out) {
    if (!out) return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_upscaler_create: null output");
    *out = NULL;
    if (!path || !*path) return sdc_fail(SDC_ERR_INVALID_ARG, "--upscale-model: no file given");
    sdc_upscaler *u = calloc(1, sizeof *u);
    if (!u) return sdc_fail(SDC_ERR_NO_MEMORY, "upscaler: out of memory");
    u->tile = tile_size;
    sdc_status s = sdc_loader_create(&u->loader);
    if (s == SDC_OK) s = sdc_loader_add_file(u->loader, path, NULL);
    if (s != SDC_OK) goto fail;
    char prefix[256];
    if (!find_prefix(u->loader, prefix, sizeof prefix)) {
        s = sdc_fail(SDC_ERR_FORMAT,
                     "%s: not an ESRGAN model (no tensor named body.0.rdb1.conv1.weight, "
                     "model.1.sub.0.RDB1.conv1.0.weight or RRDB_trunk.0.RDB1.conv1.weight)",
                     path);
        goto fail;
    }
    sdc_weight_source ws = {loader_find, u->loader};
    if ((s = sdc_esrgan_load(&ws, prefix, &u->model)) != SDC_OK) {
        s = sdc_fail_prefix(s, "%s: ", path);
        goto fail;
    }
    u->be = sdc_backend_cpu_create(n_threads);
    if (!u->be) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "upscaler: cannot create the CPU backend");
        goto fail;
    }
    const sdc_esrgan_config *c = sdc_esrgan_get_config(u->model);
    SDC_LOGI("upscaler: %s: x%d, %d blocks, %d features", path, c->scale, c->num_block,
             c->num_feat);
    *out = u;
    return SDC_OK;
fail:
    sdc_upscaler_free(u);
    return s;
}

void sdc_upscaler_free(sdc_upscaler *u) {
    if (!u) return;
    sdc_backend_free(u->be);
    sdc_esrgan_free(u->model);
    sdc_loader_free(u->loader);
    free(u);
}

int sdc_upscaler_scale(const sdc_upscaler *u) {
    return u ? sdc_esrgan_get_config(u->model)->scale : 0;
}

/* sd.cpp's float -> u8: 0 at or below 0, 255 at or above 1, else v*255 + 0.5 truncated */
static uint8_t to_u8(float v) {
    if (v <= 0.0f) return 0;
    if (v >= 1.0f) return 255;
    return (uint8_t)(v * 255.0f + 0.5f);
}

sdc_status sdc_upscale_image(sdc_upscaler *u, const sdc_image *in, sdc_image *out) {
    if (!u || !in || !out)
        return sdc_fail(SDC_ERR_INVALID_ARG, "sdc_upscale_image: null upscaler, image or output");
    memset(out, 0, sizeof *out);
    if (!in->data || in->width < 1 || in->height < 1 || in->channels != 3)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "sdc_upscale_image: expected an RGB image, got %ux%u with %u channel(s)%s",
                        in->width, in->height, in->channels, in->data ? "" : " and no pixels");
    const int s = sdc_upscaler_scale(u);
    const int w = (int)in->width, h = (int)in->height;
    if (in->width > MAX_OUTPUT_SIDE / (unsigned)s || in->height > MAX_OUTPUT_SIDE / (unsigned)s)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "sdc_upscale_image: %dx%d upscaled x%d exceeds %d pixels a side", w, h, s,
                        MAX_OUTPUT_SIDE);
    const size_t n_in = (size_t)w * h, ow = (size_t)w * s, oh = (size_t)h * s;
    float *x = malloc(n_in * 3 * sizeof(float));
    float *y = malloc(ow * oh * 3 * sizeof(float));
    uint8_t *px = malloc(ow * oh * 3);
    sdc_status st = SDC_OK;
    if (!x || !y || !px) {
        st = sdc_fail(SDC_ERR_NO_MEMORY, "sdc_upscale_image: out of memory for %zux%zu", ow, oh);
        goto done;
    }
    for (size_t i = 0; i < n_in; i++) /* interleaved u8 -> planar [0, 1] */
        for (int c = 0; c < 3; c++) x[c * n_in + i] = (float)in->data[i * 3 + c] / 255.0f;
    SDC_LOGI("upscaling from (%d x %d) to (%zu x %zu)", w, h, ow, oh);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if ((st = sdc_esrgan_upscale(u->model, u->be, x, w, h, u->tile, y)) != SDC_OK) goto done;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    SDC_LOGI("upscaled in %.2fs",
             (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
    const size_t n_out = ow * oh;
    for (size_t i = 0; i < n_out; i++)
        for (int c = 0; c < 3; c++) px[i * 3 + c] = to_u8(y[c * n_out + i]);
    out->width = (uint32_t)ow;
    out->height = (uint32_t)oh;
    out->channels = 3;
    out->data = px;
    out->seed = in->seed;
    px = NULL;
done:
    free(x);
    free(y);
    free(px);
    return st;
}
