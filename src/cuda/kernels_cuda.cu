/* CUDA kernels for every op of core/tensor.h except the GEMMs (cuBLAS, backend_cuda.cu).
 * Written for correctness first: one thread per output element or one block per row,
 * reductions in double as the CPU kernels do, weights read through cuda_dequant.h (the
 * readers a host test checks against the CPU converters). */
#include <cuda_fp16.h>
#include <math.h>

#include "core/tensor.h"
#include "cuda/cuda_dequant.h"
#include "cuda/cuda_ops.h"

#define ROW_THREADS 256

static int64_t nel(const sdc_cu_t &t) {
    return t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
}

static unsigned grid_for(int64_t n, int threads) {
    int64_t g = (n + threads - 1) / threads;
    return (unsigned)(g < 1 ? 1 : (g > 2147483647 ? 2147483647 : g));
}

__device__ static inline void unravel(const sdc_cu_t &t, int64_t i, int64_t *ix) {
    ix[0] = i % t.ne[0];
    i /= t.ne[0];
    ix[1] = i % t.ne[1];
    i /= t.ne[1];
    ix[2] = i % t.ne[2];
    ix[3] = i / t.ne[2];
}

__device__ static inline char *at(const sdc_cu_t &t, int64_t i0, int64_t i1, int64_t i2,
                                  int64_t i3) {
    return t.data + i0 * t.nb[0] + i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
}

__device__ static inline float load_f(int type, const char *p) {
    if (type == SDC_CT_F16) return __half2float(*(const __half *)p);
    if (type == SDC_CT_BF16) return sdc_hd_bf16(*(const uint16_t *)p);
    return *(const float *)p;
}

__device__ static inline void store_f(int type, char *p, float v) {
    if (type == SDC_CT_F16) {
        *(__half *)p = __float2half_rn(v);
    } else if (type == SDC_CT_BF16) { /* round to nearest even, NaN kept quiet */
        uint32_t x = __float_as_uint(v);
        uint16_t h = (x & 0x7fffffffu) > 0x7f800000u
                         ? (uint16_t)((x >> 16) | 64)
                         : (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
        *(uint16_t *)p = h;
    } else {
        *(float *)p = v;
    }
}

/* ------------------------------------------------------------------ elementwise */

__device__ static inline float apply_unary(int op, float x, float f0, float f1) {
    switch (op) {
    case SDC_OP_SCALE:
        return x * f0 + f1;
    case SDC_OP_GELU:
        return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case SDC_OP_GELU_ERF:
        return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case SDC_OP_GELU_F16: { /* ggml's table: f16(gelu(f16(x))) inside (-10, 10) */
        if (x <= -10.0f) return 0.0f;
        if (x >= 10.0f) return x;
        const float h = __half2float(__float2half_rn(x));
        const float y =
            0.5f * h * (1.0f + tanhf(0.79788456080286535587989f * h * (1.0f + 0.044715f * h * h)));
        return __half2float(__float2half_rn(y));
    }
    case SDC_OP_SILU:
        return x / (1.0f + expf(-x));
    case SDC_OP_RELU:
        return x > 0.0f ? x : 0.0f;
    case SDC_OP_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case SDC_OP_TANH:
        return tanhf(x);
    case SDC_OP_SQR:
        return x * x;
    case SDC_OP_SQRT:
        return sqrtf(x);
    case SDC_OP_EXP:
        return expf(x);
    case SDC_OP_CLAMP:
        return x < f0 ? f0 : (x > f1 ? f1 : x);
    default:
        return x;
    }
}

__global__ static void k_unary(int op, sdc_cu_t d, sdc_cu_t a, float f0, float f1, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ix[4];
        unravel(d, i, ix);
        const float x = *(const float *)at(a, ix[0], ix[1], ix[2], ix[3]);
        *(float *)at(d, ix[0], ix[1], ix[2], ix[3]) = apply_unary(op, x, f0, f1);
    }
}

