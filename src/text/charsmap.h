/* sentencepiece "precompiled charsmap": the normalisation rules (NFKC + NMT rules) compiled to
 * a u32 LE trie byte size, a darts-clone double-array trie over the UTF-8 source sequences,
 * and a blob of NUL-terminated replacement strings indexed by the trie's values. */
#ifndef SDC_TEXT_CHARSMAP_H
#define SDC_TEXT_CHARSMAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sdc_charsmap sdc_charsmap;

/* Validates and copies `size` bytes. An empty map (size 0) is an error. */
sdc_status sdc_charsmap_parse(const uint8_t *data, size_t size, const char *label,
                              sdc_charsmap **out);
void sdc_charsmap_free(sdc_charsmap *cm);

/* Longest rule whose source is a prefix of s[0..len): returns the number of bytes it
 * consumes (0 when none) and points rep / rep_len at the replacement. */
size_t sdc_charsmap_match(const sdc_charsmap *cm, const char *s, size_t len, const char **rep,
                          size_t *rep_len);

/* The shortest rule instead (HF's Precompiled takes the first hit of the prefix search). */
size_t sdc_charsmap_match_shortest(const sdc_charsmap *cm, const char *s, size_t len,
                                   const char **rep, size_t *rep_len);

/* The map in its file layout (what sdc_charsmap_parse read): returns the byte size and,
 * when out is not NULL, writes it there (to embed it in a GGUF). */
size_t sdc_charsmap_serialize(const sdc_charsmap *cm, uint8_t *out);

#endif
