/* Tiled VAE processing as sd.cpp does it (--vae-tiling): the latent is cut into overlapping
 * tiles, each tile is processed on its own and the outputs are blended with smootherstep
 * weights, so a large image needs only a tile's worth of compute memory.
 *
 * Use, as sd.cpp (lw x lh latent cells, W x H pixels, tile_fn wraps sdc_vae_decode/encode or
 * sdc_taesd_decode/encode on the tile it is given):
 *   decode: sdc_tiling_from_flags(size, rel, overlap, lw, lh, &t);
 *           sdc_tiled_apply(z, 4, lw, lh, 3, 8, 1, &t, decode_fn, ctx, rgb);
 *   encode: sdc_tiling_from_flags_ex(size, rel, overlap, 2.0f, W / 8, H / 8, &t);
 *           sdc_tiled_apply(rgb, 3, W, H, 8, 1, 8, &t, encode_fn, ctx, moments);
 * (sd.cpp blends the encoder's moments, then samples the posterior from the blended ones.) */
#ifndef SDC_MODELS_VAE_TILING_H
#define SDC_MODELS_VAE_TILING_H

#include "core/status.h"

/* Tile size in latent cells: the small side of the map (the input when decoding, the output when
 * encoding), as sd.cpp counts it. overlap: wanted fraction of a tile shared with its neighbour
 * (0 to 0.5; the placement adjusts it so that tiles fit exactly). */
typedef struct sdc_tiling {
    int tile_w, tile_h;
    float overlap;
} sdc_tiling;

/* Resolves sd-cli's flags into a tiling for a latent of w x h cells, as sd.cpp's
 * VAE::get_tile_sizes: tile_size "32" or "32x48" (NULL or empty: 32; values below 4 are ignored),
 * relative "0.5" or "0.5x0.25" (NULL/empty: unused; overrides tile_size; < 1 is a fraction of the
 * latent, >= 1 a number of tiles per side), overlap clamped to [0, 0.5]. Each side is then clamped
 * to the latent side, but never below 4. */
sdc_status sdc_tiling_from_flags(const char *tile_size, const char *relative, float overlap, int w,
                                 int h, sdc_tiling *out);
/* The same with sd.cpp's encode factor (tile sizes times `factor` before clamping: sd.cpp encodes
 * SD images with factor 2, i.e. 64-cell tiles by default). sdc_tiling_from_flags is factor 1. */
sdc_status sdc_tiling_from_flags_ex(const char *tile_size, const char *relative, float overlap,
                                    float factor, int w, int h, sdc_tiling *out);

/* Processes one tile: tile_in [c_in][th][tw] -> tile_out [c_out][th*num/den][tw*num/den]. */
typedef sdc_status (*sdc_tile_fn)(void *user, const float *tile_in, int tw, int th,
                                  float *tile_out);

/* Runs fn on every tile of in ([c_in][h][w]) and blends the outputs into out
 * ([c_out][h*num/den][w*num/den]) as sd.cpp's process_tiles_2d (non-circular): scale_num/den is
 * 8/1 for a decode (tiles counted on the input) or 1/8 for an encode (tiles counted on the
 * output; w and h must then be multiples of 8). With one tile per side fn runs once on the whole
 * input. */
sdc_status sdc_tiled_apply(const float *in, int c_in, int w, int h, int c_out, int scale_num,
                           int scale_den, const sdc_tiling *t, sdc_tile_fn fn, void *user,
                           float *out);

/* Runs fn once on the whole input; if that fails for lack of memory (SDC_ERR_NO_MEMORY: a
 * device allocation, or a CPU backend's budget), logs a warning naming `what` and runs it once
 * more tiled with t (sd.cpp's default tiling when t is NULL: 32-cell tiles, overlap 0.5). */
sdc_status sdc_tiled_retry(const float *in, int c_in, int w, int h, int c_out, int scale_num,
                           int scale_den, const sdc_tiling *t, sdc_tile_fn fn, void *user,
                           float *out, const char *what);

/* Tile count and adjusted overlap of one side (sd.cpp's sd_tiling_calc_tiles), for tests and logs.
 */
void sdc_tiling_calc(int small_dim, int tile, float overlap, int *n_tiles, float *overlap_out);

#endif
