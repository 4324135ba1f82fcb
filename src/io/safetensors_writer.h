/* safetensors writer: header (with optional __metadata__) then tensor data, streamed
 * tensor by tensor so a large model never has to be in memory at once. */
#ifndef SDC_IO_SAFETENSORS_WRITER_H
#define SDC_IO_SAFETENSORS_WRITER_H

#include "io/safetensors.h"

typedef struct sdc_st_writer sdc_st_writer;

sdc_status sdc_st_writer_create(sdc_st_writer **out);
void sdc_st_writer_free(sdc_st_writer *w);
sdc_status sdc_st_writer_set_metadata(sdc_st_writer *w, const char *key, const char *value);
/* Declares a tensor (shape in PyTorch order). Data is produced later by the callback,
 * in declaration order, or given now with `data` (not copied; keep it alive). */
typedef sdc_status (*sdc_st_fill_fn)(void *user, int index, void *dst, size_t nbytes);
sdc_status sdc_st_writer_add(sdc_st_writer *w, const char *name, sdc_st_dtype dtype, int ndim,
                             const int64_t *shape, const void *data);
/* Writes the file; tensors added without data are filled by `fill` (may be NULL). */
sdc_status sdc_st_writer_write(sdc_st_writer *w, const char *path, sdc_st_fill_fn fill, void *user);

#endif
