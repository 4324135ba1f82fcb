/* AVX2+FMA attention block: the shared x86 body (attention_x86.h) with 8-lane exps. */
#include "cpu/attention_x86.h"

/* s[j] = e^(s[j] - mnew) for j < nk (a multiple of 16); returns the 8-lane sums in key order. */
static __m256 exp_row(float *s, int64_t nk, float mnew) {
    const __m256 vm = _mm256_set1_ps(mnew);
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t j = 0; j < nk; j += 8) {
        const __m256 e = sdc_exp256_softmax(_mm256_sub_ps(_mm256_loadu_ps(s + j), vm));
        _mm256_storeu_ps(s + j, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    return vsum;
}

void sdc_attn_block_avx2(const sdc_attn_block *b) {
    attn_block_x86(b, exp_row);
}
