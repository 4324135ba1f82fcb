/* Qwen2 byte-level BPE tokenizer (src/text/qwen2_tokenizer.c) against the Hugging Face
 * tokenizers library:
 *  - tests/data/qwen_text/qwen2_tokenizer_hf.json (5000 generated strings with HF's ids and,
 *    for those without added tokens, the pieces of HF's pre-tokenizer; made by
 *    tests/golden/gen_qwen2_tokenizer_ref.py);
 *  - ${GOLDEN}/qwen_image/tokens.json: the templated Qwen-Image prompts of the golden runs, with
 *    the ids sd.cpp logged (which equal HF's there);
 * with the stand-in tokenizer of ${GOLDEN}/qwen_image/tokenizer loaded four ways (tokenizer.json,
 * vocab.json + merges.txt, merges.txt alone as sd.cpp builds it, the directory) and from memory
 * (the merges text it writes back). A tiny hand-made vocabulary checks BPE ranks and the added
 * token rules without the golden dir; malformed files must fail with a message.
 * Exit 77 (skipped) when the golden dir is absent. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/status.h"
#include "test_util.h"
#include "text/clip_unicode.h"
#include "text/qwen2_tokenizer.h"
#include "text/utf8.h"

#define TOKDIR GOLDEN("qwen_image/tokenizer")

static int ids_equal(const int32_t *a, int na, const cJSON *arr) {
    if (cJSON_GetArraySize(arr) != na) return 0;
    for (int i = 0; i < na; i++)
        if (cJSON_GetArrayItem(arr, i)->valueint != a[i]) return 0;
    return 1;
}

static void print_ids(const char *what, const int32_t *a, int n) {
    fprintf(stderr, "  %s:", what);
    for (int i = 0; i < n && i < 40; i++) fprintf(stderr, " %d", a[i]);
    fprintf(stderr, "\n");
}

static cJSON *read_json(const char *path) {
    size_t n = 0;
    char *s = (char *)t_read_file(path, &n);
    cJSON *j = s ? cJSON_ParseWithLength(s, n) : NULL;
    free(s);
    return j;
}

/* The pre-tokenizer's piece lengths for text (NFC first) against HF's; 1 if equal. */
static int split_equal(const char *text, const cJSON *lens) {
    size_t len = strlen(text), n = 0;
    int32_t *cp = malloc((len + 1) * sizeof *cp), *nfc = malloc((4 * len + 4) * sizeof *nfc);
    for (size_t i = 0; i < len;) {
        int32_t c;
        i += sdc_utf8_decode(text + i, len - i, &c);
        cp[n++] = c < 0 ? 0xFFFD : c;
    }
    n = sdc_ucd_nfc(cp, n, nfc);
    int ok = 1, k = 0;
    for (size_t i = 0; i < n && ok; k++) {
        size_t l = sdc_qwen2_split_len(nfc, n, i);
        const cJSON *e = cJSON_GetArrayItem(lens, k);
        ok = e && (size_t)e->valueint == l;
        i += l;
    }
    ok = ok && k == cJSON_GetArraySize(lens);
    free(cp);
    free(nfc);
    return ok;
}

/* Every [text, ids(, split)] case; returns the number of id mismatches. */
static int run_cases(const sdc_qwen2_tokenizer *t, const cJSON *cases, const char *label,
                     int check_split) {
    int bad = 0, n = 0, bad_split = 0, n_split = 0, n_ids = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cases) {
        const cJSON *text = cJSON_GetArrayItem(c, 0), *ids = cJSON_GetArrayItem(c, 1);
        const cJSON *split = cJSON_GetArrayItem(c, 2);
        int32_t *got = NULL;
        int ng = 0;
        const char *s = text->valuestring;
        sdc_status st = sdc_qwen2_tokenize(t, s, strlen(s), &got, &ng);
        if (st != SDC_OK || !ids_equal(got, ng, ids)) {
            if (bad < 5) {
                char *p = cJSON_PrintUnformatted(text);
                fprintf(stderr, "%s: ids differ for %s\n", label, p);
                free(p);
                print_ids("got", got, ng);
            }
            bad++;
        }
        n_ids += ng;
        if (check_split && split) {
            n_split++;
            if (!split_equal(s, split)) {
                if (bad_split < 5) {
                    char *p = cJSON_PrintUnformatted(text);
                    fprintf(stderr, "%s: pre-tokenizer pieces differ for %s\n", label, p);
                    free(p);
                }
                bad_split++;
            }
        }
        free(got);
        n++;
    }
    printf("  %-34s %d strings (%d ids): %d differ from HF", label, n, n_ids, bad);
    if (check_split) printf("; split of %d strings: %d differ", n_split, bad_split);
    printf("\n");
    CHECK(n > 1000, "%s: only %d cases", label, n);
    CHECK(bad_split == 0, "%s: %d pre-tokenizer splits differ from HF", label, bad_split);
    return bad;
}

