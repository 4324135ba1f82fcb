/* Qwen2 tokenizer discovery and GGUF embedding (qwen2_tokenizer_source.h). */
#include "pipeline/qwen2_tokenizer_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/log.h"

#define KEY_MODEL  "tokenizer.ggml.model"
#define KEY_PRE    "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_TYPES  "tokenizer.ggml.token_type"
#define KEY_MERGES "tokenizer.ggml.merges"

/* llama.cpp's token types */
enum { TT_NORMAL = 1, TT_CONTROL = 3, TT_UNUSED = 5 };

static const sdc_gguf_kv *kv_of(const sdc_loader *l, const char *key, sdc_gguf_vtype type,
                                sdc_gguf_vtype elem) {
    const sdc_gguf_kv *kv = l ? sdc_loader_find_kv(l, key, NULL) : NULL;
    if (!kv || kv->type != type || (type == SDC_GGUF_ARRAY && kv->arr_type != elem)) return NULL;
    return kv;
}

/* 1: loaded; 0: no Qwen2 tokenizer in the GGUF (why in note); -1: error (*err). */
static int from_gguf(const sdc_loader *l, sdc_qwen2_tokenizer **out, char *note, size_t cap,
                     sdc_status *err) {
    const sdc_gguf_kv *model = kv_of(l, KEY_MODEL, SDC_GGUF_STRING, 0);
    if (!model) {
        snprintf(note, cap, "no tokenizer in the GGUF");
        return 0;
    }
    const sdc_gguf_kv *pre = kv_of(l, KEY_PRE, SDC_GGUF_STRING, 0);
    if (strcmp(model->str, "gpt2") || !pre || strcmp(pre->str, "qwen2")) {
        snprintf(note, cap, "the GGUF's tokenizer is %s/%s, not gpt2/qwen2", model->str,
                 pre ? pre->str : "-");
        return 0;
    }
    const sdc_gguf_kv *tokens = kv_of(l, KEY_TOKENS, SDC_GGUF_ARRAY, SDC_GGUF_STRING);
    const sdc_gguf_kv *merges = kv_of(l, KEY_MERGES, SDC_GGUF_ARRAY, SDC_GGUF_STRING);
    const sdc_gguf_kv *types = kv_of(l, KEY_TYPES, SDC_GGUF_ARRAY, SDC_GGUF_I32);
    if (!tokens || !merges || tokens->arr_n == 0 || tokens->arr_n >= (1u << 24) ||
        merges->arr_n >= (1u << 22) || (types && types->arr_n != tokens->arr_n)) {
        *err = sdc_fail(SDC_ERR_FORMAT,
                        "tokenizer embedded in GGUF: gpt2/qwen2 without usable %s, %s (string "
                        "arrays) or with a %s of another length",
                        KEY_TOKENS, KEY_MERGES, KEY_TYPES);
        return -1;
    }
    sdc_status s = sdc_qwen2_tokenizer_load_lists(
        tokens->arr_str, types ? (const int32_t *)types->arr : NULL, (int32_t)tokens->arr_n,
        merges->arr_str, (int32_t)merges->arr_n, "tokenizer embedded in GGUF", out);
    if (s != SDC_OK) {
        *err = s;
        return -1;
    }
    SDC_LOGI("qwen2 tokenizer: %d tokens, %d merges embedded in the GGUF", (int)tokens->arr_n,
             (int)merges->arr_n);
    return 1;
}

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

