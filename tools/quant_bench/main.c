/* sdc-quant_bench: how much each weight type loses, with and without an imatrix.
 *
 * matmul mode (default): loads a MiniT2I + T5, collects an imatrix during one generation
 * (prompt A, seed 1), then captures the inputs of every model matmul during a second,
 * held-out generation (prompt B, seed 2). For each weight (up to --rows output rows) and
 * type it reports the relative L2 error of X W^T with the quantised W against F32,
 * plain and with importances, pooled over all weights (sum of squared errors over sum of
 * squared outputs) and split DiT / T5. Also times each quantiser (one thread).
 *
 * psnr mode (--psnr): generates one image per --type (plus with an imatrix collected on
 * another prompt) and prints the PSNR against the F16 image.
 *
 *   sdc-quant_bench --dit DIT --t5 T5 [--tok TOK] [--size 128] [--steps 2] [--rows 256]
 *   sdc-quant_bench --psnr --dit DIT --t5 T5 [--tok TOK]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/quant.h"
#include "core/types.h"
#include "io/model_loader.h"
#include "pipeline/context.h"
#include "pipeline/imatrix.h"
#include "sdc.h"

static const char *const k_types[] = {"q8_0", "q6_K", "q5_1", "q5_0", "q5_K",
                                      "q4_1", "q4_0", "q4_K", "q3_K", "q2_K"};
#define N_TYPES    (int)(sizeof k_types / sizeof k_types[0])
#define MAX_X_ROWS 64

typedef struct capture {
    char name[SDC_MAX_NAME];
    const sdc_tensor *w;
    int64_t k, m; /* columns, captured rows */
    float *x;     /* m x k */
} capture;

typedef struct bench {
    capture *c;
    int n, cap;
    const sdc_loader *loader;
} bench;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* First call of each model weight: keep up to MAX_X_ROWS input rows, spread evenly. */
static bool capture_cb(sdc_tensor *t, bool ask, void *user) {
    bench *b = user;
    if (t->op != SDC_OP_MATMUL) return false;
    const sdc_tensor *w = t->src[0], *x = t->src[1];
    if (ask) {
        if (!(w->flags & SDC_TENSOR_PARAM) || x->type != SDC_TYPE_F32) return false;
        if (strncmp(w->name, "model.", 6) && strncmp(w->name, "text_encoders.", 14)) return false;
        if (sdc_loader_find(b->loader, w->name) != w) return false;
        for (int i = 0; i < b->n; i++)
            if (b->c[i].w == w) return false;
        return true;
    }
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->c = realloc(b->c, sizeof *b->c * (size_t)b->cap);
    }
    capture *c = &b->c[b->n++];
    snprintf(c->name, sizeof c->name, "%s", w->name);
    c->w = w;
    c->k = x->ne[0];
    int64_t rows = x->ne[1] * x->ne[2] * x->ne[3];
    c->m = rows < MAX_X_ROWS ? rows : MAX_X_ROWS;
    c->x = malloc(sizeof(float) * (size_t)(c->m * c->k));
    for (int64_t r = 0; r < c->m; r++) {
        int64_t src = r * rows / c->m;
        int64_t i1 = src % x->ne[1], i2 = (src / x->ne[1]) % x->ne[2],
                i3 = src / (x->ne[1] * x->ne[2]);
        memcpy(c->x + r * c->k,
               (const char *)x->data + i1 * x->nb[1] + i2 * x->nb[2] + i3 * x->nb[3],
               sizeof(float) * (size_t)c->k);
    }
    return true;
}

static sdc_status generate(sdc_context *ctx, const char *prompt, int64_t seed, int size, int steps,
                           sdc_image **img) {
    sdc_generate_params p;
    sdc_generate_params_init(&p);
    p.prompt = prompt;
    p.width = p.height = size;
    p.steps = steps;
    p.cfg_scale = 6;
    p.seed = seed;
    p.rng = "cpu";
    int n = 0;
    return sdc_generate_image(ctx, &p, img, &n);
}

/* sum over the captured rows of |X w_n|^2 and of the error, for rows n of W */
static void matmul_err(const capture *c, const float *wref, const float *wq, int64_t nrows,
                       double *num, double *den) {
    for (int64_t r = 0; r < c->m; r++) {
        const float *x = c->x + r * c->k;
        for (int64_t n = 0; n < nrows; n++) {
            double y = 0, yq = 0;
            const float *a = wref + n * c->k, *b = wq + n * c->k;
            for (int64_t j = 0; j < c->k; j++) y += (double)x[j] * a[j], yq += (double)x[j] * b[j];
            *num += (y - yq) * (y - yq);
            *den += y * y;
        }
    }
}

