/* The CUDA backend: the backend interface (core/backend.h) on one GPU. Graphs are planned
 * by the shared planner into one device scratch buffer; weights stay where the loaders put
 * them (host memory) and are uploaded once, on first use, into a per-backend cache keyed by
 * their host address; other host leaves are uploaded for each compute. Nodes run in order on
 * one stream: GEMMs (matmul, conv2d as im2col + GEMM) through cuBLAS in F32 (weights of any
 * type dequantised on the device first), every other op in kernels_cuda.cu. */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "core/backend.h"
#include "core/log.h"
#include "core/status.h"
}
#include "cuda/backend_cuda.h"
#include "cuda/cuda_dequant.h"
#include "cuda/cuda_ops.h"

#define CUDA_ALIGN      256
#define IM2COL_MAX_ELEM (64ll << 20) /* floats per im2col chunk (256 MiB) */

typedef struct wentry {
    const void *host; /* key: the host address of a weight leaf */
    size_t size;
    uint64_t sig; /* bytes sampled from the host copy: a freed weight's address reused by
                   * another one (a switched model, a re-merged LoRA) is not taken for it */
    void *dev;
} wentry;

typedef struct cuda_backend {
    int ordinal;
    char name[16];
    cudaStream_t stream;
    cublasHandle_t blas;
    sdc_buffer *scratch;
    unsigned long generation;
    wentry *w; /* open-addressing table of uploaded weights */
    size_t w_cap, w_n, w_bytes;
    void **ups; /* this compute's uploads of non-weight host leaves */
    int n_ups, cap_ups;
    void *tmp; /* per-node temporaries: dequantised weights, im2col, contiguous copies */
    size_t tmp_size;
} cuda_backend;

static sdc_status cu_err(cudaError_t e, const char *what) {
    return sdc_fail(SDC_ERR_INTERNAL, "cuda: %s: %s", what, cudaGetErrorString(e));
}

#define CU_TRY(call, what)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) return cu_err(e_, what);                                            \
    } while (0)

static const char *cuda_name(const sdc_backend *b) {
    return ((const cuda_backend *)b->impl)->name;
}

static void drop_uploads(cuda_backend *c) {
    for (int i = 0; i < c->n_ups; i++) cudaFree(c->ups[i]);
    c->n_ups = 0;
}

static void cuda_free(sdc_backend *b) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    cudaStreamSynchronize(c->stream);
    drop_uploads(c);
    free(c->ups);
    for (size_t i = 0; i < c->w_cap; i++)
        if (c->w[i].host) cudaFree(c->w[i].dev);
    free(c->w);
    cudaFree(c->tmp);
    sdc_buffer_free(c->scratch);
    cublasDestroy(c->blas);
    cudaStreamDestroy(c->stream);
    free(c);
    free(b);
}

static sdc_status cuda_alloc(sdc_backend *b, size_t size, void **ptr) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    cudaError_t e = cudaMalloc(ptr, size ? size : 1);
    if (e != cudaSuccess)
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: cannot allocate %zu bytes: %s", c->name, size,
                        cudaGetErrorString(e));
    return SDC_OK;
}

static void cuda_release(sdc_backend *b, void *ptr) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    cudaStreamSynchronize(c->stream);
    cudaFree(ptr);
}

static bool is_float(int t) {
    return t == SDC_TYPE_F32 || t == SDC_TYPE_F16 || t == SDC_TYPE_BF16;
}

static bool readable(int t) {
    return sdc_hd_block_size(t) > 0;
}

