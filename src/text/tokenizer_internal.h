/* Internal layout of sdc_tokenizer, shared by the loaders (json, spiece, arrays) and the
 * encoder. Not part of the API. */
#ifndef SDC_TEXT_TOKENIZER_INTERNAL_H
#define SDC_TEXT_TOKENIZER_INTERNAL_H

#include "text/charsmap.h"
#include "text/piece_trie.h"
#include "text/tokenizer.h"

/* How text becomes words before the unigram model runs. */
typedef enum sdc_tok_style {
    SDC_TOK_STYLE_SPM, /* sentencepiece's normaliser + Viterbi over the whole normalised text */
    SDC_TOK_STYLE_HF,  /* HF: normalizer steps, pre-tokenizer steps, Viterbi per word */
} sdc_tok_style;

typedef enum sdc_tok_norm_kind {
    SDC_NORM_PRECOMPILED,
    SDC_NORM_REPLACE,
    SDC_NORM_STRIP,
    SDC_NORM_PREPEND,
} sdc_tok_norm_kind;

typedef struct sdc_tok_norm_step {
    sdc_tok_norm_kind kind;
    char *pattern; /* Replace: literal text, or the repeated unit of a regex "X{n,}" */
    size_t pattern_len;
    int min_repeat; /* Replace: 0 = literal pattern; n = at least n repeats of pattern */
    int max_repeat; /* Replace: 0 = unbounded */
    char *content;  /* Replace / Prepend */
    size_t content_len;
    int strip_left, strip_right;
} sdc_tok_norm_step;

typedef enum sdc_tok_pre_kind { SDC_PRE_WHITESPACE_SPLIT, SDC_PRE_METASPACE } sdc_tok_pre_kind;

typedef enum { SDC_PREPEND_NEVER, SDC_PREPEND_ALWAYS, SDC_PREPEND_FIRST } sdc_tok_prepend;

typedef struct sdc_tok_pre_step {
    sdc_tok_pre_kind kind;
    char replacement[8]; /* Metaspace: one UTF-8 character */
    size_t replacement_len;
    sdc_tok_prepend prepend;
    int split;
} sdc_tok_pre_step;

typedef struct sdc_tok_added {
    char *text;
    size_t len;
    int32_t id;
    int lstrip, rstrip;
} sdc_tok_added;

#define SDC_TOK_MAX_TEMPLATE 8

struct sdc_tokenizer {
    sdc_tok_style style;
    int32_t n_pieces;
    char **pieces;
    uint32_t *piece_lens;
    double *scores;
    uint8_t *types;
    sdc_piece_trie trie;
    double min_score, max_score;
    int32_t unk_id, eos_id, pad_id;
    int f32_scores; /* sentencepiece sums float scores in float; HF in double */
    int byte_fallback;

    /* SPM normaliser (also the HF Precompiled step's map). */
    sdc_charsmap *charsmap;
    int add_dummy_prefix, remove_extra_ws, escape_ws;
    int has_user_defined;

    sdc_tok_norm_step *norm;
    int n_norm;
    sdc_tok_pre_step *pre;
    int n_pre;

    sdc_tok_added *added;
    int n_added;

    int32_t prefix_ids[SDC_TOK_MAX_TEMPLATE], suffix_ids[SDC_TOK_MAX_TEMPLATE];
    int n_prefix, n_suffix;
};

/* Allocates an empty tokenizer with n pieces (all zeroed, ids -1). */
sdc_tokenizer *sdc_tok_alloc(int32_t n_pieces);
/* Stores piece i (copied). */
sdc_status sdc_tok_set_piece(sdc_tokenizer *t, int32_t i, const char *s, size_t len, double score,
                             int type);
/* Builds the trie and the score range once all pieces are set. */
sdc_status sdc_tok_finish(sdc_tokenizer *t, const char *label);
sdc_status sdc_tok_add_added(sdc_tokenizer *t, const char *s, size_t len, int32_t id, int lstrip,
                             int rstrip);
/* First id whose piece is exactly s (linear scan, usable before sdc_tok_finish), or -1. */
int32_t sdc_tok_find_piece(const sdc_tokenizer *t, const char *s);
/* Id of an exact piece string via the trie, -1 when absent. */
int32_t sdc_tok_lookup(const sdc_tokenizer *t, const char *s, size_t len);

#endif
