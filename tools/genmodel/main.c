/* sdc-genmodel: writes random-initialised MiniT2I DiT and T5 encoder safetensors in the
 * exact Hugging Face layout and names (plus a small unigram tokenizer.json), at tiny test
 * size or at full size (MiniT2I-B/16 + flan-t5-large shapes), so loading, config detection
 * and speed can be exercised without downloading real weights. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fp16.h"
#include "io/safetensors_writer.h"

typedef struct preset {
    const char *name;
    int hidden, heads, n_double, n_preamble, patch, pca, mlp, txt_input; /* DiT */
    int t5_layers, t5_d, t5_heads, t5_ff, t5_vocab;                      /* T5 */
} preset;

static const preset k_presets[] = {
    /* the golden set-A shapes */
    {"tiny", 128, 2, 2, 1, 16, 32, 344, 128, 2, 128, 2, 256, 1000},
    /* tiny with more blocks (6 double, 2 text, 6 T5 layers): layer-split tests */
    {"deep", 128, 2, 6, 2, 16, 32, 344, 128, 6, 128, 2, 256, 1000},
    /* MiniT2I-B/16 with flan-t5-large */
    {"b16", 768, 12, 17, 2, 16, 128, 2048, 1024, 24, 1024, 16, 2816, 32128},
};

typedef struct gen_tensor {
    float scale;   /* std of the uniform init; <0: constant 1 + small noise (norm weights) */
    bool keep_f32; /* 1-D tensors, mask_token, relative bias */
} gen_tensor;

typedef struct generator {
    sdc_st_writer *w;
    gen_tensor *t;
    int n, cap;
    bool f16;
    uint64_t state;
} generator;

static double next_uniform(uint64_t *s) { /* xorshift64*, in [-1, 1) */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ULL) >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

static int add(generator *g, const char *name, int ndim, const int64_t *shape, float scale,
               bool keep_f32) {
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 256;
        g->t = realloc(g->t, (size_t)g->cap * sizeof *g->t);
        if (!g->t) return -1;
    }
    bool f32 = !g->f16 || keep_f32 || ndim < 2;
    g->t[g->n++] = (gen_tensor){scale, f32};
    return sdc_st_writer_add(g->w, name, f32 ? SDC_ST_F32 : SDC_ST_F16, ndim, shape, NULL) == SDC_OK
               ? 0
               : -1;
}

static sdc_status fill(void *user, int index, void *dst, size_t nbytes) {
    generator *g = user;
    const gen_tensor *t = &g->t[index];
    size_t count = nbytes / (t->keep_f32 ? 4 : 2);
    /* uniform on [-a, a] has std a/sqrt(3) */
    double a = fabs(t->scale) * 1.7320508075688772;
    for (size_t i = 0; i < count; i++) {
        double v = next_uniform(&g->state) * a;
        if (t->scale < 0) v = 1.0 + v; /* norm weights around 1 */
        if (t->keep_f32)
            ((float *)dst)[i] = (float)v;
        else
            ((sdc_fp16 *)dst)[i] = sdc_f32_to_fp16((float)v);
    }
    return SDC_OK;
}

#define T2(name, a, b, s) add(g, name, 2, (int64_t[]){a, b}, s, false)
#define T1(name, a, s)    add(g, name, 1, (int64_t[]){a}, s, true)

