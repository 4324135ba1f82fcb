/* Read-only zip archive reader over a file image in memory (the container of PyTorch
 * .ckpt/.pt/.bin files). Only the central directory is trusted for sizes (torch writes
 * data descriptors, so local headers carry zeros); Zip64 sizes and offsets are read, so
 * archives over 4 GB work. Stored entries are served in place; deflated ones are
 * inflated on request into memory the archive owns. Every offset and size is checked
 * against the image before use. */
#ifndef SDC_IO_ZIP_H
#define SDC_IO_ZIP_H

#include "core/status.h"

#include <stdint.h>

typedef struct sdc_zip_entry {
    const char *name; /* NUL-terminated copy */
    uint16_t method;  /* 0 stored, 8 deflate */
    uint64_t comp_size, size;
    uint32_t crc32;
    const uint8_t *raw; /* the entry's (compressed) bytes inside the image */
} sdc_zip_entry;

typedef struct sdc_zip sdc_zip;

/* Parses the directory of `image` (not copied: keep it alive). `label` names it in errors. */
sdc_status sdc_zip_open(const uint8_t *image, size_t size, const char *label, sdc_zip **out);
void sdc_zip_close(sdc_zip *z);

int sdc_zip_count(const sdc_zip *z);
const sdc_zip_entry *sdc_zip_at(const sdc_zip *z, int i);
const sdc_zip_entry *sdc_zip_find(const sdc_zip *z, const char *name);
/* The uncompressed bytes of an entry: in place for stored entries, else inflated (once,
 * kept until close; at most max_size bytes, else an error). `verify_crc` checks the
 * CRC-32 (always done for inflated data). */
sdc_status sdc_zip_data(sdc_zip *z, const sdc_zip_entry *e, uint64_t max_size, bool verify_crc,
                        const uint8_t **data);

#endif
