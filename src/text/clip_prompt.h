/* The prompt as sd.cpp reads it for its CLIP conditioners (SD 1.x / 2.x / SDXL):
 * <lora:name:weight> tags, A1111 emphasis ((x), [x], (x:1.3), BREAK), textual-inversion
 * embeddings, 77-token chunks with per-token weights, and the weighting of the encoder output.
 * Semantics from stable-diffusion.cpp (examples/common extract_and_remove_lora,
 * core/util.cpp parse_prompt_attention, conditioning/conditioner.hpp
 * FrozenCLIPEmbedderWithCustomWords); tokens from text/clip_tokenizer.h (HF semantics, see
 * there for where sd.cpp's ASCII-only regex differs). */
#ifndef SDC_TEXT_CLIP_PROMPT_H
#define SDC_TEXT_CLIP_PROMPT_H

#include <stdint.h>

#include "core/status.h"
#include "text/clip_tokenizer.h"

/* <lora:name:weight> tags removed from the prompt (sd.cpp extracts them before tokenizing,
 * and only when --lora-model-dir is set: without it the tags stay in the prompt text).
 * Syntax: "<lora:" NAME ":" MUL ">" with NAME one or more characters other than ':' and '>',
 * MUL one or more characters other than '>'. The weight is MUL read as C's strtof reads it
 * (std::stof: leading spaces, a numeric prefix, "1.5x" = 1.5); a tag whose MUL has no number is
 * removed and gives no lora. A name starting "|high_noise|" loses that prefix and gets
 * high_noise = 1 (Wan 2.2's second model). The same name (and high_noise) twice: weights
 * summed, as sd.cpp does per resolved file (callers that resolve names to files should sum
 * again for different spellings of one file). Tags are removed from the text as they are,
 * nothing else is touched (spaces around them stay). *loras may be NULL when *n_loras = 0. */
typedef struct sdc_prompt_lora {
    char *name;
    float weight;
    int high_noise;
} sdc_prompt_lora;
sdc_status sdc_prompt_extract_loras(const char *prompt, char **clean, sdc_prompt_lora **loras,
                                    int *n_loras);
void sdc_prompt_loras_free(sdc_prompt_lora *l, int n);

/* A1111 emphasis exactly as sd.cpp's parse_prompt_attention: "(" x1.1, "[" x1/1.1 (float
 * math), "(x:W)" sets W for the innermost open "(" (W matches [+-]?[.0-9]+ directly followed by
 * ")"; with no "(" open the ":W)" is dropped), unbalanced brackets apply to the end of the
 * prompt, ")" / "]" without an opener stay in the text, only "\(" is unescaped ("\)", "\[", "\]"
 * and "\\" keep their backslash), "BREAK" (upper case, not followed by [A-Za-z0-9_]) becomes the
 * part {"BREAK", -1}; adjacent parts of equal weight are joined; an empty prompt gives {"", 1}. A
 * weight with no number ("(x:.)") or out of float range is an error (sd.cpp's std::stof throws
 * there). */
typedef struct sdc_weighted_text {
    char *text;
    float weight;
} sdc_weighted_text;
sdc_status sdc_prompt_parse_attention(const char *prompt, sdc_weighted_text **parts, int *n);
void sdc_weighted_text_free(sdc_weighted_text *p, int n);

/* Textual inversion (--embd-dir): an embedding's name (file stem) found in the normalised
 * prompt (lower case; sd.cpp matches it as a substring, like a special token, not only as a
 * whole word) becomes that embedding's vectors. The encoder gets them as extra rows appended
 * to its token-embedding table: ids >= vocab_size index those rows, in the order of the embd
 * array (embd[0]'s vectors first). */
typedef struct sdc_clip_embedding {
    char *name;
    int n_vectors, dim;
    float *data; /* [n_vectors][dim] */
} sdc_clip_embedding;

/* All 77-token chunks for a prompt: BOS + 75 + EOS per chunk, padded with pad_id, per-token
 * weights (1 for BOS/EOS/pad), at least one chunk (empty prompt: BOS, EOS, 75 pads).
 * pad_id as sd.cpp: SD 1.x and SDXL 49407 (the EOS id); SD 2.x (OpenCLIP ViT-H) 0. SDXL's
 * clip_g (OpenCLIP bigG) gets the SDXL chunks with every id after the first EOS of each chunk
 * set to 0 (sdc_clip_chunk_zero_after_eos). BREAK pads the token list with EOS ids (whatever
 * pad_id is) up to the next multiple of 75. embd may be NULL. n_tokens: the token list before
 * chunking (prompt tokens and BREAK padding, no BOS/EOS/pads); ids / weights hold
 * n_chunks * 77 entries. Weights are sd.cpp's float products, exactly. */
#define SDC_CLIP_CHUNK 77
typedef struct sdc_clip_tokens {
    int32_t *ids;
    float *weights;
    int n_chunks;
    int n_tokens; /* real */
} sdc_clip_tokens;
sdc_status sdc_clip_prompt_tokens(const sdc_clip_tokenizer *t, const char *prompt, int32_t pad_id,
                                  const sdc_clip_embedding *embd, int n_embd, sdc_clip_tokens *out);
void sdc_clip_tokens_free(sdc_clip_tokens *t);

/* SDXL clip_g input (sd.cpp): ids after the first `eos` of a chunk become `pad` (0). Returns
 * the index of that first EOS (76 when there is none): the position whose hidden state gives
 * the pooled output. */
int sdc_clip_chunk_zero_after_eos(int32_t *chunk_ids, int n, int32_t eos, int32_t pad);

/* sd.cpp's weighting of the encoder output of ONE chunk: nothing when every weight is 1;
 * else hidden[i][*] *= weights[i], then the whole is scaled by old_mean / new_mean (means over
 * all n*dim values, summed in double, rounded to float, the ratio and products in float) when
 * both means are finite and new_mean != 0 (A1111). hidden: [n][dim]. Call once per 77-token
 * chunk (sd.cpp's means are per chunk). */
void sdc_clip_apply_weights(float *hidden, int n, int dim, const float *weights);

/* Loads the embeddings of directory `dir` (files NAME.safetensors and NAME.gguf; sd.cpp also
 * lists .pt/.ckpt, which are skipped with a warning when their name is used) whose lower-cased
 * stem occurs in the normalised prompt, sorted by stem (sd.cpp's std::map order, which decides
 * ties between names matching at the same place). The tensor: `key` when given (SDXL files
 * hold "clip_l" [n,768] and "clip_g" [n,1280]), else the tensor(s) whose innermost size is
 * `dim` (A1111 "emb_params", "string_to_param.*"), the last by name when several (sd.cpp keeps
 * the last it loads). A file without such a tensor is an error naming it. *out may be NULL
 * when *n = 0; dir NULL or "" gives none. */
sdc_status sdc_clip_embeddings_load(const char *dir, const char *prompt, int dim, const char *key,
                                    sdc_clip_embedding **out, int *n);
void sdc_clip_embeddings_free(sdc_clip_embedding *e, int n);

#endif