static int gen_dit(generator *g, const preset *p) {
    int H = p->hidden, M = p->mlp, hd = H / p->heads, pp = p->patch * p->patch * 3;
    char n[256];
    int e = 0;
    float lin = 0.2f * sqrtf(128.0f / (float)H), out = 0.1f * sqrtf(128.0f / (float)H);
    e |= add(g, "model.net.img_embedder.proj1.weight", 4,
             (int64_t[]){p->pca, 3, p->patch, p->patch}, 0.05f * sqrtf(768.0f / (float)pp), false);
    e |= add(g, "model.net.img_embedder.proj2.weight", 4, (int64_t[]){H, p->pca, 1, 1},
             0.2f * sqrtf(32.0f / (float)p->pca), false);
    e |= T1("model.net.img_embedder.proj2.bias", H, 0.05f);
    e |= T2("model.net.txt_embedder.weight", H, p->txt_input, 0.1f * sqrtf(128.0f / p->txt_input));
    e |= T2("model.net.t_embedder.mlp.0.weight", H, 256, lin);
    e |= T1("model.net.t_embedder.mlp.0.bias", H, 0.05f);
    e |= T2("model.net.t_embedder.mlp.2.weight", H, H, lin);
    e |= T1("model.net.t_embedder.mlp.2.bias", H, 0.05f);
    e |= T2("model.net.pooled_embedder.weight", H, p->txt_input, lin);
    for (int i = 0; i < p->n_preamble; i++) {
#define N(s) (snprintf(n, sizeof n, "model.net.txt_preamble_blocks.%d.%s", i, s), n)
        e |= T1(N("norm1.weight"), H, -0.1f);
        e |= T1(N("norm2.weight"), H, -0.1f);
        e |= T2(N("qkv.weight"), 3 * H, H, lin);
        e |= T1(N("qkv.bias"), 3 * H, 0.05f);
        e |= T2(N("attn_proj.weight"), H, H, out);
        e |= T1(N("attn_proj.bias"), H, 0.05f);
        e |= T2(N("mlp.w1.weight"), M, H, lin);
        e |= T2(N("mlp.w3.weight"), M, H, lin);
        e |= T2(N("mlp.w2.weight"), H, M, out * sqrtf((float)H / (float)M));
        e |= T1(N("q_norm.weight"), hd, -0.1f);
        e |= T1(N("k_norm.weight"), hd, -0.1f);
#undef N
    }
    for (int i = 0; i < p->n_double; i++) {
#define N(s) (snprintf(n, sizeof n, "model.net.double_blocks.%d.%s", i, s), n)
        e |= T1(N("img_norm1.weight"), H, -0.1f);
        e |= T1(N("img_norm2.weight"), H, -0.1f);
        e |= T1(N("txt_norm1.weight"), H, -0.1f);
        e |= T1(N("txt_norm2.weight"), H, -0.1f);
        e |= T2(N("img_qkv.weight"), 3 * H, H, lin);
        e |= T1(N("img_qkv.bias"), 3 * H, 0.05f);
        e |= T2(N("txt_qkv.weight"), 3 * H, H, lin);
        e |= T1(N("txt_qkv.bias"), 3 * H, 0.05f);
        e |= T1(N("q_norm.weight"), hd, -0.1f);
        e |= T1(N("k_norm.weight"), hd, -0.1f);
        e |= T2(N("img_attn_proj.weight"), H, H, out);
        e |= T1(N("img_attn_proj.bias"), H, 0.05f);
        e |= T2(N("txt_attn_proj.weight"), H, H, out);
        e |= T1(N("txt_attn_proj.bias"), H, 0.05f);
        e |= T2(N("img_mlp.w1.weight"), M, H, lin);
        e |= T2(N("img_mlp.w3.weight"), M, H, lin);
        e |= T2(N("img_mlp.w2.weight"), H, M, out * sqrtf((float)H / (float)M));
        e |= T2(N("txt_mlp.w1.weight"), M, H, lin);
        e |= T2(N("txt_mlp.w3.weight"), M, H, lin);
        e |= T2(N("txt_mlp.w2.weight"), H, M, out * sqrtf((float)H / (float)M));
#undef N
    }
    e |= T1("model.net.final_layer.norm_final.weight", H, -0.1f);
    e |= T2("model.net.final_layer.linear.weight", pp, H, 0.06f * sqrtf(128.0f / (float)H));
    e |= T1("model.net.final_layer.linear.bias", pp, 0.05f);
    e |= add(g, "model.net.mask_token", 3, (int64_t[]){1, 1, p->txt_input}, 1.0f, true);
    return e;
}

static int gen_t5(generator *g, const preset *p) {
    int D = p->t5_d, I = p->t5_heads * 64, F = p->t5_ff;
    float sd = sqrtf(128.0f / (float)D);
    char n[256];
    int e = T2("shared.weight", p->t5_vocab, D, 1.0f);
    for (int i = 0; i < p->t5_layers; i++) {
#define N(s) (snprintf(n, sizeof n, "encoder.block.%d.layer.%s", i, s), n)
        e |= T2(N("0.SelfAttention.q.weight"), I, D, 0.05f * sd);
        e |= T2(N("0.SelfAttention.k.weight"), I, D, 0.05f * sd);
        e |= T2(N("0.SelfAttention.v.weight"), I, D, 0.2f * sd);
        e |= T2(N("0.SelfAttention.o.weight"), D, I, 0.1f * sqrtf(128.0f / (float)I));
        if (i == 0)
            e |= add(g, N("0.SelfAttention.relative_attention_bias.weight"), 2,
                     (int64_t[]){32, p->t5_heads}, 1.0f, true);
        e |= T1(N("0.layer_norm.weight"), D, -0.1f);
        e |= T2(N("1.DenseReluDense.wi_0.weight"), F, D, 0.2f * sd);
        e |= T2(N("1.DenseReluDense.wi_1.weight"), F, D, 0.2f * sd);
        e |= T2(N("1.DenseReluDense.wo.weight"), D, F, 0.05f * sqrtf(256.0f / (float)F));
        e |= T1(N("1.layer_norm.weight"), D, -0.1f);
#undef N
    }
    e |= T1("encoder.final_layer_norm.weight", D, -0.1f);
    return e;
}

/* A small HF-format unigram tokenizer (T5 conventions: <pad> 0, </s> 1, <unk> 2,
 * Metaspace pre-tokenizer, </s> appended): letters, digits, punctuation and a few words. */
