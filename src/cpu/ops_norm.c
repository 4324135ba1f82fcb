/* Row reductions, softmax and normalisations (F32). Statistics accumulate in double
 * so long rows (group norm over 64x64x16 values) keep full float precision. */
#include <math.h>

#include "cpu/cpu_features.h"
#include "cpu/ops_norm_impl.h"
#include "cpu/ops_util.h"

/* Contiguous rows take the AVX2 variants when the CPU has them. */
static bool use_avx2(void) {
#if defined(SDC_HAVE_X86)
    return sdc_cpu_isa() >= SDC_ISA_AVX2;
#elif defined(__aarch64__) /* the NEON rows (ops_norm_impl.h maps the names) */
    return sdc_cpu_isa() == SDC_ISA_NEON;
#else
    return false;
#endif
}
#if !defined(SDC_HAVE_X86) && !defined(__aarch64__) /* never called; keeps the calls linkable */
void sdc_rms_row_avx2(float *d, const float *x, int64_t n, const float *w, float eps) {}
void sdc_layer_row_avx2(float *d, const float *x, int64_t n, const float *w, const float *b,
                        float eps) {}
void sdc_softmax_row_avx2(float *d, int64_t n) {}
double sdc_sum_avx2(const float *x, int64_t n) {
    return 0;
}
double sdc_sum_sq_dev_avx2(const float *x, int64_t n, float mean) {
    return 0;
}
void sdc_scale_shift_avx2(float *d, const float *x, int64_t n, float mean, float k, float off) {}
#endif

#define ELEM(row, t, i) (*(const float *)((row) + (i) * (t)->nb[0]))

void sdc_cpu_reduce_rows(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0];
    const int64_t n = a->ne[0];
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        double s = 0;
        for (int64_t i = 0; i < n; i++) s += ELEM(ar, a, i);
        *(float *)sdc_row_ptr(dst, i1, i2, i3) = (float)(dst->op == SDC_OP_MEAN ? s / n : s);
    }
}

void sdc_cpu_softmax(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0], *mask = dst->src[1];
    const float scale = dst->params.f[0];
    const int64_t n = a->ne[0];
    const bool simd = use_avx2();
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        float mx = -INFINITY;
        if (mask) {
            const char *mr = sdc_row_ptr(mask, i1, i2 % mask->ne[2], i3 % mask->ne[3]);
            for (int64_t i = 0; i < n; i++)
                d[i] = ELEM(ar, a, i) * scale + sdc_load_elem(mask->type, mr + i * mask->nb[0]);
        } else {
            for (int64_t i = 0; i < n; i++) d[i] = ELEM(ar, a, i) * scale;
        }
        if (simd) {
            sdc_softmax_row_avx2(d, n);
            continue;
        }
        for (int64_t i = 0; i < n; i++) mx = d[i] > mx ? d[i] : mx;
        if (mx == -INFINITY) { /* every entry masked: no distribution, emit zeros */
            for (int64_t i = 0; i < n; i++) d[i] = 0.0f;
            continue;
        }
        double sum = 0;
        for (int64_t i = 0; i < n; i++) {
            d[i] = expf(d[i] - mx);
            sum += d[i];
        }
        const float inv = (float)(1.0 / sum);
        for (int64_t i = 0; i < n; i++) d[i] *= inv;
    }
}

static const float *vec_data(const sdc_tensor *t) {
    return t ? (const float *)t->data : NULL;
}

void sdc_cpu_layer_norm(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0];
    const float *w = vec_data(dst->src[1]), *b = vec_data(dst->src[2]);
    const float eps = dst->params.f[0];
    const int64_t n = a->ne[0];
    const bool simd = use_avx2() && a->nb[0] == sizeof(float);
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        if (simd) {
            sdc_layer_row_avx2(d, (const float *)ar, n, w, b, eps);
            continue;
        }
        double s = 0, ss = 0;
        for (int64_t i = 0; i < n; i++) s += ELEM(ar, a, i);
        const double mean = s / n;
        for (int64_t i = 0; i < n; i++) {
            double v = ELEM(ar, a, i) - mean;
            ss += v * v;
        }
        const float m = (float)mean, rstd = (float)(1.0 / sqrt(ss / n + eps));
        for (int64_t i = 0; i < n; i++) {
            float v = (ELEM(ar, a, i) - m) * rstd;
            if (w) v *= w[i];
            if (b) v += b[i];
            d[i] = v;
        }
    }
}

void sdc_cpu_rms_norm(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0];
    const float *w = vec_data(dst->src[1]);
    const float eps = dst->params.f[0];
    const int64_t n = a->ne[0];
    const bool simd = use_avx2() && a->nb[0] == sizeof(float);
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t i1, i2, i3;
        sdc_row_index(dst, r, &i1, &i2, &i3);
        const char *ar = sdc_row_ptr(a, i1, i2, i3);
        float *d = (float *)sdc_row_ptr(dst, i1, i2, i3);
        if (simd) {
            sdc_rms_row_avx2(d, (const float *)ar, n, w, eps);
            continue;
        }
        double ss = 0;
        for (int64_t i = 0; i < n; i++) {
            double v = ELEM(ar, a, i);
            ss += v * v;
        }
        const float rs = (float)(1.0 / sqrt(ss / n + eps));
        for (int64_t i = 0; i < n; i++) d[i] = ELEM(ar, a, i) * rs * (w ? w[i] : 1.0f);
    }
}