__global__ static void k_binary(int op, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ix[4];
        unravel(d, i, ix);
        const float x = *(const float *)at(a, ix[0], ix[1], ix[2], ix[3]);
        const float y = load_f(
            b.type, at(b, ix[0] % b.ne[0], ix[1] % b.ne[1], ix[2] % b.ne[2], ix[3] % b.ne[3]));
        float r;
        switch (op) {
        case SDC_OP_ADD:
            r = x + y;
            break;
        case SDC_OP_SUB:
            r = x - y;
            break;
        case SDC_OP_MUL:
            r = x * y;
            break;
        default:
            r = x / y;
            break;
        }
        *(float *)at(d, ix[0], ix[1], ix[2], ix[3]) = r;
    }
}

void sdc_cu_unary(cudaStream_t s, int op, sdc_cu_t d, sdc_cu_t a, float f0, float f1) {
    const int64_t n = nel(d);
    k_unary<<<grid_for(n, 256), 256, 0, s>>>(op, d, a, f0, f1, n);
}

void sdc_cu_binary(cudaStream_t s, int op, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b) {
    const int64_t n = nel(d);
    k_binary<<<grid_for(n, 256), 256, 0, s>>>(op, d, a, b, n);
}

/* float types convert; any other type copies its element bytes (es) */
__global__ static void k_cpy(sdc_cu_t d, sdc_cu_t a, int es, int64_t n) {
    const bool fl = (d.type == SDC_CT_F32 || d.type == SDC_CT_F16 || d.type == SDC_CT_BF16) &&
                    (a.type == SDC_CT_F32 || a.type == SDC_CT_F16 || a.type == SDC_CT_BF16);
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t id[4], is[4];
        unravel(d, i, id);
        unravel(a, i, is);
        char *dp = at(d, id[0], id[1], id[2], id[3]);
        const char *sp = at(a, is[0], is[1], is[2], is[3]);
        if (fl) {
            store_f(d.type, dp, load_f(a.type, sp));
        } else {
            for (int k = 0; k < es; k++) dp[k] = sp[k];
        }
    }
}

void sdc_cu_cpy(cudaStream_t s, sdc_cu_t d, sdc_cu_t a) {
    const int64_t n = nel(d);
    const int es = sdc_hd_block_bytes(d.type) > 0 ? sdc_hd_block_bytes(d.type) : 4;
    k_cpy<<<grid_for(n, 256), 256, 0, s>>>(d, a, d.type == SDC_CT_F32 ? 4 : es, n);
}

/* ------------------------------------------------------------------ row reductions */

__device__ static double block_sum(double v, double *sh) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    double t = 0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) t += sh[w];
        sh[32] = t;
    }
    __syncthreads();
    return sh[32];
}

__device__ static float block_max(float v, float *sh) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    if (threadIdx.x == 0) {
        float t = -INFINITY;
        for (int w = 0; w < (int)(blockDim.x + 31) / 32; w++) t = fmaxf(t, sh[w]);
        sh[32] = t;
    }
    __syncthreads();
    return sh[32];
}

/* row r of t (ne[1..3] flattened) */
__device__ static inline const char *row_of(const sdc_cu_t &t, int64_t r, int64_t *ix) {
    ix[1] = r % t.ne[1];
    r /= t.ne[1];
    ix[2] = r % t.ne[2];
    ix[3] = r / t.ne[2];
    return t.data + ix[1] * t.nb[1] + ix[2] * t.nb[2] + ix[3] * t.nb[3];
}

__global__ static void k_rowsum(sdc_cu_t d, sdc_cu_t a, bool mean) {
    __shared__ double sh[33];
    int64_t ix[4];
    const char *ar = row_of(a, blockIdx.x, ix);
    double s = 0;
    for (int64_t i = threadIdx.x; i < a.ne[0]; i += blockDim.x)
        s += *(const float *)(ar + i * a.nb[0]);
    s = block_sum(s, sh);
    if (threadIdx.x == 0)
        *(float *)at(d, 0, ix[1], ix[2], ix[3]) = (float)(mean ? s / (double)a.ne[0] : s);
}

