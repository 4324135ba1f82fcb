/* sdc-demo: the demo model's quality check from the command line (docs/demo.md).
 *   sdc-demo score DIR [--shuffle]   scores DIR/0000.png ... against DIR/captions.txt
 *   sdc-demo eval [options]          generates held-back (or training) prompts and scores them
 * Both print the per-attribute accuracy; eval also the PSNR against --ref DIR's pictures. */
#include "score.h"

#include "sampling/schedulers.h"
#include "sdc.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PROMPTS 4096

static void usage(FILE *f) {
    fprintf(f,
            "usage: sdc-demo score DIR [--shuffle]\n"
            "       sdc-demo eval [-m PATH|demo] [--diffusion-model F --t5xxl F] [--n N]\n"
            "                     [--split heldback|train] [--steps N] [--cfg-scale X]\n"
            "                     [--sampling-method S] [-s SEED] [-t N] [-o DIR] [--ref DIR]\n"
            "                     [--sigmas S0,S1,...] [--imat-out FILE] [-v]\n"
            "score: DIR holds captions.txt (one caption a line) and 0000.png, 0001.png, ...;\n"
            "  --shuffle scores picture i against caption (97 i + 13) mod n (must score low).\n"
            "eval: generates --n prompts (default 120) spread over the split's scenes with the\n"
            "  demo model's settings (seed s+i for prompt i), writes DIR/NNNN.png + captions.txt\n"
            "  when -o is given, and the PSNR against --ref DIR (same names) when given;\n"
            "  --sigmas replaces the schedule (and sets the steps), as sd-cli's.\n");
}

static void report(const char *what, const demo_tally *t) {
    char line[512];
    printf("%s: %s\n", what, demo_tally_line(t, line, sizeof line));
}

static void print_reading(int i, const char *caption, const demo_reading *r) {
    printf("  %4d %-60s -> %s %s on %s, %s %s (area %d fill %.2f widen %.2f)\n", i, caption,
           r->found.colour >= 0 ? demo_colour_names[r->found.colour] : "-",
           r->found.shape >= 0 ? demo_shape_names[r->found.shape] : "-",
           r->found.bg >= 0 ? demo_colour_names[r->found.bg] : "-",
           r->found.size >= 0 ? (const char *[]){"small", "medium", "large"}[r->found.size] : "-",
           r->found.pos >= 0
               ? (const char *[]){"left", "right", "top", "bottom", "centre"}[r->found.pos]
               : "-",
           r->area, r->fill, r->widen);
}

/* ---- score DIR ---- */

