#include "pipeline/tokenizer_export.h"

#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "text/tokenizer_internal.h"

static bool has_t5(const sdc_loader *l) {
    int n = sdc_loader_tensor_count(l);
    for (int i = 0; i < n; i++)
        if (!strncmp(sdc_loader_tensor_at(l, i)->name, "text_encoders.t5xxl.", 20)) return true;
    return false;
}

static sdc_status copy_gguf_keys(const sdc_loader *l, int file, sdc_gguf_writer *w) {
    const sdc_gguf_file *g = sdc_loader_file_gguf(l, file);
    sdc_status s = SDC_OK;
    for (int i = 0; g && i < sdc_gguf_kv_count(g) && s == SDC_OK; i++) {
        const sdc_gguf_kv *kv = sdc_gguf_kv_at(g, i);
        if (!strncmp(kv->key, "tokenizer.", 10)) s = sdc_gguf_set_kv(w, kv);
    }
    return s;
}

/* What the HF pipeline does, in the flags a sentencepiece-style vocabulary has. */
static void hf_flags(const sdc_tokenizer *t, int *dummy_prefix, int *remove_ws) {
    *dummy_prefix = 0;
    *remove_ws = 0;
    for (int i = 0; i < t->n_norm; i++) {
        if (t->norm[i].kind == SDC_NORM_PREPEND) *dummy_prefix = 1;
        if (t->norm[i].kind == SDC_NORM_STRIP || t->norm[i].kind == SDC_NORM_REPLACE)
            *remove_ws = 1;
    }
    for (int i = 0; i < t->n_pre; i++) {
        if (t->pre[i].kind == SDC_PRE_WHITESPACE_SPLIT) *remove_ws = 1;
        if (t->pre[i].kind == SDC_PRE_METASPACE && t->pre[i].prepend != SDC_PREPEND_NEVER)
            *dummy_prefix = 1;
    }
}

static sdc_status write_arrays(const sdc_tokenizer *t, sdc_gguf_writer *w) {
    int32_t n = t->n_pieces;
    float *scores = malloc(sizeof *scores * (size_t)n);
    int32_t *types = malloc(sizeof *types * (size_t)n);
    size_t cm_size = t->charsmap ? sdc_charsmap_serialize(t->charsmap, NULL) : 0;
    uint8_t *cm = cm_size ? malloc(cm_size) : NULL;
    sdc_status s = SDC_OK;
    if (!scores || !types || (cm_size && !cm)) {
        s = sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer export: out of memory");
        goto done;
    }
    for (int32_t i = 0; i < n; i++) {
        scores[i] = (float)t->scores[i];
        types[i] = t->types[i] ? t->types[i] : SDC_PIECE_NORMAL;
    }
    if (cm) sdc_charsmap_serialize(t->charsmap, cm);
    int dummy = t->add_dummy_prefix, remove_ws = t->remove_extra_ws;
    if (t->style == SDC_TOK_STYLE_HF) hf_flags(t, &dummy, &remove_ws);
    bool add_eos = t->style == SDC_TOK_STYLE_SPM ||
                   (t->n_suffix == 1 && t->suffix_ids[0] == t->eos_id && t->eos_id >= 0);
    s = sdc_gguf_set_str(w, "tokenizer.ggml.model", "t5");
    if (s == SDC_OK)
        s = sdc_gguf_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)t->pieces,
                                 (uint64_t)n);
    if (s == SDC_OK) s = sdc_gguf_set_arr(w, "tokenizer.ggml.scores", SDC_GGUF_F32, scores, n);
    if (s == SDC_OK) s = sdc_gguf_set_arr(w, "tokenizer.ggml.token_type", SDC_GGUF_I32, types, n);
    if (s == SDC_OK && cm)
        s = sdc_gguf_set_arr(w, "tokenizer.ggml.precompiled_charsmap", SDC_GGUF_U8, cm, cm_size);
    if (s == SDC_OK) s = sdc_gguf_set_bool(w, "tokenizer.ggml.add_space_prefix", dummy != 0);
    if (s == SDC_OK)
        s = sdc_gguf_set_bool(w, "tokenizer.ggml.remove_extra_whitespaces", remove_ws != 0);
    if (s == SDC_OK) s = sdc_gguf_set_bool(w, "tokenizer.ggml.add_eos_token", add_eos);
    if (s == SDC_OK && t->unk_id >= 0)
        s = sdc_gguf_set_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)t->unk_id);
    if (s == SDC_OK && t->eos_id >= 0)
        s = sdc_gguf_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)t->eos_id);
    if (s == SDC_OK && t->pad_id >= 0)
        s = sdc_gguf_set_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)t->pad_id);
done:
    free(scores);
    free(types);
    free(cm);
    return s;
}

sdc_status sdc_export_t5_tokenizer(const sdc_loader *l, const char *weights_path,
                                   const char *override_path, sdc_gguf_writer *w) {
    if (!has_t5(l)) return SDC_OK;
    int file = -1;
    if ((!override_path || !*override_path) &&
        sdc_loader_find_kv(l, "tokenizer.ggml.tokens", &file))
        return copy_gguf_keys(l, file, w);
    if (!weights_path) return SDC_OK;
    sdc_tokenizer *t = NULL;
    sdc_status s = sdc_tokenizer_load_for_weights(weights_path, override_path, &t);
    if (s != SDC_OK) {
        if (override_path && *override_path) return s; /* asked for: an error */
        SDC_LOGW("convert: no T5 tokenizer found near %s; the GGUF will need --t5-tokenizer",
                 weights_path);
        sdc_clear_error();
        return SDC_OK;
    }
    s = write_arrays(t, w);
    sdc_tokenizer_free(t);
    return s;
}
