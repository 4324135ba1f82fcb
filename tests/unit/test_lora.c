/* LoRA (models/lora.h) against tests/data/lora (tests/golden/gen_lora_ref.py): merged weights
 * equal base + multiplier * delta from numpy float64; run-time adapters in sdc_matmul /
 * sdc_conv2d give the merged weight's result (reference: naive double products here);
 * switching sets restores the loaded bytes; quantised weights (q8_0, q4_K) merged and at run
 * time; broken files give errors naming the file and the key. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/fp16.h"
#include "core/log.h"
#include "core/lora_link.h"
#include "core/ops.h"
#include "core/types.h"
#include "io/model_loader.h"
#include "models/lora.h"
#include "models/lora_names.h"
#include "models/weights.h"
#include "placement/devices.h"
#include "placement/split.h"
#include "test_util.h"

#define DATA SDC_SOURCE_DIR "/tests/data/lora"

static sdc_loader *open_file(const char *path) {
    sdc_loader *l = NULL;
    if (sdc_loader_create(&l) != SDC_OK || sdc_loader_add_file(l, path, NULL) != SDC_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, sdc_last_error());
        sdc_loader_free(l);
        return NULL;
    }
    return l;
}

static float *to_f32(const sdc_tensor *t) {
    int64_t n = sdc_tensor_nelements(t);
    float *f = malloc((size_t)n * sizeof *f);
    if (sdc_weight_to_f32(t, f) != SDC_OK) {
        free(f);
        return NULL;
    }
    return f;
}

/* Pristine copies of every model weight (floats and raw bytes). */
typedef struct snapshot {
    int n;
    float **val;
    void **bytes;
    void **ptr;
} snapshot;

static snapshot take(sdc_loader *l) {
    snapshot s = {.n = sdc_loader_tensor_count(l)};
    s.val = calloc((size_t)s.n, sizeof *s.val);
    s.bytes = calloc((size_t)s.n, sizeof *s.bytes);
    s.ptr = calloc((size_t)s.n, sizeof *s.ptr);
    for (int i = 0; i < s.n; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        s.val[i] = to_f32(t);
        s.bytes[i] = malloc(sdc_tensor_nbytes(t));
        memcpy(s.bytes[i], t->data, sdc_tensor_nbytes(t));
        s.ptr[i] = t->data;
    }
    return s;
}

static void drop(snapshot *s) {
    for (int i = 0; i < s->n; i++) free(s->val[i]), free(s->bytes[i]);
    free(s->val), free(s->bytes), free(s->ptr);
}

static int index_of(sdc_loader *l, const char *name) {
    for (int i = 0; i < sdc_loader_tensor_count(l); i++)
        if (strcmp(sdc_loader_tensor_at(l, i)->name, name) == 0) return i;
    return -1;
}

/* base (snapshot) + sum of mult[k] * ref["<file[k]>/<name>"], in double. */
static double *expected(sdc_loader *ref, const snapshot *s, sdc_loader *l, const char *name,
                        const char **files, const float *mults, int nf) {
    int i = index_of(l, name);
    int64_t n = sdc_tensor_nelements(sdc_loader_tensor_at(l, i));
    double *e = malloc((size_t)n * sizeof *e);
    for (int64_t j = 0; j < n; j++) e[j] = s->val[i][j];
    for (int k = 0; k < nf; k++) {
        char key[300];
        snprintf(key, sizeof key, "%s/%s", files[k], name);
        sdc_tensor *d = sdc_loader_find(ref, key);
        if (!d) continue;
        float *df = to_f32(d);
        for (int64_t j = 0; j < n; j++) e[j] += (double)mults[k] * df[j];
        free(df);
    }
    return e;
}

static bool has_delta(sdc_loader *ref, const char *file, const char *name) {
    char key[300];
    snprintf(key, sizeof key, "%s/%s", file, name);
    return sdc_loader_find(ref, key) != NULL;
}

/* Every weight equals base + deltas: F32 within tol_f32, F16 within one F16 rounding of the
 * reference; weights without deltas keep their loaded data pointer. */