/* The same id for every token string in a and b. */
static void same_vocab(const sdc_qwen2_tokenizer *a, const sdc_qwen2_tokenizer *b,
                       const char *what) {
    int n = sdc_qwen2_tokenizer_vocab_size(a), diff = 0;
    CHECK(n == sdc_qwen2_tokenizer_vocab_size(b), "%s: vocab size %d vs %d", what, n,
          sdc_qwen2_tokenizer_vocab_size(b));
    for (int i = 0; i < n; i++) {
        const char *x = sdc_qwen2_tokenizer_token(a, i), *y = sdc_qwen2_tokenizer_token(b, i);
        diff += !x || !y || strcmp(x, y);
    }
    printf("  vocabulary %-24s %d tokens, %d differ\n", what, n, diff);
    CHECK(diff == 0, "%s: %d token strings differ", what, diff);
}

static void golden_prompts(const sdc_qwen2_tokenizer *t) {
    cJSON *j = read_json(GOLDEN("qwen_image/tokens.json"));
    CHECK(j != NULL, "tokens.json unreadable");
    if (!j) return;
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(j, "template_prefix");
    const cJSON *suf = cJSON_GetObjectItemCaseSensitive(j, "template_suffix");
    CHECK(cJSON_IsString(pre) && !strcmp(pre->valuestring, SDC_QWEN_IMAGE_PROMPT_PREFIX),
          "template prefix differs from tokens.json");
    CHECK(cJSON_IsString(suf) && !strcmp(suf->valuestring, SDC_QWEN_IMAGE_PROMPT_SUFFIX),
          "template suffix differs from tokens.json");
    int n = 0, bad = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(j, "prompts")) {
        const char *user = cJSON_GetObjectItemCaseSensitive(p, "user_text")->valuestring;
        int32_t *ids = NULL, *uids = NULL;
        int ni = 0, nu = 0, drop = 0;
        sdc_status st = sdc_qwen_image_prompt_tokens(t, user, &ids, &ni, &drop);
        int ok = st == SDC_OK && ids_equal(ids, ni, cJSON_GetObjectItemCaseSensitive(p, "ids")) &&
                 ni - drop == cJSON_GetObjectItemCaseSensitive(p, "dit_context_tokens")->valueint;
        st = sdc_qwen2_tokenize(t, user, strlen(user), &uids, &nu);
        ok = ok && st == SDC_OK &&
             ids_equal(uids, nu, cJSON_GetObjectItemCaseSensitive(p, "user_ids"));
        /* the user tokens follow the 34 template tokens: the prefix ends at a token boundary */
        ok = ok && ni == drop + nu + 5 &&
             (nu == 0 || !memcmp(ids + drop, uids, (size_t)nu * sizeof *uids));
        if (!ok) {
            fprintf(stderr, "tokens.json: %s differs\n", user);
            print_ids("got", ids, ni);
        }
        bad += !ok;
        n++;
        free(ids);
        free(uids);
    }
    printf("  tokens.json (sd.cpp's ids)          %d templated prompts, %d differ\n", n, bad);
    CHECK(n >= 6 && bad == 0, "tokens.json: %d of %d prompts differ", bad, n);
    cJSON_Delete(j);
}

static int copy_file(const char *from, const char *to) {
    size_t n = 0;
    unsigned char *d = t_read_file(from, &n);
    FILE *f = d ? fopen(to, "wb") : NULL;
    int ok = f && fwrite(d, 1, n, f) == n;
    if (f) ok &= fclose(f) == 0;
    free(d);
    return ok;
}

/* vocab.json + merges.txt with a tokenizer_config.json whose added_tokens_decoder gives the
 * three special tokens Qwen-Image uses (the real Qwen2.5 files carry theirs there): those ids,
 * and the golden prompts tokenize as with tokenizer.json. */