void sdc_cu_rowsum(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, bool mean) {
    const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
    if (rows > 0) k_rowsum<<<(unsigned)rows, ROW_THREADS, 0, s>>>(d, a, mean);
}

__global__ static void k_softmax(sdc_cu_t d, sdc_cu_t a, sdc_cu_t m, bool has_mask, float scale) {
    __shared__ double shd[33];
    __shared__ float shf[33];
    int64_t ix[4];
    const char *ar = row_of(a, blockIdx.x, ix);
    float *dr = (float *)at(d, 0, ix[1], ix[2], ix[3]);
    const char *mr = has_mask ? at(m, 0, ix[1], ix[2] % m.ne[2], ix[3] % m.ne[3]) : NULL;
    const int64_t n = a.ne[0];
    float mx = -INFINITY;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = *(const float *)(ar + i * a.nb[0]) * scale;
        if (mr) v += load_f(m.type, mr + i * m.nb[0]);
        dr[i] = v;
        mx = fmaxf(mx, v);
    }
    mx = block_max(mx, shf);
    double sum = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float e = mx == -INFINITY ? 0.0f : expf(dr[i] - mx);
        dr[i] = e;
        sum += e;
    }
    sum = block_sum(sum, shd);
    const float inv = mx == -INFINITY ? 0.0f : (float)(1.0 / sum);
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dr[i] *= inv;
}

void sdc_cu_softmax(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const sdc_cu_t *mask, float scale) {
    const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
    sdc_cu_t m = mask ? *mask : a;
    if (rows > 0) k_softmax<<<(unsigned)rows, ROW_THREADS, 0, s>>>(d, a, m, mask != NULL, scale);
}

__global__ static void k_norm(sdc_cu_t d, sdc_cu_t a, const float *w, const float *b, float eps,
                              bool rms) {
    __shared__ double sh[33];
    int64_t ix[4];
    const char *ar = row_of(a, blockIdx.x, ix);
    float *dr = (float *)at(d, 0, ix[1], ix[2], ix[3]);
    const int64_t n = a.ne[0];
    double mean = 0;
    if (!rms) {
        double s = 0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            s += *(const float *)(ar + i * a.nb[0]);
        mean = block_sum(s, sh) / (double)n;
    }
    double ss = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const double v = *(const float *)(ar + i * a.nb[0]) - mean;
        ss += v * v;
    }
    ss = block_sum(ss, sh);
    const float m = (float)mean, rstd = (float)(1.0 / sqrt(ss / (double)n + eps));
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        float v = (*(const float *)(ar + i * a.nb[0]) - m) * rstd;
        if (w) v *= w[i];
        if (b) v += b[i];
        dr[i] = v;
    }
}

void sdc_cu_layer_norm(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const float *w, const float *b,
                       float eps, bool rms) {
    const int64_t rows = a.ne[1] * a.ne[2] * a.ne[3];
    if (rows > 0) k_norm<<<(unsigned)rows, ROW_THREADS, 0, s>>>(d, a, w, b, eps, rms);
}