static void check_merged(sdc_loader *l, sdc_loader *ref, const snapshot *s, const char **files,
                         const float *mults, int nf, double tol_f32, const char *what) {
    double worst32 = 0, worst16 = 0;
    int n_touched = 0, bad16 = 0;
    for (int i = 0; i < s->n; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        bool any = false;
        for (int k = 0; k < nf; k++) any |= has_delta(ref, files[k], t->name);
        if (!any) {
            CHECK(t->data == s->ptr[i], "%s: '%s' changed without a LoRA", what, t->name);
            continue;
        }
        n_touched++;
        double *e = expected(ref, s, l, t->name, files, mults, nf);
        float *got = to_f32(t);
        int64_t n = sdc_tensor_nelements(t);
        for (int64_t j = 0; j < n; j++) {
            double d = fabs(got[j] - e[j]);
            if (t->type == SDC_TYPE_F16) {
                /* the reference rounded to F16 may differ from ours by one rounding step */
                double r = sdc_fp16_to_f32(sdc_f32_to_fp16((float)e[j]));
                double ulp = fmax(fabs(r) * 0x1p-10, 0x1p-24);
                if (fabs(got[j] - r) > ulp) bad16++;
                if (d > worst16) worst16 = d;
            } else if (d > worst32) {
                worst32 = d;
            }
        }
        free(e), free(got);
    }
    printf("%s: %d weights merged; F32 max |err| %.3g (tol %.1g), F16 max |err| %.3g, F16 values "
           "beyond one rounding step: %d\n",
           what, n_touched, worst32, tol_f32, worst16, bad16);
    CHECK(worst32 <= tol_f32, "%s: F32 error %g", what, worst32);
    CHECK(bad16 == 0, "%s: %d F16 values off", what, bad16);
    CHECK(worst16 < 1e-3, "%s: F16 error %g", what, worst16);
}

static void check_restored(sdc_loader *l, const snapshot *s, const char *what) {
    int bad = 0;
    for (int i = 0; i < s->n; i++) {
        sdc_tensor *t = sdc_loader_tensor_at(l, i);
        if (t->data != s->ptr[i] || memcmp(t->data, s->bytes[i], sdc_tensor_nbytes(t)) != 0) bad++;
    }
    printf("%s: %d of %d weights differ from the loaded bytes\n", what, bad, s->n);
    CHECK(bad == 0, "%s: %d weights not restored", what, bad);
}

/* ---- graphs ---------------------------------------------------------------------------- */

static unsigned long long g_rng = 0x1234567887654321ull;

static float *rand_vec(int64_t n) {
    float *v = malloc((size_t)n * sizeof *v);
    for (int64_t i = 0; i < n; i++) v[i] = t_randf(&g_rng);
    return v;
}

/* y = matmul(w, x) on the CPU backend; x [K, M]. w may be a view made by `slice_rows`. */
static float *run_matmul(sdc_backend *be, sdc_tensor *w, const float *x, int64_t M, int third) {
    sdc_graph *g = sdc_graph_create();
    /* third -2: a conv weight [KW, KH, Cin, Cout] as a Linear [KW*KH*Cin, Cout] view */
    int64_t K = third == -2 ? sdc_tensor_nelements(w) / w->ne[3] : w->ne[0];
    int64_t ne[2] = {K, M};
    sdc_tensor *xi = sdc_graph_input(g, SDC_TYPE_F32, 2, ne), *wv = w;
    if (third == -2) wv = sdc_reshape_2d(g, w, K, w->ne[3]);
    if (third >= 0) {
        int64_t rows = w->ne[1] / 3, sne[4] = {w->ne[0], rows, 1, 1}, off[4] = {0, third * rows};
        wv = sdc_slice(g, w, sne, off);
    }
    sdc_tensor *y = sdc_matmul(g, wv, xi);
    sdc_graph_mark_output(g, y);
    float *out = NULL;
    if (sdc_graph_status(g) == SDC_OK) {
        size_t bytes = (size_t)(y->ne[0] * M) * sizeof(float);
        sdc_input_data in = {xi, x, (size_t)(K * M) * sizeof(float)};
        out = malloc(bytes);
        if (sdc_backend_set_inputs(be, g, &in, 1) != SDC_OK ||
            sdc_backend_compute(be, g, NULL, NULL) != SDC_OK ||
            sdc_backend_tensor_get(be, y, out, 0, bytes) != SDC_OK) {
            free(out);
            out = NULL;
        }
    } else {
        fprintf(stderr, "graph: %s\n", sdc_graph_error(g));
    }
    sdc_graph_free(g);
    return out;
}

static float *run_conv(sdc_backend *be, sdc_tensor *w, const float *x, int64_t W, int64_t H,
                       int stride, int pad, int64_t *ow, int64_t *oh) {
    sdc_graph *g = sdc_graph_create();
    /* a Linear weight [K, N] runs as a 1x1 conv through a reshaped view */
    bool linear = w->ne[2] == 1 && w->ne[3] == 1;
    int64_t ne[4] = {W, H, linear ? w->ne[0] : w->ne[2], 1};
    sdc_tensor *xi = sdc_graph_input(g, SDC_TYPE_F32, 4, ne);
    sdc_tensor *wv = linear ? sdc_reshape_4d(g, w, 1, 1, w->ne[0], w->ne[1]) : w;
    sdc_tensor *y = sdc_conv2d(g, xi, wv, NULL, stride, stride, pad, pad, 1, 1, 1);
    sdc_graph_mark_output(g, y);
    float *out = NULL;
    if (sdc_graph_status(g) == SDC_OK) {
        *ow = y->ne[0], *oh = y->ne[1];
        size_t bytes = (size_t)sdc_tensor_nelements(y) * sizeof(float);
        sdc_input_data in = {xi, x, (size_t)(W * H * ne[2]) * sizeof(float)};
        out = malloc(bytes);
        if (sdc_backend_set_inputs(be, g, &in, 1) != SDC_OK ||
            sdc_backend_compute(be, g, NULL, NULL) != SDC_OK ||
            sdc_backend_tensor_get(be, y, out, 0, bytes) != SDC_OK) {
            free(out);
            out = NULL;
        }
    } else {
        fprintf(stderr, "graph: %s\n", sdc_graph_error(g));
    }
    sdc_graph_free(g);
    return out;
}