static void config_added_tokens(const sdc_qwen2_tokenizer *ref_tok) {
    char dir[] = "/tmp/sdc_qwen2_tokXXXXXX", p[256];
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp");
        return;
    }
    snprintf(p, sizeof p, "%s/vocab.json", dir);
    int ok = copy_file(TOKDIR "/vocab.json", p);
    snprintf(p, sizeof p, "%s/merges.txt", dir);
    ok &= copy_file(TOKDIR "/merges.txt", p);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", dir);
    FILE *f = fopen(p, "w");
    ok &= f != NULL;
    if (f) {
        fputs(
            "{\"added_tokens_decoder\": {"
            "\"2619\": {\"content\": \"<|endoftext|>\", \"normalized\": false, \"special\": true},"
            "\"2620\": {\"content\": \"<|im_start|>\", \"normalized\": false, \"special\": true},"
            "\"2621\": {\"content\": \"<|im_end|>\", \"normalized\": false, \"special\": true}"
            "}}",
            f);
        fclose(f);
    }
    CHECK(ok, "writing %s", dir);
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status st = sdc_qwen2_tokenizer_load(dir, &t);
    CHECK(st == SDC_OK, "%s: %s", dir, sdc_last_error());
    if (t) {
        CHECK(sdc_qwen2_tokenizer_vocab_size(t) == 2622 &&
                  sdc_qwen2_tokenizer_find(t, "<|im_start|>") == 2620 &&
                  sdc_qwen2_tokenizer_find(t, "<|vision_start|>") < 0,
              "added_tokens_decoder: vocab %d", sdc_qwen2_tokenizer_vocab_size(t));
        const char *prompts[] = {"a red fox sitting in a snowy forest, watercolor painting", "",
                                 "A lighthouse on a rocky coast at sunset"};
        int bad = 0;
        for (int k = 0; k < 3; k++) {
            int32_t *a = NULL, *b = NULL;
            int na = 0, nb = 0, da = 0, db = 0;
            sdc_qwen_image_prompt_tokens(t, prompts[k], &a, &na, &da);
            sdc_qwen_image_prompt_tokens(ref_tok, prompts[k], &b, &nb, &db);
            bad += !(na == nb && na > 0 && !memcmp(a, b, (size_t)na * sizeof *a));
            free(a);
            free(b);
        }
        printf("  vocab.json + tokenizer_config.json added_tokens_decoder: 3 prompts, %d differ\n",
               bad);
        CHECK(bad == 0, "added_tokens_decoder: %d prompts differ", bad);
    }
    sdc_qwen2_tokenizer_free(t);
    static const char *const names[] = {"vocab.json", "merges.txt", "tokenizer_config.json"};
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        unlink(p);
    }
    rmdir(dir);
}

static sdc_qwen2_tokenizer *load(const char *path) {
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status st = sdc_qwen2_tokenizer_load(path, &t);
    CHECK(st == SDC_OK, "load %s: %s", path, sdc_last_error());
    return t;
}

/* A vocabulary small enough to derive ids by hand. Bytes: ids of a..e are 64..68 in the
 * bytes_to_unicode order ('!' = 0); merges "a b" (rank 0, id 256), "b c" (1, 257),
 * "ab c" (2, 258), "Ġ a" (3, 259). Specials from 260. */
static void tiny_vocab(void) {
    static const char merges[] = "a b\nb c\nab c\n\xC4\xA0 a\n";
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status st = sdc_qwen2_tokenizer_load_memory(NULL, 0, merges, sizeof merges - 1, &t);
    CHECK(st == SDC_OK, "tiny: %s", sdc_last_error());
    if (!t) return;
    CHECK(sdc_qwen2_tokenizer_vocab_size(t) == 256 + 4 + 31, "tiny: vocab size %d",
          sdc_qwen2_tokenizer_vocab_size(t));
    CHECK(sdc_qwen2_tokenizer_find(t, "<|im_start|>") == 261, "tiny: <|im_start|> id");
    struct {
        const char *text;
        int n;
        int32_t ids[12];
    } cases[] = {
        {"abc", 1, {258}},             /* a b -> ab (rank 0), ab c (rank 2) */
        {"bc", 1, {257}},              /* b c */
        {"abbc", 2, {256, 257}},       /* ab + bc */
        {" a", 1, {259}},              /* Ġa */
        {"a<|im_end|>", 2, {64, 262}}, /* added token split first */
        {"<|im_start|", 11, {27, 91, 72, 76, 62, 82, 83, 64, 81, 83, 91}}, /* not added */
        {"<|im_start|><|im_end|>", 2, {261, 262}},
        {"", 0, {0}},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int32_t *ids = NULL;
        int n = 0;
        st = sdc_qwen2_tokenize(t, cases[k].text, strlen(cases[k].text), &ids, &n);
        int ok = st == SDC_OK && n == cases[k].n &&
                 (n == 0 || !memcmp(ids, cases[k].ids, (size_t)n * sizeof *ids));
        CHECK(ok, "tiny: \"%s\" gives %d ids", cases[k].text, n);
        if (!ok) print_ids("got", ids, n);
        free(ids);
    }
    /* the merges written back load to the same tokenizer */
    char *txt = NULL;
    size_t tl = 0;
    CHECK(sdc_qwen2_tokenizer_merges_text(t, &txt, &tl) == SDC_OK, "tiny: merges text");
    CHECK(txt && tl == strlen("#version: 0.2\n") + sizeof merges - 1 && !strcmp(txt + 14, merges),
          "tiny: merges text round trip");
    free(txt);
    sdc_qwen2_tokenizer_free(t);
}