static int score_dir(const char *dir, bool shuffle, bool verbose) {
    char path[4096];
    snprintf(path, sizeof path, "%s/captions.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "sdc-demo: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    static char caps[MAX_PROMPTS][256];
    int n = 0;
    while (n < MAX_PROMPTS && fgets(caps[n], sizeof caps[n], f)) {
        caps[n][strcspn(caps[n], "\r\n")] = '\0';
        if (caps[n][0]) n++;
    }
    fclose(f);
    demo_tally t = {0};
    int unparsed = 0;
    for (int i = 0; i < n; i++) {
        /* a fixed permutation far from the identity (97 is prime to any n < 97^2 here) */
        const char *cap = caps[shuffle ? (int)(((long)i * 97 + 13) % n) : i];
        demo_spec want;
        if (!demo_parse_caption(cap, &want)) { /* two shapes, stripes: not scored */
            unparsed++;
            continue;
        }
        snprintf(path, sizeof path, "%s/%04d.png", dir, i);
        sdc_image img = {0};
        if (sdc_image_load(path, &img) != SDC_OK) {
            fprintf(stderr, "sdc-demo: %s\n", sdc_last_error());
            return 1;
        }
        demo_reading r;
        demo_score_image(img.data, (int)img.width, (int)img.height, &want, &r);
        sdc_image_free(&img);
        demo_tally_add(&t, &r);
        if (verbose) print_reading(i, cap, &r);
    }
    if (unparsed) printf("%d captions outside the single-shape grammar not scored\n", unparsed);
    report(shuffle ? "shuffled captions" : "score", &t);
    return 0;
}

/* ---- eval ---- */

typedef struct eval_opts {
    sdc_context_params cp;
    sdc_generate_params gp;
    bool steps_set, cfg_set, sampler_set, held_back, verbose;
    int n;
    const char *out_dir, *ref_dir, *imat_out;
} eval_opts;

static int parse_eval(int argc, char **argv, eval_opts *o) {
    sdc_context_params_init(&o->cp);
    sdc_generate_params_init(&o->gp);
    o->gp.seed = 1;
    o->gp.rng = "cpu";
    o->n = 120;
    o->held_back = true;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = strcmp(a, "-v");
        if (takes && !v) {
            fprintf(stderr, "sdc-demo: %s needs a value\n", a);
            return 1;
        }
        if (!strcmp(a, "-v"))
            o->verbose = true;
        else if (!strcmp(a, "-m"))
            o->cp.model_path = v;
        else if (!strcmp(a, "--diffusion-model"))
            o->cp.diffusion_model_path = v;
        else if (!strcmp(a, "--t5xxl"))
            o->cp.t5xxl_path = v;
        else if (!strcmp(a, "--n"))
            o->n = atoi(v);
        else if (!strcmp(a, "--split"))
            o->held_back = strcmp(v, "train") != 0;
        else if (!strcmp(a, "--steps"))
            o->gp.steps = atoi(v), o->steps_set = true;
        else if (!strcmp(a, "--cfg-scale"))
            o->gp.cfg_scale = (float)atof(v), o->cfg_set = true;
        else if (!strcmp(a, "--sampling-method"))
            o->gp.sampling_method = v, o->sampler_set = true;
        else if (!strcmp(a, "-s"))
            o->gp.seed = atoll(v);
        else if (!strcmp(a, "-t"))
            o->cp.n_threads = atoi(v);
        else if (!strcmp(a, "-o"))
            o->out_dir = v;
        else if (!strcmp(a, "--ref"))
            o->ref_dir = v;
        else if (!strcmp(a, "--imat-out"))
            o->imat_out = v;
        else if (!strcmp(a, "--sigmas")) { /* as sd-cli: a custom schedule sets the steps */
            static float sig[256];
            int k = 0;
            if (sdc_parse_sigmas(v, sig, 256, &k) != SDC_OK) { /* also refuses < 2 values */
                fprintf(stderr, "sdc-demo: --%s\n", sdc_last_error());
                return 1;
            }
            o->gp.sigmas = sig, o->gp.n_sigmas = k, o->gp.steps = k - 1, o->steps_set = true;
        } else {
            fprintf(stderr, "sdc-demo: unknown option '%s'\n", a);
            usage(stderr);
            return 1;
        }
        if (takes) i++;
    }
    if (!o->cp.model_path && !o->cp.diffusion_model_path) o->cp.model_path = "demo";
    /* the demo's settings (filled in even when its folder is not found: other files given) */
    sdc_demo_model d;
    sdc_demo_model_find(NULL, &d);
    o->gp.width = d.width, o->gp.height = d.height;
    if (!o->steps_set) o->gp.steps = d.steps;
    if (!o->cfg_set) o->gp.cfg_scale = d.cfg_scale;
    if (!o->sampler_set) o->gp.sampling_method = d.sampling_method;
    if (o->n < 1 || o->n > MAX_PROMPTS) {
        fprintf(stderr, "sdc-demo: --n must be 1..%d\n", MAX_PROMPTS);
        return 1;
    }
    return 0;
}

/* Adds the squared differences of img and DIR/NNNN.png to *sum_sq (false if unreadable). */
static bool add_ref_error(const char *dir, int i, const sdc_image *img, double *sum_sq) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%04d.png", dir, i);
    sdc_image ref = {0};
    if (sdc_image_load(path, &ref) != SDC_OK) return false;
    bool same = ref.width == img->width && ref.height == img->height;
    size_t n = (size_t)img->width * img->height * 3;
    for (size_t k = 0; same && k < n; k++) {
        double d = (double)img->data[k] - ref.data[k];
        *sum_sq += d * d;
    }
    sdc_image_free(&ref);
    return same;
}