/* Relative max error of got vs the double product of weight e ([N rows][K]) and x [M][K]. */
static double matmul_err(const float *got, const double *e, const float *x, int64_t N, int64_t K,
                         int64_t M, int64_t row0) {
    double worst = 0, scale = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = 0;
            for (int64_t k = 0; k < K; k++) acc += e[(row0 + n) * K + k] * x[m * K + k];
            worst = fmax(worst, fabs(got[m * N + n] - acc));
            scale = fmax(scale, fabs(acc));
        }
    return worst / (scale > 0 ? scale : 1);
}

/* Relative max error of a conv result vs naive double conv with weight e [O][C][KH][KW]. */
static double conv_err(const float *got, const double *e, const float *x, int64_t W, int64_t H,
                       int64_t Cin, int64_t O, int64_t k, int stride, int pad, int64_t ow,
                       int64_t oh) {
    double worst = 0, scale = 0;
    for (int64_t o = 0; o < O; o++)
        for (int64_t y = 0; y < oh; y++)
            for (int64_t xo = 0; xo < ow; xo++) {
                double acc = 0;
                for (int64_t c = 0; c < Cin; c++)
                    for (int64_t ky = 0; ky < k; ky++)
                        for (int64_t kx = 0; kx < k; kx++) {
                            int64_t iy = y * stride + ky - pad, ix = xo * stride + kx - pad;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W) continue;
                            acc += e[((o * Cin + c) * k + ky) * k + kx] * x[(c * H + iy) * W + ix];
                        }
                worst = fmax(worst, fabs(got[(o * oh + y) * ow + xo] - acc));
                scale = fmax(scale, fabs(acc));
            }
    return worst / (scale > 0 ? scale : 1);
}

/* ---- the tests --------------------------------------------------------------------------- */

#define U  "model.diffusion_model."
#define TE "cond_stage_model.transformer.text_model.encoder.layers.0."
#define T2 "conditioner.embedders.1.model.transformer.resblocks.0.attn."

