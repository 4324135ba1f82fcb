/* Seeded Brownian tree (sd.cpp's BrownianTreeNoiseSampler): W(t) on [sigma_min,
 * sigma_max] built by recursive Brownian-bridge bisection, each node's midpoint drawn
 * from std_default seeded by a splitmix-style hash of the node path. Noise for an
 * interval is (W(b) - W(a)) / sqrt(|b - a|), the same whatever the step count. */
#ifndef SDC_SAMPLING_BROWNIAN_TREE_H
#define SDC_SAMPLING_BROWNIAN_TREE_H

#include "core/status.h"

#include <stdint.h>

typedef struct sdc_btree {
    double t_min, t_max;
    uint64_t root_seed;
    int64_t n;
    float *w_max;       /* W(t_max) */
    float *wa, *wc, *z; /* bisection work */
    float *cache_w;     /* last W(t) evaluated, for t = cache_t */
    double cache_t;
    int cache_valid;
} sdc_btree;

sdc_status sdc_btree_init(sdc_btree *bt, int64_t n, double sigma_min, double sigma_max,
                          uint64_t seed);
void sdc_btree_free(sdc_btree *bt);
/* Unit-variance noise for the step sigma_a -> sigma_b, into out (n values). */
sdc_status sdc_btree_noise(sdc_btree *bt, double sigma_a, double sigma_b, float *out);

#endif
