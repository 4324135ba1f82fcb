/* CLIP BPE tokenizer against Hugging Face's CLIPTokenizerFast:
 *  - ${GOLDEN}/sd1/clip_tokens.json (30 prompts, ids from the Rust tokenizers npm package);
 *  - tests/data/clip/hf_ids.json (5000 generated strings, tests/golden/gen_clip_tokens.py);
 *  - SDC_CLIP_EXTRA_IDS: any other file in that format (wider local checks);
 * with the real CLIP vocabulary from ${GOLDEN}/sd1/tokenizer loaded six ways (directory,
 * vocab.json + merges.txt, tokenizer.json, merges.txt alone, memory, a .gz written here in
 * OpenAI's bpe_simple_vocab_16e6.txt.gz layout; and OpenAI's own file when SDC_CLIP_BPE_GZ names
 * it). A tiny vocabulary checks BPE by hand-derived ids without the golden dir; malformed files
 * must fail with a message. Then the search of pipeline/clip_tokenizer_source.c (flag, GGUF
 * keys, diffusers folders, HF cache, Python packages, the nothing-found message) and the GGUF
 * round trip of sdc_clip_tokenizer_write_gguf. Exit 77 (skipped) when the golden dir is absent. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/status.h"
#include "io/gguf.h"
#include "io/model_loader.h"
#include "pipeline/clip_tokenizer_source.h"
#include "test_util.h"
#include "text/clip_tokenizer.h"

#define TOKDIR GOLDEN("sd1/tokenizer")

static int ids_equal(const int32_t *a, int na, const cJSON *arr, int skip_ends) {
    int n = cJSON_GetArraySize(arr) - (skip_ends ? 2 : 0);
    if (n != na) return 0;
    for (int i = 0; i < n; i++)
        if (cJSON_GetArrayItem(arr, i + (skip_ends ? 1 : 0))->valueint != a[i]) return 0;
    return 1;
}

static void print_ids(const char *what, const int32_t *a, int n) {
    fprintf(stderr, "  %s:", what);
    for (int i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", a[i]);
    fprintf(stderr, "\n");
}

/* Every case of a [text, ids] list; returns the number of mismatches. */
static int run_cases(const sdc_clip_tokenizer *t, const cJSON *cases, const char *label) {
    int bad = 0, n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *text = cJSON_GetArrayItem(c, 0), *ids = cJSON_GetArrayItem(c, 1);
        int32_t *got = NULL;
        int ng = 0;
        sdc_status st = sdc_clip_tokenize(t, text->valuestring, &got, &ng);
        if (st != SDC_OK || !ids_equal(got, ng, ids, 0)) {
            if (bad < 5) {
                fprintf(stderr, "%s: mismatch for %s\n", label, cJSON_PrintUnformatted(text));
                print_ids("got", got, ng);
            }
            bad++;
        }
        free(got);
        n++;
    }
    printf("%s: %d strings, %d mismatches\n", label, n, bad);
    return bad;
}

static cJSON *load_json(const char *path) {
    size_t size = 0;
    char *s = (char *)t_read_file(path, &size);
    if (!s) return NULL;
    cJSON *j = cJSON_ParseWithLength(s, size);
    free(s);
    return j;
}

/* The golden clip_tokens.json: HF ids include BOS/EOS. */
static int run_golden_prompts(const sdc_clip_tokenizer *t) {
    cJSON *j = load_json(GOLDEN("sd1/clip_tokens.json"));
    CHECK(j != NULL, "clip_tokens.json");
    if (!j) return 1;
    int bad = 0, n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
        const char *prompt = cJSON_GetObjectItem(c, "prompt")->valuestring;
        const cJSON *ids = cJSON_GetObjectItem(c, "ids");
        int32_t *got = NULL;
        int ng = 0;
        CHECK(sdc_clip_tokenize(t, prompt, &got, &ng) == SDC_OK, "tokenize");
        int ok = ids_equal(got, ng, ids, 1);
        CHECK(ok, "clip_tokens.json %s: ids differ from HF",
              cJSON_GetObjectItem(c, "id")->valuestring);
        bad += !ok;
        free(got);
        n++;
    }
    printf("clip_tokens.json: %d prompts against HF ids, %d mismatches\n", n, bad);
    cJSON_Delete(j);
    return bad;
}

