/* CLIP byte-level BPE tokenizer (OpenAI CLIP / OpenCLIP: SD 1.x, SD 2.x, SDXL, SD3, Flux
 * clip_l), giving the ids of Hugging Face's CLIPTokenizerFast:
 *   NFC; every run of White_Space characters becomes one ' '; per-character Unicode lower
 *   case; <|startoftext|> / <|endoftext|> matched literally in the normalised text; the CLIP
 *   split regex 's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+ (what it does not match,
 *   whitespace, is dropped); bytes mapped to GPT-2's byte characters; BPE by merge rank with
 *   "</w>" on the last symbol of each word.
 * sd.cpp differs on non-ASCII letters (its std::regex classes and tolower are ASCII only:
 * "café" gives caf</w> + é</w> there, cafÃ©</w> here; upper-case non-ASCII letters are not
 * lowered there). We follow HF, which is what the models were trained with. */
#ifndef SDC_TEXT_CLIP_TOKENIZER_H
#define SDC_TEXT_CLIP_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sdc_clip_tokenizer sdc_clip_tokenizer;

/* The number of merges OpenAI's clip uses from bpe_simple_vocab_16e6.txt (49152-256-2);
 * longer merges files are cut there, as clip and sd.cpp do. */
#define SDC_CLIP_MAX_MERGES 48894

/* path: a vocab.json (merges.txt beside it), a merges.txt (vocab built from the merges as
 * sd.cpp and OpenAI's clip do: 256 byte chars, the same + "</w>", one token per merge, then
 * <|startoftext|>, <|endoftext|>), a tokenizer.json (HF fast tokenizer: model.vocab +
 * model.merges), an OpenAI bpe_simple_vocab_16e6.txt.gz (gzip), or a directory holding one of
 * them (tried in that order: vocab.json, tokenizer.json, merges.txt, the .gz). */
sdc_status sdc_clip_tokenizer_load(const char *path, sdc_clip_tokenizer **out);
/* From memory (GGUF-embedded by -M convert): vocab.json text and merges.txt text. vocab_json
 * may be NULL (vocab_len 0): the vocabulary is then built from the merges. */
sdc_status sdc_clip_tokenizer_load_memory(const char *vocab_json, size_t vocab_len,
                                          const char *merges, size_t merges_len,
                                          sdc_clip_tokenizer **out);
void sdc_clip_tokenizer_free(sdc_clip_tokenizer *t);
/* on = 1: tokenize as sd.cpp does instead of HF (for reproducing sd.cpp bit for bit): on bytes,
 * no NFC, ASCII whitespace collapsed and stripped, ASCII lower case, ASCII letter/digit/space
 * classes in the split (so a non-ASCII letter joins the neighbouring punctuation / other bytes).
 * Same ids as HF for ASCII text. Set it before sharing the tokenizer between threads. */
void sdc_clip_tokenizer_set_sdcpp_compat(sdc_clip_tokenizer *t, int on);
int32_t sdc_clip_tokenizer_bos(const sdc_clip_tokenizer *t);        /* <|startoftext|> 49406 */
int32_t sdc_clip_tokenizer_eos(const sdc_clip_tokenizer *t);        /* <|endoftext|> 49407 */
int32_t sdc_clip_tokenizer_vocab_size(const sdc_clip_tokenizer *t); /* 49408 */
/* Token string of an id (byte-level characters, UTF-8, NUL-terminated), NULL if none. */
const char *sdc_clip_tokenizer_token(const sdc_clip_tokenizer *t, int32_t id);
/* The merges as "a b\n" lines in rank order (what load_memory takes back), malloc'd. */
sdc_status sdc_clip_tokenizer_merges_text(const sdc_clip_tokenizer *t, char **text, size_t *len);

/* BPE of plain text, no BOS/EOS: HF CLIPTokenizer(fast) semantics (above). Invalid UTF-8
 * bytes read as U+FFFD. *ids malloc'd (caller frees; NULL when *n is 0). */
sdc_status sdc_clip_tokenize(const sdc_clip_tokenizer *t, const char *text, int32_t **ids, int *n);

/* The same over `len` bytes, with extra literal strings (textual-inversion names), normalised
 * like the text and matched in the normalised text after the two special tokens: the earliest
 * match wins, on a tie the first in the list (sd.cpp's rule; special tokens first). A match of
 * extra[k] gives the placeholder id -(k+1) for the caller to replace. */
sdc_status sdc_clip_tokenize_ex(const sdc_clip_tokenizer *t, const char *text, size_t len,
                                const char *const *extra, int n_extra, int32_t **ids, int *n);

/* The normaliser alone (NFC, whitespace runs to ' ', lower case) as UTF-8, malloc'd. */
sdc_status sdc_clip_normalize(const char *text, size_t len, char **out, size_t *out_len);

#endif
