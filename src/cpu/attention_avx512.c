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

void sdc_attn_block_avx512(const sdc_attn_block *b) {
    attn_block_x86(b, exp_row);
}
