/* Fused attention: out = softmax(q k^T * scale + mask) v without the Lq x Lk matrix.
 * Key/value heads are converted to F32 (keys transposed) into a ring of shared slots (as
 * many as fit SDC_ATTN_KV_BUDGET, at least one; head i uses slot i mod slots). One atomic
 * counter hands out, head by head, the head's packing units (a key block each) and then
 * its (block of SDC_ATTN_BQ queries) units; a query unit waits until its head is packed,
 * a packing unit until the slot's previous head has finished. Every wait is for units
 * handed out earlier, so the earliest unfinished unit always runs. No head is packed
 * twice, a thread never waits behind an uneven split, one thread packs the next head
 * (memory-bound) while the other computes (FMA-bound), and there is no barrier between
 * heads; only each thread's query, score and output tiles are its own. The AVX-512 kernel
 * reads F32 keys and values in place when there is no mask: then there are no packing units
 * at all (the work area keeps the ring anyway, so its size does not depend on the kernel). */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/threadpool.h"
#include "cpu/attention_impl.h"
#include "cpu/cpu_features.h"
#include "cpu/gemm.h"
#include "cpu/ops_util.h"

/* bytes of packed keys/values in the ring: about the L2 caches of two cores, so packing
 * writes into lines that are still cached (a ring over all heads, 8 MB, spent 3% of the
 * op on write misses; 2 MB, 2%) while the next head's slot is already free. */
#define SDC_ATTN_KV_BUDGET ((size_t)2 << 20)

_Static_assert(SDC_GEMM_NR == 16, "key panels are packed by the GEMM's panel transpose");

static int64_t round_up(int64_t x, int64_t m) {
    return (x + m - 1) / m * m;
}

typedef struct attn_dims {
    int64_t d, dv, dvp, lq, lk, lkp, h, hk, nb, nqb;
    int64_t kt_floats, v_floats; /* one packed head */
    int64_t hb;                  /* slots of the ring of packed heads */
} attn_dims;

static attn_dims get_dims(const sdc_tensor *dst) {
    const sdc_tensor *q = dst->src[0], *v = dst->src[2];
    attn_dims a;
    a.d = q->ne[0], a.dv = v->ne[0], a.dvp = round_up(a.dv, 16);
    a.lq = q->ne[1], a.lk = v->ne[1], a.lkp = round_up(a.lk, 16);
    a.h = q->ne[2], a.hk = v->ne[2], a.nb = q->ne[3];
    a.nqb = (a.lq + SDC_ATTN_BQ - 1) / SDC_ATTN_BQ;
    a.kt_floats = round_up(a.d * round_up(a.lkp, SDC_ATTN_BK), 16);
    a.v_floats = round_up(a.lkp * a.dvp, 16);
    size_t head = (size_t)(a.kt_floats + a.v_floats) * sizeof(float);
    int64_t fit = (int64_t)(SDC_ATTN_KV_BUDGET / (head ? head : 1));
    /* two slots when they fit 4 budgets: the next head packs while this one computes */
    a.hb = fit >= 2 ? fit : head <= 2 * SDC_ATTN_KV_BUDGET ? 2 : 1;
    if (a.hb > a.nb * a.hk) a.hb = a.nb * a.hk;
    if (a.hb < 1) a.hb = 1;
    return a;
}

/* Per-thread scratch, in floats, each part rounded to 64 bytes. */
typedef struct attn_layout {
    size_t q, s, o, m, l, mask, qt, total;
} attn_layout;

static attn_layout get_layout(const attn_dims *a, bool has_mask) {
    attn_layout L;
    size_t off = 0;
#define PART(name, n) (L.name = off, off += (size_t)round_up((int64_t)(n), 16))
    PART(q, SDC_ATTN_BQ * (a->d > a->dv ? a->d : a->dv)); /* also a row buffer when packing */
    PART(s, SDC_ATTN_BQ * SDC_ATTN_BK);
    PART(o, SDC_ATTN_BQ * a->dvp);
    PART(m, SDC_ATTN_BQ);
    PART(l, SDC_ATTN_BQ);
    PART(mask, has_mask ? SDC_ATTN_BQ * a->lkp : 0);
    PART(qt, SDC_ATTN_BQ * a->d); /* q transposed, for keys read in place */
#undef PART
    L.total = off;
    return L;
}