static const char *types_why(const sdc_tensor *t) {
    const sdc_tensor *a = t->src[0];
    if (t->op == SDC_OP_NONE || t->op == SDC_OP_VIEW) return NULL;
    if (!a) return "a required source is missing";
    switch (t->op) {
    case SDC_OP_CPY:
        if (a->type == t->type || (is_float(a->type) && is_float(t->type))) return NULL;
        return "cpy converts only between f32/f16/bf16 (or copies one type)";
    case SDC_OP_CONCAT:
    case SDC_OP_REPEAT:
    case SDC_OP_PAD:
    case SDC_OP_UPSAMPLE:
        if (sdc_type_get(t->type)->is_quantized || a->type != t->type ||
            (t->op == SDC_OP_CONCAT && (!t->src[1] || t->src[1]->type != t->type)))
            return "sources and dst must have one unquantised type";
        return NULL;
    default:
        break;
    }
    if (t->type != SDC_TYPE_F32) return "dst must be f32";
    switch (t->op) {
    case SDC_OP_ADD:
    case SDC_OP_SUB:
    case SDC_OP_MUL:
    case SDC_OP_DIV:
        return a->type == SDC_TYPE_F32 && t->src[1] && is_float(t->src[1]->type)
                   ? NULL
                   : "a must be f32, b f32/f16/bf16";
    case SDC_OP_SOFTMAX:
    case SDC_OP_LAYER_NORM:
    case SDC_OP_RMS_NORM:
    case SDC_OP_GROUP_NORM:
    case SDC_OP_ROPE:
        for (int i = 1; i < 3; i++)
            if (t->src[i] && (t->op == SDC_OP_SOFTMAX ? !is_float(t->src[i]->type)
                                                      : t->src[i]->type != SDC_TYPE_F32))
                return "unsupported weight/mask/table type";
        return a->type == SDC_TYPE_F32 ? NULL : "the source must be f32";
    case SDC_OP_MATMUL:
        return readable(a->type) && t->src[1] && t->src[1]->type == SDC_TYPE_F32
                   ? NULL
                   : "weight type without a reader, or x not f32";
    case SDC_OP_CONV2D:
        return a->type == SDC_TYPE_F32 && t->src[1] && readable(t->src[1]->type)
                   ? NULL
                   : "x must be f32, the weight of a known type";
    case SDC_OP_ATTENTION:
        if (a->ne[0] > 512 || !t->src[2] || t->src[2]->ne[0] > 512)
            return "head dims above 512 are not supported on cuda";
        return is_float(a->type) && is_float(t->src[1]->type) && is_float(t->src[2]->type)
                   ? NULL
                   : "q/k/v must be f32/f16/bf16";
    case SDC_OP_GET_ROWS:
        return readable(a->type) && t->src[1] && t->src[1]->type == SDC_TYPE_I32
                   ? NULL
                   : "table type without a reader, or ids not i32";
    default:
        return a->type == SDC_TYPE_F32 ? NULL : "the source must be f32";
    }
}

static bool cuda_supports(const sdc_backend *b, const sdc_tensor *node, char *why,
                          size_t why_size) {
    (void)b;
    const char *r = node->op >= SDC_OP_COUNT ? "no kernel for this op" : types_why(node);
    if (r && why && why_size) snprintf(why, why_size, "%s", r);
    return r == NULL;
}

/* ---------------------------------------------------------------- device addresses */

static bool is_weight_leaf(const sdc_tensor *t) {
    return (t->flags & SDC_TENSOR_PARAM) ||
           (t->buffer &&
            (t->buffer->usage == SDC_BUFFER_WEIGHTS || t->buffer->usage == SDC_BUFFER_HOST_MAPPED));
}

static size_t hash_ptr(const void *p, size_t cap) {
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    return (size_t)x & (cap - 1);
}

static sdc_status cache_grow(cuda_backend *c) {
    size_t cap = c->w_cap ? c->w_cap * 2 : 1024;
    wentry *nw = (wentry *)calloc(cap, sizeof(wentry));
    if (!nw) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: weight table", c->name);
    for (size_t i = 0; i < c->w_cap; i++) {
        if (!c->w[i].host) continue;
        size_t h = hash_ptr(c->w[i].host, cap);
        while (nw[h].host) h = (h + 1) & (cap - 1);
        nw[h] = c->w[i];
    }
    free(c->w);
    c->w = nw;
    c->w_cap = cap;
    return SDC_OK;
}

