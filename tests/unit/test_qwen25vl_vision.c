/* Qwen2.5-VL vision tower (src/models/qwen25vl_vision.c) against tests/data/qwen_vision (made by
 * tests/golden/gen_qwen25vl_vision_ref.py): transformers' Qwen2_5_VisionTransformerPretrainedModel
 * in float64 on a small random tower (hidden 64, 4 heads of 16, 3 blocks with block 1 full
 * attention and 0, 2 windowed, window 56 px = 2x2 merged units, merger to 128), patches laid
 * out by transformers' Qwen2VLImageProcessor, for two images (112x84: 4 ragged windows;
 * 140x56: 3 windows):
 *  - the merged patches (what replaces the image pads), in row-major grid order;
 *  - the same with every layer full attention (must differ: the windows matter);
 *  - sd.cpp's resize rule for Edit reference images and its clip_preprocess, against values
 *    worked out by hand from sd.cpp's formulas;
 *  - the same tower under llama.cpp's mmproj names (q/k/v apart, the patch kernel per frame);
 *  - bad input (size not a multiple of 28, a misshapen tensor). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include "core/backend.h"
#include "models/qwen25vl_vision.h"
#include "st_weights.h"
#include "test_util.h"

#define DATA(f)  SDC_SOURCE_DIR "/tests/data/qwen_vision/" f
#define LLM_DATA SDC_SOURCE_DIR "/tests/data/qwen_text/qwen25vl_tiny.safetensors"
/* The Edit conditioning through the tiny LLM (states |max| 4.2): measured 5.7e-6, ~4x that.
 * Without the vision rows (plain pad tokens' embeddings) it is of order 1 away. */
#define TOL_EDIT 2.5e-5

/* Max abs error against float64 (outputs |max| 2.4 .. 2.8): F32 rounding only; measured
 * 1.7e-6 / 2.0e-6, ~5x that. Every layer full attention instead is 1.2 away. */
#define TOL 1e-5

static sdc_st_file *ref;

/* The test helper keeps 4 dims; fold the Conv3d's [O, C, T, P, P] as the model loader does. */
static void fold_5d(st_weights *w) {
    for (int i = 0; i < w->n; i++) {
        const sdc_st_tensor *e = sdc_st_at(w->f, i);
        if (e->ndim == 5) {
            w->t[i].ne[3] = e->shape[0] * e->shape[1];
            sdc_tensor_set_contiguous_strides(&w->t[i]);
        }
    }
}

static double run_case(sdc_qwen25vl_vision *m, sdc_backend *be, const char *c, int w, int h,
                       double tol, const char *label) {
    char name[64];
    snprintf(name, sizeof name, "image.%s", c);
    int64_t ni = 0, nr = 0;
    float *img = st_read_f32(ref, name, &ni);
    snprintf(name, sizeof name, "merged.%s", c);
    float *r = st_read_f32(ref, name, &nr);
    const sdc_qwen25vl_vision_config *cf = sdc_qwen25vl_vision_get_config(m);
    int nt = sdc_qwen25vl_vision_tokens(m, w, h);
    CHECK(img && r && ni == 3LL * w * h && nr == (int64_t)nt * cf->out_hidden,
          "%s: reference missing or of the wrong size", c);
    double err = INFINITY;
    if (img && r && ni == 3LL * w * h && nr == (int64_t)nt * cf->out_hidden) {
        float *out = malloc((size_t)nr * sizeof *out);
        sdc_status s = sdc_qwen25vl_vision_encode(m, be, img, w, h, out, NULL, NULL);
        CHECK(s == SDC_OK, "%s: %s", c, sdc_last_error());
        if (s == SDC_OK) {
            err = t_max_abs_diff(out, r, (long)nr);
            printf("  %-28s %s (%dx%d, %d tokens): max abs err %.3g (tol %.2g)\n", label, c, w, h,
                   nt, err, tol);
            if (tol > 0) CHECK(err <= tol, "%s %s: max abs err %g > %g", label, c, err, tol);
        }
        free(out);
    }
    free(img);
    free(r);
    return err;
}

