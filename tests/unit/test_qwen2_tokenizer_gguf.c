/* The Qwen2 tokenizer in GGUF (pipeline/qwen2_tokenizer_source.c): llama.cpp's keys
 * (tokenizer.ggml.model "gpt2", pre "qwen2", tokens, token_type, merges), which the LLM GGUFs
 * users download carry and `sdc -M convert --llm` writes. The stand-in tokenizer of
 * ${GOLDEN}/qwen_image/tokenizer goes through
 *  - sdc's own writer (what convert embeds), then the loader: same vocabulary, and the ids of
 *    the Hugging Face tokenizers library on 5000 strings (tests/data/qwen_text/
 *    qwen2_tokenizer_hf.json, made by tests/golden/gen_qwen2_tokenizer_ref.py);
 *  - lists laid out as llama.cpp's converter lays them out (padding ids of type UNUSED after
 *    the vocabulary, the specials CONTROL, one USER_DEFINED): the same ids;
 *  - sdc_convert with --llm and --llm-tokenizer: the GGUF it writes gives the same vocabulary.
 * A GGUF whose tokenizer is another model's is not taken for Qwen2's (the error says what was
 * found and names --llm-tokenizer). Exit 77 when the golden dir is absent. */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/status.h"
#include "io/gguf.h"
#include "io/model_loader.h"
#include "pipeline/qwen2_tokenizer_source.h"
#include "sdc.h"
#include "test_util.h"
#include "text/qwen2_tokenizer.h"

#define TOKDIR GOLDEN("qwen_image/tokenizer")

static cJSON *g_cases;

/* ids of every HF case; returns the number that differ. */
static int hf_mismatches(const sdc_qwen2_tokenizer *t) {
    int bad = 0, n = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(g_cases, "cases")) {
        const char *s = cJSON_GetArrayItem(c, 0)->valuestring;
        const cJSON *ids = cJSON_GetArrayItem(c, 1);
        int32_t *got = NULL;
        int ng = 0;
        int ok = sdc_qwen2_tokenize(t, s, strlen(s), &got, &ng) == SDC_OK &&
                 ng == cJSON_GetArraySize(ids);
        for (int i = 0; ok && i < ng; i++) ok = got[i] == cJSON_GetArrayItem(ids, i)->valueint;
        bad += !ok;
        n++;
        free(got);
    }
    CHECK(n > 1000, "only %d HF cases", n);
    return bad;
}

static int vocab_differences(const sdc_qwen2_tokenizer *a, const sdc_qwen2_tokenizer *b) {
    int n = sdc_qwen2_tokenizer_vocab_size(a), diff = 0;
    for (int i = 0; i < n; i++) {
        const char *x = sdc_qwen2_tokenizer_token(a, i), *y = sdc_qwen2_tokenizer_token(b, i);
        diff += (x == NULL) != (y == NULL) || (x && strcmp(x, y));
        diff += x && sdc_qwen2_tokenizer_is_added(a, i) != sdc_qwen2_tokenizer_is_added(b, i);
    }
    return diff;
}

/* A GGUF in memory holding w's keys and one small tensor, read back through a loader. */
static sdc_loader *loader_of(sdc_gguf_writer *w, const char *label, void **mem) {
    static const float one[4] = {1, 2, 3, 4};
    const int64_t ne[1] = {4};
    size_t size = 0;
    sdc_loader *l = NULL;
    *mem = NULL;
    if (sdc_gguf_add_tensor(w, "token_embd.weight", SDC_TYPE_F32, 1, ne, one) != SDC_OK ||
        sdc_gguf_write_memory(w, mem, &size) != SDC_OK || sdc_loader_create(&l) != SDC_OK ||
        sdc_loader_add_memory(l, *mem, size, label, "text_encoders.llm.") != SDC_OK) {
        CHECK(0, "%s: %s", label, sdc_last_error());
        sdc_loader_free(l);
        return NULL;
    }
    return l;
}

