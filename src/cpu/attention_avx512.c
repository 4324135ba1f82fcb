/* AVX-512 attention block: the shared x86 body (attention_x86.h; its 6x16 products stay on
 * 8-lane registers, now 32 of them) with the softmax's exps 16 lanes at a time: the AVX2
 * kernel's values bit for bit, in half the instructions. */
#include "cpu/attention_x86.h"
#include "cpu/simd_avx512.h"

/* s[j] = e^(s[j] - mnew) for j < nk (a multiple of 16); returns the 8-lane sums in key order,
 * as the AVX2 kernel adds them (the upper half read back from the stored row: cheaper than a
 * lane extract, which competes with the exps for an FMA port). */
static __m256 exp_row(float *s, int64_t nk, float mnew) {
    const __m512 vm = _mm512_set1_ps(mnew);
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t j = 0; j < nk; j += 16) {
        const __m512 e = sdc_exp512_softmax(_mm512_sub_ps(_mm512_loadu_ps(s + j), vm));
        _mm512_storeu_ps(s + j, e);
        vsum = _mm256_add_ps(vsum, _mm512_castps512_ps256(e));
        vsum = _mm256_add_ps(vsum, _mm256_loadu_ps(s + j + 8));
    }
    return vsum;
}

/* ---- keys and values in place: the scores transposed ----
 * With F32 keys and values whose rows are contiguous, nothing is packed: the score tile is
 * computed transposed, st[key][query] = sum_d k[key][d] qt[d][query], with 8 keys broadcast
 * from their rows against the block's queries on 16-lane registers (q transposed once per
 * block); each query's max, exps and sums then run down a column of lanes, and out += p v
 * reads whole value rows (64 lanes at a time, contiguous, so no cache-set conflicts). Every
 * sum keeps the packed kernel's order (a product per key and dim in dim order, keys in order
 * per output, the 8-lane partial sums of a row and their tree), so the values are the same
 * bit for bit. */

#define QZ (SDC_ATTN_BQ / 16) /* 16-lane query groups of a block */
_Static_assert(SDC_ATTN_BQ % 16 == 0 && SDC_ATTN_BK % 8 == 0, "in-place tile shapes");

/* Rows [j0, j0 + 8) of the transposed score tile for nz query groups; rows at or past valid
 * (padding keys) become -inf; vmax[z] keeps each query's running max. */
static inline __attribute__((always_inline)) void qk_8(const sdc_attn_block *b, int64_t kb,
                                                       int64_t j0, int64_t valid, int nz, float *st,
                                                       __m512 *vmax) {
    const float *kp[8];
    for (int r = 0; r < 8; r++) /* padding rows read the last key; their scores are dropped */
        kp[r] = b->kr + (kb + (j0 + r < valid ? j0 + r : valid - 1)) * b->ldk;
    __m512 acc[8][QZ];
    for (int r = 0; r < 8; r++)
        for (int z = 0; z < nz; z++) acc[r][z] = _mm512_setzero_ps();
    for (int64_t p = 0; p < b->d; p++) {
        __m512 q[QZ];
        for (int z = 0; z < nz; z++) q[z] = _mm512_loadu_ps(b->qt + p * SDC_ATTN_BQ + 16 * z);
        for (int r = 0; r < 8; r++) {
            const __m512 k = _mm512_set1_ps(kp[r][p]);
            for (int z = 0; z < nz; z++) acc[r][z] = _mm512_fmadd_ps(k, q[z], acc[r][z]);
        }
    }
    for (int r = 0; r < 8; r++)
        for (int z = 0; z < nz; z++) {
            const __m512 x = j0 + r < valid ? acc[r][z] : _mm512_set1_ps(-INFINITY);
            _mm512_storeu_ps(st + (j0 + r) * SDC_ATTN_BQ + 16 * z, x);
            vmax[z] = _mm512_max_ps(vmax[z], x);
        }
}

static void scores_t(const sdc_attn_block *b, int64_t kb, int64_t nk, int nz, __m512 *vmax) {
    const int64_t valid = b->lk - kb;
    for (int z = 0; z < nz; z++) vmax[z] = _mm512_set1_ps(-INFINITY);
    for (int64_t j0 = 0; j0 < nk; j0 += 8) {
        if (nz == 3)
            qk_8(b, kb, j0, valid, 3, b->s, vmax);
        else if (nz == 2)
            qk_8(b, kb, j0, valid, 2, b->s, vmax);
        else
            qk_8(b, kb, j0, valid, 1, b->s, vmax);
    }
}

/* The tile's probabilities, query group z: new max, factors c (1 where nothing is visible
 * yet), exps (0 there), and the running sums as the packed kernel forms them: per query, 8
 * partial sums by key mod 8 in key order, added as sdc_hsum256 does. */