/* tests/fuzz/corpus/fuzz_qwen2_tokenizer/small_tokenizer.json: 6 tokens, merges "a b", "Ġ ab",
 * added <|im_start|> 6, <|im_end|> 7 (raw) and "é" 8 (normalized: matched after NFC). The ids
 * are what HF tokenizers 0.23.3 gives for that file. */
static void normalized_added(void) {
    sdc_qwen2_tokenizer *t = NULL;
    const char *path =
        SDC_SOURCE_DIR "/tests/fuzz/corpus/fuzz_qwen2_tokenizer/small_tokenizer.json";
    CHECK(sdc_qwen2_tokenizer_load(path, &t) == SDC_OK, "%s: %s", path, sdc_last_error());
    if (!t) return;
    struct {
        const char *text;
        int n;
        int32_t ids[6];
    } cases[] = {
        {"ab e\xCC\x81"
         "ab",
         4,
         {2, 3, 8, 2}},
        {"<|im_start|>ab ab<|im_end|>c", 5, {6, 2, 4, 7, 5}},
        {"x\xC3\xA9", 1, {8}},
        {" ab", 1, {4}},
        {"a\xC3\xA9", 2, {0, 8}},
    };
    int bad = 0;
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        int32_t *ids = NULL;
        int n = 0;
        sdc_status st = sdc_qwen2_tokenize(t, cases[k].text, strlen(cases[k].text), &ids, &n);
        int ok = st == SDC_OK && n == cases[k].n && !memcmp(ids, cases[k].ids, (size_t)n * 4);
        CHECK(ok, "small_tokenizer.json: \"%s\"", cases[k].text);
        if (!ok) print_ids("got", ids, n);
        bad += !ok;
        free(ids);
    }
    printf("  normalized added token (small_tokenizer.json): 5 strings, %d differ from HF\n", bad);
    sdc_qwen2_tokenizer_free(t);
}

static void expect_fail(const char *what, const char *json, const char *needle) {
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status st = sdc_qwen2_tokenizer_load_json(json, strlen(json), "bad.json", &t);
    const char *msg = sdc_last_error();
    printf("  rejects %-28s %s\n", what, st ? msg : "(accepted)");
    CHECK(st != SDC_OK && !t && strstr(msg, needle), "%s: status %d, message '%s'", what, st, msg);
    sdc_qwen2_tokenizer_free(t);
}