/* ids of all strings agree between two tokenizers (same vocabulary, other loader). */
static void same_ids(const sdc_clip_tokenizer *a, const sdc_clip_tokenizer *b, const cJSON *cases,
                     const char *label) {
    int bad = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const char *s = cJSON_GetArrayItem(c, 0)->valuestring;
        int32_t *x = NULL, *y = NULL;
        int nx = 0, ny = 0;
        sdc_clip_tokenize(a, s, &x, &nx);
        sdc_clip_tokenize(b, s, &y, &ny);
        bad += nx != ny || (nx && memcmp(x, y, (size_t)nx * sizeof *x));
        free(x);
        free(y);
    }
    CHECK(bad == 0, "%s: %d strings differ", label, bad);
    printf("%s: same ids on %d strings (%d differ)\n", label, cJSON_GetArraySize(cases), bad);
}

static void write_file(const char *path, const char *s, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(s, 1, n, f);
    fclose(f);
}

static int expect_fail(sdc_status st, const char *what, const char *needle) {
    const char *msg = sdc_last_error();
    int ok = st != SDC_OK && msg && strstr(msg, needle);
    CHECK(ok, "%s: status %d, message '%s' (wanted '%s')", what, (int)st, msg ? msg : "", needle);
    if (ok) printf("rejected %s: %s\n", what, msg);
    return ok;
}

/* A vocabulary of a few merges: BPE result derived by hand. */
static void test_tiny(void) {
    /* byte tokens 0..511, then merges: l o, lo w</w>, e r</w>, low er</w>, h i</w> */
    const char *merges = "#version: 0.2\nl o\nlo w</w>\ne r</w>\nlo w\nlow er</w>\nh i</w>\n";
    sdc_clip_tokenizer *t = NULL;
    CHECK(sdc_clip_tokenizer_load_memory(NULL, 0, merges, strlen(merges), &t) == SDC_OK, "tiny: %s",
          sdc_last_error());
    if (!t) return;
    CHECK(sdc_clip_tokenizer_vocab_size(t) == 512 + 6 + 2, "tiny vocab size %d",
          sdc_clip_tokenizer_vocab_size(t));
    CHECK(sdc_clip_tokenizer_bos(t) == 518 && sdc_clip_tokenizer_eos(t) == 519, "tiny bos/eos");
    /* byte order: '!'..'~' are 0..93, so 'a' = 64, 'l' = 75, "x</w>" = 256 + index */
    int32_t *ids = NULL;
    int n = 0;
    CHECK(sdc_clip_tokenize(t, "LOW lower Hi x's <|endoftext|>", &ids, &n) == SDC_OK,
          "tiny tokenize");
    /* low -> "lo" (512) + "w</w>" -> merge 2 "low</w>" (513); lower -> lo w e r</w> -> lo w er</w>
     * -> low er</w> (lo w rank 3) -> lower</w> (516); hi -> "hi</w>" (517); x's -> x</w> 's:
     * ' s</w> (no merge: "'" = 6, "s</w>" = 256 + 82); <|endoftext|> -> 519 */
    int32_t want[] = {513, 516, 517, 256 + 'x' - 33, '\'' - 33, 256 + 's' - 33, 519};
    int ok = n == (int)(sizeof want / sizeof *want) && !memcmp(ids, want, sizeof want);
    CHECK(ok, "tiny ids");
    if (!ok) print_ids("tiny got", ids, n);
    printf("tiny vocabulary: %d ids, %s\n", n, ok ? "as derived by hand" : "WRONG");
    free(ids);
    /* merges text round trip */
    char *txt = NULL;
    size_t len = 0;
    CHECK(sdc_clip_tokenizer_merges_text(t, &txt, &len) == SDC_OK && txt && !strcmp(txt, merges),
          "merges text round trip: '%s'", txt ? txt : "");
    free(txt);
    sdc_clip_tokenizer_free(t);
}

