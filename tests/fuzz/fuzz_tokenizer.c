/* Fuzz target: arbitrary bytes as a tokenizer.json, as a spiece.model, as a precompiled
 * charsmap, and as text to encode with a fixed small tokenizer. Nothing may crash, leak or
 * read out of bounds; errors are fine. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "text/tokenizer.h"

static const char kSmallJson[] =
    "{\"added_tokens\":[{\"id\":0,\"content\":\"<pad>\",\"special\":true},"
    "{\"id\":1,\"content\":\"</s>\",\"special\":true,\"lstrip\":true,\"rstrip\":true},"
    "{\"id\":2,\"content\":\"<unk>\",\"special\":true}],"
    "\"normalizer\":{\"type\":\"Sequence\",\"normalizers\":["
    "{\"type\":\"Strip\",\"strip_left\":false,\"strip_right\":true},"
    "{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {2,}\"},\"content\":\"\\u2581\"},"
    "{\"type\":\"Replace\",\"pattern\":{\"String\":\"x\"},\"content\":\"ks\"}]},"
    "\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"WhitespaceSplit\"},"
    "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"first\"}]},"
    "\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\"}},"
    "{\"SpecialToken\":{\"id\":\"</s>\"}}],\"special_tokens\":{\"</s>\":{\"id\":\"</s>\","
    "\"ids\":[1]}}},"
    "\"model\":{\"type\":\"Unigram\",\"unk_id\":2,\"byte_fallback\":true,\"vocab\":["
    "[\"<pad>\",0],[\"</s>\",0],[\"<unk>\",0],[\"\\u2581\",-2],[\"a\",-3],[\"b\",-3],"
    "[\"\\u2581a\",-2.5],[\"ab\",-4],[\"<0x41>\",-9],[\"<0xC3>\",-9],[\"<0xA9>\",-9],"
    "[\"k\",-5],[\"s\",-5],[\"\\u2581ks\",-3]]}}";

static void encode_all(const sdc_tokenizer *t, const uint8_t *data, size_t size) {
    sdc_tokens out = {0};
    for (int flags = 0; flags < 8; flags++) {
        if (sdc_tokenizer_encode(t, (const char *)data, size, flags, &out) == SDC_OK) {
            for (int32_t i = 0; i < out.n; i++)
                if (out.ids[i] < 0 || out.ids[i] >= sdc_tokenizer_vocab_size(t)) abort();
        }
        sdc_tokens_free(&out);
    }
    char *text = malloc(size + 1);
    if (!text) return;
    memcpy(text, data, size);
    text[size] = 0;
    int32_t ids[16];
    float mask[16];
    int32_t n;
    sdc_tokenizer_encode_t5(t, text, 16, ids, mask, &n);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    sdc_tokenizer *t = NULL;
    static const char sample[] = "  Hello\tworld ＡＢＣ ① café <pad></s>x  <unk> 東京  ";
    if (sdc_tokenizer_load_json((const char *)data, size, "fuzz.json", &t) == SDC_OK) {
        encode_all(t, (const uint8_t *)sample, sizeof sample - 1);
        encode_all(t, data, size);
        sdc_tokenizer_free(t);
    }
    t = NULL;
    if (sdc_tokenizer_load_spiece(data, size, "fuzz.model", &t) == SDC_OK) {
        encode_all(t, (const uint8_t *)sample, sizeof sample - 1);
        sdc_tokenizer_free(t);
    }
    /* the bytes as a (hostile) charsmap */
    static const char *const pieces[5] = {"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "a"};
    static const int32_t types[5] = {3, 3, 2, 1, 1};
    sdc_tokenizer_arrays a;
    sdc_tokenizer_arrays_init(&a);
    a.n_pieces = 5;
    a.pieces = pieces;
    a.types = types;
    a.charsmap = data;
    a.charsmap_size = size;
    t = NULL;
    if (sdc_tokenizer_from_arrays(&a, &t) == SDC_OK) {
        encode_all(t, (const uint8_t *)sample, sizeof sample - 1);
        encode_all(t, data, size);
        sdc_tokenizer_free(t);
    }
    /* the bytes as text */
    t = NULL;
    if (sdc_tokenizer_load_json(kSmallJson, sizeof kSmallJson - 1, "small.json", &t) != SDC_OK)
        abort();
    encode_all(t, data, size);
    sdc_tokenizer_free(t);
    return 0;
}