static void softmax_t(const sdc_attn_block *b, int64_t nk, int z, __m512 vmax, float *c) {
    const __m512 m = _mm512_loadu_ps(b->m + 16 * z), l = _mm512_loadu_ps(b->l + 16 * z);
    const __m512 mnew = _mm512_max_ps(vmax, m);
    const __mmask16 none = _mm512_cmp_ps_mask(mnew, _mm512_set1_ps(-INFINITY), _CMP_EQ_OQ);
    const __m512 cz = _mm512_mask_blend_ps(none, sdc_exp512_softmax(_mm512_sub_ps(m, mnew)),
                                           _mm512_set1_ps(1.0f));
    _mm512_storeu_ps(c + 16 * z, cz);
    __m512 part[8];
    for (int k = 0; k < 8; k++) part[k] = _mm512_setzero_ps();
    float *st = b->s + 16 * z;
    for (int64_t j = 0; j < nk; j += 8)
        for (int k = 0; k < 8; k++) {
            float *x = st + (j + k) * SDC_ATTN_BQ;
            const __m512 e = _mm512_maskz_mov_ps(
                (__mmask16)~none, sdc_exp512_softmax(_mm512_sub_ps(_mm512_loadu_ps(x), mnew)));
            _mm512_storeu_ps(x, e);
            part[k] = _mm512_add_ps(part[k], e);
        }
    const __m512 sum = _mm512_add_ps(
        _mm512_add_ps(_mm512_add_ps(part[0], part[4]), _mm512_add_ps(part[2], part[6])),
        _mm512_add_ps(_mm512_add_ps(part[1], part[5]), _mm512_add_ps(part[3], part[7])));
    _mm512_storeu_ps(b->l + 16 * z,
                     _mm512_mask_blend_ps(none, _mm512_add_ps(_mm512_mul_ps(l, cz), sum), l));
    _mm512_storeu_ps(b->m + 16 * z, _mm512_mask_blend_ps(none, mnew, m));
}

/* out[i0 .. i0 + 6][e0 .. e0 + 16 nzv] += p v over keys [kb, kb + nv) of the tile (nzv value
 * registers per row, the last one masked to the row's end). */
static inline __attribute__((always_inline)) void
pv_6(const sdc_attn_block *b, int64_t kb, int64_t nv, int64_t i0, int64_t e0, int nzv) {
    __m512 acc[6][4];
    float *o = b->o + i0 * b->dvp + e0;
    for (int r = 0; r < 6; r++)
        for (int z = 0; z < nzv; z++) acc[r][z] = _mm512_loadu_ps(o + r * b->dvp + 16 * z);
    __mmask16 mk[4];
    for (int z = 0; z < nzv; z++) {
        const int64_t left = b->dv - e0 - 16 * z;
        mk[z] = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (left > 0 ? left : 0)) - 1);
    }
    const float *vrow = b->vr + kb * b->ldv + e0;
    const float *p = b->s + i0;
    for (int64_t j = 0; j < nv; j++, vrow += b->ldv, p += SDC_ATTN_BQ) {
        __m512 v[4];
        for (int z = 0; z < nzv; z++) v[z] = _mm512_maskz_loadu_ps(mk[z], vrow + 16 * z);
        for (int r = 0; r < 6; r++) {
            const __m512 a = _mm512_set1_ps(p[r]);
            for (int z = 0; z < nzv; z++) acc[r][z] = _mm512_fmadd_ps(a, v[z], acc[r][z]);
        }
    }
    for (int r = 0; r < 6; r++)
        for (int z = 0; z < nzv; z++) _mm512_storeu_ps(o + r * b->dvp + 16 * z, acc[r][z]);
}

static void pv_t(const sdc_attn_block *b, int64_t kb, int64_t nv) {
    for (int64_t e0 = 0; e0 < b->dvp; e0 += 64) {
        const int nzv = (int)((b->dvp - e0 < 64 ? b->dvp - e0 : 64) / 16);
        for (int64_t i0 = 0; i0 < b->nq; i0 += 6) switch (nzv) {
            case 4:
                pv_6(b, kb, nv, i0, e0, 4);
                break;
            case 3:
                pv_6(b, kb, nv, i0, e0, 3);
                break;
            case 2:
                pv_6(b, kb, nv, i0, e0, 2);
                break;
            default:
                pv_6(b, kb, nv, i0, e0, 1);
                break;
            }
    }
}

static void attn_block_inplace(const sdc_attn_block *b) {
    const int nz = (int)((b->nq + 15) / 16);
    /* q transposed: qt[d][query], queries past nq zero */
    for (int64_t p = 0; p < b->d; p++)
        for (int64_t i = 0; i < SDC_ATTN_BQ; i++)
            b->qt[p * SDC_ATTN_BQ + i] = i < b->nq ? b->q[i * b->d + p] : 0.0f;
    for (int64_t i = 0; i < SDC_ATTN_BQ; i++) b->m[i] = -INFINITY, b->l[i] = 0;
    memset(b->o, 0, sizeof(float) * (size_t)(b->nq * b->dvp));
    __m512 vmax[QZ];
    float c[SDC_ATTN_BQ];
    for (int64_t kb = 0; kb < b->lk; kb += SDC_ATTN_BK) {
        const int64_t nk = b->lkp - kb < SDC_ATTN_BK ? b->lkp - kb : SDC_ATTN_BK;
        scores_t(b, kb, nk, nz, vmax);
        for (int z = 0; z < nz; z++) softmax_t(b, nk, z, vmax[z], c);
        for (int64_t i = 0; i < b->nq; i++)
            if (c[i] != 1.0f) scale_row(b->o + i * b->dvp, b->dvp, c[i]);
        /* padding keys (p tiny, values 0 in the packed layout) change no output: skipped */
        pv_t(b, kb, nk < b->lk - kb ? nk : b->lk - kb);
    }
    normalize_rows(b);
}

void sdc_attn_block_avx512(const sdc_attn_block *b) {
    if (b->kr)
        attn_block_inplace(b);
    else
        attn_block_x86(b, exp_row);
}