/* one block per (batch, group); axis 2: [W,H,C,N], axis 1: [L,C,N] */
__global__ static void k_group_norm(sdc_cu_t d, sdc_cu_t a, const float *w, const float *b,
                                    int groups, int axis, float eps) {
    __shared__ double sh[33];
    const int64_t C = a.ne[axis], cg = C / groups;
    const int64_t nbi = blockIdx.x / groups, c0 = (blockIdx.x % groups) * cg;
    const int64_t rows = axis == 2 ? a.ne[1] : 1, n0 = a.ne[0];
    const int64_t cnt = cg * rows * n0;
    double s = 0;
    for (int64_t u = threadIdx.x; u < cnt; u += blockDim.x) {
        const int64_t i = u % n0, j = (u / n0) % rows, c = c0 + u / (n0 * rows);
        s += *(const float *)(axis == 2 ? at(a, i, j, c, nbi) : at(a, i, c, nbi, 0));
    }
    const double mean = block_sum(s, sh) / (double)cnt;
    double ss = 0;
    for (int64_t u = threadIdx.x; u < cnt; u += blockDim.x) {
        const int64_t i = u % n0, j = (u / n0) % rows, c = c0 + u / (n0 * rows);
        const double v =
            *(const float *)(axis == 2 ? at(a, i, j, c, nbi) : at(a, i, c, nbi, 0)) - mean;
        ss += v * v;
    }
    ss = block_sum(ss, sh);
    const float m = (float)mean, rstd = (float)(1.0 / sqrt(ss / (double)cnt + eps));
    for (int64_t u = threadIdx.x; u < cnt; u += blockDim.x) {
        const int64_t i = u % n0, j = (u / n0) % rows, c = c0 + u / (n0 * rows);
        const float k = rstd * (w ? w[c] : 1.0f), off = b ? b[c] : 0.0f;
        const float x = *(const float *)(axis == 2 ? at(a, i, j, c, nbi) : at(a, i, c, nbi, 0));
        *(float *)(axis == 2 ? at(d, i, j, c, nbi) : at(d, i, c, nbi, 0)) = (x - m) * k + off;
    }
}

void sdc_cu_group_norm(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, const float *w, const float *b,
                       int groups, int axis, float eps) {
    const int64_t nbatch = axis == 2 ? a.ne[3] : a.ne[2];
    if (nbatch * groups > 0)
        k_group_norm<<<(unsigned)(nbatch * groups), ROW_THREADS, 0, s>>>(d, a, w, b, groups, axis,
                                                                         eps);
}

/* ------------------------------------------------------------------ positions */

/* x [D, H, L, B]; tables [D/2, L] or [D/2, L, 1, B]; one thread per pair */
__global__ static void k_rope(sdc_cu_t d, sdc_cu_t x, sdc_cu_t c, sdc_cu_t sn, int mode,
                              int64_t n) {
    const int64_t half = x.ne[0] / 2;
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < n;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = u % half;
        int64_t r = u / half;
        const int64_t ih = r % x.ne[1];
        r /= x.ne[1];
        const int64_t il = r % x.ne[2], ib = r / x.ne[2];
        const int64_t j0 = mode == 1 ? i : 2 * i, j1 = mode == 1 ? i + half : 2 * i + 1;
        const float x0 = *(const float *)at(x, j0, ih, il, ib);
        const float x1 = *(const float *)at(x, j1, ih, il, ib);
        const float cv = *(const float *)at(c, i, il, 0, ib % c.ne[3]);
        const float sv = *(const float *)at(sn, i, il, 0, ib % sn.ne[3]);
        *(float *)at(d, j0, ih, il, ib) = x0 * cv - x1 * sv;
        *(float *)at(d, j1, ih, il, ib) = x0 * sv + x1 * cv;
    }
}

void sdc_cu_rope(cudaStream_t s, sdc_cu_t d, sdc_cu_t x, sdc_cu_t c, sdc_cu_t sn, int mode) {
    const int64_t n = x.ne[0] / 2 * x.ne[1] * x.ne[2] * x.ne[3];
    if (n > 0) k_rope<<<grid_for(n, 256), 256, 0, s>>>(d, x, c, sn, mode, n);
}