static int eval(int argc, char **argv) {
    eval_opts o = {0};
    if (parse_eval(argc, argv, &o)) return 1;
    static demo_spec specs[MAX_PROMPTS];
    int n = demo_pick_specs(o.held_back, o.n, specs);
    sdc_context *ctx = NULL;
    sdc_imatrix *im = NULL;
    if (sdc_context_create(&o.cp, &ctx) != SDC_OK ||
        (o.imat_out &&
         (sdc_imatrix_create(&im) != SDC_OK || sdc_context_collect_imatrix(ctx, im) != SDC_OK))) {
        fprintf(stderr, "sdc-demo: %s\n", sdc_last_error());
        sdc_context_free(ctx);
        return 1;
    }
    printf("%s; %d %s prompts, %dx%d, %d steps, cfg %.1f, %s, seeds %lld..\n",
           sdc_context_describe(ctx), n, o.held_back ? "held-back" : "training", o.gp.width,
           o.gp.height, o.gp.steps, o.gp.cfg_scale,
           o.gp.sampling_method ? o.gp.sampling_method : "default", (long long)o.gp.seed);
    FILE *caps = NULL;
    char path[4096];
    if (o.out_dir) {
        mkdir(o.out_dir, 0755);
        snprintf(path, sizeof path, "%s/captions.txt", o.out_dir);
        if (!(caps = fopen(path, "w"))) {
            fprintf(stderr, "sdc-demo: cannot write %s: %s\n", path, strerror(errno));
            sdc_context_free(ctx);
            return 1;
        }
    }
    demo_tally t = {0};
    double sum_sq = 0, ref_bytes = 0;
    int rc = 0;
    int64_t seed0 = o.gp.seed;
    for (int i = 0; i < n && !rc; i++) {
        char caption[256];
        demo_caption(&specs[i], caption, sizeof caption);
        o.gp.prompt = caption;
        o.gp.seed = seed0 + i;
        sdc_image *imgs = NULL;
        int count = 0;
        if (sdc_generate_image(ctx, &o.gp, &imgs, &count) != SDC_OK || count < 1) {
            fprintf(stderr, "sdc-demo: '%s': %s\n", caption, sdc_last_error());
            rc = 1;
            break;
        }
        demo_reading r;
        demo_score_image(imgs[0].data, (int)imgs[0].width, (int)imgs[0].height, &specs[i], &r);
        demo_tally_add(&t, &r);
        if (o.verbose) print_reading(i, caption, &r);
        if (o.ref_dir && add_ref_error(o.ref_dir, i, &imgs[0], &sum_sq))
            ref_bytes += (double)imgs[0].width * imgs[0].height * 3;
        if (caps) {
            fprintf(caps, "%s\n", caption);
            snprintf(path, sizeof path, "%s/%04d.png", o.out_dir, i);
            if (sdc_image_save(path, &imgs[0], NULL, 0) != SDC_OK) {
                fprintf(stderr, "sdc-demo: %s\n", sdc_last_error());
                rc = 1;
            }
        }
        sdc_free_images(imgs, count);
    }
    if (caps) fclose(caps);
    if (!rc) {
        report("eval", &t);
        if (o.ref_dir)
            printf("PSNR vs %s: %.2f dB over %.0f pictures\n", o.ref_dir,
                   demo_psnr(sum_sq, ref_bytes), ref_bytes / (3.0 * o.gp.width * o.gp.height));
    }
    if (!rc && im && sdc_imatrix_save(im, o.imat_out) != SDC_OK) {
        fprintf(stderr, "sdc-demo: %s\n", sdc_last_error());
        rc = 1;
    }
    sdc_imatrix_free(im);
    sdc_context_free(ctx);
    return rc;
}

int main(int argc, char **argv) {
    if (argc >= 3 && !strcmp(argv[1], "score")) {
        bool shuffle = false, verbose = false;
        for (int i = 3; i < argc; i++) {
            shuffle |= !strcmp(argv[i], "--shuffle");
            verbose |= !strcmp(argv[i], "-v");
        }
        return score_dir(argv[2], shuffle, verbose);
    }
    if (argc >= 2 && !strcmp(argv[1], "eval")) return eval(argc, argv);
    usage(argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? stdout : stderr);
    return argc >= 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) ? 0 : 2;
}
