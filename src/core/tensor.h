/* Tensors: a type, a shape ne[] (innermost first), byte strides nb[], a data pointer and
 * the buffer that pointer lies in (so its device). Views and permutes are stride changes.
 * A tensor is also a graph node: `op` and `src` say how to compute it (SDC_OP_NONE for
 * weights and inputs). */
#ifndef SDC_CORE_TENSOR_H
#define SDC_CORE_TENSOR_H

#include "core/types.h"

#define SDC_MAX_DIMS      4
#define SDC_MAX_SRC       6
#define SDC_MAX_OP_PARAMS 16
#define SDC_MAX_NAME      128

typedef enum sdc_op {
    SDC_OP_NONE = 0, /* leaf: weight (data set) or input (data set before compute) */
    SDC_OP_VIEW,     /* reshape/view/permute/transpose: shares src[0]'s data, own ne/nb */
    SDC_OP_CPY,      /* dst = src[0] converted to dst's type/layout (same element count) */
    SDC_OP_ADD,      /* dst = a + b, b broadcast (b's ne divide a's) */
    SDC_OP_SUB,
    SDC_OP_MUL,
    SDC_OP_DIV,
    SDC_OP_SCALE,    /* dst = a * s + b; params f[0]=s, f[1]=b */
    SDC_OP_GELU,     /* tanh approximation */
    SDC_OP_GELU_ERF, /* exact */
    SDC_OP_SILU,
    SDC_OP_RELU,
    SDC_OP_SIGMOID,
    SDC_OP_TANH,
    SDC_OP_SQR,
    SDC_OP_SQRT,
    SDC_OP_EXP,
    SDC_OP_CLAMP,      /* params f[0]=min f[1]=max */
    SDC_OP_SOFTMAX,    /* over ne[0]: softmax(a*scale + mask); src[1]=mask or NULL; f[0]=scale */
    SDC_OP_LAYER_NORM, /* over ne[0]; f[0]=eps; src[1]=weight, src[2]=bias (optional) */
    SDC_OP_RMS_NORM,   /* over ne[0]; f[0]=eps; src[1]=weight (optional) */
    SDC_OP_GROUP_NORM, /* ne=[W,H,C,N]: over (W,H,C/G) per group; i[0]=groups f[1]=eps; src[1..2] */
    SDC_OP_ROPE,       /* rotate pairs by tables; see sdc_rope() */
    SDC_OP_MATMUL,     /* dst = x @ w^T; see sdc_matmul() */
    SDC_OP_ATTENTION,  /* fused softmax(q k^T * scale + mask) v; see sdc_attention() */
    SDC_OP_CONV2D,     /* see sdc_conv2d() */
    SDC_OP_CONCAT,     /* i[0]=dim */
    SDC_OP_REPEAT,     /* tile src[0] to dst's shape */
    SDC_OP_PAD,        /* zero padding at the end of each dim; i[0..3] amounts */
    SDC_OP_UPSAMPLE,   /* nearest, integer factor i[0] in dims 0 and 1 */
    SDC_OP_MEAN,       /* mean over ne[0] -> ne[0]=1 */
    SDC_OP_SUM_ROWS,   /* sum over ne[0] -> ne[0]=1 */
    SDC_OP_GET_ROWS, /* rows of src[0] (ne=[D,V]) picked by I32 ids src[1] (ne=[n,b]) -> [D,n,b] */
    SDC_OP_TIMESTEP_EMBED, /* t (F32 [n]) -> [dim, n]; i[0]=dim i[1]=max_period; f[2]=flip (cos
                              first) */
    SDC_OP_GELU_F16,       /* tanh GELU through an F16 table, as ggml's CPU backend evaluates it */
    SDC_OP_COUNT
} sdc_op;

enum {
    SDC_TENSOR_PARAM = 1 << 0,  /* a weight: lives in a weight buffer, never planned */
    SDC_TENSOR_INPUT = 1 << 1,  /* the caller fills it before compute */
    SDC_TENSOR_OUTPUT = 1 << 2, /* kept alive to the end of compute */
};

typedef struct sdc_tensor {
    sdc_type type;
    int64_t ne[SDC_MAX_DIMS];
    size_t nb[SDC_MAX_DIMS];
    void *data;
    /* where data lives (core/buffer.h): NULL = host memory outside any buffer; views share
     * their owner's. Code outside a backend reads or writes data only when it is host
     * memory (sdc_tensor_is_host), else through the backend (sdc_backend_tensor_get). */
    struct sdc_buffer *buffer;

    sdc_op op;
    union {
        int32_t i[SDC_MAX_OP_PARAMS];
        float f[SDC_MAX_OP_PARAMS];
    } params;
    struct sdc_tensor *src[SDC_MAX_SRC];
    struct sdc_tensor *view_src; /* for views: the tensor that owns the memory */
    size_t view_offset;          /* bytes from view_src->data */
    int flags;
    int index; /* position in its graph's node list, -1 for leaves */
    int block; /* repeated block (layer) whose builder made it, -1 outside blocks: where a
                * layer split may cut the graph (sdc_graph_set_block) */
    struct sdc_graph *graph; /* the graph that created it; NULL for weights */
    /* LoRAs that sdc_matmul / sdc_conv2d add to this weight at run time (core/lora_link.h,
     * filled by models/lora.c); NULL: none. Copies of a weight keep it. */
    const struct sdc_lora_link *lora;

    /* planner results */
    int64_t plan_offset; /* byte offset in the scratch buffer, -1 if not planned */
    int last_use;        /* index of the last node reading this tensor */

    char name[SDC_MAX_NAME];
} sdc_tensor;

/* "matmul", "attention", ... for messages and profiles */
const char *sdc_op_name(int op);

int64_t sdc_tensor_nelements(const sdc_tensor *t);
int64_t sdc_tensor_nrows(const sdc_tensor *t); /* ne[1]*ne[2]*ne[3] */
size_t sdc_tensor_nbytes(const sdc_tensor *t); /* bytes spanned by the data */
bool sdc_tensor_is_contiguous(const sdc_tensor *t);
bool sdc_tensor_same_shape(const sdc_tensor *a, const sdc_tensor *b);
/* Fills nb[] for a contiguous layout of `type` with shape ne[]. */
void sdc_tensor_set_contiguous_strides(sdc_tensor *t);
/* Pointer to element (i0,i1,i2,i3) (i0 a block index multiple for quantised types). */
static inline void *sdc_tensor_ptr(const sdc_tensor *t, int64_t i0, int64_t i1, int64_t i2,
                                   int64_t i3) {
    return (char *)t->data + i0 * t->nb[0] + i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}
void sdc_tensor_set_name(sdc_tensor *t, const char *fmt, ...);
/* "[4,256,1,1]" for messages. */
const char *sdc_tensor_shape_str(const sdc_tensor *t, char *buf, size_t size);

#endif