/* The tiny tower under llama.cpp's mmproj names (clip.cpp's layout: q/k/v apart, the patch
 * kernel per frame), made from the transformers-named tensors: views of the fused qkv's rows,
 * copies of each frame of the Conv3d kernel. */
typedef struct mmproj_src {
    sdc_tensor t[96];
    float *frame[2];
    int n;
} mmproj_src;

static sdc_tensor *mmproj_find(void *user, const char *name) {
    mmproj_src *m = user;
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->t[i].name, name)) return &m->t[i];
    return NULL;
}

static void mmproj_add(mmproj_src *m, const sdc_weight_source *hf, const char *to, const char *from,
                       int part) {
    sdc_tensor *src = sdc_weight_find(hf, "", from);
    if (!src || m->n == 96) return;
    sdc_tensor *t = &m->t[m->n++];
    *t = *src;
    snprintf(t->name, sizeof t->name, "%s", to);
    if (part < 0) return;
    /* one third of the fused qkv: rows (ne[1]) of a weight, elements of a bias */
    int d = src->ne[1] > 1 ? 1 : 0;
    t->ne[d] = src->ne[d] / 3;
    sdc_tensor_set_contiguous_strides(t);
    t->data = (char *)src->data + (size_t)part * t->ne[d] * src->nb[d];
}

static void mmproj_open(mmproj_src *m, const sdc_weight_source *hf, sdc_weight_source *ws) {
    static const char *const ren[][2] = {{"ln1", "norm1"},          {"ln2", "norm2"},
                                         {"attn_out", "attn.proj"}, {"ffn_gate", "mlp.gate_proj"},
                                         {"ffn_up", "mlp.up_proj"}, {"ffn_down", "mlp.down_proj"}};
    char to[96], from[96];
    memset(m, 0, sizeof *m);
    for (int l = 0; l < 3; l++)
        for (int k = 0; k < 2; k++) {
            const char *suf = k ? "bias" : "weight";
            snprintf(from, sizeof from, "visual.blocks.%d.attn.qkv.%s", l, suf);
            for (int p = 0; p < 3; p++) {
                snprintf(to, sizeof to, "v.blk.%d.attn_%c.%s", l, "qkv"[p], suf);
                mmproj_add(m, hf, to, from, p);
            }
            for (size_t r = 0; r < sizeof ren / sizeof ren[0]; r++) {
                snprintf(to, sizeof to, "v.blk.%d.%s.%s", l, ren[r][0], suf);
                snprintf(from, sizeof from, "visual.blocks.%d.%s.%s", l, ren[r][1], suf);
                mmproj_add(m, hf, to, from, -1);
            }
        }
    mmproj_add(m, hf, "v.post_ln.weight", "visual.merger.ln_q.weight", -1);
    mmproj_add(m, hf, "mm.0.weight", "visual.merger.mlp.0.weight", -1);
    mmproj_add(m, hf, "mm.0.bias", "visual.merger.mlp.0.bias", -1);
    mmproj_add(m, hf, "mm.2.weight", "visual.merger.mlp.2.weight", -1);
    mmproj_add(m, hf, "mm.2.bias", "visual.merger.mlp.2.bias", -1);
    /* the Conv3d [O, C, T, P, P] (folded to ne [P, P, T, O*C]) as two [O, C, P, P] kernels */
    const sdc_tensor *pw = sdc_weight_find(hf, "", "visual.patch_embed.proj.weight");
    int64_t P = pw->ne[0], T = pw->ne[2], OC = pw->ne[3];
    for (int f = 0; f < 2; f++) {
        m->frame[f] = malloc((size_t)(OC * P * P) * sizeof(float));
        for (int64_t oc = 0; oc < OC; oc++)
            memcpy(m->frame[f] + oc * P * P, (const float *)pw->data + (oc * T + f) * P * P,
                   (size_t)(P * P) * sizeof(float));
        sdc_tensor *t = &m->t[m->n++];
        memset(t, 0, sizeof *t);
        t->type = SDC_TYPE_F32;
        t->ne[0] = P, t->ne[1] = P, t->ne[2] = 3, t->ne[3] = OC / 3;
        sdc_tensor_set_contiguous_strides(t);
        t->data = m->frame[f];
        t->flags = SDC_TENSOR_PARAM;
        snprintf(t->name, sizeof t->name, "%s",
                 f ? "v.patch_embd.weight.1" : "v.patch_embd.weight");
    }
    ws->find = mmproj_find;
    ws->user = m;
}

