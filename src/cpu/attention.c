/* Fused attention: out = softmax(q k^T * scale + mask) v without the Lq x Lk matrix.
 * Work units are (batch, head, block of SDC_ATTN_BQ queries); each thread takes a
 * contiguous range of units, so consecutive units share a key/value head, whose keys
 * (transposed) and values it converts to F32 once into its own scratch. */
#include <math.h>
#include <string.h>

#include "cpu/attention_impl.h"
#include "cpu/cpu_features.h"
#include "cpu/ops_util.h"

static int64_t round_up(int64_t x, int64_t m) {
    return (x + m - 1) / m * m;
}

typedef struct attn_dims {
    int64_t d, dv, dvp, lq, lk, lkp, h, hk, nb, nqb;
} attn_dims;

static attn_dims get_dims(const sdc_tensor *dst) {
    const sdc_tensor *q = dst->src[0], *v = dst->src[2];
    attn_dims a;
    a.d = q->ne[0], a.dv = v->ne[0], a.dvp = round_up(a.dv, 16);
    a.lq = q->ne[1], a.lk = v->ne[1], a.lkp = round_up(a.lk, 16);
    a.h = q->ne[2], a.hk = v->ne[2], a.nb = q->ne[3];
    a.nqb = (a.lq + SDC_ATTN_BQ - 1) / SDC_ATTN_BQ;
    return a;
}

/* Per-thread scratch, in floats, each part rounded to 64 bytes. */
typedef struct attn_layout {
    size_t kt, v, q, s, o, m, l, mask, total;
} attn_layout;

static attn_layout get_layout(const attn_dims *a, bool has_mask) {
    attn_layout L;
    size_t off = 0;
#define PART(name, n) (L.name = off, off += (size_t)round_up((int64_t)(n), 16))
    PART(kt, a->d * round_up(a->lkp, SDC_ATTN_BK));
    PART(v, a->lkp * a->dvp);
    PART(q, SDC_ATTN_BQ * a->d);
    PART(s, SDC_ATTN_BQ * SDC_ATTN_BK);
    PART(o, SDC_ATTN_BQ * a->dvp);
    PART(m, SDC_ATTN_BQ);
    PART(l, SDC_ATTN_BQ);
    PART(mask, has_mask ? SDC_ATTN_BQ * a->lkp : 0);
#undef PART
    L.total = off;
    return L;
}

size_t sdc_cpu_attention_work_size(const sdc_tensor *dst, int nth) {
    attn_dims a = get_dims(dst);
    attn_layout L = get_layout(&a, dst->src[3] != NULL);
    return (L.total * sizeof(float) + 64) * (size_t)nth;
}

/* Keys of head (hk, b) transposed into [d][BK] panels per key block; values to
 * v[lkp][dvp]; zero padding. */
static void pack_kv(const sdc_tensor *k, const sdc_tensor *v, const attn_dims *a, int64_t hk,
                    int64_t b, float *kt, float *vf) {
    memset(kt, 0, sizeof(float) * (size_t)(a->d * round_up(a->lkp, SDC_ATTN_BK)));
    memset(vf, 0, sizeof(float) * (size_t)(a->lkp * a->dvp));
    for (int64_t j = 0; j < a->lk; j++) {
        const char *kr = sdc_row_ptr(k, j, hk, b);
        float *kp = kt + (j / SDC_ATTN_BK) * a->d * SDC_ATTN_BK + j % SDC_ATTN_BK;
        if (k->type == SDC_TYPE_F32 && k->nb[0] == sizeof(float)) {
            const float *kf = (const float *)kr;
            for (int64_t d = 0; d < a->d; d++) kp[d * SDC_ATTN_BK] = kf[d];
        } else {
            for (int64_t d = 0; d < a->d; d++)
                kp[d * SDC_ATTN_BK] = sdc_load_elem(k->type, kr + d * k->nb[0]);
        }
        const char *vr = sdc_row_ptr(v, j, hk, b);
        float *vo = vf + j * a->dvp;
        if (v->type == SDC_TYPE_F32 && v->nb[0] == sizeof(float)) {
            memcpy(vo, vr, sizeof(float) * (size_t)a->dv);
        } else {
            for (int64_t d = 0; d < a->dv; d++) vo[d] = sdc_load_elem(v->type, vr + d * v->nb[0]);
        }
    }
}

