/* safetensors reader: mmap the file, validate the whole header (JSON syntax, dtypes,
 * shapes, offsets inside the data section, no overlaps) before any data is touched. */
#ifndef SDC_IO_SAFETENSORS_H
#define SDC_IO_SAFETENSORS_H

#include "core/status.h"
#include "core/types.h"

typedef enum sdc_st_dtype {
    SDC_ST_F64,
    SDC_ST_F32,
    SDC_ST_F16,
    SDC_ST_BF16,
    SDC_ST_I64,
    SDC_ST_I32,
    SDC_ST_I16,
    SDC_ST_I8,
    SDC_ST_U8,
    SDC_ST_BOOL,
    SDC_ST_U16,
    SDC_ST_U32,
    SDC_ST_U64,
} sdc_st_dtype;

#define SDC_ST_MAX_DIMS 8

typedef struct sdc_st_tensor {
    const char *name;
    sdc_st_dtype dtype;
    int ndim;
    int64_t shape[SDC_ST_MAX_DIMS]; /* PyTorch order: shape[ndim-1] is innermost */
    const void *data;               /* inside the mapping; not aligned in general */
    size_t nbytes;
} sdc_st_tensor;

typedef struct sdc_st_file sdc_st_file;

sdc_status sdc_st_open(const char *path, sdc_st_file **out);
/* Parses a file image in memory (not copied: keep it alive). `label` names it in errors. */
sdc_status sdc_st_open_memory(const void *data, size_t size, const char *label, sdc_st_file **out);
void sdc_st_close(sdc_st_file *f);

int sdc_st_count(const sdc_st_file *f);
const sdc_st_tensor *sdc_st_at(const sdc_st_file *f, int i); /* in file (offset) order */
const sdc_st_tensor *sdc_st_find(const sdc_st_file *f, const char *name);
/* __metadata__ string value, or NULL. */
const char *sdc_st_metadata(const sdc_st_file *f, const char *key);
const char *sdc_st_path(const sdc_st_file *f);

const char *sdc_st_dtype_name(sdc_st_dtype d);
size_t sdc_st_dtype_size(sdc_st_dtype d);
/* Our tensor type for a dtype stored as is (F32/F16/BF16/I32/...); -1 if none. */
int sdc_st_dtype_to_type(sdc_st_dtype d);
int64_t sdc_st_numel(const sdc_st_tensor *t);
/* Converts any numeric dtype to F32 (dst holds numel floats). */
sdc_status sdc_st_to_f32(const sdc_st_tensor *t, float *dst);

#endif