__global__ static void k_timestep(sdc_cu_t d, sdc_cu_t t, int dim, float lmp, bool cos_first,
                                  int64_t n) {
    const int half = dim / 2;
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < n;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = u / dim;
        const int k = (int)(u % dim);
        float *dr = (float *)(d.data + r * d.nb[1]);
        if (k >= 2 * half) {
            dr[k] = 0.0f;
            continue;
        }
        const float ts = *(const float *)(t.data + r * t.nb[0]);
        const int kk = k % half;
        const float arg = ts * expf(-lmp * (float)kk / (float)half);
        const bool first = k < half; /* first half: cos when cos_first */
        dr[k] = first == cos_first ? cosf(arg) : sinf(arg);
    }
}

void sdc_cu_timestep(cudaStream_t s, sdc_cu_t d, sdc_cu_t t, int dim, int max_period,
                     bool cos_first) {
    const int64_t n = t.ne[0] * dim;
    if (n > 0)
        k_timestep<<<grid_for(n, 256), 256, 0, s>>>(d, t, dim, logf((float)max_period), cos_first,
                                                    n);
}

/* ------------------------------------------------------------------ layout */

__device__ static inline void copy_elem(char *d, const char *s, int es) {
    if (es == 4)
        *(uint32_t *)d = *(const uint32_t *)s;
    else if (es == 2)
        *(uint16_t *)d = *(const uint16_t *)s;
    else
        for (int k = 0; k < es; k++) d[k] = s[k];
}

/* kind 0 concat, 1 repeat, 2 pad, 3 upsample */
__global__ static void k_layout(int kind, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b, int p, int es,
                                int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ix[4];
        unravel(d, i, ix);
        char *dp = at(d, ix[0], ix[1], ix[2], ix[3]);
        if (kind == 0) {
            const sdc_cu_t *s = &a;
            if (ix[p] >= a.ne[p]) ix[p] -= a.ne[p], s = &b;
            copy_elem(dp, at(*s, ix[0], ix[1], ix[2], ix[3]), es);
        } else if (kind == 1) {
            copy_elem(dp, at(a, ix[0] % a.ne[0], ix[1] % a.ne[1], ix[2] % a.ne[2], ix[3] % a.ne[3]),
                      es);
        } else if (kind == 2) {
            if (ix[0] < a.ne[0] && ix[1] < a.ne[1] && ix[2] < a.ne[2] && ix[3] < a.ne[3])
                copy_elem(dp, at(a, ix[0], ix[1], ix[2], ix[3]), es);
            else
                for (int k = 0; k < es; k++) dp[k] = 0;
        } else {
            copy_elem(dp, at(a, ix[0] / p, ix[1] / p, ix[2], ix[3]), es);
        }
    }
}

static int elem_size(int type) {
    const int b = sdc_hd_block_bytes(type);
    return b > 0 ? b : 4; /* the integer types are 4 bytes (i32) where layout ops meet them */
}

static void layout(cudaStream_t s, int kind, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b, int p) {
    const int64_t n = nel(d);
    if (n > 0) k_layout<<<grid_for(n, 256), 256, 0, s>>>(kind, d, a, b, p, elem_size(d.type), n);
}

void sdc_cu_concat(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, sdc_cu_t b, int dim) {
    layout(s, 0, d, a, b, dim);
}
void sdc_cu_repeat(cudaStream_t s, sdc_cu_t d, sdc_cu_t a) {
    layout(s, 1, d, a, a, 0);
}
void sdc_cu_pad(cudaStream_t s, sdc_cu_t d, sdc_cu_t a) {
    layout(s, 2, d, a, a, 0);
}
void sdc_cu_upsample(cudaStream_t s, sdc_cu_t d, sdc_cu_t a, int factor) {
    layout(s, 3, d, a, a, factor);
}

__global__ static void k_get_rows(sdc_cu_t d, sdc_cu_t table, sdc_cu_t ids, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ix[4];
        unravel(d, i, ix);
        const int32_t id = *(const int32_t *)(ids.data + ix[1] * ids.nb[0] + ix[2] * ids.nb[1]);
        float v = 0.0f;
        if (id >= 0 && id < table.ne[1])
            v = sdc_hd_row_elem(table.type, table.data + (int64_t)id * table.nb[1], ix[0]);
        *(float *)at(d, ix[0], ix[1], ix[2], ix[3]) = v;
    }
}