static void test_merge(sdc_loader *l, sdc_loader *ref, const snapshot *s, sdc_lora_state *st) {
    const char *kf[] = {"kohya"}, *pf[] = {"peft"}, *tf[] = {"te2"}, *two[] = {"kohya", "kohya"};
    float m08[] = {0.8f}, m1[] = {1.0f}, both[] = {0.8f, 0.5f};
    sdc_lora_request kohya = {"kohya", 0.8f};
    sdc_status r = sdc_lora_set_active(st, DATA, &kohya, 1, SDC_LORA_AUTO);
    CHECK(r == SDC_OK, "kohya: %s", sdc_last_error());
    sdc_lora_stats stats = sdc_lora_get_stats(st);
    printf("kohya x0.8 auto: mode %s, %d weights, %d merged, %d at run time\n",
           sdc_lora_mode_name(stats.mode), stats.n_targets, stats.n_merged, stats.n_runtime);
    CHECK(stats.mode == SDC_LORA_IMMEDIATELY && stats.n_merged == 9 && stats.n_runtime == 0,
          "auto on a float model merges all 9 targets");
    check_merged(l, ref, s, kf, m08, 1, 1e-6, "kohya x0.8 merged");

    /* the same set again is a no-op: the merged buffers stay */
    sdc_tensor *q = sdc_loader_find(l, U "input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight");
    void *before = q->data;
    CHECK(sdc_lora_set_active(st, DATA, &kohya, 1, SDC_LORA_AUTO) == SDC_OK, "again");
    CHECK(q->data == before, "same set: nothing redone");

    /* a converted copy is made from the loaded weight and gets the LoRA at run time */
    sdc_tensor copy;
    CHECK(sdc_weight_convert_copy(q, SDC_TYPE_F32, NULL, NULL, &copy) == SDC_OK, "copy");
    float *cv = copy.data;
    int qi = index_of(l, q->name);
    double cd = t_max_abs_diff(cv, s->val[qi], (long)sdc_tensor_nelements(q));
    printf("converted copy of a merged weight vs the loaded values: max |diff| %g\n", cd);
    CHECK(cd == 0 && copy.lora == q->lora, "copy is of the pristine weight and keeps the link");
    sdc_backend *be = sdc_backend_cpu_create(2);
    float *x = rand_vec(q->ne[0] * 3);
    float *yc = run_matmul(be, &copy, x, 3, -1);
    double *e = expected(ref, s, l, q->name, kf, m08, 1);
    double err = yc ? matmul_err(yc, e, x, q->ne[1], q->ne[0], 3, 0) : 1;
    printf("matmul on the copy (run-time LoRA) vs merged reference: rel err %.3g\n", err);
    CHECK(err < 1e-5, "copy matmul err %g", err);
    free(yc), free(e), free(x);
    sdc_buffer_free(copy.buffer);
    sdc_backend_free(be);

    CHECK(sdc_lora_set_active(st, DATA, NULL, 0, SDC_LORA_AUTO) == SDC_OK, "none");
    check_restored(l, s, "after kohya -> none");
    sdc_lora_request off = {"kohya", 0.0f};
    CHECK(sdc_lora_set_active(st, DATA, &off, 1, SDC_LORA_AUTO) == SDC_OK, "x0");
    check_restored(l, s, "kohya x0 (off)");

    sdc_lora_request peft = {"peft", 0.8f};
    CHECK(sdc_lora_set_active(st, DATA, &peft, 1, SDC_LORA_IMMEDIATELY) == SDC_OK, "peft: %s",
          sdc_last_error());
    check_merged(l, ref, s, pf, m08, 1, 1e-6, "peft x0.8 merged");
    sdc_lora_request old = {"diffusers_old", 0.8f};
    CHECK(sdc_lora_set_active(st, DATA, &old, 1, SDC_LORA_IMMEDIATELY) == SDC_OK, "old: %s",
          sdc_last_error());
    check_merged(l, ref, s, pf, m08, 1, 1e-6, "diffusers-converter spelling x0.8 merged");

    /* two LoRAs on the same weights, one in kohya's diffusers spelling */
    sdc_lora_request pair[] = {{"kohya", 0.8f}, {"kohya_diffusers.safetensors", 0.5f}};
    CHECK(sdc_lora_set_active(st, DATA, pair, 2, SDC_LORA_IMMEDIATELY) == SDC_OK, "pair: %s",
          sdc_last_error());
    check_merged(l, ref, s, two, both, 2, 1e-6, "kohya x0.8 + kohya_diffusers x0.5 merged");

    sdc_lora_request te2 = {"te2", 1.0f};
    CHECK(sdc_lora_set_active(st, DATA, &te2, 1, SDC_LORA_IMMEDIATELY) == SDC_OK, "te2: %s",
          sdc_last_error());
    check_merged(l, ref, s, tf, m1, 1, 1e-6, "te2 (in_proj thirds) merged");
    CHECK(sdc_lora_set_active(st, DATA, NULL, 0, SDC_LORA_IMMEDIATELY) == SDC_OK, "none");
    check_restored(l, s, "after te2 -> none");
}