/* FNV-1a over up to 3 x 256 bytes: the start, the middle and the end of the weight */
static uint64_t sample_sig(const void *host, size_t size) {
    const unsigned char *p = (const unsigned char *)host;
    uint64_t h = 1469598103934665603ull ^ size;
    const size_t span = size < 256 ? size : 256;
    const size_t at[3] = {0, size / 2 - (size / 2 < span / 2 ? size / 2 : span / 2), size - span};
    for (int k = 0; k < 3; k++)
        for (size_t i = 0; i < span; i++) h = (h ^ p[at[k] + i]) * 1099511628211ull;
    return h;
}

/* The device copy of the host bytes [host, host+size) of a weight leaf. */
static sdc_status weight_dev(cuda_backend *c, const void *host, size_t size, void **dev) {
    const uint64_t sig = sample_sig(host, size);
    if (c->w_cap) {
        for (size_t h = hash_ptr(host, c->w_cap); c->w[h].host; h = (h + 1) & (c->w_cap - 1))
            if (c->w[h].host == host && c->w[h].size == size && c->w[h].sig == sig)
                return *dev = c->w[h].dev, SDC_OK;
    }
    if ((c->w_n + 1) * 2 > c->w_cap) {
        sdc_status s = cache_grow(c);
        if (s != SDC_OK) return s;
    }
    void *d = NULL;
    cudaError_t e = cudaMalloc(&d, size ? size : 1);
    if (e != cudaSuccess)
        return sdc_fail(SDC_ERR_NO_MEMORY,
                        "%s: no memory for a %zu-byte weight (%zu bytes of "
                        "weights resident): %s",
                        c->name, size, c->w_bytes, cudaGetErrorString(e));
    CU_TRY(cudaMemcpyAsync(d, host, size, cudaMemcpyHostToDevice, c->stream), "weight upload");
    size_t h = hash_ptr(host, c->w_cap);
    while (c->w[h].host) {
        if (c->w[h].host == host) break; /* same address, other bytes or size: replace */
        h = (h + 1) & (c->w_cap - 1);
    }
    if (c->w[h].host) {
        cudaStreamSynchronize(c->stream);
        cudaFree(c->w[h].dev);
        c->w_bytes -= c->w[h].size;
    } else {
        c->w_n++;
    }
    c->w[h] = wentry{host, size, sig, d};
    c->w_bytes += size;
    *dev = d;
    return SDC_OK;
}

static sdc_status upload_once(cuda_backend *c, const void *host, size_t size, void **dev) {
    if (c->n_ups == c->cap_ups) {
        int cap = c->cap_ups ? c->cap_ups * 2 : 16;
        void **n = (void **)realloc(c->ups, (size_t)cap * sizeof(void *));
        if (!n) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: upload list", c->name);
        c->ups = n, c->cap_ups = cap;
    }
    CU_TRY(cudaMalloc(dev, size ? size : 1), "upload buffer");
    c->ups[c->n_ups++] = *dev;
    CU_TRY(cudaMemcpyAsync(*dev, host, size, cudaMemcpyHostToDevice, c->stream), "upload");
    return SDC_OK;
}

/* The device address of t's data: its own when it lies in this backend's memory, else the
 * device copy of the host leaf it views. */
static sdc_status dev_addr(sdc_backend *b, const sdc_tensor *t, char **out) {
    cuda_backend *c = (cuda_backend *)b->impl;
    if (t->buffer && t->buffer->backend == b) return *out = (char *)t->data, SDC_OK;
    if (t->buffer && !sdc_buffer_is_host(t->buffer))
        return sdc_fail(SDC_ERR_INTERNAL, "%s: tensor '%s' lies on %s", c->name, t->name,
                        sdc_buffer_device_name(t->buffer));
    const sdc_tensor *root = t;
    while (root->view_src) root = root->view_src;
    if (!root->data || !t->data)
        return sdc_fail(SDC_ERR_INTERNAL, "%s: tensor '%s' has no data", c->name, t->name);
    const size_t off = (size_t)((const char *)t->data - (const char *)root->data);
    const size_t size = sdc_tensor_nbytes(root);
    void *d = NULL;
    sdc_status s = is_weight_leaf(root) ? weight_dev(c, root->data, size, &d)
                                        : upload_once(c, root->data, size, &d);
    if (s != SDC_OK) return s;
    *out = (char *)d + off;
    return SDC_OK;
}