static void test_malformed(const char *tmp) {
    sdc_clip_tokenizer *t = NULL;
    char p[512], q[512];
    const char *m3 = "#version: 0.2\na b c\n";
    expect_fail(sdc_clip_tokenizer_load_memory(NULL, 0, m3, strlen(m3), &t), "3-part merge line",
                "line 2");
    const char *m1 = "#version: 0.2\nab\n";
    expect_fail(sdc_clip_tokenizer_load_memory(NULL, 0, m1, strlen(m1), &t), "1-part merge line",
                "two tokens");
    const char *v = "{\"a\": 0, \"b\": 1, \"<|startoftext|>\": 2, \"<|endoftext|>\": 3}";
    const char *mv = "a c\n";
    expect_fail(sdc_clip_tokenizer_load_memory(v, strlen(v), mv, strlen(mv), &t),
                "merge outside the vocabulary", "vocabulary lacks");
    const char *vd = "{\"a\": 0, \"b\": 0}";
    expect_fail(sdc_clip_tokenizer_load_memory(vd, strlen(vd), "", 0, &t), "duplicate id",
                "id 0 given");
    const char *vg = "{\"a\": 0, \"b\": 2}";
    expect_fail(sdc_clip_tokenizer_load_memory(vg, strlen(vg), "", 0, &t), "id gap",
                "no token with id 1");
    const char *vn = "{\"a\": -1}";
    expect_fail(sdc_clip_tokenizer_load_memory(vn, strlen(vn), "", 0, &t), "negative id",
                "valid id");
    const char *vs = "{\"a\": 0, \"b\": 1}";
    expect_fail(sdc_clip_tokenizer_load_memory(vs, strlen(vs), "", 0, &t), "no special tokens",
                "<|startoftext|>");
    const char *bad = "{\"a\": 0,";
    expect_fail(sdc_clip_tokenizer_load_memory(bad, strlen(bad), "", 0, &t), "truncated JSON",
                "not JSON");
    expect_fail(sdc_clip_tokenizer_load("/nonexistent/clip", &t), "missing path", "no such");
    snprintf(p, sizeof p, "%s/vocab.json", tmp);
    write_file(p, v, strlen(v));
    expect_fail(sdc_clip_tokenizer_load(p, &t), "vocab.json without merges.txt", "merges.txt");
    unlink(p);
    snprintf(p, sizeof p, "%s/tokenizer.json", tmp);
    const char *uni = "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}";
    write_file(p, uni, strlen(uni));
    expect_fail(sdc_clip_tokenizer_load(p, &t), "Unigram tokenizer.json", "expected BPE");
    const char *nom = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [1]}}";
    write_file(p, nom, strlen(nom));
    expect_fail(sdc_clip_tokenizer_load(p, &t), "tokenizer.json merges of numbers", "non-merge");
    unlink(p);
    expect_fail(sdc_clip_tokenizer_load(tmp, &t), "empty directory", "holds none");
    /* gzip: garbage after the magic, and a truncated stream */
    snprintf(q, sizeof q, "%s/bad.txt.gz", tmp);
    write_file(q, "\x1f\x8b\x08\x00garbage-garbage-garbage", 27);
    expect_fail(sdc_clip_tokenizer_load(q, &t), "corrupt gzip", "gzip");
    unlink(q);
    CHECK(t == NULL, "no tokenizer after failures");
}

/* OpenAI's layout: a "bpe_simple_vocab_16e6.txt#version: 0.2" first line, then merges, more
 * merges than clip uses (the extra ones must be ignored). */
static int write_openai_gz(const char *path, const char *merges, size_t n, int cut) {
    gzFile g = gzopen(path, "wb");
    if (!g) return 0;
    const char *body = strchr(merges, '\n') + 1;
    gzputs(g, "\"bpe_simple_vocab_16e6.txt#version: 0.2\n");
    gzwrite(g, body, (unsigned)(n - (size_t)(body - merges)));
    gzputs(g, "zz zz\nzzzz zzzz\n");
    gzclose(g);
    struct stat st;
    if (cut && (stat(path, &st) != 0 || truncate(path, st.st_size / 2) != 0)) return 0;
    return 1;
}

/* ---- where the tokenizer is found (pipeline/clip_tokenizer_source.c) ---- */