/* Work area: [control: the unit counter, packing units done per head, query units done
 * per head] [hb packed head slots] [per thread scratch] */
static size_t ctl_bytes(const attn_dims *a) {
    return (size_t)round_up((1 + 2 * a->nb * a->hk) * (int64_t)sizeof(int64_t), 64);
}
static size_t shared_bytes(const attn_dims *a) {
    return ctl_bytes(a) + (size_t)(a->hb * (a->kt_floats + a->v_floats)) * sizeof(float);
}

size_t sdc_cpu_attention_work_size(const sdc_tensor *dst, int nth) {
    attn_dims a = get_dims(dst);
    attn_layout L = get_layout(&a, dst->src[3] != NULL);
    return 64 + shared_bytes(&a) + (L.total * sizeof(float) + 64) * (size_t)nth;
}

/* Row j of a (keys or values) head as F32: a pointer into the tensor when it is
 * contiguous F32, else converted into buf. */
static const float *kv_row(const sdc_tensor *t, int64_t j, int64_t hk, int64_t b, int64_t n,
                           float *buf) {
    const char *r = sdc_row_ptr(t, j, hk, b);
    if (t->nb[0] == sdc_type_get(t->type)->block_bytes) {
        if (t->type == SDC_TYPE_F32) return (const float *)r;
        sdc_type_get(t->type)->to_float(r, buf, n);
    } else {
        for (int64_t d = 0; d < n; d++) buf[d] = sdc_load_elem(t->type, r + d * t->nb[0]);
    }
    return buf;
}

/* Value row j (< lk) into its panels, zero padded to dvp. */
static void pack_v(const sdc_tensor *v, const attn_dims *a, int64_t hk, int64_t b, int64_t j,
                   float *vf, float *buf) {
    const float *vr = kv_row(v, j, hk, b, a->dv, buf);
    for (int64_t e = 0; e < a->dvp; e += 16) {
        float *vo = vf + sdc_attn_v_index(a->lkp, j, e);
        const int64_t n = a->dv - e < 16 ? a->dv - e : 16;
        if (n == 16) { /* a constant size: two vector moves, not a call */
            memcpy(vo, vr + e, sizeof(float) * 16);
            continue;
        }
        memcpy(vo, vr + e, sizeof(float) * (size_t)n);
        memset(vo + n, 0, sizeof(float) * (size_t)(16 - n));
    }
}

/* Key rows [j0, j1) of the padded range [0, round_up(lkp, BK)) of head (hk, b) into the
 * panel layouts of sdc_attn_kt_index / sdc_attn_v_index, zero padding. */
static void pack_kv(const sdc_tensor *k, const sdc_tensor *v, const attn_dims *a, int64_t hk,
                    int64_t b, int64_t j0, int64_t j1, float *kt, float *vf, float *buf) {
    const bool k_f32 = k->type == SDC_TYPE_F32 && k->nb[0] == sizeof(float);
    const sdc_gemm_transpose_fn transpose = sdc_gemm_kernels_for(sdc_cpu_isa())->transpose;
    for (int64_t j = j0; j < j1; j++) {
        float *kp = kt + sdc_attn_kt_index(a->d, j, 0);
        if (k_f32 && j % 16 == 0 && j + 16 <= j1 && j + 16 <= a->lk) {
            /* 16 keys of F32: their panel [d][16] is the GEMM's weight panel layout */
            const float *kr[16];
            for (int jj = 0; jj < 16; jj++) kr[jj] = (const float *)sdc_row_ptr(k, j + jj, hk, b);
            transpose(kr, a->d, kp);
            for (int jj = 0; jj < 16; jj++) pack_v(v, a, hk, b, j + jj, vf, buf);
            j += 15;
            continue;
        }
        if (j >= a->lk) {
            for (int64_t d = 0; d < a->d; d++) kp[d * 16] = 0.0f;
            if (j < a->lkp)
                for (int64_t e = 0; e < a->dvp; e += 16)
                    memset(vf + sdc_attn_v_index(a->lkp, j, e), 0, sizeof(float) * 16);
            continue;
        }
        const float *kr = kv_row(k, j, hk, b, a->d, buf);
        for (int64_t d = 0; d < a->d; d++) kp[d * 16] = kr[d];
        pack_v(v, a, hk, b, j, vf, buf);
    }
}

