/* Layer split: the partitioner against hand-computed ranges (and its "does not fit"
 * errors), and the split backend on a synthetic block graph: views and caller inputs
 * read across cuts, an output made on the main device before it runs again, the same
 * result bit for bit as one device and the bytes copied counted by hand. */
#include <stdint.h>

#include "core/backend.h"
#include "core/ops.h"
#include "placement/devices.h"
#include "placement/split.h"
#include "sdc.h"
#include "test_util.h"

typedef struct pcase {
    const char *label;
    int n_blocks, n_dev;
    uint64_t blocks[8], main_bytes, budget[4], headroom[4];
    int want[5];       /* first block of each device, then n_blocks */
    const char *error; /* NULL: must succeed */
} pcase;

static void test_partition(void) {
    /* the expected ranges are worked out in each comment: cap_d = budget - headroom (- main
     * on device 0), cumulative targets T_d = total * (cap_0+..+cap_d) / sum cap, block i to
     * the first device with its middle before T_d */
    const pcase cases[] = {
        /* caps 850, 900; T0 = 400*850/1750 = 194.3: middles 50, 150 before, 250 after */
        {"equal budgets",
         4,
         2,
         {100, 100, 100, 100},
         50,
         {1000, 1000},
         {100, 100},
         {0, 2, 4},
         NULL},
        /* caps 300, 600; T0 = 200: middles 50, 150 | 250 */
        {"budgets 1:2",
         6,
         2,
         {100, 100, 100, 100, 100, 100},
         0,
         {300, 600},
         {0, 0},
         {0, 2, 6},
         NULL},
        /* caps 400, 350, 350; T0 = 327.3, T1 = 613.6; middles 50, 250 | 450, 550 | 700, 850 */
        {"3 devices, uneven blocks",
         6,
         3,
         {100, 300, 100, 100, 200, 100},
         50,
         {500, 400, 400},
         {50, 50, 50},
         {0, 2, 4, 6},
         NULL},
        /* caps 900, 0, 900; T0 = T1 = 100: block 1 skips the device with no room */
        {"a device below its headroom",
         2,
         3,
         {100, 100},
         0,
         {1000, 50, 1000},
         {100, 100, 100},
         {0, 1, 1, 2},
         NULL},
        /* caps 100, 50; T0 = 60 puts block 3 (60) on device 1, which holds 50: filling by
         * cap puts everything (90) on device 0 */
        {"proportional overflows, fill by cap",
         4,
         2,
         {10, 10, 10, 60},
         0,
         {100, 50},
         {0, 0},
         {0, 4, 4},
         NULL},
        {"main device too small", 2, 2, {10, 10}, 50, {100, 1000}, {60, 60}, {0}, "main device"},
        /* caps 40, 40: 100 bytes of blocks */
        {"does not fit", 2, 2, {50, 50}, 0, {40, 40}, {0, 0}, {0}, "do not fit"},
        /* caps 100, 60 hold 120 in all, but block 3 (90) fits only after nothing on device 0 */
        {"not contiguously", 4, 2, {10, 10, 10, 90}, 0, {100, 60}, {0, 0}, {0}, "fit on no device"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const pcase *p = &cases[c];
        int first[5] = {-1, -1, -1, -1, -1};
        sdc_status s = sdc_split_partition(p->blocks, p->n_blocks, p->main_bytes, p->budget,
                                           p->headroom, p->n_dev, first);
        if (p->error) {
            printf("%-38s refused: %s\n", p->label, sdc_last_error());
            CHECK(s == SDC_ERR_NO_MEMORY && strstr(sdc_last_error(), p->error),
                  "%s: status %d message '%s'", p->label, s, sdc_last_error());
            continue;
        }
        bool ok = s == SDC_OK;
        for (int d = 0; d <= p->n_dev; d++) ok &= first[d] == p->want[d];
        printf("%-38s first blocks %d %d %d %d (want %d %d %d %d)\n", p->label, first[0], first[1],
               first[2], first[3], p->want[0], p->want[1], p->want[2],
               p->n_dev > 2 ? p->want[3] : -1);
        CHECK(ok, "%s: status %d (%s), ranges differ", p->label, s, sdc_last_error());
    }
}

/* ---- the executor on a synthetic graph ---- */

enum { D = 16, N = 8, NB = 6 };

typedef struct model {
    float w_in[D * D], w[NB][D * D];
    sdc_tensor t_in, t[NB];
} model;

static void weight(sdc_tensor *t, float *data) {
    memset(t, 0, sizeof *t);
    t->type = SDC_TYPE_F32;
    t->ne[0] = D, t->ne[1] = D, t->ne[2] = t->ne[3] = 1;
    sdc_tensor_set_contiguous_strides(t);
    t->data = data;
    t->index = -1;
    t->block = -1;
    t->flags = SDC_TENSOR_PARAM;
}

/* pre: h = silu(W_in x), side = h/2 (read by every block), pre_out = 2h (an output made on
 * the main device, which runs again at the end); block i: h += W_i (h * side); block 0 also
 * views h (read by block 4, two devices later); block 5 adds the caller input z. */
static sdc_graph *build(model *m, sdc_tensor **x, sdc_tensor **z, sdc_tensor **y,
                        sdc_tensor **pre_out) {
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {D, N};
    *x = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    *z = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_tensor *h = sdc_silu(g, sdc_matmul(g, &m->t_in, *x));
    sdc_tensor *side = sdc_scale(g, h, 0.5f, 0.0f);
    *pre_out = sdc_scale(g, h, 2.0f, 0.0f);
    sdc_graph_mark_output(g, *pre_out);
    sdc_tensor *r = NULL;
    for (int i = 0; i < NB; i++) {
        sdc_graph_set_block(g, i);
        h = sdc_add(g, h, sdc_matmul(g, &m->t[i], sdc_mul(g, h, side)));
        if (i == 0) r = sdc_reshape_2d(g, h, 2 * D, N / 2);
        if (i == 4) h = sdc_add(g, h, sdc_reshape_2d(g, r, D, N));
        if (i == 5) h = sdc_add(g, h, *z);
    }
    sdc_graph_set_block(g, -1);
    *y = sdc_scale(g, h, 0.25f, 1.0f);
    sdc_graph_mark_output(g, *y);
    return g;
}

static bool count_nodes(sdc_tensor *t, bool ask, void *user) {
    (void)t;
    if (ask) ++*(int *)user;
    return true;
}

/* Runs the graph on be; out gets y then pre_out; *observed counts the nodes the eval
 * callback saw. copy_in: inputs written after sdc_backend_graph_alloc (the backend's own
 * input memory) instead of used in place. */
static sdc_status run(model *m, sdc_backend *be, const float *xd, const float *zd, float *out,
                      bool copy_in, int *observed) {
    sdc_tensor *x, *z, *y, *po;
    sdc_graph *g = build(m, &x, &z, &y, &po);
    const sdc_input_data in[] = {{x, xd, sizeof(float) * D * N}, {z, zd, sizeof(float) * D * N}};
    sdc_status s;
    if (copy_in) {
        s = sdc_backend_graph_alloc(be, g);
        if (s == SDC_OK) s = sdc_backend_tensor_set(be, x, xd, 0, sizeof(float) * D * N);
        if (s == SDC_OK) s = sdc_backend_tensor_set(be, z, zd, 0, sizeof(float) * D * N);
    } else {
        s = sdc_backend_set_inputs(be, g, in, 2);
    }
    *observed = 0;
    if (s == SDC_OK) s = sdc_backend_compute(be, g, count_nodes, observed);
    if (s == SDC_OK) s = sdc_backend_tensor_get(be, y, out, 0, sizeof(float) * D * N);
    if (s == SDC_OK) s = sdc_backend_tensor_get(be, po, out + D * N, 0, sizeof(float) * D * N);
    sdc_graph_free(g);
    return s;
}

static void test_executor(void) {
    static model m;
    unsigned long long seed = 7;
    for (int i = 0; i < D * D; i++) m.w_in[i] = t_randf(&seed) * 0.3f;
    for (int b = 0; b < NB; b++)
        for (int i = 0; i < D * D; i++) m.w[b][i] = t_randf(&seed) * 0.3f;
    weight(&m.t_in, m.w_in);
    for (int b = 0; b < NB; b++) weight(&m.t[b], m.w[b]);
    float xd[D * N], zd[D * N], ref[2 * D * N], got[2 * D * N];
    for (int i = 0; i < D * N; i++) xd[i] = t_randf(&seed), zd[i] = t_randf(&seed);

    CHECK(sdc_set_cpu_devices(3) == SDC_OK, "cpu devices: %s", sdc_last_error());
    sdc_backend *one = sdc_backend_cpu_create(1);
    int seen_one = 0, seen = 0;
    CHECK(run(&m, one, xd, zd, ref, false, &seen_one) == SDC_OK, "one device: %s",
          sdc_last_error());
    sdc_backend *kids[3] = {sdc_backend_cpu_create(1), sdc_backend_cpu_create(1),
                            sdc_backend_cpu_create(1)};
    int devs[3] = {0, 1, 2};
    sdc_backend *split = sdc_split_backend_create("test", kids, devs, 3);
    CHECK(split != NULL, "split backend: %s", sdc_last_error());
    if (!split) return;
    for (int rep = 0; rep < 2; rep++) { /* twice: reused transit buffers; inputs copied in */
        memset(got, 0, sizeof got);
        sdc_status s = run(&m, split, xd, zd, got, rep == 1, &seen);
        CHECK(s == SDC_OK, "split: %s", sdc_last_error());
        long diff = 0;
        for (int i = 0; i < 2 * D * N; i++) diff += memcmp(&ref[i], &got[i], sizeof(float)) != 0;
        sdc_split_stats st;
        sdc_split_backend_stats(split, &st);
        /* blocks 0-1 | 2-3 | 4-5 (equal weights, near-equal memory shares); segments cpu0,
         * cpu1, cpu2, cpu0; copies of 512 bytes each: z to cpu2 before the first; after the
         * first h to cpu1, side to cpu1 and cpu2, block 0's h (the view's owner) to cpu2,
         * pre_out kept on cpu0; h to cpu2 after the second; h to cpu0 after the third */
        uint64_t want = 8 * sizeof(float) * D * N;
        printf("run %d: %s; %ld of %d values differ from one device; %llu bytes copied (want "
               "%llu)\n",
               rep, sdc_split_backend_describe(split), diff, 2 * D * N,
               (unsigned long long)st.bytes_copied, (unsigned long long)want);
        CHECK(diff == 0, "split result differs in %ld values", diff);
        printf("  the eval callback saw %d nodes (one device %d)\n", seen, seen_one);
        CHECK(seen == seen_one, "eval callback: %d nodes, one device %d", seen, seen_one);
        CHECK(st.n_segments == 4 && st.dev[0].first_block == 0 && st.dev[0].n_blocks == 2 &&
                  st.dev[1].first_block == 2 && st.dev[1].n_blocks == 2 &&
                  st.dev[2].first_block == 4 && st.dev[2].n_blocks == 2,
              "partition: %d segments, ranges %d+%d %d+%d %d+%d", st.n_segments,
              st.dev[0].first_block, st.dev[0].n_blocks, st.dev[1].first_block, st.dev[1].n_blocks,
              st.dev[2].first_block, st.dev[2].n_blocks);
        CHECK(st.bytes_copied == want, "bytes copied %llu, want %llu",
              (unsigned long long)st.bytes_copied, (unsigned long long)want);
        CHECK(strstr(sdc_split_backend_describe(split), "3 cuts, 4.0 KiB copied"), "described: %s",
              sdc_split_backend_describe(split));
    }
    /* row split: each block matmul as 3 row slices (16 rows: 5, 5, 6 for equal shares) */
    sdc_split_backend_set_mode(split, SDC_SPLIT_ROW);
    memset(got, 0, sizeof got);
    CHECK(run(&m, split, xd, zd, got, false, &seen) == SDC_OK, "row split: %s", sdc_last_error());
    long rdiff = 0;
    for (int i = 0; i < 2 * D * N; i++) rdiff += memcmp(&ref[i], &got[i], sizeof(float)) != 0;
    sdc_split_stats rst;
    sdc_split_backend_stats(split, &rst);
    printf("row split: %s; %ld of %d values differ from one device\n",
           sdc_split_backend_describe(split), rdiff, 2 * D * N);
    CHECK(rdiff == 0 && rst.n_row_matmuls == NB, "row split: %ld values differ, %d matmuls split",
          rdiff, rst.n_row_matmuls);
    sdc_split_backend_set_mode(split, SDC_SPLIT_LAYER);

    /* a budget too small for the blocks is refused with the sizes */
    CHECK(sdc_devices_apply_max_vram("0.000001") == SDC_OK, "max-vram: %s", sdc_last_error());
    sdc_status s = run(&m, split, xd, zd, got, false, &seen);
    printf("1 KiB budgets: %s\n", sdc_last_error());
    CHECK(s == SDC_ERR_NO_MEMORY && strstr(sdc_last_error(), "test: split:"),
          "tiny budgets refused: %d '%s'", s, sdc_last_error());
    sdc_backend_free(split);
    for (int i = 0; i < 3; i++) sdc_backend_free(kids[i]);
    sdc_backend_free(one);
    sdc_devices_reset();
}

static void test_mode_parse(void) {
    const struct {
        const char *spec;
        sdc_split_mode te, diffusion;
    } ok[] = {{NULL, SDC_SPLIT_LAYER, SDC_SPLIT_LAYER},
              {"row", SDC_SPLIT_ROW, SDC_SPLIT_ROW},
              {" ROW ", SDC_SPLIT_ROW, SDC_SPLIT_ROW},
              {"diffusion=row,te=layer", SDC_SPLIT_LAYER, SDC_SPLIT_ROW},
              {"te=row,all=layer", SDC_SPLIT_ROW, SDC_SPLIT_LAYER},
              {"dit=row,layer", SDC_SPLIT_LAYER, SDC_SPLIT_ROW},
              {"row,layer", SDC_SPLIT_LAYER, SDC_SPLIT_LAYER},
              {"t5=row,t5=layer,,", SDC_SPLIT_LAYER, SDC_SPLIT_LAYER}};
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        sdc_split_mode m[SDC_MODULE_COUNT];
        sdc_status s = sdc_split_mode_parse(ok[i].spec, m);
        CHECK(s == SDC_OK && m[SDC_MODULE_TE] == ok[i].te &&
                  m[SDC_MODULE_DIFFUSION] == ok[i].diffusion,
              "--split-mode '%s': status %d te %d diffusion %d", ok[i].spec ? ok[i].spec : "", s,
              m[SDC_MODULE_TE], m[SDC_MODULE_DIFFUSION]);
    }
    const char *bad[][2] = {{"column", "'column'"},
                            {"te=rows", "'te=rows'"},
                            {"bogus=row", "'bogus'"},
                            {"diffusion=", "layer or row"}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sdc_split_mode m[SDC_MODULE_COUNT];
        sdc_status s = sdc_split_mode_parse(bad[i][0], m);
        CHECK(s == SDC_ERR_INVALID_ARG && strstr(sdc_last_error(), bad[i][1]),
              "--split-mode '%s': status %d '%s'", bad[i][0], s, sdc_last_error());
    }
    printf("--split-mode: %zu specs parsed, %zu refused (e.g. %s)\n", sizeof ok / sizeof *ok,
           sizeof bad / sizeof *bad, "--split-mode 'column': ...");
}

int main(void) {
    test_partition();
    test_mode_parse();
    test_executor();
    TEST_MAIN_END();
}
