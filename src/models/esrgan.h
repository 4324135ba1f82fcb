/* ESRGAN upscaler (RRDBNet: RealESRGAN_x4plus, the anime 6B variant, x2/x1 models), the
 * configuration detected from the weights. Accepted key layouts (under a prefix):
 *   Real-ESRGAN / BasicSR: conv_first, body.N.rdbK.convJ, conv_body, conv_up1, conv_up2,
 *                          conv_hr, conv_last
 *   old ESRGAN:            model.0, model.1.sub.N.RDBK.convJ.0, model.1.sub.NB, model.3,
 *                          model.6, then conv_hr / conv_last at model.3U+2 / model.3U+4
 *   BSRGAN / RealSR:       conv_first, RRDB_trunk.N.RDBK.convJ, trunk_conv, upconv1,
 *                          upconv2, HRconv, conv_last
 * Upsampling convs (0..2) each double the size (nearest, conv, leaky ReLU 0.2). A first conv
 * taking 12 (48) channels means a pixel-unshuffle by 2 (4) in front, as Real-ESRGAN's x2plus
 * does: the input is reflect-padded to a multiple of that factor first and the output
 * cropped back, as spandrel does (sd.cpp refuses such models). */
#ifndef SDC_MODELS_ESRGAN_H
#define SDC_MODELS_ESRGAN_H

#include "core/backend.h"
#include "models/weights.h"

typedef struct sdc_esrgan_config {
    int num_block, num_feat, num_grow; /* RRDB blocks, features, dense growth channels */
    int in_ch, out_ch;                 /* of the convs (in_ch includes the unshuffle) */
    int n_up;                          /* upsampling convs: 0, 1 or 2 */
    int unshuffle;                     /* pixel-unshuffle factor in front: 1, 2 or 4 */
    int scale;                         /* output / input size: 2^n_up / unshuffle */
} sdc_esrgan_config;

typedef struct sdc_esrgan sdc_esrgan;

/* How the convs compute. SDCPP (the default) is sd.cpp's arithmetic: conv weights held in
 * F16 and each conv input rounded to F16 (ggml_conv_2d's im2col takes the kernel's type;
 * sd.cpp always loads ESRGAN conv weights as F16), F32 accumulation. EXACT keeps the stored
 * weights and F32 activations (PyTorch's result). */
typedef enum sdc_esrgan_numerics { SDC_ESRGAN_SDCPP = 0, SDC_ESRGAN_EXACT = 1 } sdc_esrgan_numerics;

/* prefix: where the tensors are ("" for a plain upscaler file). */
sdc_status sdc_esrgan_load(const sdc_weight_source *ws, const char *prefix, sdc_esrgan **out);
void sdc_esrgan_free(sdc_esrgan *m);
const sdc_esrgan_config *sdc_esrgan_get_config(const sdc_esrgan *m);
void sdc_esrgan_set_numerics(sdc_esrgan *m, sdc_esrgan_numerics mode);

/* One pass over a whole image: x planar RGB [3][h][w] (0..1) -> out [3][h*s][w*s] (s =
 * scale), unclamped. */
sdc_status sdc_esrgan_run(sdc_esrgan *m, sdc_backend *be, const float *x, int w, int h, float *out);

/* sd.cpp's upscaler: one pass when tile <= 0 or the image fits in a tile, else tiles of
 * tile x tile input pixels with an overlap of about a quarter, blended with smootherstep
 * weights over the overlaps (sd.cpp's process_tiles_2d rule). Same layouts as above. */
sdc_status sdc_esrgan_upscale(sdc_esrgan *m, sdc_backend *be, const float *x, int w, int h,
                              int tile, float *out);

/* sd.cpp's tile count and overlap factor along one side of `small` pixels (non-circular,
 * target overlap factor `overlap`): for tests. */
void sdc_esrgan_calc_tiles(int small, int tile, float overlap, int *n_tiles, float *factor);

#endif