static sdc_status desc(sdc_backend *b, const sdc_tensor *t, sdc_cu_t *o) {
    o->type = t->type;
    for (int i = 0; i < 4; i++) o->ne[i] = t->ne[i], o->nb[i] = (int64_t)t->nb[i];
    return dev_addr(b, t, &o->data);
}

static sdc_status tmp_reserve(cuda_backend *c, size_t bytes, void **p) {
    if (bytes > c->tmp_size) {
        cudaStreamSynchronize(c->stream);
        cudaFree(c->tmp);
        c->tmp = NULL, c->tmp_size = 0;
        size_t want = bytes + bytes / 4;
        cudaError_t e = cudaMalloc(&c->tmp, want);
        if (e != cudaSuccess)
            return sdc_fail(SDC_ERR_NO_MEMORY, "%s: no memory for %zu bytes of temporaries: %s",
                            c->name, want, cudaGetErrorString(e));
        c->tmp_size = want;
    }
    *p = c->tmp;
    return SDC_OK;
}

/* ---------------------------------------------------------------- GEMMs */

static size_t round_up(size_t n) {
    return (n + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
}

static bool f32_strides(const sdc_cu_t &t) {
    return t.type == SDC_TYPE_F32 && t.nb[0] == 4 && t.nb[1] % 4 == 0 && t.nb[2] % 4 == 0 &&
           t.nb[3] % 4 == 0;
}

static bool fits_int(int64_t v) {
    return v > 0 && v < 2147483647;
}

static sdc_status blas_ok(cublasStatus_t st, const char *what) {
    if (st == CUBLAS_STATUS_SUCCESS) return SDC_OK;
    return sdc_fail(SDC_ERR_INTERNAL, "cuda: cuBLAS %s failed (status %d)", what, (int)st);
}

/* dst[n,m] = sum_k w[k,n] x[k,m] per batch slice, w broadcast over x's dims 2 and 3 */
static sdc_status run_matmul(sdc_backend *b, const sdc_tensor *t, sdc_cu_t d, sdc_cu_t w) {
    cuda_backend *c = (cuda_backend *)b->impl;
    sdc_cu_t x;
    sdc_status st = desc(b, t->src[1], &x);
    if (st != SDC_OK) return st;
    const int64_t K = w.ne[0], N = w.ne[1], M = x.ne[1], b2 = x.ne[2], b3 = x.ne[3];
    const int64_t r2 = b2 / w.ne[2], r3 = b3 / w.ne[3];
    if (!fits_int(K) || !fits_int(N) || !fits_int(M) || d.nb[0] != 4)
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: matmul '%s' of this size/layout", c->name,
                        t->name);
    const bool wplain = f32_strides(w), xplain = f32_strides(x);
    const size_t wbytes = wplain ? 0 : round_up((size_t)(K * N * w.ne[2] * w.ne[3]) * 4);
    const size_t xbytes = xplain ? 0 : (size_t)(K * M * b2 * b3) * 4;
    void *tmp = NULL;
    if (wbytes + xbytes && (st = tmp_reserve(c, wbytes + xbytes, &tmp)) != SDC_OK) return st;
    const float *W = (const float *)w.data, *X = (const float *)x.data;
    int64_t ldw = w.nb[1] / 4, sw2 = w.nb[2] / 4, sw3 = w.nb[3] / 4;
    int64_t ldx = x.nb[1] / 4, sx2 = x.nb[2] / 4, sx3 = x.nb[3] / 4;
    if (!wplain) {
        sdc_cu_dequant(c->stream, (float *)tmp, w);
        W = (const float *)tmp, ldw = K, sw2 = K * N, sw3 = K * N * w.ne[2];
    }
    if (!xplain) {
        sdc_cu_t xc = x;
        xc.data = (char *)tmp + wbytes;
        xc.nb[0] = 4, xc.nb[1] = 4 * K, xc.nb[2] = 4 * K * M, xc.nb[3] = 4 * K * M * b2;
        sdc_cu_cpy(c->stream, xc, x);
        X = (const float *)xc.data, ldx = K, sx2 = K * M, sx3 = K * M * b2;
    }
    const float one = 1.0f, zero = 0.0f;
    for (int64_t i3 = 0; i3 < b3; i3++)
        for (int64_t i2 = 0; i2 < b2; i2++) {
            const float *Ws = W + (i2 / r2) * sw2 + (i3 / r3) * sw3;
            const float *Xs = X + i2 * sx2 + i3 * sx3;
            float *Ds = (float *)(d.data + i2 * d.nb[2] + i3 * d.nb[3]);
            st =
                blas_ok(cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)N, (int)M, (int)K, &one,
                                    Ws, (int)ldw, Xs, (int)ldx, &zero, Ds, (int)(d.nb[1] / 4)),
                        "sgemm");
            if (st != SDC_OK) return st;
        }
    return SDC_OK;
}

