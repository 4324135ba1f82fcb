/* darts-clone double-array lookups. Each unit is a u32: bit 8 = "has a leaf child",
 * bits 0..7 (+ bit 31 for leaves) = label, offset = (unit >> 10) << ((unit & 512) >> 6),
 * and a leaf unit's low 31 bits are its value. Every index is bounds-checked because the
 * array comes from a file. */
#include "text/charsmap.h"

#include <stdlib.h>
#include <string.h>

struct sdc_charsmap {
    uint32_t *units;
    size_t n_units;
    char *strings; /* copy of the replacement blob plus a NUL guard */
    size_t strings_size;
};

static uint32_t rd_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static size_t unit_offset(uint32_t u) {
    return (size_t)((u >> 10) << ((u & (1u << 9)) >> 6));
}

sdc_status sdc_charsmap_parse(const uint8_t *data, size_t size, const char *label,
                              sdc_charsmap **out) {
    *out = NULL;
    if (!data || size < 4) return sdc_fail(SDC_ERR_FORMAT, "%s: charsmap too short", label);
    uint32_t trie_size = rd_u32(data);
    if (trie_size % 4 != 0 || trie_size == 0 || trie_size > size - 4)
        return sdc_fail(SDC_ERR_FORMAT, "%s: charsmap trie size %u does not fit in %zu bytes",
                        label, trie_size, size);
    sdc_charsmap *cm = calloc(1, sizeof *cm);
    if (!cm) return sdc_fail(SDC_ERR_NO_MEMORY, "%s: charsmap", label);
    cm->n_units = trie_size / 4;
    cm->strings_size = size - 4 - trie_size;
    cm->units = malloc(cm->n_units * sizeof *cm->units);
    cm->strings = malloc(cm->strings_size + 1);
    if (!cm->units || !cm->strings) {
        sdc_charsmap_free(cm);
        return sdc_fail(SDC_ERR_NO_MEMORY, "%s: charsmap", label);
    }
    for (size_t i = 0; i < cm->n_units; i++) cm->units[i] = rd_u32(data + 4 + 4 * i);
    memcpy(cm->strings, data + 4 + trie_size, cm->strings_size);
    cm->strings[cm->strings_size] = 0;
    *out = cm;
    return SDC_OK;
}

void sdc_charsmap_free(sdc_charsmap *cm) {
    if (!cm) return;
    free(cm->units);
    free(cm->strings);
    free(cm);
}

static size_t match(const sdc_charsmap *cm, const char *s, size_t len, int shortest,
                    const char **rep, size_t *rep_len) {
    size_t best_len = 0;
    uint32_t best_value = 0;
    size_t pos = unit_offset(cm->units[0]);
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == 0) break; /* darts-clone keys never contain NUL */
        pos ^= c;
        if (pos >= cm->n_units) break;
        uint32_t u = cm->units[pos];
        if ((u & ((1u << 31) | 0xFFu)) != c) break;
        pos ^= unit_offset(u);
        if (pos >= cm->n_units) break;
        if ((u >> 8) & 1) {
            best_len = i + 1;
            best_value = cm->units[pos] & 0x7FFFFFFFu;
            if (shortest) break;
        }
    }
    if (best_len == 0 || best_value >= cm->strings_size) return 0;
    *rep = cm->strings + best_value;
    *rep_len = strlen(*rep); /* bounded by the NUL guard */
    return best_len;
}

size_t sdc_charsmap_match(const sdc_charsmap *cm, const char *s, size_t len, const char **rep,
                          size_t *rep_len) {
    return match(cm, s, len, 0, rep, rep_len);
}

size_t sdc_charsmap_match_shortest(const sdc_charsmap *cm, const char *s, size_t len,
                                   const char **rep, size_t *rep_len) {
    return match(cm, s, len, 1, rep, rep_len);
}

size_t sdc_charsmap_serialize(const sdc_charsmap *cm, uint8_t *out) {
    size_t size = 4 + cm->n_units * 4 + cm->strings_size;
    if (!out) return size;
    uint32_t trie = (uint32_t)(cm->n_units * 4);
    for (int b = 0; b < 4; b++) out[b] = (uint8_t)(trie >> (8 * b));
    for (size_t i = 0; i < cm->n_units; i++)
        for (int b = 0; b < 4; b++) out[4 + 4 * i + (size_t)b] = (uint8_t)(cm->units[i] >> (8 * b));
    memcpy(out + 4 + trie, cm->strings, cm->strings_size);
    return size;
}