/* Group norm over (spatial, channels of the group) for each (batch, group). The channel
 * axis is 2 ([W,H,C,N]) or 1 ([L,C,N]): rows of one channel are (i1, c, n) or (c, n). */
/* AVX2 group norm of one (batch, group) whose channel planes are contiguous: sums run
 * over pieces of at most 4096 values in float, combined in double. */
static void group_norm_planes_avx2(const sdc_tensor *a, sdc_tensor *dst, int64_t nb_i, int64_t c0,
                                   int64_t cg, int axis, int64_t plane, const float *w,
                                   const float *b, float eps) {
    const int64_t piece = 4096;
    double s = 0, ss = 0;
    for (int64_t c = c0; c < c0 + cg; c++) {
        const float *x =
            (const float *)(axis == 2 ? sdc_row_ptr(a, 0, c, nb_i) : sdc_row_ptr(a, c, nb_i, 0));
        for (int64_t i = 0; i < plane; i += piece)
            s += sdc_sum_avx2(x + i, plane - i < piece ? plane - i : piece);
    }
    const double cnt = (double)(cg * plane);
    const float mean = (float)(s / cnt);
    for (int64_t c = c0; c < c0 + cg; c++) {
        const float *x =
            (const float *)(axis == 2 ? sdc_row_ptr(a, 0, c, nb_i) : sdc_row_ptr(a, c, nb_i, 0));
        for (int64_t i = 0; i < plane; i += piece)
            ss += sdc_sum_sq_dev_avx2(x + i, plane - i < piece ? plane - i : piece, mean);
    }
    const float rstd = (float)(1.0 / sqrt(ss / cnt + eps));
    for (int64_t c = c0; c < c0 + cg; c++) {
        const float *x =
            (const float *)(axis == 2 ? sdc_row_ptr(a, 0, c, nb_i) : sdc_row_ptr(a, c, nb_i, 0));
        float *d =
            (float *)(axis == 2 ? sdc_row_ptr(dst, 0, c, nb_i) : sdc_row_ptr(dst, c, nb_i, 0));
        sdc_scale_shift_avx2(d, x, plane, mean, rstd * (w ? w[c] : 1.0f), b ? b[c] : 0.0f);
    }
}

/* Group norm over (spatial, channels of the group) for each (batch, group). The channel
 * axis is 2 ([W,H,C,N]) or 1 ([L,C,N]): rows of one channel are (i1, c, n) or (c, n). */
void sdc_cpu_group_norm(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *a = dst->src[0];
    const float *w = vec_data(dst->src[1]), *b = vec_data(dst->src[2]);
    const int groups = dst->params.i[0], axis = dst->params.i[2];
    const float eps = dst->params.f[1];
    const int64_t C = a->ne[axis], cg = C / groups, n0 = a->ne[0];
    const int64_t nbatch = axis == 2 ? a->ne[3] : a->ne[2], rows = axis == 2 ? a->ne[1] : 1;
    /* dst is contiguous; planes of a are when its rows follow each other */
    const bool planes = use_avx2() && a->nb[0] == sizeof(float) &&
                        (rows == 1 || a->nb[1] == (size_t)n0 * sizeof(float));
    int64_t lo, hi;
    sdc_cpu_split(nbatch * groups, p->ith, p->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t nb_i = u / groups, c0 = (u % groups) * cg;
        if (planes) {
            group_norm_planes_avx2(a, dst, nb_i, c0, cg, axis, n0 * rows, w, b, eps);
            continue;
        }
        double s = 0, ss = 0;
        for (int pass = 0; pass < 2; pass++) {
            const double mean = s / (double)(cg * rows * n0);
            for (int64_t c = c0; c < c0 + cg; c++)
                for (int64_t j = 0; j < rows; j++) {
                    const char *ar =
                        axis == 2 ? sdc_row_ptr(a, j, c, nb_i) : sdc_row_ptr(a, c, nb_i, 0);
                    if (pass == 0) {
                        for (int64_t i = 0; i < n0; i++) s += ELEM(ar, a, i);
                    } else {
                        for (int64_t i = 0; i < n0; i++) {
                            double v = ELEM(ar, a, i) - mean;
                            ss += v * v;
                        }
                    }
                }
        }
        const double cnt = (double)(cg * rows * n0);
        const float mean = (float)(s / cnt), rstd = (float)(1.0 / sqrt(ss / cnt + eps));
        for (int64_t c = c0; c < c0 + cg; c++) {
            const float k = rstd * (w ? w[c] : 1.0f), off = b ? b[c] : 0.0f;
            for (int64_t j = 0; j < rows; j++) {
                const char *ar =
                    axis == 2 ? sdc_row_ptr(a, j, c, nb_i) : sdc_row_ptr(a, c, nb_i, 0);
                float *d = (float *)(axis == 2 ? sdc_row_ptr(dst, j, c, nb_i)
                                               : sdc_row_ptr(dst, c, nb_i, 0));
                for (int64_t i = 0; i < n0; i++) d[i] = (ELEM(ar, a, i) - mean) * k + off;
            }
        }
    }
}
