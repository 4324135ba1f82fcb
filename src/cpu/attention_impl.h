/* The per-query-block attention kernel behind sdc_cpu_attention, in scalar and SIMD
 * variants. The driver (attention.c) packs F32 operands; the kernel runs the tiled
 * online softmax over all key blocks. */
#ifndef SDC_CPU_ATTENTION_IMPL_H
#define SDC_CPU_ATTENTION_IMPL_H

#include <stdint.h>

#define SDC_ATTN_BQ 48  /* query rows per block (a multiple of the 6-row micro-kernel) */
#define SDC_ATTN_BK 256 /* keys per score tile (a multiple of 16) */

typedef struct sdc_attn_block {
    int64_t nq;        /* query rows to compute, padded (rows beyond the real ones are zero) */
    int64_t d, dv;     /* head dims of q/k and of v */
    int64_t dvp;       /* dv padded to a multiple of 16 (row stride of v and o) */
    int64_t lk, lkp;   /* keys, and keys padded to a multiple of 16 (row stride of mask) */
    const float *q;    /* [nq][d], already multiplied by the scale */
    const float *kt;   /* keys transposed, zero padded: see sdc_attn_kt_index */
    const float *v;    /* values, zero padded: see sdc_attn_v_index */
    const float *mask; /* [nq][lkp] additive, or NULL */
    float *s;          /* scratch [nq][SDC_ATTN_BK] */
    float *o;          /* out [nq][dvp]: softmax(q kt + mask) v; fully masked rows give 0 */
    float *m, *l;      /* scratch [SDC_ATTN_BQ]: running max and sum */
    /* AVX-512 only, when kr is not NULL: F32 keys and values read in place (row j at kr + j ldk
     * and vr + j ldv, lk rows) instead of kt and v, with qt a [d][SDC_ATTN_BQ] scratch */
    const float *kr, *vr;
    int64_t ldk, ldv;
    float *qt;
} sdc_attn_block;

/* Packed layouts, in panels of 16 that the micro-kernels stream contiguously (rows of a
 * plain [d][lkp] or [lkp][dvp] matrix lie a power-of-two stride apart and fight over a
 * few L1 sets). Keys: key block j / BK holds BK/16 panels of [d][16]. Values: dvp/16
 * panels of [lkp][16]. */
static inline int64_t sdc_attn_kt_index(int64_t d, int64_t j, int64_t dd) {
    return (j / SDC_ATTN_BK) * d * SDC_ATTN_BK + (j % SDC_ATTN_BK / 16) * d * 16 + dd * 16 + j % 16;
}
static inline int64_t sdc_attn_v_index(int64_t lkp, int64_t j, int64_t e) {
    return (e / 16 * lkp + j) * 16 + e % 16;
}

void sdc_attn_block_scalar(const sdc_attn_block *b);
void sdc_attn_block_avx2(const sdc_attn_block *b);
void sdc_attn_block_avx512(const sdc_attn_block *b);
void sdc_attn_block_neon(const sdc_attn_block *b);

#endif
