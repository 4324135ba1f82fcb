/* Elementwise F32 kernels: binary ops with broadcasting of b, unary activations.
 * Inputs may have any strides; dst is written row by row, threads split rows.
 * Contiguous rows of the hot activations take the AVX2 path when available. */
#include <math.h>
#include "core/fp16.h"
#include <pthread.h>
#include <stdlib.h>

#include "cpu/cpu_features.h"
#include "cpu/ops_elementwise_impl.h"
#include "cpu/ops_util.h"

static void binary_contig(sdc_op op, float *d, const float *a, const float *b, int64_t n) {
    switch (op) {
    case SDC_OP_ADD:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] + b[i];
        break;
    case SDC_OP_SUB:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] - b[i];
        break;
    case SDC_OP_MUL:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b[i];
        break;
    default:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] / b[i];
        break;
    }
}

static void binary_scalar_b(sdc_op op, float *d, const float *a, float b, int64_t n) {
    switch (op) {
    case SDC_OP_ADD:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] + b;
        break;
    case SDC_OP_SUB:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] - b;
        break;
    case SDC_OP_MUL:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * b;
        break;
    default:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] / b;
        break;
    }
}

static inline float apply_binary(sdc_op op, float x, float y) {
    switch (op) {
    case SDC_OP_ADD:
        return x + y;
    case SDC_OP_SUB:
        return x - y;
    case SDC_OP_MUL:
        return x * y;
    default:
        return x / y;
    }
}

void sdc_cpu_binary(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0], *b = dst->src[1];
    const sdc_op op = dst->op;
    const int64_t n = dst->ne[0], bn = b->ne[0];
    const bool ac = a->nb[0] == sizeof(float), bf32 = b->type == SDC_TYPE_F32;
    float bbuf[256]; /* F16/BF16 b: converted a chunk at a time */
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        const char *br = sdc_row_ptr(b, i1 % b->ne[1], i2 % b->ne[2], i3 % b->ne[3]);
        if (!bf32) {
            for (int64_t k = 0; k < n; k += 256) {
                const int64_t m = n - k < 256 ? n - k : 256;
                for (int64_t i = 0; i < m; i++)
                    bbuf[i] = sdc_load_elem(b->type, br + ((k + i) % bn) * b->nb[0]);
                if (ac) {
                    binary_contig(op, d + k, (const float *)ar + k, bbuf, m);
                } else {
                    for (int64_t i = 0; i < m; i++)
                        d[k + i] =
                            apply_binary(op, *(const float *)(ar + (k + i) * a->nb[0]), bbuf[i]);
                }
            }
        } else if (ac && bn == 1) {
            binary_scalar_b(op, d, (const float *)ar, *(const float *)br, n);
        } else if (ac && b->nb[0] == sizeof(float)) {
            for (int64_t k = 0; k < n; k += bn) /* b's row repeats along dim 0 */
                binary_contig(op, d + k, (const float *)ar + k, (const float *)br, bn);
        } else {
            for (int64_t i = 0; i < n; i++)
                d[i] = apply_binary(op, *(const float *)(ar + i * a->nb[0]),
                                    *(const float *)(br + (i % bn) * b->nb[0]));
        }
    }
}

float sdc_gelu_tanh_ref(float x) {
    const float c = 0.7978845608028654f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

/* ggml's F16 GELU table: one entry per half-precision input, built once */
static float *g_gelu_table;
static pthread_once_t g_gelu_once = PTHREAD_ONCE_INIT;

static void build_gelu_table(void) {
    float *t = malloc(65536 * sizeof(float));
    if (!t) return;
    for (int i = 0; i < 65536; i++) {
        float x = sdc_fp16_to_f32((sdc_fp16)i);
        /* ggml's arrangement of the tanh argument: x * (1 + a*x^2) */
        float y =
            0.5f * x * (1.0f + tanhf(0.79788456080286535587989f * x * (1.0f + 0.044715f * x * x)));
        t[i] = sdc_fp16_to_f32(sdc_f32_to_fp16(y));
    }
    g_gelu_table = t;
}

static float gelu_f16(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    if (!g_gelu_table) return sdc_gelu_tanh_ref(x); /* table allocation failed */
    return g_gelu_table[sdc_f32_to_fp16(x)];
}

void sdc_unary_row_scalar(sdc_op op, float *d, const float *a, int64_t n, float f0, float f1) {
    switch (op) {
    case SDC_OP_GELU_F16:
        pthread_once(&g_gelu_once, build_gelu_table);
        for (int64_t i = 0; i < n; i++) d[i] = gelu_f16(a[i]);
        break;
    case SDC_OP_SCALE:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * f0 + f1;
        break;
    case SDC_OP_GELU:
        for (int64_t i = 0; i < n; i++) d[i] = sdc_gelu_tanh_ref(a[i]);
        break;
    case SDC_OP_GELU_ERF:
        for (int64_t i = 0; i < n; i++)
            d[i] = 0.5f * a[i] * (1.0f + erff(a[i] * 0.70710678118654752f));
        break;
    case SDC_OP_SILU:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] / (1.0f + expf(-a[i]));
        break;
    case SDC_OP_RELU:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] > 0 ? a[i] : 0.0f;
        break;
    case SDC_OP_SIGMOID:
        for (int64_t i = 0; i < n; i++) d[i] = 1.0f / (1.0f + expf(-a[i]));
        break;
    case SDC_OP_TANH:
        for (int64_t i = 0; i < n; i++) d[i] = tanhf(a[i]);
        break;
    case SDC_OP_SQR:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] * a[i];
        break;
    case SDC_OP_SQRT:
        for (int64_t i = 0; i < n; i++) d[i] = sqrtf(a[i]);
        break;
    case SDC_OP_EXP:
        for (int64_t i = 0; i < n; i++) d[i] = expf(a[i]);
        break;
    case SDC_OP_CLAMP:
        for (int64_t i = 0; i < n; i++) d[i] = a[i] < f0 ? f0 : (a[i] > f1 ? f1 : a[i]);
        break;
    default:
        break;
    }
}

void sdc_cpu_unary(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0];
    const int64_t n = dst->ne[0];
    const float f0 = dst->params.f[0], f1 = dst->params.f[1];
    sdc_unary_row_fn row_fn = sdc_unary_row_scalar;
#if defined(SDC_HAVE_X86)
    if (sdc_cpu_isa() >= SDC_ISA_AVX2) row_fn = sdc_unary_row_avx2;
#endif
#if defined(__aarch64__)
    if (sdc_cpu_isa() == SDC_ISA_NEON) row_fn = sdc_unary_row_neon;
#endif
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    float *tmp = NULL, buf[256];
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        if (a->nb[0] == sizeof(float)) {
            row_fn(dst->op, d, (const float *)ar, n, f0, f1);
            continue;
        }
        /* strided source: gather chunks into a small buffer (d may alias nothing here) */
        for (int64_t k = 0; k < n; k += 256) {
            int64_t m = n - k < 256 ? n - k : 256;
            tmp = buf;
            for (int64_t i = 0; i < m; i++) tmp[i] = *(const float *)(ar + (k + i) * a->nb[0]);
            row_fn(dst->op, d + k, tmp, m, f0, f1);
        }
    }
}