static void bad_files(void) {
#define PRE                                                                                        \
    "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Sequence\","                  \
    "\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)" \
    "|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|"  \
    "\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+\"}},{\"type\":\"ByteLevel\"}]},"
    static const char ok[] = "{" PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,"
                             "\"ab\":2},\"merges\":[[\"a\",\"b\"]]}}";
    sdc_qwen2_tokenizer *t = NULL;
    CHECK(sdc_qwen2_tokenizer_load_json(ok, strlen(ok), "ok.json", &t) == SDC_OK,
          "minimal tokenizer.json: %s", sdc_last_error());
    int32_t *ids = NULL;
    int n = 0;
    CHECK(t && sdc_qwen2_tokenize(t, "abx", 3, &ids, &n) == SDC_OK && n == 1 && ids[0] == 2,
          "minimal: 'abx' gives ab (x has no token: dropped, as HF without unk)");
    free(ids);
    sdc_qwen2_tokenizer_free(t);
    expect_fail("not JSON", "{\"model\":", "not valid JSON");
    expect_fail("a Unigram model", "{" PRE "\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}",
                "not BPE");
    expect_fail("a merge out of the vocab",
                "{" PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},"
                "\"merges\":[\"a b\"]}}",
                "lacks");
    expect_fail("a one-token merge",
                "{" PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"a\"]}}",
                "not two tokens");
    expect_fail("a negative id",
                "{" PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}",
                "no valid id");
    expect_fail("two tokens on one id",
                "{" PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]}}",
                "given to");
    expect_fail("GPT-2's pre-tokenizer",
                "{\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"use_regex\":true},"
                "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                "Qwen2");
    expect_fail("a Removed split",
                "{\"pre_tokenizer\":{\"type\":\"Split\",\"behavior\":\"Removed\",\"pattern\":"
                "{\"Regex\":\"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|"
                "\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
                "\\\\s+(?!\\\\S)|\\\\s+\"}},"
                "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                "Isolated");
    expect_fail("an lstrip added token",
                "{" PRE "\"added_tokens\":[{\"id\":1,\"content\":\"<x>\",\"lstrip\":true}],"
                "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]}}",
                "lstrip");
#undef PRE
    sdc_qwen2_tokenizer *m = NULL;
    static const char bad_merges[] = "#version: 0.2\na b c\n";
    sdc_status st = sdc_qwen2_tokenizer_load_memory(NULL, 0, bad_merges, sizeof bad_merges - 1, &m);
    CHECK(st != SDC_OK && strstr(sdc_last_error(), "line 2"), "merges 'a b c': %s",
          sdc_last_error());
    st = sdc_qwen2_tokenizer_load("/nonexistent/qwen_tok", &m);
    CHECK(st == SDC_ERR_IO && m == NULL, "missing path: %d", st);
}

int main(void) {
    tiny_vocab();
    normalized_added();
    bad_files();
    struct stat sb;
    if (stat(TOKDIR "/tokenizer.json", &sb) != 0) {
        printf("%s absent: golden checks skipped\n", TOKDIR);
        if (t_failed) TEST_MAIN_END();
        return 77;
    }
    cJSON *ref = read_json(SDC_SOURCE_DIR "/tests/data/qwen_text/qwen2_tokenizer_hf.json");
    CHECK(ref != NULL, "qwen2_tokenizer_hf.json unreadable");
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(ref, "cases");
    printf("reference: %s\n", cJSON_GetObjectItemCaseSensitive(ref, "tool")
                                  ? cJSON_GetObjectItemCaseSensitive(ref, "tool")->valuestring
                                  : "?");
    sdc_qwen2_tokenizer *tj = load(TOKDIR "/tokenizer.json");
    sdc_qwen2_tokenizer *tv = load(TOKDIR "/vocab.json");
    sdc_qwen2_tokenizer *tm = load(TOKDIR "/merges.txt");
    sdc_qwen2_tokenizer *td = load(TOKDIR);
    if (tj && tv && tm && td) {
        CHECK(sdc_qwen2_tokenizer_vocab_size(tj) == 2650, "vocab size %d",
              sdc_qwen2_tokenizer_vocab_size(tj));
        CHECK(sdc_qwen2_tokenizer_n_merges(tj) == 2363, "merges %d",
              sdc_qwen2_tokenizer_n_merges(tj));
        CHECK(sdc_qwen2_tokenizer_find(tj, "<|im_start|>") == 2620 &&
                  sdc_qwen2_tokenizer_find(tj, "<|im_end|>") == 2621 &&
                  sdc_qwen2_tokenizer_find(tj, "<|endoftext|>") == 2619,
              "special ids");
        same_vocab(tj, tv, "vocab.json+merges.txt");
        same_vocab(tj, tm, "merges.txt (sd.cpp)");
        same_vocab(tj, td, "directory");
        int bad = run_cases(tj, cases, "tokenizer.json", 1);
        CHECK(bad == 0, "tokenizer.json: %d strings differ from HF", bad);
        bad = run_cases(tv, cases, "vocab.json + merges.txt", 0);
        CHECK(bad == 0, "vocab.json: %d strings differ from HF", bad);
        bad = run_cases(tm, cases, "merges.txt alone", 0);
        CHECK(bad == 0, "merges.txt: %d strings differ from HF", bad);
        /* what -M convert would embed: the merges written back */
        char *txt = NULL;
        size_t tl = 0;
        sdc_qwen2_tokenizer *tr = NULL;
        CHECK(sdc_qwen2_tokenizer_merges_text(tj, &txt, &tl) == SDC_OK &&
                  sdc_qwen2_tokenizer_load_memory(NULL, 0, txt, tl, &tr) == SDC_OK,
              "merges round trip: %s", sdc_last_error());
        if (tr) same_vocab(tj, tr, "merges written back");
        free(txt);
        sdc_qwen2_tokenizer_free(tr);
        golden_prompts(tj);
        config_added_tokens(tj);
    }
    sdc_qwen2_tokenizer_free(tj);
    sdc_qwen2_tokenizer_free(tv);
    sdc_qwen2_tokenizer_free(tm);
    sdc_qwen2_tokenizer_free(td);
    cJSON_Delete(ref);
    TEST_MAIN_END();
}