/* x [W,H,Cin,N] * w [KW,KH,Cin/g,Cout] -> dst [OW,OH,Cout,N]: im2col of a run of output
 * pixels, then one GEMM per (image, group, run) */
static sdc_status run_conv2d(sdc_backend *b, const sdc_tensor *t, sdc_cu_t d, sdc_cu_t x) {
    cuda_backend *c = (cuda_backend *)b->impl;
    sdc_cu_t w, bias;
    sdc_status st = desc(b, t->src[1], &w);
    if (st == SDC_OK && t->src[2]) st = desc(b, t->src[2], &bias);
    if (st != SDC_OK) return st;
    const int32_t *geom = t->params.i;
    const int groups = geom[6];
    const int64_t kw = w.ne[0], kh = w.ne[1], cin_g = w.ne[2], cout = w.ne[3];
    const int64_t cout_g = cout / groups, kc = kw * kh * cin_g;
    const int64_t ow = d.ne[0], oh = d.ne[1], P = ow * oh;
    if (d.nb[0] != 4 || d.nb[1] != 4 * ow || d.nb[2] != 4 * P || !fits_int(kc) || !fits_int(P))
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: conv2d '%s' of this size/layout", c->name,
                        t->name);
    const bool wplain =
        f32_strides(w) && w.nb[1] == 4 * kw && w.nb[2] == 4 * kw * kh && w.nb[3] == 4 * kc;
    const size_t wbytes = wplain ? 0 : round_up((size_t)(kc * cout) * 4);
    int64_t np = IM2COL_MAX_ELEM / kc;
    if (np < 1) np = 1;
    if (np > P) np = P;
    void *tmp = NULL;
    if ((st = tmp_reserve(c, wbytes + (size_t)(np * kc) * 4, &tmp)) != SDC_OK) return st;
    const float *W = (const float *)w.data;
    if (!wplain) {
        sdc_cu_dequant(c->stream, (float *)tmp, w);
        W = (const float *)tmp;
    }
    float *col = (float *)((char *)tmp + wbytes);
    const float one = 1.0f, zero = 0.0f;
    for (int64_t n = 0; n < d.ne[3]; n++)
        for (int g = 0; g < groups; g++)
            for (int64_t p0 = 0; p0 < P; p0 += np) {
                const int64_t cnt = P - p0 < np ? P - p0 : np;
                sdc_cu_im2col(c->stream, col, x, (int)n, g, (int)cin_g, (int)kw, (int)kh, (int)ow,
                              (int)oh, p0, cnt, geom);
                float *D = (float *)(d.data + n * d.nb[3]) + g * cout_g * P + p0;
                st = blas_ok(cublasSgemm(c->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)cnt, (int)cout_g,
                                         (int)kc, &one, col, (int)cnt, W + g * cout_g * kc, (int)kc,
                                         &zero, D, (int)P),
                             "sgemm (conv2d)");
                if (st != SDC_OK) return st;
            }
    if (t->src[2]) sdc_cu_add_bias(c->stream, d, (const float *)bias.data);
    return SDC_OK;
}

/* ---------------------------------------------------------------- graph execution */

