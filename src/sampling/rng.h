/* Random number generators for initial latent noise and sampler noise, reproducing
 * the streams of sd.cpp's `--rng` choices:
 *   cpu         torch.randn on CPU after torch.manual_seed (mt19937 + torch's normal
 *               transform, its portable kernel), the same on every machine;
 *   cuda        sd.cpp's Philox4x32-10 imitation of torch CUDA randn;
 *   std_default libstdc++ std::default_random_engine (minstd_rand0) with
 *               std::normal_distribution<float>, as sd.cpp's STDDefaultRNG.
 * A generator is a stream: successive sdc_rng_randn calls continue it. */
#ifndef SDC_SAMPLING_RNG_H
#define SDC_SAMPLING_RNG_H

#include "core/status.h"

#include <stdint.h>

typedef enum sdc_rng_type {
    SDC_RNG_STD_DEFAULT = 0,
    SDC_RNG_CPU = 1,
    SDC_RNG_CUDA = 2,
    SDC_RNG_TYPE_COUNT,
    /* Not selectable by name: sd.cpp's MT19937RNG, which differs from torch in the
     * last bits of draws of 16+ values (theta in float, log1p in the pair path). */
    SDC_RNG_CPU_SDCPP = 100,
} sdc_rng_type;

/* Caller-supplied stream (e.g. replaying recorded noise). Fills out[0..n). */
typedef sdc_status (*sdc_randn_fn)(void *user, float *out, int64_t n);

typedef struct sdc_rng sdc_rng;

sdc_status sdc_rng_create(sdc_rng_type type, uint64_t seed, sdc_rng **out);
sdc_status sdc_rng_create_custom(sdc_randn_fn fn, void *user, sdc_rng **out);
void sdc_rng_free(sdc_rng *rng);
/* Restarts the stream as after creation with this seed (no-op for custom streams). */
void sdc_rng_seed(sdc_rng *rng, uint64_t seed);
/* n standard normal values, as one `randn(n)` call of the emulated generator. */
sdc_status sdc_rng_randn(sdc_rng *rng, float *out, int64_t n);
sdc_rng_type sdc_rng_get_type(const sdc_rng *rng); /* -1 for custom streams */

/* The generators of one image, as sd.cpp sets them up: `init` draws the initial latent
 * noise and `sampler` the sampler's noise. Without a distinct --sampler-rng
 * (sampler_type < 0 or equal to type) both are the same stream, so sampler noise
 * continues after the initial noise; otherwise the sampler gets its own generator.
 * Both start from `seed`. */
typedef struct sdc_rng_pair {
    sdc_rng *init, *sampler;
} sdc_rng_pair;

sdc_status sdc_rng_pair_create(sdc_rng_type type, int sampler_type, uint64_t seed,
                               sdc_rng_pair *out);
void sdc_rng_pair_free(sdc_rng_pair *pair);

/* sd.cpp spellings: "std_default", "cpu", "cuda". Unknown names fail with
 * SDC_ERR_INVALID_ARG and a message listing the valid ones. */
const char *sdc_rng_type_name(sdc_rng_type type);
sdc_status sdc_rng_type_from_name(const char *name, sdc_rng_type *out);

#endif