static void mkdirs(const char *path) {
    char p[1024];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
}

static void link_golden(const char *dir) {
    char a[1024];
    mkdirs(dir);
    snprintf(a, sizeof a, "%s/vocab.json", dir);
    CHECK(symlink(TOKDIR "/vocab.json", a) == 0, "symlink %s", a);
    snprintf(a, sizeof a, "%s/merges.txt", dir);
    CHECK(symlink(TOKDIR "/merges.txt", a) == 0, "symlink %s", a);
}

/* Loaded and tokenising "a lovely cat" to the real ids. */
static int good(sdc_status st, sdc_clip_tokenizer **tp, const char *what) {
    sdc_clip_tokenizer *t = *tp;
    *tp = NULL;
    int32_t *ids = NULL;
    int n = 0;
    int ok = st == SDC_OK && t && sdc_clip_tokenize(t, "a lovely cat", &ids, &n) == SDC_OK &&
             n == 3 && ids[0] == 320 && ids[1] == 2165 && ids[2] == 2368;
    CHECK(ok, "%s: %s", what, st ? sdc_last_error() : "wrong ids");
    if (ok) printf("found the tokenizer: %s\n", what);
    free(ids);
    sdc_clip_tokenizer_free(t);
    return ok;
}

static void test_source(const char *tmp, const char *merges, size_t mn,
                        const sdc_clip_tokenizer *vj) {
    char root[512], p[1024], model[1024];
    snprintf(root, sizeof root, "%s/src", tmp);
    char home[600];
    snprintf(home, sizeof home, "%s/home", root);
    mkdirs(home);
    setenv("HOME", home, 1);
    unsetenv("HF_HOME");
    unsetenv("HF_HUB_CACHE");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("VIRTUAL_ENV");
    unsetenv("CONDA_PREFIX");
    sdc_clip_tokenizer *t = NULL;
    sdc_status st = sdc_load_clip_tokenizer(NULL, NULL, TOKDIR, 0, &t);
    good(st, &t, "explicit folder");
    st = sdc_load_clip_tokenizer(NULL, NULL, "/nonexistent/tok", 0, &t);
    CHECK(st != SDC_OK && strstr(sdc_last_error(), "--clip-tokenizer"), "explicit missing: %s",
          sdc_last_error());

    /* nothing anywhere (unless this machine has clip / open_clip installed system-wide) */
    snprintf(model, sizeof model, "%s/m/unet/model.safetensors", root);
    snprintf(p, sizeof p, "%s/m/unet", root);
    mkdirs(p);
    st = sdc_load_clip_tokenizer(NULL, model, NULL, 0, &t);
    if (st == SDC_OK) {
        printf("a CLIP tokenizer is installed on this machine: 'nothing found' not checked\n");
        sdc_clip_tokenizer_free(t);
        t = NULL;
    } else {
        const char *m = sdc_last_error();
        CHECK(strstr(m, "--clip-tokenizer") && strstr(m, "/m/unet/tokenizer") &&
                  strstr(m, "/m/tokenizer") &&
                  strstr(m, "models--openai--clip-vit-large-patch14") &&
                  strstr(m, "bpe_simple_vocab_16e6.txt.gz") && strstr(m, "GGUF keys"),
              "nothing-found message lists the places: %s", m);
        printf("nothing found: %.300s...\n", m);
    }
    /* a T5 tokenizer.json beside the weights is skipped; diffusers layout: ../tokenizer */
    snprintf(p, sizeof p, "%s/m/unet/tokenizer.json", root);
    write_file(p, "{\"model\": {\"type\": \"Unigram\", \"vocab\": []}}", 44);
    snprintf(p, sizeof p, "%s/m/tokenizer", root);
    link_golden(p);
    st = sdc_load_clip_tokenizer(NULL, model, NULL, 0, &t);
    good(st, &t, "diffusers ../tokenizer (T5 json skipped)");
    /* OpenCLIP: tokenizer_2 first */
    snprintf(p, sizeof p, "%s/m/tokenizer_2", root);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/m/tokenizer_2/merges.txt", root);
    write_file(p, merges, mn);
    t = NULL;
    st = sdc_load_clip_tokenizer(NULL, model, NULL, 1, &t);
    good(st, &t, "diffusers ../tokenizer_2 (which = 1)");

    /* Hugging Face cache */
    snprintf(p, sizeof p, "%s/hf/hub/models--openai--clip-vit-large-patch14/snapshots/0123abc",
             root);
    link_golden(p);
    snprintf(p, sizeof p, "%s/hf", root);
    setenv("HF_HOME", p, 1);
    t = NULL;
    st = sdc_load_clip_tokenizer(NULL, NULL, NULL, 0, &t);
    good(st, &t, "HF cache snapshot ($HF_HOME)");
    unsetenv("HF_HOME");
    snprintf(p, sizeof p,
             "%s/hf/hub/models--stabilityai--stable-diffusion-xl-base-1.0/snapshots/x/tokenizer_2",
             root);
    link_golden(p);
    snprintf(p, sizeof p, "%s/hf/hub", root);
    setenv("HF_HUB_CACHE", p, 1);
    t = NULL;
    st = sdc_load_clip_tokenizer(NULL, NULL, NULL, 1, &t);
    good(st, &t, "HF cache SDXL tokenizer_2 ($HF_HUB_CACHE)");
    unsetenv("HF_HUB_CACHE");

    /* an installed open_clip package under ~/.local */
    snprintf(p, sizeof p, "%s/.local/lib/python3.11/site-packages/open_clip", home);
    mkdirs(p);
    snprintf(p, sizeof p,
             "%s/.local/lib/python3.11/site-packages/open_clip/bpe_simple_vocab_16e6.txt.gz", home);
    CHECK(write_openai_gz(p, merges, mn, 0), "write gz");
    t = NULL;
    st = sdc_load_clip_tokenizer(NULL, NULL, NULL, 1, &t);
    good(st, &t, "open_clip package (~/.local site-packages)");
    unlink(p);

    /* GGUF keys, merges only (vocabulary built from them) */
    sdc_gguf_writer *w = NULL;
    static const float x[4] = {1, 2, 3, 4};
    int64_t ne[1] = {4};
    snprintf(p, sizeof p, "%s/te.gguf", root);
    CHECK(sdc_gguf_writer_create(&w) == SDC_OK &&
              sdc_gguf_set_strn(w, SDC_GGUF_CLIP_MERGES, merges, mn) == SDC_OK &&
              sdc_gguf_add_tensor(w, "x", SDC_TYPE_F32, 1, ne, x) == SDC_OK &&
              sdc_gguf_write_file(w, p) == SDC_OK,
          "write gguf: %s", sdc_last_error());
    sdc_gguf_writer_free(w);
    sdc_loader *l = NULL;
    CHECK(sdc_loader_create(&l) == SDC_OK && sdc_loader_add_file(l, p, NULL) == SDC_OK,
          "load gguf: %s", sdc_last_error());
    st = sdc_load_clip_tokenizer(l, model, NULL, 0, &t);
    good(st, &t, "GGUF key tokenizer.clip.merges");
    sdc_loader_free(l);
    /* sdc_clip_tokenizer_write_gguf: the real one as clip_l (merges only), a vocabulary that the
     * merges do not build as clip_g (vocab_json too); read back by the search */
    const char *tv = "{\"a\":0,\"b</w>\":1,\"ab</w>\":2,\"<|startoftext|>\":3,\"<|endoftext|>\":4}";
    sdc_clip_tokenizer *tiny = NULL;
    CHECK(sdc_clip_tokenizer_load_memory(tv, strlen(tv), "a b</w>\n", 8, &tiny) == SDC_OK,
          "tiny json vocab: %s", sdc_last_error());
    l = NULL;
    CHECK(sdc_gguf_writer_create(&w) == SDC_OK &&
              sdc_clip_tokenizer_write_gguf(vj, 0, w) == SDC_OK &&
              sdc_clip_tokenizer_write_gguf(tiny, 1, w) == SDC_OK &&
              sdc_gguf_add_tensor(w, "x", SDC_TYPE_F32, 1, ne, x) == SDC_OK &&
              sdc_gguf_write_file(w, p) == SDC_OK && sdc_loader_create(&l) == SDC_OK &&
              sdc_loader_add_file(l, p, NULL) == SDC_OK,
          "write/read gguf: %s", sdc_last_error());
    sdc_gguf_writer_free(w);
    CHECK(l && sdc_loader_find_kv(l, SDC_GGUF_CLIP_L_MERGES, NULL) &&
              !sdc_loader_find_kv(l, SDC_GGUF_CLIP_L_VOCAB, NULL) &&
              sdc_loader_find_kv(l, SDC_GGUF_CLIP_G_VOCAB, NULL),
          "GGUF keys written: clip_l merges only, clip_g merges + vocab");
    st = sdc_load_clip_tokenizer(l, model, NULL, 0, &t);
    good(st, &t, "GGUF written by sdc_clip_tokenizer_write_gguf (clip_l)");
    st = sdc_load_clip_tokenizer(l, model, NULL, 1, &t);
    int32_t *ids = NULL;
    int n = 0;
    CHECK(st == SDC_OK && sdc_clip_tokenize(t, "AB", &ids, &n) == SDC_OK && n == 1 && ids[0] == 2 &&
              sdc_clip_tokenizer_vocab_size(t) == 5,
          "clip_g vocab_json round trip");
    free(ids);
    sdc_clip_tokenizer_free(t);
    t = NULL;
    sdc_clip_tokenizer_free(tiny);
    sdc_loader_free(l);
    unlink(p);
    printf("tokenizer search: done\n");
}