static void test_runtime(sdc_loader *l, sdc_loader *ref, const snapshot *s, sdc_lora_state *st) {
    const char *kf[] = {"kohya"}, *tf[] = {"te2"};
    float m08[] = {0.8f}, m1[] = {1.0f};
    sdc_lora_request req[] = {{"kohya", 0.8f}, {"te2", 1.0f}};
    CHECK(sdc_lora_set_active(st, DATA, req, 2, SDC_LORA_AT_RUNTIME) == SDC_OK, "runtime: %s",
          sdc_last_error());
    sdc_lora_stats stats = sdc_lora_get_stats(st);
    CHECK(stats.n_runtime == 11 && stats.n_merged == 0, "11 weights at run time, got %d/%d",
          stats.n_runtime, stats.n_merged);
    check_restored(l, s, "at_runtime leaves the data");
    sdc_backend *be = sdc_backend_cpu_create(2);
    static const char *lin[] = {U "input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight",
                                U "input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight",
                                U "input_blocks.1.1.transformer_blocks.0.ff.net.2.weight",
                                U "middle_block.0.emb_layers.1.weight",
                                TE "self_attn.q_proj.weight",
                                TE "mlp.fc1.weight",
                                T2 "in_proj_weight",
                                T2 "out_proj.weight"};
    double worst = 0;
    for (size_t i = 0; i < sizeof lin / sizeof *lin; i++) {
        sdc_tensor *w = sdc_loader_find(l, lin[i]);
        bool is_te2 = strncmp(lin[i], "conditioner", 11) == 0;
        double *e = expected(ref, s, l, lin[i], is_te2 ? tf : kf, is_te2 ? m1 : m08, 1);
        int64_t M = 5, K = w->ne[0];
        float *x = rand_vec(K * M);
        for (int third = -1; third < (is_te2 && i == 6 ? 3 : 0); third++) {
            float *y = run_matmul(be, w, x, M, third);
            int64_t rows = third < 0 ? w->ne[1] : w->ne[1] / 3;
            double err = y ? matmul_err(y, e, x, rows, K, M, third < 0 ? 0 : third * rows) : 1;
            printf("run time matmul %s%s (%s): rel err %.3g\n", lin[i] + (is_te2 ? 30 : 0),
                   third < 0    ? ""
                   : third == 0 ? " [q rows view]"
                   : third == 1 ? " [k rows view]"
                                : " [v rows view]",
                   sdc_type_name(w->type), err);
            worst = fmax(worst, err);
            free(y);
        }
        free(x), free(e);
    }
    /* measured <= 1.1e-7 (F32 sums of up to 256 products) */
    /* a 1x1 conv weight as a Linear (reshaped view) */
    {
        const char *name = U "input_blocks.1.1.proj_in.weight";
        sdc_tensor *w = sdc_loader_find(l, name);
        double *e = expected(ref, s, l, name, kf, m08, 1);
        float *x = rand_vec(w->ne[2] * 5), *y = run_matmul(be, w, x, 5, -2);
        double err = y ? matmul_err(y, e, x, w->ne[3], w->ne[2], 5, 0) : 1;
        printf("run time matmul on a 2-D view of the 1x1 conv %s: rel err %.3g\n", name + 22, err);
        worst = fmax(worst, err);
        free(x), free(y), free(e);
    }
    CHECK(worst < 1e-6, "run time matmul: worst rel err %g", worst);
    static const struct {
        const char *name;
        int stride, pad;
    } convs[] = {{U "input_blocks.1.1.proj_in.weight", 1, 0},
                 {U "input_blocks.1.0.in_layers.2.weight", 1, 1},
                 {U "input_blocks.1.0.in_layers.2.weight", 2, 1},
                 {U "output_blocks.2.1.conv.weight", 1, 1},
                 {U "output_blocks.2.1.conv.weight", 2, 0},
                 {TE "self_attn.q_proj.weight", 1, 0}};
    worst = 0;
    for (size_t i = 0; i < sizeof convs / sizeof *convs; i++) {
        sdc_tensor *w = sdc_loader_find(l, convs[i].name);
        double *e = expected(ref, s, l, convs[i].name, kf, m08, 1);
        int64_t W = 7, H = 6, ow = 0, oh = 0;
        bool linear = w->ne[2] == 1 && w->ne[3] == 1;
        int64_t cin = linear ? w->ne[0] : w->ne[2], cout = linear ? w->ne[1] : w->ne[3];
        float *x = rand_vec(W * H * cin);
        float *y = run_conv(be, w, x, W, H, convs[i].stride, convs[i].pad, &ow, &oh);
        double err = y ? conv_err(y, e, x, W, H, cin, cout, linear ? 1 : w->ne[0], convs[i].stride,
                                  convs[i].pad, ow, oh)
                       : 1;
        printf("run time conv %s (%s, stride %d, pad %d): rel err %.3g\n",
               convs[i].name + (linear ? 0 : 22), sdc_type_name(w->type), convs[i].stride,
               convs[i].pad, err);
        worst = fmax(worst, err);
        free(y), free(x), free(e);
    }
    /* measured <= 7e-7 */
    CHECK(worst < 3e-6, "run time conv: worst rel err %g", worst);
    sdc_backend_free(be);
    CHECK(sdc_lora_set_active(st, DATA, NULL, 0, SDC_LORA_AT_RUNTIME) == SDC_OK, "none");
    check_restored(l, s, "after run time -> none");
}