/* Loads the tokenizer a loader's GGUF embeds, reports and checks it against ref. */
static void check_embedded(sdc_loader *l, const sdc_qwen2_tokenizer *ref, const char *what) {
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status s = l ? sdc_load_qwen2_tokenizer(l, NULL, NULL, &t) : SDC_ERR_INTERNAL;
    CHECK(s == SDC_OK, "%s: %s", what, sdc_last_error());
    if (s != SDC_OK) return;
    int dv = vocab_differences(ref, t), dh = hf_mismatches(t);
    printf("  %-40s vocab %d (%d differ), HF ids: %d strings differ\n", what,
           sdc_qwen2_tokenizer_vocab_size(t), dv, dh);
    CHECK(sdc_qwen2_tokenizer_vocab_size(t) >= sdc_qwen2_tokenizer_vocab_size(ref) && dv == 0,
          "%s: %d tokens differ", what, dv);
    CHECK(dh == 0, "%s: %d strings tokenize differently from HF", what, dh);
    sdc_qwen2_tokenizer_free(t);
}

static void own_writer(const sdc_qwen2_tokenizer *ref) {
    sdc_gguf_writer *w = NULL;
    void *mem = NULL;
    CHECK(sdc_gguf_writer_create(&w) == SDC_OK && sdc_qwen2_tokenizer_write_gguf(ref, w) == SDC_OK,
          "write: %s", sdc_last_error());
    sdc_loader *l = w ? loader_of(w, "own.gguf", &mem) : NULL;
    check_embedded(l, ref, "sdc's writer");
    sdc_loader_free(l);
    sdc_gguf_writer_free(w);
    free(mem);
}

/* The lists as llama.cpp's convert_hf_to_gguf writes them for Qwen2: every id up to the
 * model's padded vocabulary, "[PADn]" of type UNUSED (5) for ids without a token, CONTROL (3)
 * for special added tokens, USER_DEFINED (4) for the others. pre: tokenizer.ggml.pre. */
static sdc_loader *llamacpp_gguf(const sdc_qwen2_tokenizer *ref, const char *pre, void **mem,
                                 sdc_gguf_writer **wout) {
    const int n = sdc_qwen2_tokenizer_vocab_size(ref) + 6, nm = sdc_qwen2_tokenizer_n_merges(ref);
    char **tok = calloc((size_t)n, sizeof *tok);
    int32_t *types = calloc((size_t)n, sizeof *types);
    const char **merges = calloc((size_t)nm + 1, sizeof *merges);
    char *mt = NULL;
    size_t ml = 0;
    sdc_qwen2_tokenizer_merges_text(ref, &mt, &ml);
    int k = 0;
    for (char *p = mt; p && *p && k <= nm;) {
        char *nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        if (strncmp(p, "#version", 8)) merges[k++] = p;
        p = nl ? nl + 1 : p + strlen(p);
    }
    CHECK(k == nm, "merges text: %d of %d", k, nm);
    int user_defined = sdc_qwen2_tokenizer_find(ref, "<|image_pad|>");
    for (int i = 0; i < n; i++) {
        const char *s = sdc_qwen2_tokenizer_token(ref, i);
        char pad[32];
        snprintf(pad, sizeof pad, "[PAD%d]", i);
        tok[i] = strdup(s ? s : pad);
        types[i] = !s ? 5 : !sdc_qwen2_tokenizer_is_added(ref, i) ? 1 : i == user_defined ? 4 : 3;
    }
    sdc_gguf_writer *w = NULL;
    sdc_gguf_writer_create(&w);
    sdc_status s = sdc_gguf_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (s == SDC_OK) s = sdc_gguf_set_str(w, "tokenizer.ggml.pre", pre);
    if (s == SDC_OK)
        s = sdc_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, (uint64_t)n);
    if (s == SDC_OK) s = sdc_gguf_set_arr(w, "tokenizer.ggml.token_type", SDC_GGUF_I32, types, n);
    if (s == SDC_OK) s = sdc_gguf_set_arr_str(w, "tokenizer.ggml.merges", merges, (uint64_t)nm);
    if (s == SDC_OK) s = sdc_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", 2619);
    CHECK(s == SDC_OK, "llama.cpp layout: %s", sdc_last_error());
    sdc_loader *l = loader_of(w, "llamacpp.gguf", mem);
    for (int i = 0; i < n; i++) free(tok[i]);
    free(tok);
    free(types);
    free(merges);
    free(mt);
    *wout = w;
    return l;
}