int main(void) {
    char tmp[] = "/tmp/sdc_cliptok_XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    test_tiny();
    test_malformed(tmp);

    struct stat st;
    if (stat(TOKDIR "/merges.txt", &st) != 0) {
        printf("golden dir %s absent: real-vocabulary checks skipped\n", TOKDIR);
        rmdir(tmp);
        if (t_failed) TEST_MAIN_END();
        printf("%d passed, 0 failed (skipped the rest)\n", t_passed);
        return 77;
    }
    sdc_clip_tokenizer *dir = NULL, *vj = NULL, *tj = NULL, *mg = NULL, *gz = NULL, *mem = NULL;
    CHECK(sdc_clip_tokenizer_load(TOKDIR, &dir) == SDC_OK, "dir: %s", sdc_last_error());
    CHECK(sdc_clip_tokenizer_load(TOKDIR "/vocab.json", &vj) == SDC_OK, "vocab.json: %s",
          sdc_last_error());
    CHECK(sdc_clip_tokenizer_load(TOKDIR "/tokenizer.json", &tj) == SDC_OK, "tokenizer.json: %s",
          sdc_last_error());
    CHECK(sdc_clip_tokenizer_load(TOKDIR "/merges.txt", &mg) == SDC_OK, "merges.txt: %s",
          sdc_last_error());
    size_t mn = 0, vn = 0;
    char *merges = (char *)t_read_file(TOKDIR "/merges.txt", &mn);
    char *vocab = (char *)t_read_file(TOKDIR "/vocab.json", &vn);
    CHECK(merges && vocab, "read golden files");
    CHECK(sdc_clip_tokenizer_load_memory(vocab, vn, merges, mn, &mem) == SDC_OK, "memory: %s",
          sdc_last_error());
    char gzp[512];
    snprintf(gzp, sizeof gzp, "%s/bpe_simple_vocab_16e6.txt.gz", tmp);
    CHECK(merges && write_openai_gz(gzp, merges, mn, 0), "write gz");
    CHECK(sdc_clip_tokenizer_load(gzp, &gz) == SDC_OK, "gz: %s", sdc_last_error());
    if (!dir || !vj || !tj || !mg || !gz || !mem) TEST_MAIN_END();

    sdc_clip_tokenizer *all[] = {dir, vj, tj, mg, gz, mem};
    for (int i = 0; i < 6; i++) {
        CHECK(sdc_clip_tokenizer_vocab_size(all[i]) == 49408, "vocab size %d",
              sdc_clip_tokenizer_vocab_size(all[i]));
        CHECK(sdc_clip_tokenizer_bos(all[i]) == 49406 && sdc_clip_tokenizer_eos(all[i]) == 49407,
              "bos/eos");
    }
    CHECK(!strcmp(sdc_clip_tokenizer_token(vj, 320), "a</w>") &&
              !strcmp(sdc_clip_tokenizer_token(vj, 2368), "cat</w>"),
          "real CLIP ids of a</w> and cat</w>");
    run_golden_prompts(vj);
    cJSON *hf = load_json(SDC_SOURCE_DIR "/tests/data/clip/hf_ids.json");
    CHECK(hf != NULL, "hf_ids.json");
    if (hf) {
        const cJSON *cases = cJSON_GetObjectItem(hf, "cases");
        CHECK(run_cases(vj, cases, "hf_ids.json (vocab.json)") == 0, "HF ids");
        same_ids(vj, dir, cases, "directory");
        same_ids(vj, tj, cases, "tokenizer.json");
        same_ids(vj, mg, cases, "merges.txt alone");
        same_ids(vj, gz, cases, "OpenAI-layout .gz written here");
        same_ids(vj, mem, cases, "load_memory");
        /* sd.cpp-compatible mode: HF's ids on ASCII text */
        sdc_clip_tokenizer *cm = NULL;
        CHECK(sdc_clip_tokenizer_load(TOKDIR, &cm) == SDC_OK, "compat tokenizer");
        if (cm) {
            sdc_clip_tokenizer_set_sdcpp_compat(cm, 1);
            int n_ascii = 0, bad = 0;
            const cJSON *c;
            cJSON_ArrayForEach(c, cases) {
                const char *s = cJSON_GetArrayItem(c, 0)->valuestring;
                int ascii = 1;
                for (const char *q = s; *q; q++) ascii &= (unsigned char)*q < 0x80;
                if (!ascii) continue;
                int32_t *ids = NULL;
                int n = 0;
                sdc_clip_tokenize(cm, s, &ids, &n);
                bad += !ids_equal(ids, n, cJSON_GetArrayItem(c, 1), 0);
                n_ascii++;
                free(ids);
            }
            CHECK(bad == 0 && n_ascii > 100, "sd.cpp mode on ASCII: %d of %d differ from HF", bad,
                  n_ascii);
            printf("sd.cpp-compatible mode: HF ids on all %d ASCII strings (%d differ)\n", n_ascii,
                   bad);
            sdc_clip_tokenizer_free(cm);
        }
        /* a wider local check: SDC_CLIP_EXTRA_IDS = a file in hf_ids.json's format */
        const char *extra = getenv("SDC_CLIP_EXTRA_IDS");
        cJSON *ex = extra && *extra ? load_json(extra) : NULL;
        if (ex) CHECK(run_cases(vj, cJSON_GetObjectItem(ex, "cases"), extra) == 0, "extra ids");
        cJSON_Delete(ex);
        const char *real = getenv("SDC_CLIP_BPE_GZ");
        sdc_clip_tokenizer *oa = NULL;
        if (real && *real) {
            CHECK(sdc_clip_tokenizer_load(real, &oa) == SDC_OK, "%s: %s", real, sdc_last_error());
            if (oa) same_ids(vj, oa, cases, "OpenAI bpe_simple_vocab_16e6.txt.gz");
            sdc_clip_tokenizer_free(oa);
        } else {
            printf("SDC_CLIP_BPE_GZ unset: OpenAI's own .gz not compared\n");
        }
        cJSON_Delete(hf);
    }
    test_source(tmp, merges, mn, vj);
    /* a truncated .gz must fail */
    sdc_clip_tokenizer *tr = NULL;
    CHECK(write_openai_gz(gzp, merges, mn, 1), "write truncated gz");
    sdc_status s = sdc_clip_tokenizer_load(gzp, &tr);
    CHECK(s != SDC_OK, "truncated gz accepted");
    if (s != SDC_OK) printf("rejected truncated gzip: %s\n", sdc_last_error());
    sdc_clip_tokenizer_free(tr);
    unlink(gzp);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp); /* the search tree of test_source */
    CHECK(system(cmd) == 0, "clean %s", tmp);
    for (int i = 0; i < 6; i++) sdc_clip_tokenizer_free(all[i]);
    free(merges);
    free(vocab);
    TEST_MAIN_END();
}
