/* A whole regular file mapped read-only (private), the way both weight formats are read. */
#ifndef SDC_IO_FILE_MAP_H
#define SDC_IO_FILE_MAP_H

#include "core/status.h"

/* On success data and size describe the mapping (NULL and 0 for an empty file). */
sdc_status sdc_map_file(const char *path, void **data, size_t *size);
void sdc_unmap_file(void *data, size_t size);

#endif
