#include "io/name_index.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int rehash(sdc_name_index *ix, size_t cap) {
    sdc_name_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    for (size_t i = 0; i < ix->cap; i++) {
        if (!ix->slots[i].name) continue;
        size_t h = ix->slots[i].hash & (cap - 1);
        while (slots[h].name) h = (h + 1) & (cap - 1);
        slots[h] = ix->slots[i];
    }
    free(ix->slots);
    ix->slots = slots;
    ix->cap = cap;
    return 0;
}

int sdc_name_index_init(sdc_name_index *ix, size_t expected) {
    memset(ix, 0, sizeof *ix);
    size_t cap = 16;
    while (cap / 2 < expected && cap < ((size_t)1 << 40)) cap *= 2;
    return rehash(ix, cap);
}

int sdc_name_index_reserve(sdc_name_index *ix, size_t total) {
    size_t cap = ix->cap ? ix->cap : 16;
    while (cap / 2 < total + 1) {
        if (cap > ((size_t)1 << 40)) return -1;
        cap *= 2;
    }
    return cap == ix->cap ? 0 : rehash(ix, cap);
}

int sdc_name_index_insert(sdc_name_index *ix, const char *name, int value) {
    if ((ix->count + 1) * 2 > ix->cap && rehash(ix, ix->cap ? ix->cap * 2 : 16)) return -2;
    uint64_t hv = hash_str(name);
    size_t mask = ix->cap - 1;
    for (size_t h = hv & mask;; h = (h + 1) & mask) {
        sdc_name_slot *s = &ix->slots[h];
        if (!s->name) {
            s->name = name;
            s->hash = hv;
            s->value = value;
            ix->count++;
            return -1;
        }
        if (s->hash == hv && strcmp(s->name, name) == 0) return s->value;
    }
}

int sdc_name_index_find(const sdc_name_index *ix, const char *name) {
    if (!ix->cap || !name) return -1;
    uint64_t hv = hash_str(name);
    size_t mask = ix->cap - 1;
    for (size_t h = hv & mask; ix->slots[h].name; h = (h + 1) & mask)
        if (ix->slots[h].hash == hv && strcmp(ix->slots[h].name, name) == 0)
            return ix->slots[h].value;
    return -1;
}

void sdc_name_index_free(sdc_name_index *ix) {
    free(ix->slots);
    memset(ix, 0, sizeof *ix);
}