/* Sizes from sd.cpp's rule (conditioner.hpp, QwenImageEditPlusPipeline, AREA mode) worked out
 * in Python doubles: {w, h, min, max, expected w, expected h}; min = max: a fixed area. */
static void resize_rule(void) {
    static const int cases[][6] = {{1024, 1024, 0, 0, 560, 560},      {1920, 1080, 0, 0, 728, 392},
                                   {300, 200, 0, 0, 476, 336},        {512, 768, 0, 0, 448, 672},
                                   {448, 448, 0, 0, 448, 448},        {1000, 30, 0, 0, 2240, 84},
                                   {100, 100, 40000, 40000, 196, 196}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int *c = cases[i];
        int w = 0, h = 0;
        sdc_qwen25vl_vision_resize_dims(c[0], c[1], 28, c[2], c[3], SDC_QWEN25VL_RESIZE_AREA, &w,
                                        &h);
        printf("  resize %4dx%-4d (min %d, max %d) -> %dx%d (expected %dx%d)\n", c[0], c[1], c[2],
               c[3], w, h, c[4], c[5]);
        CHECK(w == c[4] && h == c[5], "resize %dx%d: %dx%d, expected %dx%d", c[0], c[1], w, h, c[4],
              c[5]);
    }
}

/* The same rule in sd.cpp's LONGEST_SIDE and NONE modes (--ref-image-args vlm_resize_mode),
 * worked out in Python doubles from conditioner.hpp's resize_image_dims: {w, h, min, max,
 * mode, expected w, expected h}; min and max bound the longest side (defaults 384, 560). */
static void resize_rule_modes(void) {
    static const int L = SDC_QWEN25VL_RESIZE_LONGEST_SIDE, N = SDC_QWEN25VL_RESIZE_NONE;
    static const int cases[][7] = {
        {1920, 1080, 0, 0, L, 560, 308},   {300, 200, 0, 0, L, 392, 280},
        {240, 180, 0, 336, L, 392, 308},   {1000, 30, 0, 0, L, 560, 28},
        {500, 400, 768, 768, L, 756, 616}, {240, 180, 100, 200, L, 196, 140},
        {240, 180, 0, 0, N, 252, 168},     {1921, 1079, 0, 0, N, 1932, 1092}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const int *c = cases[i];
        int w = 0, h = 0;
        sdc_qwen25vl_vision_resize_dims(c[0], c[1], 28, c[2], c[3], (sdc_qwen25vl_resize)c[4], &w,
                                        &h);
        printf("  resize %4dx%-4d (min %d, max %d, mode %d) -> %dx%d (expected %dx%d)\n", c[0],
               c[1], c[2], c[3], c[4], w, h, c[5], c[6]);
        CHECK(w == c[5] && h == c[6], "resize mode %d %dx%d: %dx%d, expected %dx%d", c[4], c[0],
              c[1], w, h, c[5], c[6]);
    }
}

/* clip_preprocess on two tiny images: 3x2 -> 6x4 (nearest upscale by 2, every source pixel
 * twice) and 6x2 -> 2x2 (scale 1, centre crop of columns 2..3); out = (clamp(v) - mean)/std. */
