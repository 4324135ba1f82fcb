/* Qwen2 byte-level BPE tokenizer (Qwen2 / Qwen2.5 / Qwen2.5-VL: Qwen-Image's text encoder),
 * giving the ids of the Hugging Face `tokenizers` library on Qwen2's tokenizer.json:
 *   added tokens (<|im_start|>, <|im_end|>, ...) matched literally in the raw text, leftmost and
 *   longest first; NFC on the text between them; the Qwen2 split regex
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|
 *     \s*[\r\n]+|\s+(?!\S)|\s+
 *   (Isolated: every piece of the text is in one match); bytes mapped to GPT-2's byte characters;
 *   BPE by merge rank (lowest first, leftmost among equal ranks). No BOS/EOS is added.
 * sd.cpp's hand-written split differs from the regex in three places (see
 * ../shared/golden/qwen_image/README.md): several spaces before a word stay one piece there,
 * contractions are lower-cased and 'd is never split, \p{N} is ASCII digits only. We follow HF,
 * which is what the model was trained with; prompts without those patterns agree. */
#ifndef SDC_TEXT_QWEN2_TOKENIZER_H
#define SDC_TEXT_QWEN2_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sdc_qwen2_tokenizer sdc_qwen2_tokenizer;

/* Qwen-Image's prompt template (diffusers QwenImagePipeline, sd.cpp conditioner.hpp): the user
 * prompt goes between prefix and suffix, and the encoder's first 34 hidden states (the system
 * part and "<|im_start|>user\n", 34 tokens with Qwen2's vocabulary) are dropped. Both
 * implementations drop a fixed 34, whatever the vocabulary makes of the prefix. */
#define SDC_QWEN_IMAGE_PROMPT_PREFIX                                                               \
    "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, "        \
    "quantity, text, spatial relationships of the objects and background:<|im_end|>\n"             \
    "<|im_start|>user\n"
#define SDC_QWEN_IMAGE_PROMPT_SUFFIX "<|im_end|>\n<|im_start|>assistant\n"
#define SDC_QWEN_IMAGE_DROP_TOKENS   34

/* path: a tokenizer.json (HF: model.vocab + model.merges, added_tokens), a vocab.json
 * (merges.txt beside it; the added tokens from tokenizer_config.json's added_tokens_decoder
 * beside it, else sd.cpp's 31 special tokens after the vocabulary), a merges.txt (the
 * vocabulary built from the merges as sd.cpp's Qwen2Tokenizer does: 256 byte characters, one
 * token per merge, its 31 special tokens), or a directory holding one of them (tried in that
 * order: tokenizer.json, vocab.json, merges.txt). */
sdc_status sdc_qwen2_tokenizer_load(const char *path, sdc_qwen2_tokenizer **out);
/* tokenizer.json text from memory; label names it in error messages. */
sdc_status sdc_qwen2_tokenizer_load_json(const char *data, size_t len, const char *label,
                                         sdc_qwen2_tokenizer **out);
/* vocab.json text (NULL / 0: built from the merges, sd.cpp's way) and merges.txt text from
 * memory (GGUF-embedded tokenizers). A vocab.json gets sd.cpp's special tokens after it. */
sdc_status sdc_qwen2_tokenizer_load_memory(const char *vocab_json, size_t vocab_len,
                                           const char *merges, size_t merges_len,
                                           sdc_qwen2_tokenizer **out);
/* The lists llama.cpp's GGUF files carry (tokenizer.ggml.tokens, .token_type, .merges): token
 * strings by id (byte-level characters), their types (NULL: all normal; CONTROL and
 * USER_DEFINED are added tokens, UNUSED padding ids are skipped) and "a b" merges by rank.
 * NFC as Qwen2's tokenizer.json. */
sdc_status sdc_qwen2_tokenizer_load_lists(const char *const *tokens, const int32_t *types,
                                          int32_t n_tokens, const char *const *merges,
                                          int32_t n_merges, const char *label,
                                          sdc_qwen2_tokenizer **out);
void sdc_qwen2_tokenizer_free(sdc_qwen2_tokenizer *t);

int32_t sdc_qwen2_tokenizer_vocab_size(const sdc_qwen2_tokenizer *t); /* max id + 1 */
/* Token string of an id (byte-level characters for BPE tokens, UTF-8, NUL-terminated), NULL
 * if none. */
const char *sdc_qwen2_tokenizer_token(const sdc_qwen2_tokenizer *t, int32_t id);
/* Id of a token string (e.g. "<|im_start|>"), -1 if none. */
int32_t sdc_qwen2_tokenizer_find(const sdc_qwen2_tokenizer *t, const char *token);
int32_t sdc_qwen2_tokenizer_n_merges(const sdc_qwen2_tokenizer *t);
/* True when id is an added token (matched literally in the text, e.g. <|im_start|>). */
bool sdc_qwen2_tokenizer_is_added(const sdc_qwen2_tokenizer *t, int32_t id);
/* The merges as "a b\n" lines in rank order after a "#version: 0.2" line (what load_memory
 * takes back), malloc'd. */
sdc_status sdc_qwen2_tokenizer_merges_text(const sdc_qwen2_tokenizer *t, char **text, size_t *len);

/* Tokenizes `len` bytes of UTF-8 text (added tokens matched). Invalid bytes read as U+FFFD.
 * *ids malloc'd (caller frees; NULL when *n is 0). Thread-safe: the tokenizer is only read. */
sdc_status sdc_qwen2_tokenize(const sdc_qwen2_tokenizer *t, const char *text, size_t len,
                              int32_t **ids, int *n);

/* The Qwen-Image token ids of a user prompt: PREFIX + prompt + SUFFIX tokenized as one text
 * (as both references do). *n_drop = SDC_QWEN_IMAGE_DROP_TOKENS, the leading states to drop;
 * fails if the text has no more tokens than that. */
sdc_status sdc_qwen_image_prompt_tokens(const sdc_qwen2_tokenizer *t, const char *prompt,
                                        int32_t **ids, int *n, int *n_drop);

/* The pre-tokenizer alone on code points s[0..n) (NFC'd text without added tokens): the
 * length of the regex match that starts at s[i] (>= 1). Exposed for tests. */
size_t sdc_qwen2_split_len(const int32_t *s, size_t n, size_t i);

#endif