static int matmul_mode(const char *dit, const char *t5, const char *tok, int size, int steps,
                       int64_t max_rows) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.t5xxl_path = t5;
    cp.t5_tokenizer_path = tok;
    sdc_context *ctx;
    if (sdc_context_create(&cp, &ctx) != SDC_OK) {
        fprintf(stderr, "context: %s\n", sdc_last_error());
        return 1;
    }
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    sdc_context_collect_imatrix(ctx, im);
    sdc_image *img = NULL;
    double t0 = now_s();
    /* several prompts, as one would collect for real use: the T5 sees more tokens */
    static const char *const prompts[] = {"a photograph of a red fox in the snow, detailed fur",
                                          "a bowl of fresh fruit on a kitchen table, morning light",
                                          "a city street at night with neon signs and rain",
                                          "portrait of an elderly man with a beard, oil painting"};
    for (int i = 0; i < 4; i++) {
        if (generate(ctx, prompts[i], 1 + i, size, steps, &img)) {
            fprintf(stderr, "generate: %s\n", sdc_last_error());
            return 1;
        }
        sdc_free_images(img, 1);
    }
    printf("imatrix runs (4 prompts A, seeds 1-4, %dx%d, %d steps): %d entries, %.1fs\n", size,
           size, steps, sdc_imatrix_entry_count(im), now_s() - t0);
    bench b = {0};
    b.loader = ctx->weights;
    ctx->eval_cb = capture_cb;
    ctx->eval_user = &b;
    t0 = now_s();
    if (generate(ctx, "an old wooden boat on a calm lake at dawn", 9, size, 1, &img)) {
        fprintf(stderr, "generate: %s\n", sdc_last_error());
        return 1;
    }
    sdc_free_images(img, 1);
    printf("held-out run (prompt B, seed 9): %d matmul weights captured, %.1fs\n", b.n,
           now_s() - t0);

    double num[N_TYPES][2][2] = {{{0}}}, den[N_TYPES][2][2] = {{{0}}}; /* [type][imat][t5] */
    double qtime[N_TYPES] = {0};
    int64_t qelems[N_TYPES] = {0};
    int used[2] = {0};
    for (int i = 0; i < b.n; i++) {
        capture *c = &b.c[i];
        const sdc_tensor *w = c->w;
        int is_t5 = strncmp(c->name, "model.", 6) != 0;
        int64_t nrows = w->ne[1] < max_rows ? w->ne[1] : max_rows;
        if (w->ne[0] != c->k || w->ne[0] % 256) continue;
        used[is_t5]++;
        float *wref = malloc(sizeof(float) * (size_t)(nrows * c->k));
        float *wq = malloc(sizeof(float) * (size_t)(nrows * c->k));
        uint8_t *blk = malloc(sizeof(float) * (size_t)c->k + 1024);
        const sdc_type_traits *src = sdc_type_get(w->type);
        for (int64_t n = 0; n < nrows; n++)
            src->to_float((const char *)w->data + n * w->nb[1], wref + n * c->k, c->k);
        int e = sdc_imatrix_find(im, c->name);
        float *imp = malloc(sizeof(float) * (size_t)c->k);
        bool have_imp = e >= 0 && sdc_imatrix_values(im, e, imp);
        for (int ti = 0; ti < N_TYPES; ti++) {
            const sdc_type_traits *tr = sdc_type_get(sdc_type_from_name(k_types[ti]));
            for (int use = 0; use < 2; use++) {
                if (use && !have_imp) continue;
                double q0 = now_s();
                for (int64_t n = 0; n < nrows; n++) {
                    tr->from_float(wref + n * c->k, blk, c->k, use ? imp : NULL);
                    tr->to_float(blk, wq + n * c->k, c->k);
                }
                if (!use) qtime[ti] += now_s() - q0, qelems[ti] += nrows * c->k;
                matmul_err(c, wref, wq, nrows, &num[ti][use][is_t5], &den[ti][use][is_t5]);
            }
        }
        free(imp);
        free(wref);
        free(wq);
        free(blk);
    }
    printf("\nrelative L2 error of X W^T (quantised W vs F32), pooled over %d DiT and %d T5 "
           "weights,\n%lld output rows each at most, %d input rows each; quantise+dequantise "
           "speed on one thread\n\n",
           used[0], used[1], (long long)max_rows, MAX_X_ROWS);
    printf("| type | DiT plain | DiT imatrix | T5 plain | T5 imatrix | all plain | all imatrix | "
           "gain | Melem/s |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int ti = 0; ti < N_TYPES; ti++) {
        double r[2][2], all[2];
        for (int u = 0; u < 2; u++) {
            for (int m = 0; m < 2; m++) r[u][m] = sqrt(num[ti][u][m] / den[ti][u][m]);
            all[u] = sqrt((num[ti][u][0] + num[ti][u][1]) / (den[ti][u][0] + den[ti][u][1]));
        }
        printf("| %s | %.3e | %.3e | %.3e | %.3e | %.3e | %.3e | %.1f%% | %.1f |\n", k_types[ti],
               r[0][0], r[1][0], r[0][1], r[1][1], all[0], all[1], 100.0 * (1.0 - all[1] / all[0]),
               qelems[ti] / qtime[ti] * 1e-6);
    }
    for (int i = 0; i < b.n; i++) free(b.c[i].x);
    free(b.c);
    sdc_imatrix_free(im);
    ctx->eval_cb = NULL;
    sdc_context_free(ctx);
    return 0;
}