/* One unit: query block qb of head h (batch b) against a packed key/value head. */
static void attn_unit(const sdc_tensor *dst, const attn_dims *a, const attn_layout *L,
                      void (*block_fn)(const sdc_attn_block *), int64_t b, int64_t h, int64_t qb,
                      const float *kt, const float *vf, bool inplace, int64_t hk, float *w) {
    const sdc_tensor *q = dst->src[0], *mask = dst->src[3];
    const float scale = dst->params.f[0];
    const int64_t q0 = qb * SDC_ATTN_BQ;
    const int64_t nq = a->lq - q0 < SDC_ATTN_BQ ? a->lq - q0 : SDC_ATTN_BQ;
    const int64_t nqp = round_up(nq, 6);
    float *qf = w + L->q;
    for (int64_t i = 0; i < nqp; i++) {
        float *qo = qf + i * a->d;
        if (i >= nq) {
            memset(qo, 0, sizeof(float) * (size_t)a->d);
            continue;
        }
        const char *qr = sdc_row_ptr(q, q0 + i, h, b);
        if (q->type == SDC_TYPE_F32 && q->nb[0] == sizeof(float)) { /* vectorised */
            const float *qv = (const float *)qr;
            for (int64_t d = 0; d < a->d; d++) qo[d] = qv[d] * scale;
            continue;
        }
        for (int64_t d = 0; d < a->d; d++)
            qo[d] = sdc_load_elem(q->type, qr + d * q->nb[0]) * scale;
    }
    float *mf = NULL;
    if (mask) {
        mf = w + L->mask;
        for (int64_t i = 0; i < nqp; i++) {
            float *mo = mf + i * a->lkp;
            int64_t j = 0;
            if (i < nq) {
                const char *mr = sdc_row_ptr(mask, q0 + i, h % mask->ne[2], b % mask->ne[3]);
                if (mask->type == SDC_TYPE_F32 && mask->nb[0] == sizeof(float)) {
                    memcpy(mo, mr, sizeof(float) * (size_t)a->lk);
                    j = a->lk;
                } else {
                    for (; j < a->lk; j++) mo[j] = sdc_load_elem(mask->type, mr + j * mask->nb[0]);
                }
            } else {
                for (; j < a->lk; j++) mo[j] = 0.0f;
            }
            for (; j < a->lkp; j++) mo[j] = -INFINITY;
        }
    }
    sdc_attn_block blk = {
        .nq = nqp,
        .d = a->d,
        .dv = a->dv,
        .dvp = a->dvp,
        .lk = a->lk,
        .lkp = a->lkp,
        .q = qf,
        .kt = kt,
        .v = vf,
        .mask = mf,
        .s = w + L->s,
        .o = w + L->o,
        .m = w + L->m,
        .l = w + L->l,
    };
    if (inplace) { /* F32 rows read where they are (the AVX-512 kernel) */
        const sdc_tensor *k = dst->src[1], *v = dst->src[2];
        blk.kr = (const float *)sdc_row_ptr(k, 0, hk, b);
        blk.vr = (const float *)sdc_row_ptr(v, 0, hk, b);
        blk.ldk = (int64_t)(k->nb[1] / sizeof(float));
        blk.ldv = (int64_t)(v->nb[1] / sizeof(float));
        blk.qt = w + L->qt;
    }
    block_fn(&blk);
    for (int64_t i = 0; i < nq; i++)
        memcpy(sdc_row_ptr(dst, h, q0 + i, b), blk.o + i * a->dvp, sizeof(float) * (size_t)a->dv);
}

/* Waits until *count reaches want (other threads are finishing units they took). */
static void wait_count(_Atomic int64_t *count, int64_t want) {
    for (int spins = 0; atomic_load_explicit(count, memory_order_acquire) < want;)
        sdc_spin_wait_step(&spins);
}

