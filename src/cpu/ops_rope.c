/* Position encodings: rotary embedding from host-built cos/sin tables, and the
 * sinusoidal timestep embedding of diffusion models. */
#include <math.h>

#include "core/ops.h"
#include "cpu/ops_util.h"

void sdc_cpu_rope(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *x = dst->src[0], *ct = dst->src[1], *st = dst->src[2];
    const int mode = dst->params.i[0];
    const int64_t half = x->ne[0] / 2;
    /* pair i is (x[2i], x[2i+1]) interleaved, or (x[i], x[i+D/2]) half-split */
    const int64_t step = mode == SDC_ROPE_HALF ? 1 : 2, other = mode == SDC_ROPE_HALF ? half : 1;
    int64_t lo, hi;
    sdc_split_rows(p, dst, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        int64_t ih, il, ib;
        sdc_row_index(dst, r, &ih, &il, &ib);
        const char *xr = sdc_row_ptr(x, ih, il, ib);
        const char *cr = sdc_row_ptr(ct, il, 0, ib % ct->ne[3]);
        const char *sr = sdc_row_ptr(st, il, 0, ib % st->ne[3]);
        float *d = (float *)sdc_row_ptr(dst, ih, il, ib);
        if (x->nb[0] == sizeof(float) && ct->nb[0] == sizeof(float) &&
            st->nb[0] == sizeof(float)) { /* plain indexing the compiler can vectorise */
            const float *xf = (const float *)xr, *c = (const float *)cr, *s = (const float *)sr;
            if (mode == SDC_ROPE_HALF) {
                for (int64_t i = 0; i < half; i++) {
                    d[i] = xf[i] * c[i] - xf[i + half] * s[i];
                    d[i + half] = xf[i] * s[i] + xf[i + half] * c[i];
                }
            } else {
                for (int64_t i = 0; i < half; i++) {
                    d[2 * i] = xf[2 * i] * c[i] - xf[2 * i + 1] * s[i];
                    d[2 * i + 1] = xf[2 * i] * s[i] + xf[2 * i + 1] * c[i];
                }
            }
            continue;
        }
        for (int64_t i = 0; i < half; i++) {
            const int64_t j0 = i * step, j1 = j0 + other;
            const float x0 = *(const float *)(xr + j0 * x->nb[0]);
            const float x1 = *(const float *)(xr + j1 * x->nb[0]);
            const float c = *(const float *)(cr + i * ct->nb[0]);
            const float s = *(const float *)(sr + i * st->nb[0]);
            d[j0] = x0 * c - x1 * s;
            d[j1] = x0 * s + x1 * c;
        }
    }
}

/* dst [dim, n]: frequencies f_k = max_period^(-k/half), k < half = dim/2; values
 * [cos(t f_k)..., sin(t f_k)...] (flip=1) or sin first (flip=0); odd dim ends with 0. */
void sdc_cpu_timestep_embed(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *t = dst->src[0];
    const int dim = dst->params.i[0], half = dim / 2;
    const bool cos_first = dst->params.f[2] != 0.0f;
    const float lmp = logf((float)dst->params.i[1]);
    int64_t lo, hi;
    sdc_cpu_split(t->ne[0], p->ith, p->nth, &lo, &hi);
    for (int64_t r = lo; r < hi; r++) {
        const float ts = *(const float *)((const char *)t->data + r * t->nb[0]);
        float *d = (float *)((char *)dst->data + r * dst->nb[1]);
        for (int k = 0; k < half; k++) {
            const float arg = ts * expf(-lmp * (float)k / (float)half);
            d[cos_first ? k : k + half] = cosf(arg);
            d[cos_first ? k + half : k] = sinf(arg);
        }
        if (dim % 2) d[dim - 1] = 0.0f;
    }
}