static double mse(const sdc_image *a, const sdc_image *b) {
    double se = 0;
    size_t n = (size_t)a->width * a->height * 3;
    for (size_t i = 0; i < n; i++) {
        double d = (double)a->data[i] - b->data[i];
        se += d * d;
    }
    return se / (double)n;
}

static double psnr_db(double mse_value) {
    return mse_value == 0 ? INFINITY : 10.0 * log10(255.0 * 255.0 / mse_value);
}

#define N_IMAGES 4
static const char *const k_prompts[N_IMAGES] = {"a red car on a hill, sunset", "a cat",
                                                "a bowl of soup on a wooden table",
                                                "mountains under a starry sky"};

/* Generates the N_IMAGES test images with weights converted to `type` on load. */
static bool run_type(const char *dit, const char *t5, const char *tok, int type,
                     const sdc_imatrix *use, sdc_imatrix *collect, sdc_image **out) {
    sdc_context_params cp;
    sdc_context_params_init(&cp);
    cp.diffusion_model_path = dit;
    cp.t5xxl_path = t5;
    cp.t5_tokenizer_path = tok;
    cp.weight_type = type;
    cp.imatrix = use;
    sdc_context *ctx;
    if (sdc_context_create(&cp, &ctx) != SDC_OK) {
        fprintf(stderr, "context: %s\n", sdc_last_error());
        return false;
    }
    if (collect) sdc_context_collect_imatrix(ctx, collect);
    bool ok = true;
    for (int i = 0; i < N_IMAGES && ok; i++) {
        sdc_generate_params p;
        sdc_generate_params_init(&p);
        /* the imatrix is collected on other prompts and seeds than the ones measured */
        p.prompt = collect ? k_prompts[(i + 1) % N_IMAGES] : k_prompts[i];
        p.width = p.height = 128;
        p.steps = 10;
        p.cfg_scale = 6;
        p.seed = collect ? 1000 + i : 42 + i;
        p.rng = "cpu";
        int n = 0;
        out[i] = NULL;
        if (sdc_generate_image(ctx, &p, &out[i], &n) != SDC_OK) {
            fprintf(stderr, "%s\n", sdc_last_error());
            ok = false;
        }
    }
    sdc_context_free(ctx);
    return ok;
}

static void free_all(sdc_image **imgs) {
    for (int i = 0; i < N_IMAGES; i++) sdc_free_images(imgs[i], 1), imgs[i] = NULL;
}

static int psnr_mode(const char *dit, const char *t5, const char *tok) {
    sdc_imatrix *im;
    sdc_imatrix_create(&im);
    sdc_image *ref[N_IMAGES] = {0}, *tmp[N_IMAGES] = {0};
    if (!run_type(dit, t5, tok, SDC_TYPE_F16, NULL, NULL, ref) ||
        !run_type(dit, t5, tok, -1, NULL, im, tmp))
        return 1;
    free_all(tmp);
    printf("PSNR (dB) vs the F16 images (MSE averaged over %d prompts/seeds), 128x128, 10 euler "
           "steps, CFG 6; imatrix collected on other prompts and seeds\n\n| type | plain | imatrix "
           "|\n|---|---|---|\n",
           N_IMAGES);
    static const char *const all[] = {"f32",  "bf16", "q8_0", "q6_K", "q5_1", "q5_0",
                                      "q5_K", "q4_1", "q4_0", "q4_K", "q3_K", "q2_K"};
    for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
        int t = sdc_type_from_name(all[k]);
        double m[2] = {0, 0};
        for (int use = 0; use < 2; use++) {
            if (!run_type(dit, t5, tok, t, use ? im : NULL, NULL, tmp)) return 1;
            for (int i = 0; i < N_IMAGES; i++) m[use] += mse(tmp[i], ref[i]) / N_IMAGES;
            free_all(tmp);
        }
        printf("| %s | %.2f | %.2f |\n", all[k], psnr_db(m[0]), psnr_db(m[1]));
    }
    free_all(ref);
    sdc_imatrix_free(im);
    return 0;
}

int main(int argc, char **argv) {
    const char *dit = NULL, *t5 = NULL, *tok = NULL;
    int size = 128, steps = 1, psnr_only = 0;
    int64_t rows = 128;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dit") && i + 1 < argc)
            dit = argv[++i];
        else if (!strcmp(argv[i], "--t5") && i + 1 < argc)
            t5 = argv[++i];
        else if (!strcmp(argv[i], "--tok") && i + 1 < argc)
            tok = argv[++i];
        else if (!strcmp(argv[i], "--size") && i + 1 < argc)
            size = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc)
            rows = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--psnr"))
            psnr_only = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--psnr] --dit DIT --t5 T5 [--tok TOKENIZER] [--size N] "
                    "[--steps N] [--rows N]\n",
                    argv[0]);
            return 2;
        }
    }
    if (!dit || !t5) {
        fprintf(stderr, "--dit and --t5 are required\n");
        return 2;
    }
    return psnr_only ? psnr_mode(dit, t5, tok) : matmul_mode(dit, t5, tok, size, steps, rows);
}
