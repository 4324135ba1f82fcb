/* sdc_rng: one object for every generator kind, so samplers take any noise stream. */
#include "sampling/rng.h"
#include "sampling/rng_impl.h"

#include <stdlib.h>
#include <string.h>

struct sdc_rng {
    int type; /* sdc_rng_type, or -1 for a custom stream */
    uint64_t seed;
    union {
        sdc_mt19937 mt;
        sdc_minstd minstd;
        uint32_t philox_offset;
    } st;
    sdc_randn_fn fn;
    void *user;
};

static const char *const rng_names[SDC_RNG_TYPE_COUNT] = {"std_default", "cpu", "cuda"};

const char *sdc_rng_type_name(sdc_rng_type type) {
    if ((int)type >= 0 && type < SDC_RNG_TYPE_COUNT) return rng_names[type];
    if (type == SDC_RNG_CPU_SDCPP) return "cpu_sdcpp";
    return "unknown";
}

sdc_status sdc_rng_type_from_name(const char *name, sdc_rng_type *out) {
    for (int i = 0; name && i < SDC_RNG_TYPE_COUNT; i++) {
        if (strcmp(name, rng_names[i]) == 0) {
            *out = (sdc_rng_type)i;
            return SDC_OK;
        }
    }
    return sdc_fail(SDC_ERR_INVALID_ARG,
                    "rng: unknown generator '%s' (valid: std_default, cpu, cuda)",
                    name ? name : "(null)");
}

void sdc_rng_seed(sdc_rng *r, uint64_t seed) {
    r->seed = seed;
    switch (r->type) {
    case SDC_RNG_CPU:
    case SDC_RNG_CPU_SDCPP:
        sdc_mt19937_seed(&r->st.mt, seed);
        break;
    case SDC_RNG_CUDA:
        r->st.philox_offset = 0;
        break;
    case SDC_RNG_STD_DEFAULT:
        sdc_minstd_seed(&r->st.minstd, seed);
        break;
    default:
        break;
    }
}

sdc_status sdc_rng_create(sdc_rng_type type, uint64_t seed, sdc_rng **out) {
    *out = NULL;
    if (!(((int)type >= 0 && type < SDC_RNG_TYPE_COUNT) || type == SDC_RNG_CPU_SDCPP))
        return sdc_fail(SDC_ERR_INVALID_ARG, "rng: unknown generator type %d", (int)type);
    sdc_rng *r = calloc(1, sizeof(*r));
    if (!r) return sdc_fail(SDC_ERR_NO_MEMORY, "rng: out of memory");
    r->type = (int)type;
    sdc_rng_seed(r, seed);
    *out = r;
    return SDC_OK;
}

sdc_status sdc_rng_create_custom(sdc_randn_fn fn, void *user, sdc_rng **out) {
    *out = NULL;
    if (!fn) return sdc_fail(SDC_ERR_INVALID_ARG, "rng: custom stream without a function");
    sdc_rng *r = calloc(1, sizeof(*r));
    if (!r) return sdc_fail(SDC_ERR_NO_MEMORY, "rng: out of memory");
    r->type = -1;
    r->fn = fn;
    r->user = user;
    *out = r;
    return SDC_OK;
}

void sdc_rng_free(sdc_rng *r) {
    free(r);
}

sdc_rng_type sdc_rng_get_type(const sdc_rng *r) {
    return (sdc_rng_type)r->type;
}

sdc_status sdc_rng_randn(sdc_rng *r, float *out, int64_t n) {
    if (!r || (n > 0 && !out) || n < 0) return sdc_fail(SDC_ERR_INVALID_ARG, "rng: bad randn call");
    switch (r->type) {
    case SDC_RNG_CPU:
        sdc_mt19937_randn(&r->st.mt, out, n, false);
        break;
    case SDC_RNG_CPU_SDCPP:
        sdc_mt19937_randn(&r->st.mt, out, n, true);
        break;
    case SDC_RNG_CUDA:
        if (n > UINT32_MAX) return sdc_fail(SDC_ERR_INVALID_ARG, "rng: cuda draw too large");
        sdc_philox_randn(r->seed, r->st.philox_offset++, out, n);
        break;
    case SDC_RNG_STD_DEFAULT:
        sdc_minstd_randn(&r->st.minstd, out, n);
        break;
    default:
        return r->fn(r->user, out, n);
    }
    return SDC_OK;
}

sdc_status sdc_rng_pair_create(sdc_rng_type type, int sampler_type, uint64_t seed,
                               sdc_rng_pair *out) {
    out->init = out->sampler = NULL;
    sdc_status st = sdc_rng_create(type, seed, &out->init);
    if (st != SDC_OK) return st;
    if (sampler_type < 0 || sampler_type == (int)type) {
        out->sampler = out->init;
        return SDC_OK;
    }
    st = sdc_rng_create((sdc_rng_type)sampler_type, seed, &out->sampler);
    if (st != SDC_OK) {
        sdc_rng_free(out->init);
        out->init = NULL;
    }
    return st;
}

void sdc_rng_pair_free(sdc_rng_pair *pair) {
    if (pair->sampler != pair->init) sdc_rng_free(pair->sampler);
    sdc_rng_free(pair->init);
    pair->init = pair->sampler = NULL;
}