void sdc_cu_get_rows(cudaStream_t s, sdc_cu_t d, sdc_cu_t table, sdc_cu_t ids) {
    const int64_t n = nel(d);
    if (n > 0) k_get_rows<<<grid_for(n, 256), 256, 0, s>>>(d, table, ids, n);
}

/* ------------------------------------------------------------------ heavy-op helpers */

/* w: rows of ne[0] elements, ne[1]*ne[2]*ne[3] rows nb[1]/nb[2]/nb[3] apart */
__global__ static void k_dequant(float *out, sdc_cu_t w, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i0 = i % w.ne[0];
        int64_t r = i / w.ne[0];
        const int64_t i1 = r % w.ne[1];
        r /= w.ne[1];
        const int64_t i2 = r % w.ne[2], i3 = r / w.ne[2];
        out[i] = sdc_hd_row_elem(w.type, w.data + i1 * w.nb[1] + i2 * w.nb[2] + i3 * w.nb[3], i0);
    }
}

void sdc_cu_dequant(cudaStream_t s, float *out, sdc_cu_t w) {
    const int64_t n = nel(w);
    if (n > 0) k_dequant<<<grid_for(n, 256), 256, 0, s>>>(out, w, n);
}

/* col[p + kc * np] for output pixel p0+p and kernel tap kc = kx + KW*(ky + KH*ci) */
__global__ static void k_im2col(float *col, sdc_cu_t x, int n, int g, int cin_g, int kw, int kh,
                                int ow, int64_t p0, int64_t np, int sx, int sy, int px, int py,
                                int dx, int dy, int64_t total) {
    for (int64_t u = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; u < total;
         u += (int64_t)gridDim.x * blockDim.x) {
        const int64_t p = u % np, kc = u / np;
        const int64_t pix = p0 + p, oxp = pix % ow, oyp = pix / ow;
        const int kx = (int)(kc % kw), ky = (int)((kc / kw) % kh),
                  ci = (int)(kc / ((int64_t)kw * kh));
        const int64_t ix = oxp * sx - px + (int64_t)kx * dx, iy = oyp * sy - py + (int64_t)ky * dy;
        float v = 0.0f;
        if (ix >= 0 && ix < x.ne[0] && iy >= 0 && iy < x.ne[1])
            v = *(const float *)at(x, ix, iy, (int64_t)g * cin_g + ci, n);
        col[u] = v;
    }
}

void sdc_cu_im2col(cudaStream_t s, float *col, sdc_cu_t x, int n, int g, int cin_g, int kw, int kh,
                   int ow, int oh, int64_t p0, int64_t np, const int32_t *geom) {
    (void)oh;
    const int64_t total = np * (int64_t)kw * kh * cin_g;
    if (total > 0)
        k_im2col<<<grid_for(total, 256), 256, 0, s>>>(col, x, n, g, cin_g, kw, kh, ow, p0, np,
                                                      geom[0], geom[1], geom[2], geom[3], geom[4],
                                                      geom[5], total);
}

__global__ static void k_add_bias(sdc_cu_t d, const float *bias, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t ix[4];
        unravel(d, i, ix);
        *(float *)at(d, ix[0], ix[1], ix[2], ix[3]) += bias[ix[2]];
    }
}

void sdc_cu_add_bias(cudaStream_t s, sdc_cu_t d, const float *bias) {
    const int64_t n = nel(d);
    if (n > 0) k_add_bias<<<grid_for(n, 256), 256, 0, s>>>(d, bias, n);
}

/* ------------------------------------------------------------------ attention */

#define ATT_THREADS 128
#define ATT_MAXD    512 /* head dims up to this (q/k and v) */

