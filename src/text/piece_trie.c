#include "text/piece_trie.h"

#include <stdlib.h>
#include <string.h>

static size_t hash_key(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k;
}

sdc_status sdc_piece_trie_init(sdc_piece_trie *t, size_t total_bytes) {
    memset(t, 0, sizeof *t);
    t->cap_nodes = 1024;
    t->node_id = malloc((size_t)t->cap_nodes * sizeof *t->node_id);
    /* at most one slot per node; keep the load under 1/2 */
    size_t want = 2 * (total_bytes + 1) + 16;
    t->n_slots = 64;
    while (t->n_slots < want) t->n_slots <<= 1;
    t->slot_key = calloc(t->n_slots, sizeof *t->slot_key);
    t->slot_child = malloc(t->n_slots * sizeof *t->slot_child);
    if (!t->node_id || !t->slot_key || !t->slot_child) {
        sdc_piece_trie_free(t);
        return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: piece trie");
    }
    t->n_nodes = 1;
    t->node_id[0] = -1;
    return SDC_OK;
}

int32_t sdc_piece_trie_child(const sdc_piece_trie *t, int32_t node, uint8_t c) {
    uint64_t key = (((uint64_t)node << 8) | c) + 1;
    size_t mask = t->n_slots - 1;
    for (size_t h = hash_key(key) & mask;; h = (h + 1) & mask) {
        if (t->slot_key[h] == key) return t->slot_child[h];
        if (t->slot_key[h] == 0) return -1;
    }
}

sdc_status sdc_piece_trie_add(sdc_piece_trie *t, const char *s, size_t len, int32_t id) {
    int32_t node = 0;
    size_t mask = t->n_slots - 1;
    for (size_t i = 0; i < len; i++) {
        uint64_t key = (((uint64_t)node << 8) | (uint8_t)s[i]) + 1;
        size_t h = hash_key(key) & mask;
        while (t->slot_key[h] != 0 && t->slot_key[h] != key) h = (h + 1) & mask;
        if (t->slot_key[h] == key) {
            node = t->slot_child[h];
            continue;
        }
        if ((size_t)t->n_nodes * 2 + 2 > t->n_slots)
            return sdc_fail(SDC_ERR_INTERNAL, "tokenizer: piece trie table full");
        if (t->n_nodes == t->cap_nodes) {
            int32_t *p = realloc(t->node_id, (size_t)t->cap_nodes * 2 * sizeof *p);
            if (!p) return sdc_fail(SDC_ERR_NO_MEMORY, "tokenizer: piece trie");
            t->node_id = p;
            t->cap_nodes *= 2;
        }
        t->node_id[t->n_nodes] = -1;
        t->slot_key[h] = key;
        t->slot_child[h] = t->n_nodes;
        node = t->n_nodes++;
    }
    if (t->node_id[node] < 0) t->node_id[node] = id;
    return SDC_OK;
}

void sdc_piece_trie_free(sdc_piece_trie *t) {
    free(t->node_id);
    free(t->slot_key);
    free(t->slot_child);
    memset(t, 0, sizeof *t);
}
