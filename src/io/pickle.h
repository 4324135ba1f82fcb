/* Restricted pickle VM for what torch.save writes for a state dict: it builds a tree of
 * plain values (None, bools, ints, floats, strings, bytes, tuples, lists, dicts) plus
 * tensors and storages, and never runs Python code. The only globals it accepts are
 * collections.OrderedDict, torch._utils._rebuild_tensor(_v2), _rebuild_parameter(
 * _with_state) and the torch.<Type>Storage classes named in persistent ids; any other
 * global (os.system, builtins.eval, a pytorch_lightning class, ...) is refused when
 * the GLOBAL opcode names it, with an error that says which. Sizes, counts, memo
 * indices and nesting are bounded. */
#ifndef SDC_IO_PICKLE_H
#define SDC_IO_PICKLE_H

#include "core/status.h"

#include <stdint.h>

typedef enum sdc_pk_kind {
    SDC_PK_NONE,
    SDC_PK_BOOL,
    SDC_PK_INT,
    SDC_PK_FLOAT,
    SDC_PK_STR, /* UTF-8 text (also BINSTRING) */
    SDC_PK_BYTES,
    SDC_PK_TUPLE,
    SDC_PK_LIST,
    SDC_PK_DICT,   /* items: key, value, key, value, ... in insertion order */
    SDC_PK_GLOBAL, /* an allowed callable or storage class (value.global) */
    SDC_PK_STORAGE,
    SDC_PK_TENSOR,
} sdc_pk_kind;

/* Element types of torch storages (torch.<name>Storage). */
typedef enum sdc_pk_dtype {
    SDC_PK_F64,
    SDC_PK_F32,
    SDC_PK_F16,
    SDC_PK_BF16,
    SDC_PK_I64,
    SDC_PK_I32,
    SDC_PK_I16,
    SDC_PK_I8,
    SDC_PK_U8,
    SDC_PK_BOOL8,
    SDC_PK_NDTYPES
} sdc_pk_dtype;

typedef enum sdc_pk_global {
    SDC_PKG_ORDERED_DICT,
    SDC_PKG_REBUILD_TENSOR,    /* torch._utils._rebuild_tensor */
    SDC_PKG_REBUILD_TENSOR_V2, /* torch._utils._rebuild_tensor_v2 */
    SDC_PKG_REBUILD_PARAM,     /* torch._utils._rebuild_parameter */
    SDC_PKG_REBUILD_PARAM_ST,  /* torch._utils._rebuild_parameter_with_state */
    SDC_PKG_STORAGE_TYPE,      /* torch.<T>Storage; value.storage.dtype says which */
} sdc_pk_global;

#define SDC_PK_MAX_DIMS 8

typedef struct sdc_pk_obj {
    sdc_pk_kind kind;
    union {
        int64_t i; /* BOOL, INT */
        double f;
        struct {
            const char *s; /* NUL-terminated (bytes may hold NULs: use len) */
            size_t len;
            size_t off; /* in the string arena (what s points at after the load) */
        } str;
        struct {
            int *items; /* object indices */
            int n, cap;
        } seq; /* TUPLE, LIST, DICT */
        struct {
            sdc_pk_global which;
            sdc_pk_dtype dtype; /* for SDC_PKG_STORAGE_TYPE */
        } global;
        struct {
            sdc_pk_dtype dtype;
            const char *key; /* zip entry name under <archive>/data/ */
            int key_str;     /* the key's string object */
            int64_t numel;   /* elements, as the persistent id says */
        } storage;
        struct {
            int storage; /* object index of a SDC_PK_STORAGE */
            int64_t offset;
            int ndim;
            int64_t size[SDC_PK_MAX_DIMS], stride[SDC_PK_MAX_DIMS];
        } tensor;
    } v;
} sdc_pk_obj;

typedef struct sdc_pickle sdc_pickle;

/* Runs the pickle at the start of data[0..size) (not copied: keep it alive while the result is
 * used; strings are copied). `label` names it in errors ("model.ckpt: archive/data.pkl"). */
sdc_status sdc_pickle_load(const uint8_t *data, size_t size, const char *label, sdc_pickle **out);
void sdc_pickle_free(sdc_pickle *p);

int sdc_pickle_root(const sdc_pickle *p); /* object index of the pickled value */
const sdc_pk_obj *sdc_pickle_obj(const sdc_pickle *p, int i);
int sdc_pickle_obj_count(const sdc_pickle *p);
/* Bytes the pickle took, STOP included (where the next pickle of a stream starts). */
size_t sdc_pickle_end(const sdc_pickle *p);

const char *sdc_pk_dtype_name(sdc_pk_dtype d);
size_t sdc_pk_dtype_size(sdc_pk_dtype d);

#endif