static void preprocess(void) {
    static const double mean[3] = {0.48145466, 0.4578275, 0.40821073};
    static const double sd[3] = {0.26862954, 0.26130258, 0.27577711};
    float rgb[6 * 2 * 3], out[3 * 6 * 4];
    for (int i = 0; i < 36; i++)
        rgb[i] = (float)((i * 7) % 13) / 10.0f - 0.1f; /* some out of [0,1] */
    double err = 0;
    CHECK(sdc_qwen25vl_vision_preprocess(rgb, 3, 2, 6, 4, out) == SDC_OK, "preprocess up");
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 6; x++) {
                double v = rgb[((y / 2) * 3 + x / 2) * 3 + c];
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                err = fmax(err, fabs((v - mean[c]) / sd[c] - out[(c * 4 + y) * 6 + x]));
            }
    CHECK(sdc_qwen25vl_vision_preprocess(rgb, 6, 2, 2, 2, out) == SDC_OK, "preprocess crop");
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < 2; y++)
            for (int x = 0; x < 2; x++) {
                double v = rgb[(y * 6 + x + 2) * 3 + c];
                v = v < 0 ? 0 : v > 1 ? 1 : v;
                err = fmax(err, fabs((v - mean[c]) / sd[c] - out[(c * 2 + y) * 2 + x]));
            }
    printf("  clip_preprocess (upscale, crop): max abs err %.3g (tol 1e-5)\n", err);
    CHECK(err <= 1e-5, "clip_preprocess: max abs err %g", err);
}

/* Vision rows of img0 and img1 spliced into 110 ids at rows 70 and 90 of the tiny LLM, rows
 * from 64 on (the prefix from the cache), against transformers with inputs_embeds. */
static void edit_llm(sdc_qwen25vl_vision *v, sdc_backend *be) {
    st_weights lw;
    sdc_weight_source lws;
    sdc_qwen25vl_llm *llm = NULL;
    CHECK(st_weights_open(&lw, LLM_DATA, &lws) == 0, "open %s", LLM_DATA);
    CHECK(sdc_qwen25vl_llm_load(&lws, "", 32, &llm) == SDC_OK, "llm: %s", sdc_last_error());
    int64_t nid = 0, nr = 0, n0 = 0, n1 = 0;
    float *fid = st_read_f32(ref, "edit.ids", &nid), *r = st_read_f32(ref, "edit.hidden", &nr);
    float *i0 = st_read_f32(ref, "image.img0", &n0), *i1 = st_read_f32(ref, "image.img1", &n1);
    if (llm && fid && r && i0 && i1 && nid == 110 && nr == 46 * 128) {
        int32_t ids[110];
        for (int i = 0; i < 110; i++) ids[i] = (int32_t)fid[i];
        float e0[12 * 128], e1[10 * 128], *out = malloc(46 * 128 * sizeof *out);
        CHECK(sdc_qwen25vl_vision_encode(v, be, i0, 112, 84, e0, NULL, NULL) == SDC_OK &&
                  sdc_qwen25vl_vision_encode(v, be, i1, 140, 56, e1, NULL, NULL) == SDC_OK,
              "vision: %s", sdc_last_error());
        sdc_qwen25vl_llm_span sp[2] = {{70, 12, e0}, {90, 10, e1}};
        sdc_status s =
            sdc_qwen25vl_llm_encode_spans(llm, be, ids, 110, 64, 0, sp, 2, out, NULL, NULL);
        CHECK(s == SDC_OK, "encode_spans: %s", sdc_last_error());
        double err = s ? INFINITY : t_max_abs_diff(out, r, 46 * 128);
        printf("  edit conditioning (2 images spliced, rows 64..109): max abs err %.3g (tol "
               "%.2g)\n",
               err, TOL_EDIT);
        CHECK(err <= TOL_EDIT, "edit conditioning: max abs err %g", err);
        s = sdc_qwen25vl_llm_encode(llm, be, ids, 110, 64, 0, out, NULL, NULL);
        err = s ? 0 : t_max_abs_diff(out, r, 46 * 128);
        printf("  without the vision rows (wrong): max abs err %.3g\n", err);
        CHECK(err > 100 * TOL_EDIT, "the spliced rows make no difference (%g)", err);
        sdc_qwen25vl_llm_span bad[2] = {{60, 12, e0}, {90, 10, e1}};
        CHECK(sdc_qwen25vl_llm_encode_spans(llm, be, ids, 110, 64, 0, bad, 2, out, NULL, NULL) !=
                  SDC_OK,
              "a span inside the cached prefix accepted");
        sdc_qwen25vl_llm_span over[2] = {{70, 12, e0}, {75, 10, e1}};
        CHECK(sdc_qwen25vl_llm_encode_spans(llm, be, ids, 110, 64, 0, over, 2, out, NULL, NULL) !=
                  SDC_OK,
              "overlapping spans accepted");
        free(out);
    } else {
        CHECK(0, "edit reference or llm missing");
    }
    free(fid);
    free(r);
    free(i0);
    free(i1);
    sdc_qwen25vl_llm_free(llm);
    st_weights_close(&lw);
}

