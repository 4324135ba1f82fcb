/* Byte trie over the vocabulary pieces, for the Viterbi walk: from a start position the
 * walk visits every piece that is a prefix of the rest of the text. Children are found
 * through one open-addressing hash keyed by (node, byte), so memory stays proportional to
 * the total piece length whatever the alphabet. */
#ifndef SDC_TEXT_PIECE_TRIE_H
#define SDC_TEXT_PIECE_TRIE_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sdc_piece_trie {
    int32_t *node_id; /* piece id ending at node, -1 when none; node 0 is the root */
    int32_t n_nodes, cap_nodes;
    uint64_t *slot_key; /* (node << 8 | byte) + 1; 0 = empty */
    int32_t *slot_child;
    size_t n_slots; /* power of two */
} sdc_piece_trie;

sdc_status sdc_piece_trie_init(sdc_piece_trie *t, size_t total_bytes);
/* Adds a piece; an existing piece of the same string keeps its (lower) id. */
sdc_status sdc_piece_trie_add(sdc_piece_trie *t, const char *s, size_t len, int32_t id);
/* Child of `node` by byte c, -1 when none. */
int32_t sdc_piece_trie_child(const sdc_piece_trie *t, int32_t node, uint8_t c);
void sdc_piece_trie_free(sdc_piece_trie *t);

#endif