static void llamacpp_layout(const sdc_qwen2_tokenizer *ref) {
    void *mem = NULL;
    sdc_gguf_writer *w = NULL;
    sdc_loader *l = llamacpp_gguf(ref, "qwen2", &mem, &w);
    check_embedded(l, ref, "llama.cpp's layout (padding, types)");
    sdc_loader_free(l);
    sdc_gguf_writer_free(w);
    free(mem);
    /* another pre-tokenizer (GPT-2's regex): not read as Qwen2's, and the error says so */
    l = llamacpp_gguf(ref, "llama-bpe", &mem, &w);
    sdc_qwen2_tokenizer *t = NULL;
    sdc_status s = l ? sdc_load_qwen2_tokenizer(l, NULL, NULL, &t) : SDC_OK;
    const char *e = sdc_last_error();
    printf("  pre-tokenizer llama-bpe: %s\n", e);
    CHECK(s != SDC_OK && t == NULL && strstr(e, "gpt2/llama-bpe") && strstr(e, "--llm-tokenizer"),
          "a llama-bpe tokenizer was not refused clearly: %s", e);
    sdc_qwen2_tokenizer_free(t);
    sdc_loader_free(l);
    sdc_gguf_writer_free(w);
    free(mem);
}

/* sdc_convert --llm X --llm-tokenizer TOKDIR: the output GGUF embeds the tokenizer. */
static void convert_embeds(const sdc_qwen2_tokenizer *ref) {
    char in[600], out[600];
    snprintf(in, sizeof in, "%s/test_qwen2_tok_in.gguf", SDC_BINARY_DIR);
    snprintf(out, sizeof out, "%s/test_qwen2_tok_out.gguf", SDC_BINARY_DIR);
    static const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const int64_t ne[2] = {4, 2};
    sdc_gguf_writer *w = NULL;
    CHECK(sdc_gguf_writer_create(&w) == SDC_OK &&
              sdc_gguf_add_tensor(w, "model.embed_tokens.weight", SDC_TYPE_F32, 2, ne, v) ==
                  SDC_OK &&
              sdc_gguf_write_file(w, in) == SDC_OK,
          "input: %s", sdc_last_error());
    sdc_gguf_writer_free(w);
    sdc_convert_params p;
    sdc_convert_params_init(&p);
    p.llm_path = in;
    p.llm_tokenizer_path = TOKDIR "/tokenizer.json";
    p.output_path = out;
    CHECK(sdc_convert(&p) == SDC_OK, "convert: %s", sdc_last_error());
    sdc_loader *l = NULL;
    CHECK(sdc_loader_create(&l) == SDC_OK && sdc_loader_add_file(l, out, "") == SDC_OK,
          "reading %s: %s", out, sdc_last_error());
    CHECK(sdc_loader_find(l, "text_encoders.llm.model.embed_tokens.weight") != NULL,
          "convert --llm: the tensor lost its prefix");
    check_embedded(l, ref, "sdc -M convert --llm --llm-tokenizer");
    sdc_loader_free(l);
    /* a bad explicit tokenizer is an error, not a GGUF without one */
    p.llm_tokenizer_path = SDC_SOURCE_DIR "/README.md";
    CHECK(sdc_convert(&p) != SDC_OK, "convert with an unreadable --llm-tokenizer succeeded");
    printf("  convert, bad --llm-tokenizer: %s\n", sdc_last_error());
    remove(in);
    remove(out);
}

int main(void) {
    struct stat sb;
    if (stat(TOKDIR "/tokenizer.json", &sb) != 0) {
        printf("%s absent: skipped\n", TOKDIR);
        return 77;
    }
    size_t n = 0;
    char *js =
        (char *)t_read_file(SDC_SOURCE_DIR "/tests/data/qwen_text/qwen2_tokenizer_hf.json", &n);
    g_cases = js ? cJSON_ParseWithLength(js, n) : NULL;
    free(js);
    sdc_qwen2_tokenizer *ref = NULL;
    CHECK(g_cases && sdc_qwen2_tokenizer_load(TOKDIR "/tokenizer.json", &ref) == SDC_OK,
          "reference: %s", sdc_last_error());
    if (ref) {
        printf("reference: %s (%d tokens, %d merges)\n", TOKDIR,
               sdc_qwen2_tokenizer_vocab_size(ref), sdc_qwen2_tokenizer_n_merges(ref));
        own_writer(ref);
        llamacpp_layout(ref);
        convert_embeds(ref);
    }
    sdc_qwen2_tokenizer_free(ref);
    cJSON_Delete(g_cases);
    TEST_MAIN_END();
}