void sdc_cpu_attention(const sdc_cpu_params *p, sdc_tensor *dst) {
    const sdc_tensor *k = dst->src[1], *v = dst->src[2];
    const attn_dims a = get_dims(dst);
    const attn_layout L = get_layout(&a, dst->src[3] != NULL);
    /* shares run one after another (no pool, as in unit tests): the first does it all */
    const bool pooled = p->nth > 1 && p->pool;
    if (p->nth > 1 && !pooled && p->ith > 0) return;
    const int ith = pooled ? p->ith : 0;
    char *base = (char *)(((uintptr_t)p->wdata + 63) & ~(uintptr_t)63);
    float *kvp = (float *)(base + ctl_bytes(&a));
    uintptr_t tb = (uintptr_t)base + shared_bytes(&a) + (size_t)p->ith * (L.total * 4 + 64);
    float *w = (float *)((tb + 63) & ~(uintptr_t)63);

    void (*block_fn)(const sdc_attn_block *) = sdc_attn_block_scalar;
    bool inplace = false;
#if defined(SDC_HAVE_X86)
    if (sdc_cpu_isa() >= SDC_ISA_AVX2) block_fn = sdc_attn_block_avx2;
    if (sdc_cpu_isa() >= SDC_ISA_AVX512) {
        block_fn = sdc_attn_block_avx512;
        /* F32 keys and values with contiguous rows and no mask are read in place: no packing */
        inplace = !dst->src[3] && k->type == SDC_TYPE_F32 && v->type == SDC_TYPE_F32 &&
                  k->nb[0] == sizeof(float) && v->nb[0] == sizeof(float) &&
                  k->nb[1] % sizeof(float) == 0 && v->nb[1] % sizeof(float) == 0;
    }
#endif
#if defined(__aarch64__)
    if (sdc_cpu_isa() == SDC_ISA_NEON) block_fn = sdc_attn_block_neon;
#endif
    const int64_t rep = a.h / a.hk, nkv = a.nb * a.hk, jpad = round_up(a.lkp, SDC_ATTN_BK);
    const int64_t head_floats = a.kt_floats + a.v_floats;
    const int64_t np = inplace ? 0 : jpad / SDC_ATTN_BK, nq = rep * a.nqb;
    const int64_t nu = np + nq; /* units per head */
    /* the unit counter, then per head: packing units done, query units done */
    _Atomic int64_t *ctl = (_Atomic int64_t *)base, *packed = ctl + 1, *done = ctl + 1 + nkv;
    if (ith == 0)
        for (int64_t j = 0; j <= 2 * nkv; j++)
            atomic_store_explicit(&ctl[j], 0, memory_order_relaxed);
    if (pooled) sdc_cpu_barrier(p);
    for (;;) {
        const int64_t u = atomic_fetch_add_explicit(&ctl[0], 1, memory_order_relaxed);
        if (u >= nkv * nu) break;
        const int64_t kv = u / nu, r = u % nu;
        float *kt = kvp + kv % a.hb * head_floats;
        if (r < np) { /* key rows [r BK, (r + 1) BK) of the head, once its slot is free */
            if (kv >= a.hb) wait_count(&done[kv - a.hb], nq);
            pack_kv(k, v, &a, kv % a.hk, kv / a.hk, r * SDC_ATTN_BK, (r + 1) * SDC_ATTN_BK, kt,
                    kt + a.kt_floats, w + L.q);
            atomic_fetch_add_explicit(&packed[kv], 1, memory_order_release);
            continue;
        }
        wait_count(&packed[kv], np);
        const int64_t qu = r - np, b = kv / a.hk, h = kv % a.hk * rep + qu / a.nqb;
        attn_unit(dst, &a, &L, block_fn, b, h, qu % a.nqb, kt, kt + a.kt_floats, inplace, kv % a.hk,
                  w);
        /* this unit's reads of the slot are done */
        atomic_fetch_add_explicit(&done[kv], 1, memory_order_release);
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
            for (int64_t d = 0; d < b->d; d++)
                for (int64_t j = 0; j < nk; j++)
                    s[j] += qi[d] * b->kt[sdc_attn_kt_index(b->d, kb + j, d)];
            const float c = softmax_update(
                s, nk, b->lk - kb, b->mask ? b->mask + i * b->lkp + kb : NULL, &b->m[i], &b->l[i]);
            float *o = b->o + i * b->dvp;
            if (c != 1.0f)
                for (int64_t e = 0; e < b->dv; e++) o[e] *= c;
            for (int64_t j = 0; j < nk; j++)
                for (int64_t e = 0; e < b->dv; e++)
                    o[e] += s[j] * b->v[sdc_attn_v_index(b->lkp, kb + j, e)];
        }
    }
    for (int64_t i = 0; i < b->nq; i++) {
        const float inv = b->l[i] > 0 ? 1.0f / b->l[i] : 0.0f;
        for (int64_t e = 0; e < b->dv; e++) b->o[i * b->dvp + e] *= inv;
    }
}
