/* SentencePiece unigram tokenizer (T5 / flan-t5), giving the ids the Hugging Face tokenizer
 * gives from the same files:
 *  - tokenizer.json: its normalizer (Precompiled, Replace, Strip, Prepend, Sequence),
 *    pre-tokenizer (WhitespaceSplit, Metaspace, Sequence), Unigram model and
 *    TemplateProcessing post-processor; added tokens are matched literally in the input;
 *  - a bare spiece.model (ModelProto): sentencepiece's normalizer and Viterbi, then T5's
 *    convention (control/unknown pieces matched literally, `</s>` appended);
 *  - the arrays of a T5 GGUF (tokenizer.ggml.*), through sdc_tokenizer_from_arrays. */
#ifndef SDC_TEXT_TOKENIZER_H
#define SDC_TEXT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sdc_tokenizer sdc_tokenizer;

/* sentencepiece piece types (also the GGUF token_type values). */
typedef enum sdc_piece_type {
    SDC_PIECE_NORMAL = 1,
    SDC_PIECE_UNKNOWN = 2,
    SDC_PIECE_CONTROL = 3,
    SDC_PIECE_USER_DEFINED = 4,
    SDC_PIECE_UNUSED = 5,
    SDC_PIECE_BYTE = 6,
} sdc_piece_type;

/* A vocabulary given as arrays (T5 GGUF: tokenizer.ggml.tokens / scores / token_type /
 * precompiled_charsmap / add_space_prefix / remove_extra_whitespaces / *_token_id /
 * add_eos_token). Everything is copied; the caller keeps ownership. */
typedef struct sdc_tokenizer_arrays {
    int32_t n_pieces;
    const char *const *pieces; /* UTF-8 */
    const size_t *piece_lens;  /* NULL: pieces are NUL-terminated */
    const float *scores;       /* NULL: all 0 */
    const int32_t *types;      /* NULL: all NORMAL (sdc_piece_type values) */
    const uint8_t *charsmap;   /* precompiled charsmap bytes, NULL: no normalisation */
    size_t charsmap_size;
    int add_dummy_prefix;         /* sentencepiece defaults: 1 */
    int remove_extra_whitespaces; /* 1 */
    int escape_whitespaces;       /* 1 */
    int32_t unk_id;               /* -1: the first UNKNOWN piece */
    int32_t eos_id;               /* -1: the piece "</s>" if any */
    int32_t pad_id;               /* -1: the piece "<pad>" if any */
    int add_eos;                  /* append eos_id after each encoded text (T5: 1) */
} sdc_tokenizer_arrays;

/* Defaults for sdc_tokenizer_arrays (sentencepiece's normaliser flags, ids looked up). */
void sdc_tokenizer_arrays_init(sdc_tokenizer_arrays *a);

/* Loads tokenizer.json or spiece.model, told apart by content (JSON starts with '{'). */
sdc_status sdc_tokenizer_load(const char *path, sdc_tokenizer **out);
/* From memory; `label` names the source in error messages. */
sdc_status sdc_tokenizer_load_json(const char *data, size_t size, const char *label,
                                   sdc_tokenizer **out);
sdc_status sdc_tokenizer_load_spiece(const uint8_t *data, size_t size, const char *label,
                                     sdc_tokenizer **out);
sdc_status sdc_tokenizer_from_arrays(const sdc_tokenizer_arrays *a, sdc_tokenizer **out);
void sdc_tokenizer_free(sdc_tokenizer *tok);

int32_t sdc_tokenizer_vocab_size(const sdc_tokenizer *tok);
/* Piece string of an id (NUL-terminated), NULL when out of range. */
const char *sdc_tokenizer_piece(const sdc_tokenizer *tok, int32_t id);
int32_t sdc_tokenizer_pad_id(const sdc_tokenizer *tok); /* -1 when none */
int32_t sdc_tokenizer_eos_id(const sdc_tokenizer *tok); /* -1 when none */
int32_t sdc_tokenizer_unk_id(const sdc_tokenizer *tok); /* -1 when none */
/* Number of ids the post-processor adds around a text (T5: 1, the `</s>`). */
int32_t sdc_tokenizer_num_special_added(const sdc_tokenizer *tok);

/* Result of an encode: ids and, on request, the piece strings (the surface text for <unk>). */
typedef struct sdc_tokens {
    int32_t *ids;
    char **pieces; /* NULL unless SDC_TOK_WANT_PIECES */
    int32_t n;
    int32_t cap;
} sdc_tokens;
void sdc_tokens_free(sdc_tokens *t);

enum {
    SDC_TOK_WANT_PIECES = 1,
    /* Treat added/special tokens (`<pad>`, `</s>`, `<unk>`, ...) in the text as plain text,
     * as sentencepiece's sp.encode does (they are never pieces of the Viterbi either).
     * Default: matched literally and given their ids, as HF / T5Tokenizer do. */
    SDC_TOK_NO_SPECIAL = 2,
    /* Apply the post-processor (T5: append `</s>`). */
    SDC_TOK_ADD_SPECIAL = 4,
};

/* Encodes `len` bytes of UTF-8 text. Malformed bytes: the spiece/GGUF path reads each as
 * an unnormalised U+FFFD (as sentencepiece does), the tokenizer.json path replaces each by
 * U+FFFD before normalising (Rust strings are valid UTF-8). `out` must be {0} or a previous
 * result (it is freed and overwritten); free it with sdc_tokens_free. Thread-safe: the
 * tokenizer is only read. */
sdc_status sdc_tokenizer_encode(const sdc_tokenizer *tok, const char *text, size_t len, int flags,
                                sdc_tokens *out);

/* What T5 pipelines feed the encoder: encode, truncate keeping room for the post-processor's
 * tokens (`</s>`), apply it, pad with <pad> (id 0 when the vocabulary has none) to
 * max_length. ids[max_length] always; mask[max_length] (may be NULL) gets 1 on real tokens
 * and 0 on pads; *n_real (may be NULL) the number of real tokens. */
sdc_status sdc_tokenizer_encode_t5(const sdc_tokenizer *tok, const char *text, int32_t max_length,
                                   int32_t *ids, float *mask, int32_t *n_real);
/* The same, also counting the prompt's tokens that did not fit (n_dropped may be NULL). */
sdc_status sdc_tokenizer_encode_t5_ex(const sdc_tokenizer *tok, const char *text,
                                      int32_t max_length, int32_t *ids, float *mask,
                                      int32_t *n_real, int32_t *n_dropped);

/* Finds the tokenizer for a T5 weights file. With override_path set, that file must exist.
 * Otherwise looks for tokenizer.json, then spiece.model, in the weights' folder, its
 * tokenizer/ subfolder, its parent and the parent's tokenizer/ subfolder. On failure the
 * message lists every path tried and says to pass --t5-tokenizer. */
sdc_status sdc_tokenizer_find_for_weights(const char *weights_path, const char *override_path,
                                          char *out_path, size_t out_size);
/* sdc_tokenizer_find_for_weights + sdc_tokenizer_load. */
sdc_status sdc_tokenizer_load_for_weights(const char *weights_path, const char *override_path,
                                          sdc_tokenizer **out);

#endif