static sdc_status run_node(sdc_backend *b, const sdc_tensor *t) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaStream_t s = c->stream;
    sdc_cu_t d, a, x, y;
    sdc_status st = desc(b, t, &d);
    if (st == SDC_OK && t->src[0]) st = desc(b, t->src[0], &a);
    if (st != SDC_OK) return st;
    const float f0 = t->params.f[0], f1 = t->params.f[1];
    switch (t->op) {
    case SDC_OP_CPY:
        if (sdc_type_get(t->type)->is_quantized) {
            if (!sdc_tensor_is_contiguous(t) || !sdc_tensor_is_contiguous(t->src[0]))
                return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: strided copy of a quantised tensor",
                                c->name);
            CU_TRY(
                cudaMemcpyAsync(d.data, a.data, sdc_tensor_nbytes(t), cudaMemcpyDeviceToDevice, s),
                "copy");
        } else {
            sdc_cu_cpy(s, d, a);
        }
        break;
    case SDC_OP_ADD:
    case SDC_OP_SUB:
    case SDC_OP_MUL:
    case SDC_OP_DIV:
        if ((st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        sdc_cu_binary(s, t->op, d, a, x);
        break;
    case SDC_OP_MEAN:
    case SDC_OP_SUM_ROWS:
        sdc_cu_rowsum(s, d, a, t->op == SDC_OP_MEAN);
        break;
    case SDC_OP_SOFTMAX:
        if (t->src[1] && (st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        sdc_cu_softmax(s, d, a, t->src[1] ? &x : NULL, f0);
        break;
    case SDC_OP_LAYER_NORM:
    case SDC_OP_RMS_NORM:
        if (t->src[1] && (st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        if (t->src[2] && (st = desc(b, t->src[2], &y)) != SDC_OK) return st;
        sdc_cu_layer_norm(s, d, a, t->src[1] ? (const float *)x.data : NULL,
                          t->src[2] ? (const float *)y.data : NULL, f0, t->op == SDC_OP_RMS_NORM);
        break;
    case SDC_OP_GROUP_NORM:
        if (t->src[1] && (st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        if (t->src[2] && (st = desc(b, t->src[2], &y)) != SDC_OK) return st;
        sdc_cu_group_norm(s, d, a, t->src[1] ? (const float *)x.data : NULL,
                          t->src[2] ? (const float *)y.data : NULL, t->params.i[0], t->params.i[2],
                          f1);
        break;
    case SDC_OP_ROPE:
        if ((st = desc(b, t->src[1], &x)) != SDC_OK || (st = desc(b, t->src[2], &y)) != SDC_OK)
            return st;
        sdc_cu_rope(s, d, a, x, y, t->params.i[0]);
        break;
    case SDC_OP_TIMESTEP_EMBED:
        sdc_cu_timestep(s, d, a, t->params.i[0], t->params.i[1], t->params.f[2] != 0.0f);
        break;
    case SDC_OP_CONCAT:
        if ((st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        sdc_cu_concat(s, d, a, x, t->params.i[0]);
        break;
    case SDC_OP_REPEAT:
        sdc_cu_repeat(s, d, a);
        break;
    case SDC_OP_PAD:
        sdc_cu_pad(s, d, a);
        break;
    case SDC_OP_UPSAMPLE:
        sdc_cu_upsample(s, d, a, t->params.i[0]);
        break;
    case SDC_OP_GET_ROWS:
        if ((st = desc(b, t->src[1], &x)) != SDC_OK) return st;
        sdc_cu_get_rows(s, d, a, x);
        break;
    case SDC_OP_MATMUL:
        return run_matmul(b, t, d, a);
    case SDC_OP_CONV2D:
        return run_conv2d(b, t, d, a);
    case SDC_OP_ATTENTION: {
        sdc_cu_t m;
        if ((st = desc(b, t->src[1], &x)) != SDC_OK || (st = desc(b, t->src[2], &y)) != SDC_OK)
            return st;
        if (t->src[3] && (st = desc(b, t->src[3], &m)) != SDC_OK) return st;
        sdc_cu_attention(s, d, a, x, y, t->src[3] ? &m : NULL, f0);
        break;
    }
    default: /* scale, activations, clamp */
        sdc_cu_unary(s, t->op, d, a, f0, f1);
        break;
    }
    CU_TRY(cudaGetLastError(), sdc_op_name(t->op));
    return SDC_OK;
}

static sdc_status check_nodes(const sdc_backend *b, sdc_graph *g) {
    const int n = sdc_graph_n_nodes(g);
    for (int i = 0; i < n; i++) {
        sdc_tensor *t = sdc_graph_get_node(g, i);
        char why[128];
        if (cuda_supports(b, t, why, sizeof why)) continue;
        return sdc_fail(SDC_ERR_UNSUPPORTED, "%s: node %d '%s' (op %s) is not supported: %s",
                        cuda_name(b), i, t->name, sdc_op_name(t->op), why);
    }
    return SDC_OK;
}

static sdc_status cuda_graph_alloc(sdc_backend *b, sdc_graph *g) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    sdc_status s = check_nodes(b, g);
    if (s != SDC_OK) return s;
    sdc_plan_stats st;
    if ((s = sdc_graph_plan(g, CUDA_ALIGN, NULL, NULL, &st)) != SDC_OK) return s;
    const size_t need = st.scratch_bytes + CUDA_ALIGN;
    if (!c->scratch || need > c->scratch->size) {
        cudaStreamSynchronize(c->stream);
        sdc_buffer_free(c->scratch);
        c->scratch = NULL;
        if ((s = sdc_buffer_alloc(b, need, SDC_BUFFER_SCRATCH, &c->scratch)) != SDC_OK) return s;
    }
    sdc_graph_bind_buffer(g, c->scratch, 0);
    sdc_graph_binding *bd = sdc_graph_get_binding(g);
    bd->owner = c;
    bd->generation = ++c->generation;
    bd->work_offset = 0;
    bd->work_bytes = 0;
    return SDC_OK;
}

static sdc_status cuda_compute(sdc_backend *b, sdc_graph *g, sdc_eval_fn cb, void *cb_user) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    sdc_graph_binding *bd = sdc_graph_get_binding(g);
    if (bd->owner != c || bd->generation != c->generation) {
        sdc_status s = cuda_graph_alloc(b, g);
        if (s != SDC_OK) return s;
    }
    bd->owner = NULL;
    sdc_status s = SDC_OK;
    const int n = sdc_graph_n_nodes(g);
    for (int i = 0; i < n && s == SDC_OK; i++) {
        sdc_tensor *t = sdc_graph_get_node(g, i);
        if (t->op == SDC_OP_VIEW || t->op == SDC_OP_NONE) continue;
        const bool observe = cb && cb(t, true, cb_user);
        s = run_node(b, t);
        if (s == SDC_OK && observe) {
            /* the callback reads t through sdc_tensor_read (our tensor_get), after a sync */
            cudaError_t e = cudaStreamSynchronize(c->stream);
            if (e != cudaSuccess)
                s = cu_err(e, "compute");
            else if (!cb(t, false, cb_user))
                s = sdc_fail(SDC_ERR_CANCELLED, "computation cancelled");
        }
    }
    cudaError_t e = cudaStreamSynchronize(c->stream);
    drop_uploads(c);
    if (s == SDC_OK && e != cudaSuccess) s = cu_err(e, "compute");
    return s;
}

static sdc_status cuda_tensor_set(sdc_backend *b, sdc_tensor *t, const void *src, size_t offset,
                                  size_t size) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    CU_TRY(cudaMemcpyAsync((char *)t->data + offset, src, size, cudaMemcpyHostToDevice, c->stream),
           "tensor_set");
    CU_TRY(cudaStreamSynchronize(c->stream), "tensor_set");
    return SDC_OK;
}

static sdc_status cuda_tensor_get(sdc_backend *b, const sdc_tensor *t, void *dst, size_t offset,
                                  size_t size) {
    cuda_backend *c = (cuda_backend *)b->impl;
    cudaSetDevice(c->ordinal);
    CU_TRY(cudaMemcpyAsync(dst, (const char *)t->data + offset, size, cudaMemcpyDeviceToHost,
                           c->stream),
           "tensor_get");
    CU_TRY(cudaStreamSynchronize(c->stream), "tensor_get");
    return SDC_OK;
}

static void cuda_memory(const sdc_backend *b, size_t *free_bytes, size_t *total_bytes) {
    const cuda_backend *c = (const cuda_backend *)b->impl;
    size_t fr = 0, tot = 0;
    cudaSetDevice(c->ordinal);
    if (cudaMemGetInfo(&fr, &tot) != cudaSuccess) fr = tot = 0;
    if (free_bytes) *free_bytes = fr;
    if (total_bytes) *total_bytes = tot;
}

static const sdc_backend_iface g_cuda_iface = {
    cuda_name,
    cuda_free,
    cuda_alloc,
    cuda_release,
    cuda_supports,
    cuda_compute,
    cuda_memory,
    cuda_graph_alloc,
    cuda_tensor_set,
    cuda_tensor_get,
    NULL /* tensor_use_host: inputs are copied in */,
    false /* host_memory */,
    NULL /* contains */,
};

extern "C" sdc_backend *sdc_backend_cuda_create(int ordinal) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || ordinal < 0 || ordinal >= n) {
        sdc_fail(SDC_ERR_INTERNAL, "cuda%d: no such CUDA device (%d visible)", ordinal, n);
        return NULL;
    }
    sdc_backend *b = (sdc_backend *)calloc(1, sizeof *b);
    cuda_backend *c = (cuda_backend *)calloc(1, sizeof *c);
    if (!b || !c) {
        free(b), free(c);
        sdc_fail(SDC_ERR_NO_MEMORY, "cuda: cannot create backend");
        return NULL;
    }
    c->ordinal = ordinal;
    snprintf(c->name, sizeof c->name, "cuda%d", ordinal);
    cudaSetDevice(ordinal);
    if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) != cudaSuccess ||
        cublasCreate(&c->blas) != CUBLAS_STATUS_SUCCESS) {
        free(b), free(c);
        sdc_fail(SDC_ERR_INTERNAL, "cuda%d: cannot create a stream / cuBLAS handle", ordinal);
        return NULL;
    }
    cublasSetStream(c->blas, c->stream);
    /* F32 GEMMs stay F32 (no TF32) unless asked: the images must match the CPU's */
    const char *tf32 = getenv("SDC_CUDA_TF32");
    cublasSetMathMode(c->blas,
                      tf32 && *tf32 == '1' ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH);
    b->iface = &g_cuda_iface;
    b->impl = c;
    return b;
}

/* ---------------------------------------------------------------- registry */

static sdc_backend *dev_create(const sdc_device *d, int n_threads) {
    (void)n_threads;
    return sdc_backend_cuda_create((int)(intptr_t)d->user);
}

static uint64_t dev_free(const sdc_device *d) {
    size_t fr = 0, tot = 0;
    if (cudaSetDevice((int)(intptr_t)d->user) != cudaSuccess ||
        cudaMemGetInfo(&fr, &tot) != cudaSuccess)
        return 0;
    return fr;
}

static const sdc_device_ops g_dev_ops = {dev_create, dev_free};

extern "C" void sdc_cuda_add_devices(sdc_cuda_register_fn reg) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) return; /* no driver or no GPU */
    for (int i = 0; i < n; i++) {
        cudaDeviceProp p;
        if (cudaGetDeviceProperties(&p, i) != cudaSuccess) continue;
        sdc_device d;
        memset(&d, 0, sizeof d);
        d.kind = SDC_DEVICE_ACCEL;
        snprintf(d.name, sizeof d.name, "cuda%d", i);
        snprintf(d.registry, sizeof d.registry, "cuda");
        snprintf(d.description, sizeof d.description, "%s, %.1f GiB, compute %d.%d", p.name,
                 (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.major, p.minor);
        d.total_bytes = p.totalGlobalMem;
        reg(&d, &g_dev_ops, (void *)(intptr_t)i);
    }
}
