/* Internal interface between the CUDA backend (backend_cuda.cu: memory, weights, graph
 * walk, cuBLAS) and its kernels (kernels_cuda.cu). C++ (nvcc) only. */
#ifndef SDC_CUDA_OPS_H
#define SDC_CUDA_OPS_H

#include <cuda_runtime.h>
#include <stdint.h>

/* A tensor as a kernel sees it: device address, type and the ggml-style shape/strides. */
typedef struct sdc_cu_t {
    char *data;
    int type;
    int64_t ne[4];
    int64_t nb[4];
} sdc_cu_t;

/* elementwise: op is an sdc_op value (SDC_OP_ADD ... SDC_OP_GELU_F16) */
void sdc_cu_binary(cudaStream_t s, int op, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b);
void sdc_cu_unary(cudaStream_t s, int op, sdc_cu_t d, sdc_cu_t a, float f0, float f1);
/* dst = src converted, element i of dst's row-major order from element i of src's */
void sdc_cu_cpy(cudaStream_t s, sdc_cu_t d, sdc_cu_t a);
void sdc_cu_rowsum(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, bool mean);
void sdc_cu_softmax(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const sdc_cu_t *mask, float scale);
void sdc_cu_layer_norm(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const float *w, const float *b,
                       float eps, bool rms);
void sdc_cu_group_norm(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const float *w, const float *b,
                       int groups, int axis, float eps);
void sdc_cu_rope(cudaStream_t s, sdc_cu_t d, sdc_cu_t x, sdc_cu_t c, sdc_cu_t sn, int mode);
void sdc_cu_timestep(cudaStream_t s, sdc_cu_t d, sdc_cu_t t, int dim, int max_period,
                     bool cos_first);
void sdc_cu_concat(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b, int dim);
void sdc_cu_repeat(cudaStream_t s, sdc_cu_t d, sdc_cu_t a);
void sdc_cu_pad(cudaStream_t s, sdc_cu_t d, sdc_cu_t a);
void sdc_cu_upsample(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, int factor);
void sdc_cu_get_rows(cudaStream_t s, sdc_cu_t d, sdc_cu_t table, sdc_cu_t ids);
/* rows x cols of any weight type (rows nb[1] apart) to contiguous F32 */
void sdc_cu_dequant(cudaStream_t s, float *out, sdc_cu_t w);
/* conv2d pieces: im2col of image n, group g, output pixels [p0, p0+np) into col
 * ([np] x [kc] column-major); bias add over dst [OW,OH,C,N] */
void sdc_cu_im2col(cudaStream_t s, float *col, sdc_cu_t x, int n, int g, int cin_g, int kw, int kh,
                   int ow, int oh, int64_t p0, int64_t np, const int32_t *geom);
void sdc_cu_add_bias(cudaStream_t s, sdc_cu_t d, const float *bias);
/* fused attention (softmax(q k^T scale + mask) v), dst [Dv, H, Lq, B] */
void sdc_cu_attention(cudaStream_t s, sdc_cu_t d, sdc_cu_t q, sdc_cu_t k, sdc_cu_t v,
                      const sdc_cu_t *mask, float scale);

#endif