sdc_status sdc_load_qwen2_tokenizer(const sdc_loader *l, const char *near_path,
                                    const char *override_path, sdc_qwen2_tokenizer **out) {
    *out = NULL;
    if (override_path && *override_path) {
        sdc_status s = sdc_qwen2_tokenizer_load(override_path, out);
        if (s != SDC_OK) return sdc_fail_prefix(s, "--llm-tokenizer: ");
        SDC_LOGI("qwen2 tokenizer: %s", override_path);
        return SDC_OK;
    }
    char note[200];
    sdc_status err = SDC_OK;
    int r = from_gguf(l, out, note, sizeof note, &err);
    if (r != 0) return err;
    if (!near_path)
        return sdc_fail(SDC_ERR_INVALID_ARG,
                        "Qwen Image: no Qwen2 tokenizer (%s, no --llm file to look beside): pass "
                        "--llm-tokenizer",
                        note);
    char dir[4096], cand[4200];
    snprintf(dir, sizeof dir, "%s", near_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    static const char *const tries[] = {"tokenizer", "../tokenizer", "tokenizer.json", "vocab.json",
                                        "merges.txt"};
    for (size_t i = 0; i < sizeof tries / sizeof tries[0]; i++) {
        snprintf(cand, sizeof cand, "%s/%s", dir, tries[i]);
        if (!exists(cand)) continue;
        sdc_status s = sdc_qwen2_tokenizer_load(cand, out);
        if (s == SDC_OK) SDC_LOGI("qwen2 tokenizer: %s", cand);
        return s;
    }
    return sdc_fail(SDC_ERR_IO,
                    "Qwen Image: no Qwen2 tokenizer for %s (%s; looked for tokenizer/, "
                    "../tokenizer/, tokenizer.json, vocab.json, merges.txt in %s): pass "
                    "--llm-tokenizer, or use an LLM GGUF that embeds it (llama.cpp's, or "
                    "sdc -M convert)",
                    near_path, note, dir);
}

sdc_status sdc_qwen2_tokenizer_write_gguf(const sdc_qwen2_tokenizer *t, sdc_gguf_writer *w) {
    const int32_t n = sdc_qwen2_tokenizer_vocab_size(t);
    char **tok = calloc((size_t)n, sizeof *tok);
    int32_t *types = malloc((size_t)n * sizeof *types);
    char *merges = NULL;
    size_t mlen = 0;
    const char **mlist = NULL;
    sdc_status s = tok && types ? SDC_OK : sdc_fail(SDC_ERR_NO_MEMORY, "qwen2 tokenizer export");
    for (int32_t i = 0; i < n && s == SDC_OK; i++) {
        const char *p = sdc_qwen2_tokenizer_token(t, i);
        char pad[32];
        if (!p) snprintf(pad, sizeof pad, "[PAD%d]", (int)i); /* llama.cpp's filler */
        tok[i] = strdup(p ? p : pad);
        types[i] = !p ? TT_UNUSED : sdc_qwen2_tokenizer_is_added(t, i) ? TT_CONTROL : TT_NORMAL;
        if (!tok[i]) s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2 tokenizer export");
    }
    /* merges_text: "#version: 0.2\n" then "a b\n" lines, split in place into strings */
    if (s == SDC_OK) s = sdc_qwen2_tokenizer_merges_text(t, &merges, &mlen);
    const int32_t nm = sdc_qwen2_tokenizer_n_merges(t);
    if (s == SDC_OK && !(mlist = malloc(((size_t)nm + 1) * sizeof *mlist)))
        s = sdc_fail(SDC_ERR_NO_MEMORY, "qwen2 tokenizer export");
    int32_t k = 0;
    for (char *line = merges; s == SDC_OK && line && line < merges + mlen;) {
        char *nl = memchr(line, '\n', (size_t)(merges + mlen - line));
        if (nl) *nl = '\0';
        if (line[0] && strncmp(line, "#version", 8) && k < nm) mlist[k++] = line;
        line = nl ? nl + 1 : NULL;
    }
    if (s == SDC_OK && k != nm)
        s = sdc_fail(SDC_ERR_INTERNAL, "qwen2 tokenizer export: %d of %d merges", k, nm);
    if (s == SDC_OK) s = sdc_gguf_set_str(w, KEY_MODEL, "gpt2");
    if (s == SDC_OK) s = sdc_gguf_set_str(w, KEY_PRE, "qwen2");
    if (s == SDC_OK) s = sdc_gguf_set_arr_str(w, KEY_TOKENS, (const char *const *)tok, (uint64_t)n);
    if (s == SDC_OK) s = sdc_gguf_set_arr(w, KEY_TYPES, SDC_GGUF_I32, types, (uint64_t)n);
    if (s == SDC_OK) s = sdc_gguf_set_arr_str(w, KEY_MERGES, mlist, (uint64_t)nm);
    for (int32_t i = 0; tok && i < n; i++) free(tok[i]);
    free(tok);
    free(types);
    free(merges);
    free(mlist);
    return s;
}
