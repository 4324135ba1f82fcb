/* CPU kernels, one per op. Each runs on all nth threads of the pool (ith = this one)
 * and splits its work by output rows/tiles. wdata is a work buffer shared by all
 * threads of this node, of the size the op's work_size function asked for. */
#ifndef SDC_CPU_OPS_H
#define SDC_CPU_OPS_H

#include "core/tensor.h"
#include "core/threadpool.h"

typedef struct sdc_cpu_params {
    int ith, nth;
    void *wdata;
    size_t wsize;
    sdc_threadpool *pool;
} sdc_cpu_params;

static inline void sdc_cpu_barrier(const sdc_cpu_params *p) {
    if (p->nth > 1) sdc_threadpool_barrier(p->pool);
}
/* Even split of [0, n) among threads: this thread's [*lo, *hi). */
static inline void sdc_cpu_split(int64_t n, int ith, int nth, int64_t *lo, int64_t *hi) {
    int64_t per = (n + nth - 1) / nth;
    *lo = per * ith < n ? per * ith : n;
    *hi = *lo + per < n ? *lo + per : n;
}

typedef void (*sdc_cpu_kernel_fn)(const sdc_cpu_params *p, sdc_tensor *dst);
typedef size_t (*sdc_cpu_work_fn)(const sdc_tensor *dst, int nth);

/* layout / copies: ops_copy.c */
void sdc_cpu_cpy(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_concat(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_repeat(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_pad(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_upsample(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_get_rows(const sdc_cpu_params *p, sdc_tensor *dst);
/* elementwise: ops_elementwise.c */
void sdc_cpu_binary(const sdc_cpu_params *p, sdc_tensor *dst); /* ADD SUB MUL DIV */
void sdc_cpu_unary(const sdc_cpu_params *p, sdc_tensor *dst);  /* SCALE GELU ... CLAMP */
/* reductions / norms: ops_norm.c */
void sdc_cpu_reduce_rows(const sdc_cpu_params *p, sdc_tensor *dst); /* MEAN SUM_ROWS */
void sdc_cpu_softmax(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_layer_norm(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_rms_norm(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_group_norm(const sdc_cpu_params *p, sdc_tensor *dst);
/* positions: ops_rope.c */
void sdc_cpu_rope(const sdc_cpu_params *p, sdc_tensor *dst);
void sdc_cpu_timestep_embed(const sdc_cpu_params *p, sdc_tensor *dst);
/* heavy ops: matmul.c, attention.c, conv2d.c */
void sdc_cpu_matmul(const sdc_cpu_params *p, sdc_tensor *dst);
size_t sdc_cpu_matmul_work_size(const sdc_tensor *dst, int nth);
void sdc_cpu_attention(const sdc_cpu_params *p, sdc_tensor *dst);
size_t sdc_cpu_attention_work_size(const sdc_tensor *dst, int nth);
void sdc_cpu_conv2d(const sdc_cpu_params *p, sdc_tensor *dst);
size_t sdc_cpu_conv2d_work_size(const sdc_tensor *dst, int nth);
/* Tests: bytes of packed weights conv2d shares at once (0: the default); returns the old
 * value. Not thread-safe; set it only while no graph runs. */
size_t sdc_cpu_conv2d_set_budget(size_t bytes);

/* Kernel and work-size function for an op (NULL work fn: needs none). */
sdc_cpu_kernel_fn sdc_cpu_kernel_for(sdc_op op);
sdc_cpu_work_fn sdc_cpu_work_for(sdc_op op);
/* True if the node's source and destination types are ones its kernel handles; else false
 * with a static reason in *why. */
bool sdc_cpu_types_ok(const sdc_tensor *node, const char **why);

#endif
