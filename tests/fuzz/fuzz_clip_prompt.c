/* Fuzz target: arbitrary bytes as a prompt (lora tags, A1111 attention, 77-token chunks with a
 * small built-in CLIP vocabulary and two textual-inversion embeddings, output weighting), as
 * merges text, and as a vocab.json. Nothing may crash, leak or read out of bounds; every id
 * must index the vocabulary or the embedding rows. Errors are fine. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/clip_prompt.h"

/* A few merges over ASCII letters and one over a two-byte character (é = Ã©). */
static const char kMerges[] = "#version: 0.2\nc a\nca t</w>\nt h\nth e</w>\ne r\nl o\nlo w</w>\n"
                              "i n\nin g</w>\n' s</w>\nÃ ©</w>\nb r\nbr e\nbre a\nbrea k</w>\n";

/* mode 0: HF semantics, 1: sd.cpp-compatible */
static sdc_clip_tokenizer *tiny_mode(int mode) {
    static sdc_clip_tokenizer *t[2];
    if (!t[mode]) {
        if (sdc_clip_tokenizer_load_memory(NULL, 0, kMerges, sizeof kMerges - 1, &t[mode]) !=
            SDC_OK)
            abort();
        sdc_clip_tokenizer_set_sdcpp_compat(t[mode], mode);
    }
    return t[mode];
}

static sdc_clip_tokenizer *tiny(void) {
    return tiny_mode(0);
}

static void prompt_paths(const char *text) {
    char *clean = NULL;
    sdc_prompt_lora *l = NULL;
    int nl = 0;
    if (sdc_prompt_extract_loras(text, &clean, &l, &nl) == SDC_OK) {
        if (strlen(clean) > strlen(text)) abort();
        free(clean);
        sdc_prompt_loras_free(l, nl);
    }
    sdc_weighted_text *p = NULL;
    int np = 0;
    if (sdc_prompt_parse_attention(text, &p, &np) == SDC_OK) {
        if (np < 1) abort();
        sdc_weighted_text_free(p, np);
    }
    const sdc_clip_tokenizer *t = tiny();
    static float v1[2 * 4] = {1, 2, 3, 4, 5, 6, 7, 8}, v2[4] = {-1, 0, 1, 2};
    sdc_clip_embedding e[2] = {{"emb", 2, 4, v1}, {"Ca", 1, 4, v2}};
    sdc_clip_tokens tk;
    if (sdc_clip_prompt_tokens(t, text, 49407, e, 2, &tk) == SDC_OK) {
        int32_t limit = sdc_clip_tokenizer_vocab_size(t) + 3;
        if (tk.n_chunks < 1) abort();
        for (int i = 0; i < tk.n_chunks * SDC_CLIP_CHUNK; i++)
            if ((tk.ids[i] < 0 || tk.ids[i] >= limit) && tk.ids[i] != 49407) abort();
        float h[SDC_CLIP_CHUNK * 3];
        for (int i = 0; i < SDC_CLIP_CHUNK * 3; i++) h[i] = (float)(i % 7) - 2.5f;
        sdc_clip_apply_weights(h, SDC_CLIP_CHUNK, 3, tk.weights);
        int32_t chunk[SDC_CLIP_CHUNK];
        memcpy(chunk, tk.ids, sizeof chunk);
        if (sdc_clip_chunk_zero_after_eos(chunk, SDC_CLIP_CHUNK, sdc_clip_tokenizer_eos(t), 0) >=
            SDC_CLIP_CHUNK)
            abort();
        sdc_clip_tokens_free(&tk);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    prompt_paths(text);
    /* plain tokenize over the bytes, NULs included */
    int32_t *ids = NULL;
    int n = 0;
    static const char *const names[] = {"emb", "Ca", ""};
    for (int mode = 0; mode < 2; mode++)
        if (sdc_clip_tokenize_ex(tiny_mode(mode), text, size, names, 3, &ids, &n) == SDC_OK) {
            for (int i = 0; i < n; i++)
                if (ids[i] < -3 || ids[i] >= sdc_clip_tokenizer_vocab_size(tiny())) abort();
            free(ids);
        }
    /* as merges text, then as a vocab.json with fixed merges */
    static const char sample[] = "a cat's <|endoftext|> Café 日本 12 !!";
    sdc_clip_tokenizer *t = NULL;
    if (sdc_clip_tokenizer_load_memory(NULL, 0, text, size, &t) == SDC_OK) {
        if (sdc_clip_tokenize(t, sample, &ids, &n) == SDC_OK) free(ids);
        sdc_clip_tokenizer_free(t);
    }
    t = NULL;
    static const char m2[] = "a b\n";
    if (sdc_clip_tokenizer_load_memory(text, size, m2, sizeof m2 - 1, &t) == SDC_OK) {
        if (sdc_clip_tokenize(t, sample, &ids, &n) == SDC_OK) free(ids);
        sdc_clip_tokenizer_free(t);
    }
    free(text);
    return 0;
}
