/* sd.cpp's "key=value,key=value" option lists (--ref-image-args, --model-args): split and
 * read with the strictness sdc keeps for every flag (a malformed item is an error). */
#ifndef SDC_PIPELINE_KV_LIST_H
#define SDC_PIPELINE_KV_LIST_H

#include <stdbool.h>

#include "sdc.h"

typedef struct sdc_kv {
    char key[64], value[64];
} sdc_kv;

/* Splits args at ',' or ';' into at most max trimmed items (*count of them); empty items
 * are skipped. An item without '=' or too long is an error naming flag and the item. */
sdc_status sdc_kv_split(const char *flag, const char *args, sdc_kv *items, int max, int *count);
/* sd.cpp's strict bool: 1/true/yes/on, 0/false/no/off, any case. */
bool sdc_kv_bool(const char *v, bool *out);
bool sdc_kv_int(const char *v, int *out);

#endif
