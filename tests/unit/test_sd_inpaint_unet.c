/* The 9-channel inpainting UNet at block level against diffusers (tests/golden/
 * gen_sd_inpaint_ref.py: UNet2DConditionModel with in_channels 9 on random weights, fed
 * cat([x, mask, masked-image latent]) as StableDiffusionInpaintPipeline does, float64):
 * sdc_inpaint_join builds the input for a CFG batch of 2 from one mask + latent, and the
 * UNet (9 input channels read from conv_in) must match out.exact, and be far from the
 * swapped-order reference. Also the mask rules of sd_inpaint.h against naive loops. */
#include "core/backend.h"
#include "models/unet.h"
#include "pipeline/sd_inpaint.h"
#include "st_weights.h"
#include "test_util.h"

#define TOL_EXACT 5e-6 /* as test_unet.c's exact case: max abs error / max |ref| */

static double scaled_err(const float *got, const float *ref, long n) {
    double e = 0, m = 0;
    for (long i = 0; i < n; i++) {
        e = fmax(e, fabs((double)got[i] - (double)ref[i]));
        m = fmax(m, fabs((double)ref[i]));
    }
    return e / (m > 0 ? m : 1);
}

static void test_unet9(void) {
    const char *path = SDC_SOURCE_DIR "/tests/data/sd_inpaint/unet9.safetensors";
    st_weights w;
    sdc_weight_source ws;
    CHECK(st_weights_open(&w, path, &ws) == 0, "open %s", path);
    int64_t nx = 0, nm = 0, nk = 0, nt = 0, nc = 0, no = 0, ns = 0;
    float *x = st_read_f32(w.f, "x", &nx), *mask = st_read_f32(w.f, "mask", &nm);
    float *masked = st_read_f32(w.f, "masked", &nk), *t = st_read_f32(w.f, "t", &nt);
    float *ctx = st_read_f32(w.f, "ctx", &nc), *ref = st_read_f32(w.f, "out.exact", &no);
    float *swapped = st_read_f32(w.f, "out.swapped", &ns);
    enum { W = 16, H = 8, B = 2 };
    const size_t plane = (size_t)W * H;
    CHECK(x && mask && masked && t && ctx && ref && swapped && nx == B * 4 * (int64_t)plane &&
              nm == (int64_t)plane && nk == 4 * (int64_t)plane && no == nx,
          "reference tensors");
    sdc_unet_options opt = {.n_heads = 8, .exact = true}; /* diffusers config: 8 heads */
    sdc_unet *m = NULL;
    sdc_status s = sdc_unet_load_ex(&ws, "model.diffusion_model.", &opt, &m);
    CHECK(s == SDC_OK, "load: %s", sdc_last_error());
    if (s == SDC_OK && no == nx) {
        const sdc_unet_config *c = sdc_unet_get_config(m);
        printf("unet9: in_channels %d, out_channels %d, context %d\n", c->in_channels,
               c->out_channels, c->context_dim);
        CHECK(c->in_channels == 9 && c->out_channels == 4, "9 in, 4 out channels");
        float concat[5 * W * H], xin[B * 9 * W * H], out[B * 4 * W * H];
        memcpy(concat, mask, plane * sizeof(float));
        memcpy(concat + plane, masked, 4 * plane * sizeof(float));
        sdc_inpaint_join(x, 4, concat, 5, B, plane, xin);
        sdc_backend *be = sdc_backend_cpu_create(2);
        s = sdc_unet_forward(m, be, xin, B, W, H, t, ctx, (int)(nc / (B * c->context_dim)), NULL,
                             out, NULL, NULL);
        CHECK(s == SDC_OK, "forward: %s", sdc_last_error());
        double e = scaled_err(out, ref, (long)no), es = scaled_err(out, swapped, (long)no);
        printf("unet9 [x | mask | masked] batch 2 vs diffusers: max abs err / max |ref| %.3g "
               "(tolerance %.1g); vs the swapped order %.3g\n",
               e, TOL_EXACT, es);
        CHECK(e <= TOL_EXACT, "9-channel UNet: error %g > %g", e, TOL_EXACT);
        CHECK(es > 0.1, "the swapped order must differ (%g)", es);
        sdc_backend_free(be);
    }
    sdc_unet_free(m);
    free(x), free(mask), free(masked), free(t), free(ctx), free(ref), free(swapped);
    st_weights_close(&w);
}

/* sd.cpp's rules, written out plainly: white = gray >= 128 (round(v/255)), a cell is the max
 * of its pixels, the dilation a 3x3 max with the border left out. */
static void test_mask_rules(void) {
    enum { W = 6, H = 4, DS = 4 };
    uint8_t px[W * DS * H * DS * 3];
    uint32_t seed = 12345;
    for (size_t i = 0; i < sizeof px / 3; i++) {
        seed = seed * 1103515245u + 12345u;
        uint8_t v = (seed >> 16) % 97 == 0 ? (uint8_t)(seed >> 8) : 0; /* sparse, some >= 128 */
        px[i * 3] = px[i * 3 + 1] = px[i * 3 + 2] = v;
    }
    px[(5 * W * DS + 9) * 3] = px[(5 * W * DS + 9) * 3 + 1] = px[(5 * W * DS + 9) * 3 + 2] = 127;
    px[(9 * W * DS + 2) * 3] = px[(9 * W * DS + 2) * 3 + 1] = px[(9 * W * DS + 2) * 3 + 2] = 128;
    sdc_image img = {W * DS, H * DS, 3, px, 0};
    float got[W * H], dil[W * H];
    sdc_inpaint_latent_mask(&img, DS, W, H, got);
    sdc_inpaint_dilate(got, W, H, dil);
    int bad = 0, bad_dil = 0, ones = 0;
    for (int cy = 0; cy < H; cy++)
        for (int cx = 0; cx < W; cx++) {
            int want = 0;
            for (int y = cy * DS; y < (cy + 1) * DS; y++)
                for (int x = cx * DS; x < (cx + 1) * DS; x++)
                    want |= px[(y * W * DS + x) * 3] >= 128;
            bad += got[cy * W + cx] != (float)want;
            ones += want;
        }
    for (int cy = 0; cy < H; cy++)
        for (int cx = 0; cx < W; cx++) {
            float want = 0;
            for (int y = cy - 1; y <= cy + 1; y++)
                for (int x = cx - 1; x <= cx + 1; x++)
                    if (y >= 0 && y < H && x >= 0 && x < W && got[y * W + x] > want)
                        want = got[y * W + x];
            bad_dil += dil[cy * W + cx] != want;
        }
    printf("mask rules: %d of %d cells regenerate; %d cells differ from the plain loop, %d "
           "after dilation\n",
           ones, W * H, bad, bad_dil);
    CHECK(bad == 0 && bad_dil == 0 && ones > 0 && ones < W * H, "mask cells and dilation");
    CHECK(got[2 * W + 0] == 1.0f, "a single pixel of 128 makes its cell regenerate");
    float all[W * H];
    sdc_inpaint_latent_mask(NULL, DS, W, H, all);
    int n1 = 0;
    for (int i = 0; i < W * H; i++) n1 += all[i] == 1.0f;
    CHECK(n1 == W * H, "no mask: every cell regenerates");
}

int main(void) {
    test_unet9();
    test_mask_rules();
    TEST_MAIN_END();
}
