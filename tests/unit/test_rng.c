/* RNG streams against golden/rng: every seed, shape and multi-draw sequence.
 * cpu must equal torch's portable kernel bit for bit, cuda sd.cpp's Philox, the
 * internal sd.cpp-MT19937 variant sd.cpp's own output; the cpu stream must also lie
 * within 2.1e-6 of torch's AVX2 kernel and of sd.cpp's MT19937 (the README's "2.0e-6" is
 * 2.03e-6 before rounding). */
#include "test_util.h"

#include "io/safetensors.h"
#include "sampling/rng.h"

#include <inttypes.h>

typedef struct {
    uint64_t seed;
    int nparts, part; /* nparts = 0 for a single draw */
    int64_t sizes[8];
} case_spec;

/* "seed42_1x3x8x8" or "seed0_seq3_3+16+1_part2" */
static bool parse_name(const char *name, case_spec *c) {
    memset(c, 0, sizeof(*c));
    if (strncmp(name, "seed", 4) != 0) return false;
    char *p;
    c->seed = strtoull(name + 4, &p, 10);
    if (*p++ != '_') return false;
    if (strncmp(p, "seq", 3) == 0) {
        p = strchr(p, '_');
        if (!p) return false;
        p++;
        for (;;) {
            c->sizes[c->nparts++] = strtoll(p, &p, 10);
            if (*p != '+') break;
            p++;
        }
        if (strncmp(p, "_part", 5) != 0) return false;
        c->part = atoi(p + 5);
        return c->part < c->nparts;
    }
    int64_t n = 1;
    for (;;) {
        n *= strtoll(p, &p, 10);
        if (*p != 'x') break;
        p++;
    }
    c->sizes[0] = n;
    return *p == 0;
}

/* Regenerates the draw the tensor holds; returns its length. */
static int64_t regenerate(sdc_rng_type type, const case_spec *c, float *out) {
    sdc_rng *r;
    if (sdc_rng_create(type, c->seed, &r) != SDC_OK) return -1;
    int n = c->nparts ? c->nparts : 1;
    int64_t len = -1;
    for (int k = 0; k < n; k++) {
        sdc_rng_randn(r, out, c->sizes[k]);
        if (k == (c->nparts ? c->part : 0)) {
            len = c->sizes[k];
            break;
        }
    }
    sdc_rng_free(r);
    return len;
}

static void run_file(const char *path, sdc_rng_type type, double tol, const char *label) {
    sdc_st_file *f = NULL;
    CHECK(sdc_st_open(path, &f) == SDC_OK, "open %s: %s", path, sdc_last_error());
    if (!f) return;
    int cases = 0, exact = 0;
    double worst = 0;
    float *ref = malloc(sizeof(float) * 16384), *got = malloc(sizeof(float) * 16384);
    for (int i = 0; i < sdc_st_count(f); i++) {
        const sdc_st_tensor *t = sdc_st_at(f, i);
        case_spec c;
        if (!parse_name(t->name, &c)) {
            CHECK(0, "%s: unexpected tensor name %s", path, t->name);
            continue;
        }
        int64_t n = sdc_st_numel(t);
        if (n > 16384) continue;
        sdc_st_to_f32(t, ref);
        int64_t len = regenerate(type, &c, got);
        CHECK(len == n, "%s %s: length %lld vs %lld", label, t->name, (long long)len, (long long)n);
        if (len != n) continue;
        double e = t_max_abs_diff(got, ref, (long)n);
        bool same = memcmp(got, ref, sizeof(float) * (size_t)n) == 0;
        exact += same;
        if (e > worst) worst = e;
        if (tol == 0)
            CHECK(same, "%s %s: not bit-identical (max err %.3g)", label, t->name, e);
        else
            CHECK(e <= tol, "%s %s: max err %.3g > %.3g", label, t->name, e, tol);
        cases++;
    }
    printf("%-44s %3d tensors, %3d bit-identical, max abs err %.3g\n", label, cases, exact, worst);
    free(ref);
    free(got);
    sdc_st_close(f);
}

static void test_names(void) {
    sdc_rng_type t;
    CHECK(sdc_rng_type_from_name("cuda", &t) == SDC_OK && t == SDC_RNG_CUDA, "cuda name");
    CHECK(sdc_rng_type_from_name("std_default", &t) == SDC_OK && t == SDC_RNG_STD_DEFAULT, "std");
    CHECK(sdc_rng_type_from_name("gpu", &t) == SDC_ERR_INVALID_ARG, "unknown name accepted");
    CHECK(strstr(sdc_last_error(), "std_default, cpu, cuda") != NULL, "message lists names: %s",
          sdc_last_error());
}

/* Seeding keeps only the low 32 bits for cpu, but the whole seed for cuda. */
static void test_seed_width(void) {
    float a[20], b[20];
    case_spec c = {.seed = 7, .sizes = {20}};
    regenerate(SDC_RNG_CPU, &c, a);
    c.seed = UINT64_C(4294967303);
    regenerate(SDC_RNG_CPU, &c, b);
    CHECK(memcmp(a, b, sizeof a) == 0, "cpu seed 2^32+7 differs from 7");
    regenerate(SDC_RNG_CUDA, &c, b);
    c.seed = 7;
    regenerate(SDC_RNG_CUDA, &c, a);
    CHECK(memcmp(a, b, sizeof a) != 0, "cuda seed 2^32+7 equals 7");
}

