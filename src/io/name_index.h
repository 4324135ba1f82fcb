/* String -> int map with open addressing, for tensor and key lookup in files with
 * thousands of entries. Names are not copied: they must outlive the index. */
#ifndef SDC_IO_NAME_INDEX_H
#define SDC_IO_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct sdc_name_slot {
    const char *name; /* NULL: empty */
    uint64_t hash;
    int value;
} sdc_name_slot;

typedef struct sdc_name_index {
    sdc_name_slot *slots;
    size_t cap; /* power of two, or 0 */
    size_t count;
} sdc_name_index;

/* Both return 0 on success, -1 when out of memory. */
int sdc_name_index_init(sdc_name_index *ix, size_t expected);
/* Adds name -> value unless the name is there. Returns -1 when added, -2 when out of
 * memory, else the value already stored under that name (nothing changes). */
int sdc_name_index_insert(sdc_name_index *ix, const char *name, int value);
/* Makes room for `total` names so that inserts up to then cannot fail. 0 or -1. */
int sdc_name_index_reserve(sdc_name_index *ix, size_t total);
/* The value stored under name, or -1. */
int sdc_name_index_find(const sdc_name_index *ix, const char *name);
void sdc_name_index_free(sdc_name_index *ix);

#endif