/* The Edit template with the golden set's stand-in tokenizer (skipped without it): the pads
 * found where they were put, the states after the 64 dropped ones, spliced as above. */
static void edit_template(void) {
    struct stat sb;
    if (stat(GOLDEN("qwen_image/tokenizer/tokenizer.json"), &sb) != 0) {
        printf("  %s absent: template check skipped\n", GOLDEN("qwen_image/tokenizer"));
        return;
    }
    sdc_qwen2_tokenizer *tok = NULL;
    CHECK(sdc_qwen2_tokenizer_load(GOLDEN("qwen_image/tokenizer/tokenizer.json"), &tok) == SDC_OK,
          "tokenizer: %s", sdc_last_error());
    if (!tok) return;
    int32_t pad = sdc_qwen2_tokenizer_find(tok, "<|image_pad|>");
    int32_t vs = sdc_qwen2_tokenizer_find(tok, "<|vision_start|>");
    int32_t ve = sdc_qwen2_tokenizer_find(tok, "<|vision_end|>");
    int pads[2] = {12, 10}, at[2] = {0, 0}, n = 0, drop = 0;
    int32_t *ids = NULL;
    for (int labels = 0; labels < 2; labels++) {
        sdc_status s = sdc_qwen_image_edit_prompt_tokens(tok, "make it blue", 2, pads, labels, &ids,
                                                         &n, &drop, at);
        CHECK(s == SDC_OK, "edit tokens: %s", sdc_last_error());
        if (s) continue;
        int npad = 0;
        for (int i = 0; i < n; i++) npad += ids[i] == pad;
        printf("  edit template (labels %d): %d ids, drop %d, pads at %d and %d, %d pads\n", labels,
               n, drop, at[0], at[1], npad);
        CHECK(drop == 64 && npad == 22 && at[0] > 64 && ids[at[0] - 1] == vs &&
                  ids[at[0] + 12] == ve && ids[at[1] - 1] == vs && ids[at[1] + 10] == ve,
              "edit template layout");
        free(ids);
    }
    sdc_qwen2_tokenizer_free(tok);
}

