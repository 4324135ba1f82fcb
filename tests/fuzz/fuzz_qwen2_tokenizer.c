/* Fuzz target: arbitrary bytes as a Qwen2 tokenizer.json, as merges.txt text (the vocabulary
 * built from the merges, sd.cpp's way), as a vocab.json beside fixed merges, and as text to
 * tokenize with a fixed small tokenizer. Nothing may crash, leak or read out of bounds, and
 * every id must lie in the vocabulary; errors are fine. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/qwen2_tokenizer.h"

/* bytes, then "Ġ t", "h e", "Ġt he", "Ġ a", "i n", "a n", "Ġ an", "Ġan d", "1 2", "' s", and
 * sd.cpp's special tokens */
static const char kMerges[] = "#version: 0.2\n\xC4\xA0 t\nh e\n\xC4\xA0t he\n\xC4\xA0 a\ni n\n"
                              "a n\n\xC4\xA0 an\n\xC4\xA0"
                              "an d\n1 2\n' s\n";

static void tokenize_all(const sdc_qwen2_tokenizer *t, const uint8_t *data, size_t size) {
    int32_t *ids = NULL;
    int n = 0;
    if (sdc_qwen2_tokenize(t, (const char *)data, size, &ids, &n) == SDC_OK) {
        int32_t v = sdc_qwen2_tokenizer_vocab_size(t);
        for (int i = 0; i < n; i++)
            if (ids[i] < 0 || ids[i] >= v || !sdc_qwen2_tokenizer_token(t, ids[i])) abort();
    }
    free(ids);
    /* the template around the text, as a C string (stops at a NUL) */
    char *text = malloc(size + 1);
    if (!text) return;
    memcpy(text, data, size);
    text[size] = 0;
    int drop = 0;
    ids = NULL;
    if (sdc_qwen_image_prompt_tokens(t, text, &ids, &n, &drop) == SDC_OK && n <= drop) abort();
    free(ids);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char sample[] = "<|im_start|>user\nA  fox's 123 café\r\n\n  !!\t<|im_end|> \xff";
    static sdc_qwen2_tokenizer *fixed;
    if (!fixed && sdc_qwen2_tokenizer_load_memory(NULL, 0, kMerges, sizeof kMerges - 1, &fixed))
        abort();
    tokenize_all(fixed, data, size);

    sdc_qwen2_tokenizer *t = NULL;
    if (sdc_qwen2_tokenizer_load_json((const char *)data, size, "fuzz.json", &t) == SDC_OK) {
        tokenize_all(t, (const uint8_t *)sample, sizeof sample - 1);
        char *m = NULL;
        size_t ml = 0;
        if (sdc_qwen2_tokenizer_merges_text(t, &m, &ml) == SDC_OK) free(m);
        sdc_qwen2_tokenizer_free(t);
    }
    t = NULL;
    if (sdc_qwen2_tokenizer_load_memory(NULL, 0, (const char *)data, size, &t) == SDC_OK) {
        tokenize_all(t, (const uint8_t *)sample, sizeof sample - 1);
        sdc_qwen2_tokenizer_free(t);
    }
    t = NULL;
    if (sdc_qwen2_tokenizer_load_memory((const char *)data, size, kMerges, sizeof kMerges - 1,
                                        &t) == SDC_OK) {
        tokenize_all(t, (const uint8_t *)sample, sizeof sample - 1);
        sdc_qwen2_tokenizer_free(t);
    }
    return 0;
}
