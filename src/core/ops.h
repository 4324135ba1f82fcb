/* Graph builders: each checks shapes, creates one node and returns it, or records an
 * error in the graph and returns NULL. Layouts follow ggml: ne[0] is innermost; a
 * PyTorch Linear weight [out,in] is ne=[in,out]; images are ne=[W,H,C,N]. */
#ifndef SDC_CORE_OPS_H
#define SDC_CORE_OPS_H

#include "core/graph.h"

/* ---- views (no copy) ---- */
sdc_tensor *sdc_reshape(sdc_graph *g, sdc_tensor *a, int ndims,
                        const int64_t *ne); /* a contiguous */
sdc_tensor *sdc_reshape_2d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1);
sdc_tensor *sdc_reshape_3d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1, int64_t n2);
sdc_tensor *sdc_reshape_4d(sdc_graph *g, sdc_tensor *a, int64_t n0, int64_t n1, int64_t n2,
                           int64_t n3);
/* Output dim i = input dim axes[i] (like torch.permute on ne order). */
sdc_tensor *sdc_permute(sdc_graph *g, sdc_tensor *a, int ax0, int ax1, int ax2, int ax3);
sdc_tensor *sdc_transpose(sdc_graph *g, sdc_tensor *a); /* swap dims 0 and 1 */
/* Sub-block of `a`: shape ne[] starting at element offsets off[] (all dims). */
sdc_tensor *sdc_slice(sdc_graph *g, sdc_tensor *a, const int64_t *ne, const int64_t *off);

/* ---- copies and layout ---- */
sdc_tensor *sdc_cont(sdc_graph *g, sdc_tensor *a);                /* contiguous copy, same type */
sdc_tensor *sdc_cast(sdc_graph *g, sdc_tensor *a, sdc_type type); /* F32/F16/BF16 conversion */
sdc_tensor *sdc_concat(sdc_graph *g, sdc_tensor *a, sdc_tensor *b, int dim);
sdc_tensor *sdc_repeat(sdc_graph *g, sdc_tensor *a, const int64_t *ne); /* ne multiple of a's */
sdc_tensor *sdc_pad(sdc_graph *g, sdc_tensor *a, int p0, int p1, int p2, int p3);
sdc_tensor *sdc_upsample_nearest(sdc_graph *g, sdc_tensor *a, int factor);
sdc_tensor *sdc_get_rows(sdc_graph *g, sdc_tensor *table, sdc_tensor *ids);

/* ---- elementwise (F32). Binary ops broadcast b over a: b->ne[i] divides a->ne[i]. ---- */
sdc_tensor *sdc_add(sdc_graph *g, sdc_tensor *a, sdc_tensor *b);
sdc_tensor *sdc_sub(sdc_graph *g, sdc_tensor *a, sdc_tensor *b);
sdc_tensor *sdc_mul(sdc_graph *g, sdc_tensor *a, sdc_tensor *b);
sdc_tensor *sdc_div(sdc_graph *g, sdc_tensor *a, sdc_tensor *b);
sdc_tensor *sdc_scale(sdc_graph *g, sdc_tensor *a, float s, float bias); /* a*s + bias */
sdc_tensor *sdc_gelu(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_gelu_erf(sdc_graph *g, sdc_tensor *a);
/* GELU as sd.cpp's ggml computes it: f16(gelu(f16(x))) for -10 < x < 10, 0 below, x above.
 * Models use it where matching sd.cpp's outputs closely matters (T5). */
sdc_tensor *sdc_gelu_f16(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_silu(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_relu(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_sigmoid(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_tanh(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_sqr(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_sqrt(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_exp(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_clamp(sdc_graph *g, sdc_tensor *a, float lo, float hi);

/* ---- reductions and norms (over ne[0]) ---- */
sdc_tensor *sdc_mean(sdc_graph *g, sdc_tensor *a);
sdc_tensor *sdc_sum_rows(sdc_graph *g, sdc_tensor *a);
/* softmax(a*scale + mask) over ne[0]; mask (F32 or F16, ne=[n0, n1, 1|ne2, 1|ne3]) or NULL */
sdc_tensor *sdc_softmax(sdc_graph *g, sdc_tensor *a, sdc_tensor *mask, float scale);
/* (a-mean)/sqrt(var+eps) * w + b; w, b of ne=[n0] or NULL */
sdc_tensor *sdc_layer_norm(sdc_graph *g, sdc_tensor *a, sdc_tensor *w, sdc_tensor *b, float eps);
/* a/sqrt(mean(a^2)+eps) * w; w of ne=[n0] or NULL */
sdc_tensor *sdc_rms_norm(sdc_graph *g, sdc_tensor *a, sdc_tensor *w, float eps);
/* a ne=[W,H,C,N] (or [L,C,N]): normalise over each group of C/groups channels; w,b ne=[C] */
sdc_tensor *sdc_group_norm(sdc_graph *g, sdc_tensor *a, int groups, sdc_tensor *w, sdc_tensor *b,
                           float eps);

/* ---- position encodings ---- */
enum {
    SDC_ROPE_INTERLEAVED = 0, /* pairs (x[2i], x[2i+1]): Flux, MiniT2I */
    SDC_ROPE_HALF = 1
}; /* pairs (x[i], x[i+D/2]): NeoX */
/* x ne=[D, H, L, B]; cos, sin F32 ne=[D/2, L] (or [D/2, L, 1, B]) built on the host for any
 * positions and axes (1-D text, 2-D/3-D multi-axis image). out = x rotated per pair:
 * (x0*c - x1*s, x0*s + x1*c). */
sdc_tensor *sdc_rope(sdc_graph *g, sdc_tensor *x, sdc_tensor *cos_t, sdc_tensor *sin_t, int mode);
/* t F32 ne=[n] -> ne=[dim, n]: [cos(t*f_k), sin(t*f_k)] with f_k = max_period^(-k/half)
 * (flip_sin_to_cos=true order as in diffusers/sd.cpp: cos first). */
sdc_tensor *sdc_timestep_embedding(sdc_graph *g, sdc_tensor *t, int dim, int max_period);

/* ---- the heavy ops ---- */
/* w ne=[K, N, w2, w3] (any weight type), x F32 ne=[K, M, b2, b3]; w2|b2 and w3|b3 broadcast.
 * dst F32 ne=[N, M, b2, b3]: dst[n,m] = sum_k w[k,n] x[k,m]. */
sdc_tensor *sdc_matmul(sdc_graph *g, sdc_tensor *w, sdc_tensor *x);
/* q ne=[D, Lq, H, B], k ne=[D, Lk, Hk, B], v ne=[Dv, Lk, Hk, B] (H multiple of Hk), F32 or F16;
 * mask F32/F16 ne=[Lk, Lq, 1|H, 1|B] additive (-INFINITY masks) or NULL.
 * dst F32 ne=[Dv, H, Lq, B] (ready to reshape to [Dv*H, Lq, B]). Fused, tiled, online softmax. */
sdc_tensor *sdc_attention(sdc_graph *g, sdc_tensor *q, sdc_tensor *k, sdc_tensor *v,
                          sdc_tensor *mask, float scale);
/* x ne=[W, H, Cin, N] F32; w ne=[KW, KH, Cin/groups, Cout] (F32/F16/BF16/quantised);
 * bias ne=[Cout] or NULL. dst ne=[OW, OH, Cout, N]. */
sdc_tensor *sdc_conv2d(sdc_graph *g, sdc_tensor *x, sdc_tensor *w, sdc_tensor *bias, int stride_x,
                       int stride_y, int pad_x, int pad_y, int dil_x, int dil_y, int groups);

#endif