int main(void) {
    resize_rule();
    resize_rule_modes();
    preprocess();
    if (sdc_st_open(DATA("qwen25vl_vision_ref.safetensors"), &ref) != SDC_OK) {
        fprintf(stderr, "cannot open the reference: %s\n", sdc_last_error());
        return 1;
    }
    sdc_backend *be = sdc_backend_cpu_create(2);
    st_weights sw;
    sdc_weight_source ws;
    CHECK(st_weights_open(&sw, DATA("qwen25vl_vision_tiny.safetensors"), &ws) == 0, "weights");
    fold_5d(&sw);
    CHECK(sdc_qwen25vl_vision_detect(&ws, ""), "vision tower not detected");
    CHECK(!sdc_qwen25vl_vision_detect(&ws, "model."), "detected under a wrong prefix");
    sdc_qwen25vl_vision *m = NULL, *mf = NULL;
    CHECK(sdc_qwen25vl_vision_load(&ws, "", 16, 56, 1u << 1, &m) == SDC_OK, "load: %s",
          sdc_last_error());
    CHECK(sdc_qwen25vl_vision_load(&ws, "", 16, 56, 7u, &mf) == SDC_OK, "load: %s",
          sdc_last_error());
    if (m && mf) {
        const sdc_qwen25vl_vision_config *c = sdc_qwen25vl_vision_get_config(m);
        printf("config: %d layers, hidden %d, %d heads of %d, mlp %d, out %d, patch %d x %d, "
               "merge %d, window %d\n",
               c->n_layers, c->hidden, c->n_heads, c->head_dim, c->mlp, c->out_hidden,
               c->temporal_patch, c->patch, c->merge, c->window);
        CHECK(c->n_layers == 3 && c->hidden == 64 && c->n_heads == 4 && c->mlp == 96 &&
                  c->out_hidden == 128 && c->patch == 14 && c->temporal_patch == 2,
              "tiny config");
        run_case(m, be, "img0", 112, 84, TOL, "window attention");
        run_case(m, be, "img1", 140, 56, TOL, "window attention");
        /* all layers full: the windows must make a difference the test can see */
        double e = run_case(mf, be, "img0", 112, 84, 0, "all full attention (wrong)");
        CHECK(e > 100 * TOL, "full attention everywhere matches the reference (%g)", e);
        edit_llm(m, be);
        /* the same tower from llama.cpp's mmproj names: transformers' outputs still */
        mmproj_src mp;
        sdc_weight_source mws;
        mmproj_open(&mp, &ws, &mws);
        sdc_qwen25vl_vision *mm = NULL;
        CHECK(sdc_qwen25vl_vision_detect(&mws, "") &&
                  sdc_qwen25vl_vision_load(&mws, "", 16, 56, 1u << 1, &mm) == SDC_OK,
              "mmproj names (%d tensors): %s", mp.n, sdc_last_error());
        if (mm) {
            run_case(mm, be, "img0", 112, 84, TOL, "mmproj names");
            run_case(mm, be, "img1", 140, 56, TOL, "mmproj names");
        }
        sdc_qwen25vl_vision_free(mm);
        free(mp.frame[0]);
        free(mp.frame[1]);
        float img[28 * 28 * 3] = {0}, out[128];
        CHECK(sdc_qwen25vl_vision_encode(m, be, img, 28, 27, out, NULL, NULL) != SDC_OK,
              "27 rows accepted");
        CHECK(sdc_qwen25vl_vision_encode(m, be, img, 28, 28, out, NULL, NULL) == SDC_OK,
              "one 28x28 image: %s", sdc_last_error());
    }
    /* a misshapen tensor, and the real models' head_dim 80 on a 64-wide tower: refused */
    for (int i = 0; i < sw.n; i++)
        if (!strcmp(sw.t[i].name, "visual.blocks.1.attn.proj.bias")) {
            sdc_qwen25vl_vision *bad = NULL;
            sw.t[i].ne[0]--;
            CHECK(sdc_qwen25vl_vision_load(&ws, "", 16, 56, 2, &bad) != SDC_OK && !bad,
                  "misshapen proj.bias accepted");
            printf("  rejects a misshapen tensor: %s\n", sdc_last_error());
            sw.t[i].ne[0]++;
        }
    sdc_qwen25vl_vision *bad = NULL;
    CHECK(sdc_qwen25vl_vision_load(&ws, "", 0, 0, 0, &bad) != SDC_OK && !bad,
          "head_dim 80 on width 64 accepted");
    printf("  rejects the default head_dim here: %s\n", sdc_last_error());
    edit_template();
    sdc_qwen25vl_vision_free(m);
    sdc_qwen25vl_vision_free(mf);
    st_weights_close(&sw);
    sdc_st_close(ref);
    sdc_backend_free(be);
    TEST_MAIN_END();
}