/* ff.net.2 re-typed to a quantised type before the state is made (as a GGUF would load). */
static void test_quant(sdc_loader *ref, sdc_type type) {
    sdc_loader *l = open_file(DATA "/model.safetensors");
    if (!l) {
        CHECK(0, "model");
        return;
    }
    const char *name = U "input_blocks.1.1.transformer_blocks.0.ff.net.2.weight";
    sdc_tensor *w = sdc_loader_find(l, name);
    const sdc_type_traits *tr = sdc_type_get(type);
    int64_t n = sdc_tensor_nelements(w), K = w->ne[0], N = w->ne[1];
    float *f = to_f32(w);
    size_t qbytes = (size_t)(n / tr->block_size) * tr->block_bytes;
    void *qdata = malloc(qbytes);
    tr->from_float(f, qdata, n, NULL);
    w->type = type;
    w->data = qdata;
    w->buffer = NULL;
    sdc_tensor_set_contiguous_strides(w);
    snapshot s = take(l);
    int wi = index_of(l, name);
    sdc_lora_state *st = NULL;
    CHECK(sdc_lora_state_create(l, &st) == SDC_OK, "state");
    const char *kf[] = {"kohya"};
    float m08[] = {0.8f};
    double *e = expected(ref, &s, l, name, kf, m08, 1); /* dequantised base + delta */

    /* auto: a quantised model gets the adapters at run time */
    sdc_lora_request kohya = {"kohya", 0.8f};
    CHECK(sdc_lora_set_active(st, DATA, &kohya, 1, SDC_LORA_AUTO) == SDC_OK, "auto: %s",
          sdc_last_error());
    CHECK(sdc_lora_get_stats(st).mode == SDC_LORA_AT_RUNTIME, "auto -> at_runtime when quantised");
    sdc_backend *be = sdc_backend_cpu_create(2);
    int64_t M = 4;
    float *x = rand_vec(K * M);
    float *y = run_matmul(be, w, x, M, -1);
    /* the base product alone (no link): its error is the kernel's; the LoRA term is F32 */
    sdc_tensor plain = *w;
    plain.lora = NULL;
    float *y0 = run_matmul(be, &plain, x, M, -1);
    double *dl = malloc((size_t)n * sizeof *dl);
    for (int64_t j = 0; j < n; j++) dl[j] = e[j] - s.val[wi][j];
    float *diff = malloc((size_t)(N * M) * sizeof *diff);
    for (int64_t j = 0; y && y0 && j < N * M; j++) diff[j] = y[j] - y0[j];
    double err_lora = y && y0 ? matmul_err(diff, dl, x, N, K, M, 0) : 1;
    double err_all = y ? matmul_err(y, e, x, N, K, M, 0) : 1;
    printf("%s at run time: LoRA term vs double rel err %.3g; whole product vs dequantised base + "
           "delta %.3g\n",
           tr->name, err_lora, err_all);
    CHECK(err_lora < 1e-5, "%s run time LoRA term err %g", tr->name, err_lora);
    CHECK(err_all < 1e-6, "%s run time product err %g", tr->name, err_all);
    free(y), free(y0), free(diff), free(dl), free(x);

    /* immediately: dequantise, add, re-quantise; error vs the float reference, next to the
     * error of quantising the reference itself (the floor any re-quantisation has) */
    CHECK(sdc_lora_set_active(st, DATA, &kohya, 1, SDC_LORA_IMMEDIATELY) == SDC_OK, "merge: %s",
          sdc_last_error());
    CHECK(w->type == type && w->data != qdata, "merged in a buffer of ours, same type");
    float *got = to_f32(w), *ef = malloc((size_t)n * sizeof *ef), *rq = malloc((size_t)n * 4);
    for (int64_t j = 0; j < n; j++) ef[j] = (float)e[j];
    void *tmp = malloc(qbytes);
    tr->from_float(ef, tmp, n, NULL);
    tr->to_float(tmp, rq, n);
    double rms = 0, rms_floor = 0, mx = 0, ref_rms = 0;
    for (int64_t j = 0; j < n; j++) {
        rms += (got[j] - e[j]) * (got[j] - e[j]);
        rms_floor += (rq[j] - e[j]) * (rq[j] - e[j]);
        ref_rms += e[j] * e[j];
        mx = fmax(mx, fabs(got[j] - e[j]));
    }
    /* against the float model + LoRA (what an F32 checkpoint gives): merging re-quantises,
     * run time keeps the original quantisation error only */
    double rms_f = 0, rms_q = 0;
    for (int64_t j = 0; j < n; j++) {
        double ff = f[j] + (e[j] - s.val[wi][j]);
        rms_f += (got[j] - ff) * (got[j] - ff);
        rms_q += (s.val[wi][j] - f[j]) * (s.val[wi][j] - f[j]);
    }
    /* how much of the LoRA's change survives re-quantisation (sd.cpp #904: small LoRAs fade
     * on Q4 merges): projection of (merged - base) on delta */
    double dot = 0, dd = 0;
    for (int64_t j = 0; j < n; j++) {
        double dl = e[j] - s.val[wi][j];
        dot += (got[j] - s.val[wi][j]) * dl, dd += dl * dl;
    }
    printf("%s vs the float model + LoRA: merged rms err %.3g, run time (base quantisation only) "
           "%.3g; merged change along the LoRA delta: %.3f of it\n",
           tr->name, sqrt(rms_f / n), sqrt(rms_q / n), dd > 0 ? dot / dd : 0);
    CHECK(sqrt(rms_f / n) < 2 * sqrt(rms_q / n), "%s merged vs float model", tr->name);
    rms = sqrt(rms / n), rms_floor = sqrt(rms_floor / n), ref_rms = sqrt(ref_rms / n);
    printf("%s merged: rms err %.3g (%.2f%% of rms weight), max %.3g; quantising the float "
           "reference itself: rms %.3g\n",
           tr->name, rms, 100 * rms / ref_rms, mx, rms_floor);
    CHECK(rms <= 1.01 * rms_floor + 1e-7, "%s merged rms %g vs floor %g", tr->name, rms, rms_floor);
    free(got), free(ef), free(rq), free(tmp), free(e), free(f);
    CHECK(sdc_lora_set_active(st, DATA, NULL, 0, SDC_LORA_AUTO) == SDC_OK, "none");
    check_restored(l, &s, "quantised: after merge -> none");
    sdc_backend_free(be);
    sdc_lora_state_free(st);
    drop(&s);
    sdc_loader_free(l);
    free(qdata);
}