/* std_default against values printed by an independent C++ program built with g++ 12 /
 * libstdc++ (not part of this repository):
 *   std::default_random_engine g; g.seed((unsigned)s);
 *   for n in {5, 3, 8}: { std::normal_distribution<float> d(0, 1); print n x d(g) }
 * i.e. three successive sd.cpp STDDefaultRNG::randn calls. Seeds 0 and 2^31-1 act as 1. */
static void test_std_default(void) {
    static const struct {
        uint64_t seed;
        float v[16];
    } ref[] = {
        {1,
         {-0.259093195f, 1.60159206f, -1.49896121f, 0.174767554f, 0.119264036f, 0.458181173f,
          0.188984558f, 0.39497453f, 0.044196777f, -0.664491951f, -0.636256397f, -0.171248332f,
          1.73126411f, -0.764852405f, 0.703151405f, 0.145350218f}},
        {42,
         {-0.901248038f, 0.896408677f, -1.20271361f, -0.490155309f, 0.0114701251f, -1.67704475f,
          0.210229442f, -0.110191122f, -0.811931431f, -0.818422675f, -0.569248319f, -1.00437653f,
          1.20672989f, 0.120552331f, -0.317240506f, 0.178320795f}},
        {UINT64_C(4294967303),
         {-0.934290051f, -0.680304527f, 0.247671753f, 1.7365073f, 1.16656172f, 0.269004822f,
          1.60130584f, 1.04768121f, -0.567726433f, 0.697034419f, 1.45366693f, -0.879386127f,
          -0.283741802f, 0.125963315f, -0.341368526f, 1.95552754f}},
    };
    /* (seed, reference row): 0 and 2^31-1 reduce to the same state as 1 */
    static const struct {
        uint64_t seed;
        int row;
    } cases[] = {{1, 0}, {42, 1}, {UINT64_C(4294967303), 2}, {0, 0}, {2147483647, 0}};
    int exact = 0, total = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        uint64_t seed = cases[c].seed;
        const float *want = ref[cases[c].row].v;
        sdc_rng *r;
        sdc_rng_create(SDC_RNG_STD_DEFAULT, seed, &r);
        float got[16];
        sdc_rng_randn(r, got, 5);
        sdc_rng_randn(r, got + 5, 3);
        sdc_rng_randn(r, got + 8, 8);
        sdc_rng_free(r);
        for (int i = 0; i < 16; i++, total++) exact += got[i] == want[i];
        CHECK(memcmp(got, want, sizeof got) == 0, "std_default seed %llu differs",
              (unsigned long long)seed);
    }
    printf("%-44s %3d values, %3d bit-identical\n", "std_default vs libstdc++", total, exact);
}

/* --sampler-rng: a shared stream continues after the initial noise; a distinct
 * sampler generator starts its own stream from the same seed. */
static void test_pair(void) {
    float a[300], b[300], c[300];
    sdc_rng_pair pr;
    sdc_rng *solo;
    CHECK(sdc_rng_pair_create(SDC_RNG_CUDA, -1, 42, &pr) == SDC_OK && pr.init == pr.sampler,
          "shared pair");
    sdc_rng_create(SDC_RNG_CUDA, 42, &solo);
    sdc_rng_randn(pr.init, a, 256);
    sdc_rng_randn(pr.sampler, a, 256);
    sdc_rng_randn(solo, b, 256);
    sdc_rng_randn(solo, b, 256);
    CHECK(memcmp(a, b, sizeof(float) * 256) == 0, "shared sampler stream does not continue");
    sdc_rng_pair_free(&pr);
    sdc_rng_free(solo);
    CHECK(sdc_rng_pair_create(SDC_RNG_CUDA, SDC_RNG_CPU, 42, &pr) == SDC_OK &&
              pr.init != pr.sampler,
          "distinct pair");
    sdc_rng_create(SDC_RNG_CPU, 42, &solo);
    sdc_rng_randn(pr.init, a, 256);
    sdc_rng_randn(pr.sampler, c, 256);
    sdc_rng_randn(solo, b, 256);
    CHECK(memcmp(c, b, sizeof(float) * 256) == 0, "sampler rng is not a fresh cpu stream");
    sdc_rng_pair_free(&pr);
    sdc_rng_free(solo);
}

int main(void) {
    test_pair();
    test_std_default();
    test_names();
    test_seed_width();
    run_file(GOLDEN("rng/cpu_randn_scalar.safetensors"), SDC_RNG_CPU, 0,
             "cpu vs torch scalar (bit-exact)");
    run_file(GOLDEN("rng/philox_randn.safetensors"), SDC_RNG_CUDA, 0,
             "cuda vs sd.cpp Philox (bit-exact)");
    run_file(GOLDEN("rng/sdcpp_mt19937_randn.safetensors"), SDC_RNG_CPU_SDCPP, 0,
             "cpu_sdcpp vs sd.cpp MT19937 (bit-exact)");
    run_file(GOLDEN("rng/sdcpp_mt19937_randn.safetensors"), SDC_RNG_CPU, 2.1e-6,
             "cpu vs sd.cpp MT19937 (<= 2.1e-6)");
    run_file(GOLDEN("rng/cpu_randn.safetensors"), SDC_RNG_CPU, 2.1e-6,
             "cpu vs torch AVX2 (<= 2.1e-6)");
    TEST_MAIN_END();
}