/* One block per (query row i, head h, batch b): keys in chunks of ATT_THREADS, one score
 * per thread, online softmax; each thread owns output dims tid, tid+128, ... */
__global__ static void k_attention(sdc_cu_t d, sdc_cu_t q, sdc_cu_t k, sdc_cu_t v, sdc_cu_t m,
                                   bool has_mask, float scale) {
    __shared__ float qs[ATT_MAXD];
    __shared__ float ps[ATT_THREADS];
    __shared__ float shf[33];
    __shared__ double shd[33];
    const int64_t lq = q.ne[1], H = q.ne[2];
    const int64_t i = blockIdx.x % lq, h = (blockIdx.x / lq) % H, b = blockIdx.x / (lq * H);
    const int64_t hk = h / (H / k.ne[2]);
    const int64_t D = q.ne[0], Dv = v.ne[0], lk = k.ne[1];
    for (int64_t e = threadIdx.x; e < D; e += blockDim.x)
        qs[e] = load_f(q.type, at(q, e, i, h, b)) * scale;
    float acc[ATT_MAXD / ATT_THREADS];
    for (int r = 0; r < ATT_MAXD / ATT_THREADS; r++) acc[r] = 0.0f;
    float mrun = -INFINITY;
    double lrun = 0;
    __syncthreads();
    for (int64_t j0 = 0; j0 < lk; j0 += ATT_THREADS) {
        const int64_t j = j0 + threadIdx.x;
        float sc = -INFINITY;
        if (j < lk) {
            float dot = 0.0f;
            for (int64_t e = 0; e < D; e++) dot += qs[e] * load_f(k.type, at(k, e, j, hk, b));
            if (has_mask) dot += load_f(m.type, at(m, j, i, h % m.ne[2], b % m.ne[3]));
            sc = dot;
        }
        const float cmax = block_max(sc, shf);
        const float mnew = fmaxf(mrun, cmax);
        const float p = (mnew == -INFINITY || sc == -INFINITY) ? 0.0f : expf(sc - mnew);
        const float corr = (mrun == -INFINITY) ? 0.0f : expf(mrun - mnew);
        ps[threadIdx.x] = p;
        const double psum = block_sum(p, shd);
        if (mnew != -INFINITY) {
            lrun = lrun * corr + psum;
            for (int r = 0; r < ATT_MAXD / ATT_THREADS; r++) acc[r] *= corr;
            mrun = mnew;
        }
        __syncthreads();
        const int64_t nj = lk - j0 < ATT_THREADS ? lk - j0 : ATT_THREADS;
        for (int r = 0; r < ATT_MAXD / ATT_THREADS; r++) {
            const int64_t e = threadIdx.x + (int64_t)r * ATT_THREADS;
            if (e >= Dv) break;
            float a = acc[r];
            for (int64_t jj = 0; jj < nj; jj++)
                if (ps[jj] != 0.0f) a += ps[jj] * load_f(v.type, at(v, e, j0 + jj, hk, b));
            acc[r] = a;
        }
        __syncthreads();
    }
    const float inv = lrun > 0 ? (float)(1.0 / lrun) : 0.0f;
    for (int r = 0; r < ATT_MAXD / ATT_THREADS; r++) {
        const int64_t e = threadIdx.x + (int64_t)r * ATT_THREADS;
        if (e >= Dv) break;
        *(float *)at(d, e, h, i, b) = acc[r] * inv;
    }
}

void sdc_cu_attention(cudaStream_t s, sdc_cu_t d, sdc_cu_t q, sdc_cu_t k, sdc_cu_t v,
                      const sdc_cu_t *mask, float scale) {
    const int64_t blocks = q.ne[1] * q.ne[2] * q.ne[3];
    sdc_cu_t m = mask ? *mask : q;
    if (blocks > 0)
        k_attention<<<(unsigned)blocks, ATT_THREADS, 0, s>>>(d, q, k, v, m, mask != NULL, scale);
}
