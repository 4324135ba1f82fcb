/* The merge-candidate min-heap of the byte-level BPE tokenizers (CLIP, Qwen2): candidates
 * ordered by merge rank, then by position, so the lowest rank merges first and the leftmost
 * of equal ranks wins, as Hugging Face's BPE does. */
#ifndef SDC_TEXT_BPE_HEAP_H
#define SDC_TEXT_BPE_HEAP_H

#include <stdint.h>

typedef struct {
    int32_t rank, pos, a, b, id;
} merge_cand;

static inline int cand_less(const merge_cand *x, const merge_cand *y) {
    return x->rank < y->rank || (x->rank == y->rank && x->pos < y->pos);
}

static inline void heap_push(merge_cand *h, int *n, merge_cand c) {
    int i = (*n)++;
    h[i] = c;
    while (i > 0 && cand_less(&h[i], &h[(i - 1) / 2])) {
        merge_cand t = h[i];
        h[i] = h[(i - 1) / 2];
        h[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static inline merge_cand heap_pop(merge_cand *h, int *n) {
    merge_cand top = h[0];
    h[0] = h[--(*n)];
    for (int i = 0;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && cand_less(&h[l], &h[m])) m = l;
        if (r < *n && cand_less(&h[r], &h[m])) m = r;
        if (m == i) break;
        merge_cand t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
    return top;
}

#endif