static void test_errors(sdc_loader *l, const snapshot *s, sdc_lora_state *st) {
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"bad_missing_up", "has lora_down (lora_A) but no lora_up"},
        {"bad_rank", "rank mismatch"},
        {"bad_target", "no UNet weight 'input_blocks_9_1_proj_in' in the model"},
        {"bad_shape", "shape mismatch"},
        {"bad_loha", "LoHa (LyCORIS) is not supported"},
        {"bad_layout", "unknown LoRA key layout"},
        {"no_such_lora", "no_such_lora.safetensors"},
        {"../lora/kohya", "no '..'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        /* a good LoRA first: a failed switch must leave no LoRA active */
        sdc_lora_request good = {"kohya", 1.0f}, bad[] = {{"te2", 1.0f}, {cases[i].file, 1.0f}};
        sdc_lora_set_active(st, DATA, &good, 1, SDC_LORA_IMMEDIATELY);
        sdc_status r = sdc_lora_set_active(st, DATA, bad, 2, SDC_LORA_IMMEDIATELY);
        const char *msg = sdc_last_error();
        printf("%s: %s\n", cases[i].file, msg);
        CHECK(r != SDC_OK && strstr(msg, cases[i].want), "%s: want '%s'", cases[i].file,
              cases[i].want);
        CHECK(i >= 6 || strstr(msg, cases[i].file), "%s: message names the file", cases[i].file);
        CHECK(sdc_lora_get_stats(st).n_targets == 0, "no LoRA active after an error");
        check_restored(l, s, "after a failed switch");
    }
    sdc_lora_mode m;
    CHECK(sdc_lora_mode_from_name("at_runtime", &m) == SDC_OK && m == SDC_LORA_AT_RUNTIME, "mode");
    CHECK(sdc_lora_mode_from_name("immediately", &m) == SDC_OK && m == SDC_LORA_IMMEDIATELY, "m");
    CHECK(sdc_lora_mode_from_name("later", &m) != SDC_OK, "bad mode");
}

/* Two blocks of matmuls on LoRA'd weights: y = W2 (W1 x), W1 the text encoder q_proj,
 * W2 the out_proj of the second text encoder. */
static float *run_blocks(sdc_loader *l, sdc_backend *be, const float *x, int64_t M) {
    sdc_tensor *w1 = sdc_loader_find(l, TE "self_attn.q_proj.weight");
    sdc_tensor *w2 = sdc_loader_find(l, T2 "out_proj.weight");
    sdc_graph *g = sdc_graph_create();
    int64_t ne[2] = {w1->ne[0], M};
    sdc_tensor *xi = sdc_graph_input(g, SDC_TYPE_F32, 2, ne);
    sdc_graph_set_block(g, 0);
    sdc_tensor *h = sdc_matmul(g, w1, xi);
    sdc_graph_set_block(g, 1);
    sdc_tensor *y = sdc_matmul(g, w2, h);
    sdc_graph_set_block(g, -1);
    sdc_graph_mark_output(g, y);
    size_t bytes = (size_t)(w2->ne[1] * M) * sizeof(float);
    float *out = malloc(bytes);
    sdc_input_data in = {xi, x, (size_t)(ne[0] * M) * sizeof(float)};
    if (sdc_graph_status(g) != SDC_OK || sdc_backend_set_inputs(be, g, &in, 1) != SDC_OK ||
        sdc_backend_compute(be, g, NULL, NULL) != SDC_OK ||
        sdc_backend_tensor_get(be, y, out, 0, bytes) != SDC_OK) {
        fprintf(stderr, "blocks: %s %s\n", sdc_graph_error(g), sdc_last_error());
        free(out);
        out = NULL;
    }
    sdc_graph_free(g);
    return out;
}

/* A row split (placement/split.h) slices every block matmul, the LoRA's too; it must not
 * apply the adapters again to the slices (split_backend.c clears their link). */
static void test_row_split(sdc_loader *l, sdc_lora_state *st) {
    sdc_lora_request req[] = {{"kohya", 0.8f}, {"te2", 1.0f}};
    CHECK(sdc_lora_set_active(st, DATA, req, 2, SDC_LORA_AT_RUNTIME) == SDC_OK, "rt: %s",
          sdc_last_error());
    CHECK(sdc_set_cpu_devices(2) == SDC_OK, "cpu devices: %s", sdc_last_error());
    sdc_backend *one = sdc_backend_cpu_create(1);
    sdc_backend *kids[2] = {sdc_backend_cpu_create(1), sdc_backend_cpu_create(1)};
    int devs[2] = {0, 1};
    sdc_backend *split = sdc_split_backend_create("te", kids, devs, 2);
    CHECK(split != NULL, "split backend: %s", sdc_last_error());
    int64_t M = 6, K = sdc_loader_find(l, TE "self_attn.q_proj.weight")->ne[0];
    float *x = rand_vec(K * M), *ref = run_blocks(l, one, x, M), *got = NULL;
    long diff = -1;
    sdc_split_stats ss = {0};
    if (split) {
        sdc_split_backend_set_mode(split, SDC_SPLIT_ROW);
        got = run_blocks(l, split, x, M);
        sdc_split_backend_stats(split, &ss);
    }
    if (ref && got) {
        diff = 0;
        for (int64_t i = 0; i < 32 * M; i++) diff += memcmp(&ref[i], &got[i], sizeof(float)) != 0;
    }
    printf("row split over 2 CPU devices with run-time LoRAs: %d matmuls sliced, %ld of %lld "
           "values differ from one device\n",
           ss.n_row_matmuls, diff, (long long)(32 * M));
    CHECK(diff == 0 && ss.n_row_matmuls == 6, "row split: %ld values differ, %d sliced", diff,
          ss.n_row_matmuls);
    free(x), free(ref), free(got);
    sdc_backend_free(split);
    sdc_backend_free(kids[0]), sdc_backend_free(kids[1]), sdc_backend_free(one);
    sdc_devices_reset();
    CHECK(sdc_lora_set_active(st, DATA, NULL, 0, SDC_LORA_AUTO) == SDC_OK, "none");
}

