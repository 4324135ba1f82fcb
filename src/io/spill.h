/* Spill storage: an unlinked temporary file mapped shared. Weights converted on load
 * (--type) for a module whose params live on "disk" are written here once; after the
 * module's phase their pages are dropped from the process (they stay in the page cache
 * or go to disk) and fault back in on the next use, like mmapped model files. */
#ifndef SDC_IO_SPILL_H
#define SDC_IO_SPILL_H

#include <stddef.h>

#include "core/status.h"

typedef struct sdc_spill sdc_spill;

/* A file of `capacity` bytes in $SDC_SPILL_DIR, else $TMPDIR, else /var/tmp, else /tmp. */
sdc_status sdc_spill_create(size_t capacity, sdc_spill **out);
void sdc_spill_free(sdc_spill *s);
/* The next `bytes` (64-byte aligned); NULL when the capacity is used up. */
void *sdc_spill_alloc(sdc_spill *s, size_t bytes);
/* Drops the resident pages wholly inside [p, p + bytes) (data is kept). */
void sdc_spill_release(sdc_spill *s, const void *p, size_t bytes);
/* Whether p lies in the spill mapping. */
int sdc_spill_contains(const sdc_spill *s, const void *p);

#endif
