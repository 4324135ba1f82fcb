/* A UNet split across devices (issue: several devices for one module). sd.cpp keeps UNets
 * out of layer splits because the skip connections cross any cut; sdc cuts the UNet between
 * its blocks (conv_in, input_blocks.*, middle_block, output_blocks.*) like a transformer and
 * copies every tensor live across a cut, the skips included. Checked: over 2 and 3 CPU
 * devices (layer split) and 2 (row split), the output equals the single-device output bit for bit;
 * the partition and what the cuts copy per forward are printed. Models: the small SD1 and SDXL
 * UNets of tests/data/unet (diffusers-checked in test_unet). */
#include <math.h>

#include "core/backend.h"
#include "models/unet.h"
#include "placement/devices.h"
#include "placement/split.h"
#include "st_weights.h"
#include "test_util.h"

#define PREFIX "model.diffusion_model."

typedef struct model_case {
    const char *name;
    int heads, head_dim;
} model_case;

typedef struct inputs {
    float *x, *t, *ctx, *y;
    int n_ctx;
    long n_out;
} inputs;

static sdc_status forward(sdc_unet *m, sdc_backend *be, const inputs *in, float *out) {
    return sdc_unet_forward(m, be, in->x, 2, 16, 8, in->t, in->ctx, in->n_ctx, in->y, out, NULL,
                            NULL);
}

static void split_case(sdc_unet *m, const inputs *in, const float *ref, int n_dev,
                       const char *max_vram, sdc_split_mode mode, const char *label) {
    CHECK(sdc_set_cpu_devices(n_dev) == SDC_OK, "cpu devices: %s", sdc_last_error());
    if (max_vram) CHECK(sdc_devices_apply_max_vram(max_vram) == SDC_OK, "%s", sdc_last_error());
    sdc_backend *kids[4];
    int devs[4];
    for (int d = 0; d < n_dev; d++) {
        devs[d] = d;
        kids[d] = sdc_device_create_backend(sdc_devices_get(d));
    }
    sdc_backend *sb = sdc_split_backend_create("diffusion", kids, devs, n_dev);
    CHECK(sb != NULL, "%s: split backend: %s", label, sdc_last_error());
    if (!sb) return;
    sdc_split_backend_set_mode(sb, mode);
    float *out = malloc((size_t)in->n_out * sizeof(float));
    sdc_status s = forward(m, sb, in, out);
    CHECK(s == SDC_OK, "%s: forward: %s", label, sdc_last_error());
    if (s == SDC_OK) {
        long diff = 0;
        for (long i = 0; i < in->n_out; i++) diff += memcmp(&out[i], &ref[i], 4) != 0;
        sdc_split_stats st;
        sdc_split_backend_stats(sb, &st);
        printf("  %-34s %s\n    %d segments, %llu bytes copied per forward; %ld of %ld values "
               "differ from one device\n",
               label, sdc_split_backend_describe(sb), st.n_segments,
               (unsigned long long)st.bytes_copied, diff, in->n_out);
        CHECK(diff == 0, "%s: %ld values differ from the single-device run", label, diff);
        if (mode == SDC_SPLIT_LAYER)
            CHECK(st.n_segments >= 2, "%s: the UNet was cut (%d segments)", label, st.n_segments);
        else
            CHECK(st.n_row_matmuls > 0, "%s: matmuls were split by rows", label);
    }
    free(out);
    sdc_backend_free(sb);
    for (int d = 0; d < n_dev; d++) sdc_backend_free(kids[d]);
}

static void run_model(const model_case *mc) {
    char file[512];
    snprintf(file, sizeof file, "%s/tests/data/unet/%s.safetensors", SDC_SOURCE_DIR, mc->name);
    st_weights w;
    sdc_weight_source ws;
    if (st_weights_open(&w, file, &ws) != 0) {
        CHECK(0, "open %s", file);
        return;
    }
    sdc_unet_options opt = {.n_heads = mc->heads, .head_dim = mc->head_dim, .exact = true};
    sdc_unet *m = NULL;
    CHECK(sdc_unet_load_ex(&ws, PREFIX, &opt, &m) == SDC_OK, "%s: load: %s", mc->name,
          sdc_last_error());
    if (!m) return;
    inputs in = {0};
    int64_t n = 0;
    in.x = st_read_f32(w.f, "x", NULL);
    in.t = st_read_f32(w.f, "t", NULL);
    in.ctx = st_read_f32(w.f, "ctx", NULL);
    in.y = st_read_f32(w.f, "y", NULL);
    float *tmp = st_read_f32(w.f, "out.exact", &n);
    free(tmp);
    in.n_out = (long)n;
    in.n_ctx = (int)sdc_st_find(w.f, "ctx")->shape[1];
    printf("%s UNet\n", mc->name);
    sdc_set_cpu_devices(1);
    sdc_backend *one = sdc_backend_cpu_create(1);
    float *ref = malloc((size_t)in.n_out * sizeof(float));
    CHECK(forward(m, one, &in, ref) == SDC_OK, "%s: single device: %s", mc->name, sdc_last_error());
    sdc_backend_free(one);
    split_case(m, &in, ref, 2, NULL, SDC_SPLIT_LAYER, "layer split, 2 devices");
    split_case(m, &in, ref, 3, NULL, SDC_SPLIT_LAYER, "layer split, 3 devices");
    split_case(m, &in, ref, 2, NULL, SDC_SPLIT_ROW, "row split, 2 devices");
    sdc_set_cpu_devices(1);
    free(ref), free(in.x), free(in.t), free(in.ctx), free(in.y);
    sdc_unet_free(m);
    st_weights_close(&w);
}

int main(void) {
    static const model_case cases[] = {{"sd1", 8, 0}, {"sdxl", 0, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) run_model(&cases[i]);
    TEST_MAIN_END();
}