void sdc_cpu_attention(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *q = dst->src[0], *k = dst->src[1], *v = dst->src[2], *mask = dst->src[3];
    const float scale = dst->params.f[0];
    const attn_dims a = get_dims(dst);
    const attn_layout L = get_layout(&a, mask != NULL);
    /* this thread's scratch, 64-byte aligned */
    uintptr_t base = (uintptr_t)p->wdata + (uintptr_t)p->ith * (L.total * sizeof(float) + 64);
    float *w = (float *)((base + 63) & ~(uintptr_t)63);

    void (*block_fn)(const sdc_attn_block *) = sdc_attn_block_scalar;
#if defined(SDC_HAVE_X86)
    if (sdc_cpu_isa() >= SDC_ISA_AVX2) block_fn = sdc_attn_block_avx2;
#endif
#if defined(__aarch64__)
    if (sdc_cpu_isa() == SDC_ISA_NEON) block_fn = sdc_attn_block_neon;
#endif
    const int64_t rep = a.h / a.hk;
    int64_t lo, hi, cached = -1;
    sdc_cpu_split(a.nb * a.h * a.nqb, p->ith, p->nth, &lo, &hi);
    for (int64_t u = lo; u < hi; u++) {
        const int64_t qb = u % a.nqb, h = (u / a.nqb) % a.h, b = u / (a.nqb * a.h);
        const int64_t hk = h / rep, key = b * a.hk + hk;
        if (key != cached) {
            pack_kv(k, v, &a, hk, b, w + L.kt, w + L.v);
            cached = key;
        }
        const int64_t q0 = qb * SDC_ATTN_BQ;
        const int64_t nq = a.lq - q0 < SDC_ATTN_BQ ? a.lq - q0 : SDC_ATTN_BQ;
        const int64_t nqp = round_up(nq, 6);
        float *qf = w + L.q;
        for (int64_t i = 0; i < nqp; i++) {
            float *qo = qf + i * a.d;
            if (i >= nq) {
                memset(qo, 0, sizeof(float) * (size_t)a.d);
                continue;
            }
            const char *qr = sdc_row_ptr(q, q0 + i, h, b);
            for (int64_t d = 0; d < a.d; d++)
                qo[d] = sdc_load_elem(q->type, qr + d * q->nb[0]) * scale;
        }
        float *mf = NULL;
        if (mask) {
            mf = w + L.mask;
            for (int64_t i = 0; i < nqp; i++) {
                float *mo = mf + i * a.lkp;
                int64_t j = 0;
                if (i < nq) {
                    const char *mr = sdc_row_ptr(mask, q0 + i, h % mask->ne[2], b % mask->ne[3]);
                    if (mask->type == SDC_TYPE_F32 && mask->nb[0] == sizeof(float)) {
                        memcpy(mo, mr, sizeof(float) * (size_t)a.lk);
                        j = a.lk;
                    } else {
                        for (; j < a.lk; j++)
                            mo[j] = sdc_load_elem(mask->type, mr + j * mask->nb[0]);
                    }
                } else {
                    for (; j < a.lk; j++) mo[j] = 0.0f;
                }
                for (; j < a.lkp; j++) mo[j] = -INFINITY;
            }
        }
        sdc_attn_block blk = {
            .nq = nqp,
            .d = a.d,
            .dv = a.dv,
            .dvp = a.dvp,
            .lk = a.lk,
            .lkp = a.lkp,
            .q = qf,
            .kt = w + L.kt,
            .v = w + L.v,
            .mask = mf,
            .s = w + L.s,
            .o = w + L.o,
            .m = w + L.m,
            .l = w + L.l,
        };
        block_fn(&blk);
        for (int64_t i = 0; i < nq; i++)
            memcpy(sdc_row_ptr(dst, h, q0 + i, b), blk.o + i * a.dvp, sizeof(float) * (size_t)a.dv);
    }
}

/* ---- scalar kernel ---- */

/* Row i of the score tile: add mask / hide padding, update the running max and sum,
 * turn scores into probabilities; returns the factor that rescales the old output. */
static float softmax_update(float *s, int64_t nk, int64_t valid, const float *mrow, float *m,
                            float *l) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < nk; j++) {
        float x = j < valid ? s[j] + (mrow ? mrow[j] : 0.0f) : -INFINITY;
        s[j] = x;
        mx = x > mx ? x : mx;
    }
    const float mnew = mx > *m ? mx : *m;
    if (mnew == -INFINITY) { /* nothing visible yet */
        for (int64_t j = 0; j < nk; j++) s[j] = 0.0f;
        return 1.0f;
    }
    const float c = expf(*m - mnew);
    float sum = 0;
    for (int64_t j = 0; j < nk; j++) sum += s[j] = expf(s[j] - mnew);
    *l = *l * c + sum;
    *m = mnew;
    return c;
}

void sdc_attn_block_scalar(const sdc_attn_block *b) {
    for (int64_t i = 0; i < b->nq; i++) {
        b->m[i] = -INFINITY, b->l[i] = 0;
        memset(b->o + i * b->dvp, 0, sizeof(float) * (size_t)b->dvp);
    }
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        for (int64_t i = 0; i < b->nq; i++) {
            float *s = b->s + i * SDC_ATTN_BK;
            const float *qi = b->q + i * b->d;
            for (int64_t j = 0; j < nk; j++) s[j] = 0;
            for (int64_t d = 0; d < b->d; d++) {
                const float *kr = b->kt + (kb * b->d + d * SDC_ATTN_BK);
                for (int64_t j = 0; j < nk; j++) s[j] += qi[d] * kr[j];
            }
            const float c = softmax_update(
                s, nk, b->lk - kb, b->mask ? b->mask + i * b->lkp + kb : NULL, &b->m[i], &b->l[i]);
            float *o = b->o + i * b->dvp;
            if (c != 1.0f)
                for (int64_t e = 0; e < b->dv; e++) o[e] *= c;
            for (int64_t j = 0; j < nk; j++) {
                const float *vr = b->v + (kb + j) * b->dvp;
                for (int64_t e = 0; e < b->dv; e++) o[e] += s[j] * vr[e];
            }
        }
    }
    for (int64_t i = 0; i < b->nq; i++) {
        const float inv = b->l[i] > 0 ? 1.0f / b->l[i] : 0.0f;
        for (int64_t e = 0; e < b->dv; e++) b->o[i * b->dvp + e] *= inv;
    }
}
