#include "pipeline/tokenizer_source.h"

#include <stdlib.h>

#include "core/log.h"

static bool kv_bool(const sdc_gguf_kv *kv, int def) {
    if (!kv) return def;
    if (kv->type == SDC_GGUF_BOOL) return kv->v.b;
    if (kv->type == SDC_GGUF_U8 || kv->type == SDC_GGUF_I8) return kv->v.u8 != 0;
    return def;
}

static int32_t kv_id(const sdc_gguf_kv *kv) {
    if (!kv) return -1;
    switch (kv->type) {
    case SDC_GGUF_U32:
        return kv->v.u32 <= INT32_MAX ? (int32_t)kv->v.u32 : -1;
    case SDC_GGUF_I32:
        return kv->v.i32;
    case SDC_GGUF_U64:
        return kv->v.u64 <= INT32_MAX ? (int32_t)kv->v.u64 : -1;
    case SDC_GGUF_I64:
        return kv->v.i64 >= 0 && kv->v.i64 <= INT32_MAX ? (int32_t)kv->v.i64 : -1;
    default:
        return -1;
    }
}

/* A numeric GGUF array as a typed pointer, when its element type is `want`. */
static const void *kv_array(const sdc_gguf_kv *kv, sdc_gguf_vtype want, uint64_t n) {
    if (!kv || kv->type != SDC_GGUF_ARRAY || kv->arr_type != want || kv->arr_n != n) return NULL;
    return kv->arr;
}

static sdc_status from_gguf(const sdc_loader *l, const sdc_gguf_kv *tokens, sdc_tokenizer **out) {
    if (tokens->type != SDC_GGUF_ARRAY || tokens->arr_type != SDC_GGUF_STRING ||
        tokens->arr_n == 0 || tokens->arr_n > INT32_MAX)
        return sdc_fail(SDC_ERR_FORMAT, "tokenizer.ggml.tokens is not a non-empty string array");
    uint64_t n = tokens->arr_n;
    sdc_tokenizer_arrays a;
    sdc_tokenizer_arrays_init(&a);
    a.n_pieces = (int32_t)n;
    a.pieces = tokens->arr_str;
    size_t *lens = malloc((size_t)n * sizeof(size_t));
    if (!lens) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: out of memory");
    for (uint64_t i = 0; i < n; i++) lens[i] = (size_t)tokens->arr_str_len[i];
    a.piece_lens = lens;
    a.scores = kv_array(sdc_loader_find_kv(l, "tokenizer.ggml.scores", NULL), SDC_GGUF_F32, n);
    a.types = kv_array(sdc_loader_find_kv(l, "tokenizer.ggml.token_type", NULL), SDC_GGUF_I32, n);
    const sdc_gguf_kv *cm = sdc_loader_find_kv(l, "tokenizer.ggml.precompiled_charsmap", NULL);
    if (cm && cm->type == SDC_GGUF_ARRAY &&
        (cm->arr_type == SDC_GGUF_U8 || cm->arr_type == SDC_GGUF_I8)) {
        a.charsmap = cm->arr;
        a.charsmap_size = (size_t)cm->arr_n;
    }
    a.add_dummy_prefix = kv_bool(sdc_loader_find_kv(l, "tokenizer.ggml.add_space_prefix", NULL), 1);
    a.remove_extra_whitespaces =
        kv_bool(sdc_loader_find_kv(l, "tokenizer.ggml.remove_extra_whitespaces", NULL), 1);
    a.unk_id = kv_id(sdc_loader_find_kv(l, "tokenizer.ggml.unknown_token_id", NULL));
    a.eos_id = kv_id(sdc_loader_find_kv(l, "tokenizer.ggml.eos_token_id", NULL));
    a.pad_id = kv_id(sdc_loader_find_kv(l, "tokenizer.ggml.padding_token_id", NULL));
    a.add_eos = kv_bool(sdc_loader_find_kv(l, "tokenizer.ggml.add_eos_token", NULL), 1);
    sdc_status s = sdc_tokenizer_from_arrays(&a, out);
    free(lens);
    if (s != SDC_OK) return sdc_fail_prefix(s, "tokenizer embedded in GGUF: ");
    SDC_LOGI("t5 tokenizer: %d pieces embedded in the GGUF", (int)n);
    return SDC_OK;
}

sdc_status sdc_load_t5_tokenizer(const sdc_loader *l, const char *weights_path,
                                 const char *override_path, sdc_tokenizer **out) {
    *out = NULL;
    if (!override_path || !*override_path) {
        const sdc_gguf_kv *tokens = sdc_loader_find_kv(l, "tokenizer.ggml.tokens", NULL);
        if (tokens) return from_gguf(l, tokens, out);
    }
    return sdc_tokenizer_load_for_weights(weights_path, override_path, out);
}