static int write_tokenizer(const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    static const char *words[] = {"cat",   "dog",  "a",      "the",   "red", "car",
                                  "on",    "hill", "sunset", "of",    "in",  "and",
                                  "photo", "blue", "sky",    "house", "tree"};
    fputs(
        "{\"version\":\"1.0\",\"added_tokens\":["
        "{\"id\":0,\"content\":\"<pad>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
        "\"normalized\":false,\"special\":true},"
        "{\"id\":1,\"content\":\"</s>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
        "\"normalized\":false,\"special\":true},"
        "{\"id\":2,\"content\":\"<unk>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
        "\"normalized\":false,\"special\":true}],"
        "\"normalizer\":null,"
        "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"}"
        ","
        "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"always\","
        "\"split\":true}]},"
        "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":"
        "\"A\","
        "\"type_id\":0}},{\"SpecialToken\":{\"id\":\"</s>\",\"type_id\":0}}],"
        "\"pair\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"</s>\","
        "\"type_id\":0}},{\"Sequence\":{\"id\":\"B\",\"type_id\":0}},{\"SpecialToken\":{\"id\":"
        "\"</s>\",\"type_id\":0}}],"
        "\"special_tokens\":{\"</s>\":{\"id\":\"</s>\",\"ids\":[1],\"tokens\":[\"</s>\"]}}},"
        "\"decoder\":{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":"
        "\"always\",\"split\":true},"
        "\"model\":{\"type\":\"Unigram\",\"unk_id\":2,\"byte_fallback\":false,\"vocab\":["
        "[\"<pad>\",0.0],[\"</s>\",0.0],[\"<unk>\",0.0],[\"\\u2581\",-2.0]",
        f);
    for (int c = 33; c < 127; c++) {
        if (c == '"' || c == '\\')
            fprintf(f, ",[\"\\%c\",-5.0],[\"\\u2581\\%c\",-6.0]", c, c);
        else
            fprintf(f, ",[\"%c\",-5.0],[\"\\u2581%c\",-6.0]", c, c);
    }
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        fprintf(f, ",[\"\\u2581%s\",-3.0]", words[i]);
    fputs("]}}\n", f);
    return fclose(f) == 0 ? 0 : -1;
}

static int write_model(const char *path, bool f16, uint64_t seed,
                       int (*gen)(generator *, const preset *), const preset *p) {
    generator g = {.f16 = f16, .state = seed * 0x9E3779B97F4A7C15ULL + 1};
    if (sdc_st_writer_create(&g.w) != SDC_OK) return -1;
    sdc_st_writer_set_metadata(g.w, "generator", "sdc-genmodel (random weights)");
    sdc_st_writer_set_metadata(g.w, "preset", p->name);
    int e = gen(&g, p);
    if (!e && sdc_st_writer_write(g.w, path, fill, &g) != SDC_OK) {
        fprintf(stderr, "sdc-genmodel: error: %s\n", sdc_last_error());
        e = -1;
    }
    sdc_st_writer_free(g.w);
    free(g.t);
    return e;
}

/* mkdir -p */
static int make_dirs(const char *path) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = 0;
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(buf, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static void usage(FILE *f) {
    fprintf(f, "usage: sdc-genmodel [--preset tiny|deep|b16] [--dtype f32|f16] [--seed N] -o DIR\n"
               "writes DIR/minit2i.safetensors, DIR/t5/model.safetensors, DIR/t5/tokenizer.json\n");
}

int main(int argc, char **argv) {
    const preset *p = &k_presets[0];
    const char *dir = NULL;
    bool f16 = false;
    unsigned long long seed = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--preset") && v) {
            p = NULL;
            for (size_t k = 0; k < sizeof k_presets / sizeof *k_presets; k++)
                if (!strcmp(v, k_presets[k].name)) p = &k_presets[k];
            if (!p) {
                fprintf(stderr, "sdc-genmodel: error: unknown preset '%s' (tiny, deep, b16)\n", v);
                return 1;
            }
            i++;
        } else if (!strcmp(a, "--dtype") && v) {
            if (strcmp(v, "f32") && strcmp(v, "f16")) {
                fprintf(stderr, "sdc-genmodel: error: --dtype must be f32 or f16\n");
                return 1;
            }
            f16 = !strcmp(v, "f16");
            i++;
        } else if (!strcmp(a, "--seed") && v) {
            seed = strtoull(v, NULL, 10);
            i++;
        } else if (!strcmp(a, "-o") && v) {
            dir = v;
            i++;
        } else {
            fprintf(stderr, "sdc-genmodel: error: unknown or incomplete argument '%s'\n", a);
            usage(stderr);
            return 1;
        }
    }
    if (!dir) {
        usage(stderr);
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/t5", dir);
    if (make_dirs(path) != 0) {
        fprintf(stderr, "sdc-genmodel: error: cannot create %s: %s\n", path, strerror(errno));
        return 1;
    }
    snprintf(path, sizeof path, "%s/minit2i.safetensors", dir);
    if (write_model(path, f16, seed, gen_dit, p)) return 1;
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/t5/model.safetensors", dir);
    if (write_model(path, f16, seed + 1, gen_t5, p)) return 1;
    printf("wrote %s\n", path);
    snprintf(path, sizeof path, "%s/t5/tokenizer.json", dir);
    if (write_tokenizer(path)) {
        fprintf(stderr, "sdc-genmodel: error: cannot write %s\n", path);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}