/* The diffusers -> LDM UNet map on every SD1 / SDXL conv/linear weight (pairs from diffusers'
 * convert_ldm_unet_checkpoint), in kohya's and PEFT's spellings, plus the LDM spellings. */
static void test_unet_names(const char *stem, const char *what, int min_pairs) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s.safetensors", DATA, stem);
    sdc_loader *l = open_file(path);
    size_t size;
    snprintf(path, sizeof path, "%s/%s.tsv", DATA, stem);
    char *tsv = (char *)t_read_file(path, &size);
    sdc_lora_targets *tg = NULL;
    if (!l || !tsv || sdc_lora_targets_build(l, &tg) != SDC_OK) {
        CHECK(0, "%s names data", what);
        free(tsv);
        sdc_loader_free(l);
        return;
    }
    int n_pairs = 0, n_ok = 0, n_tries = 0;
    for (char *line = strtok(tsv, "\n"); line; line = strtok(NULL, "\n")) {
        char *tab = strchr(line, '\t');
        if (line[0] == '#' || !tab) continue;
        *tab = 0;
        const char *dif = line, *ldm = tab + 1;
        char want[256], forms[4][300];
        snprintf(want, sizeof want, "model.diffusion_model.%s.weight", ldm);
        snprintf(forms[0], sizeof forms[0], "lora_unet_%s", dif);
        snprintf(forms[1], sizeof forms[1], "unet.%s", dif);
        snprintf(forms[2], sizeof forms[2], "lora_unet_%s", ldm);
        snprintf(forms[3], sizeof forms[3], "model.diffusion_model.%s", ldm);
        for (char *c = forms[0]; *c; c++) *c = *c == '.' ? '_' : *c;
        for (char *c = forms[2]; *c; c++) *c = *c == '.' ? '_' : *c;
        n_pairs++;
        for (int f = 0; f < 4; f++) {
            int index, third;
            char why[300];
            n_tries++;
            bool ok = sdc_lora_targets_resolve(tg, forms[f], &index, &third, why, sizeof why);
            const sdc_tensor *t = ok ? sdc_loader_tensor_at(l, index) : NULL;
            if (t && third == -1 && strcmp(t->name, want) == 0)
                n_ok++;
            else
                CHECK(0, "'%s' -> %s, want %s", forms[f], t ? t->name : why, want);
        }
    }
    printf("%s UNet names: %d weights x 4 spellings (kohya diffusers, PEFT, kohya LDM, LDM): %d of "
           "%d resolve to the right weight\n",
           what, n_pairs, n_ok, n_tries);
    CHECK(n_pairs >= min_pairs && n_ok == n_tries, "%s names", what);
    sdc_lora_targets_free(tg);
    free(tsv);
    sdc_loader_free(l);
}

int main(void) {
    sdc_set_log_level(SDC_LOG_INFO);
    sdc_loader *l = open_file(DATA "/model.safetensors"), *ref = open_file(DATA "/ref.safetensors");
    if (!l || !ref) {
        CHECK(0, "test data");
        TEST_MAIN_END();
    }
    snapshot s = take(l);
    sdc_lora_state *st = NULL;
    CHECK(sdc_lora_state_create(l, &st) == SDC_OK, "state: %s", sdc_last_error());
    test_merge(l, ref, &s, st);
    test_runtime(l, ref, &s, st);
    test_errors(l, &s, st);
    test_row_split(l, st);
    sdc_lora_state_free(st);
    check_restored(l, &s, "after sdc_lora_state_free");
    CHECK(sdc_loader_tensor_at(l, 0)->lora == NULL, "links cleared");
    drop(&s);
    test_quant(ref, SDC_TYPE_Q8_0);
    test_quant(ref, SDC_TYPE_Q4_K);
    test_unet_names("sd1_unet_names", "SD1", 282);
    test_unet_names("sdxl_unet_names", "SDXL", 650);
    sdc_loader_free(ref);
    sdc_loader_free(l);
    TEST_MAIN_END();
}
