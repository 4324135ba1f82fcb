/* Importance matrices: per weight, the mean of the squared inputs of each input column
 * (its "importance"), collected through the graph eval callback during generation and
 * stored in sd.cpp's / llama.cpp's legacy imatrix.dat layout (docs/quantization.md):
 *   int32 n_entries; n_entries x {int32 len; char name[len]; int32 ncall; int32 nval;
 *   float values[nval]}; int32 last_call
 * with values = mean(x^2) * ncall. Loading adds values to the sums and ncall to the
 * counts, so load + save reproduces a file and several files merge by weight of calls. */
#ifndef SDC_PIPELINE_IMATRIX_H
#define SDC_PIPELINE_IMATRIX_H

#include "core/graph.h"
#include "core/status.h"
#include "core/tensor.h"
#include "sdc.h"

struct sdc_loader;

/* Collection filter: a MATMUL whose src[0] is a weight (SDC_TENSOR_PARAM) named
 * "model.*", "cond_stage_model.*" or "text_encoders.*"; with a loader set, src[0] must
 * also be that loader's tensor of that name (owned reshaped copies, e.g. MiniT2I's
 * patch-embedding matrices, are skipped: their rows are not the file's rows). */
void sdc_imatrix_set_loader(sdc_imatrix *im, const struct sdc_loader *l);
/* The sdc_eval_fn to install (user = the sdc_imatrix). */
bool sdc_imatrix_eval_cb(sdc_tensor *t, bool ask, void *user);
/* First error met inside the callback (e.g. a weight seen with two input widths). */
sdc_status sdc_imatrix_error(const sdc_imatrix *im);

/* Adds one call: `planes` planes of `rows` rows of `nval` floats (row r of plane p at
 * x + p*plane_stride + r*row_stride, in floats). Each plane counts as one call, as
 * sd.cpp counts one call per separately run cond/uncond pass. Non-finite inputs are
 * skipped as sd.cpp skips them. */
sdc_status sdc_imatrix_add(sdc_imatrix *im, const char *name, const float *x, int64_t nval,
                           int64_t rows, int64_t planes, int64_t row_stride, int64_t plane_stride);

int sdc_imatrix_find(const sdc_imatrix *im, const char *name); /* index or -1 */
const char *sdc_imatrix_name(const sdc_imatrix *im, int i);
int64_t sdc_imatrix_nval(const sdc_imatrix *im, int i);
int64_t sdc_imatrix_ncall(const sdc_imatrix *im, int i);
/* The values a save would write for entry i (n = nval floats); false if some column
 * has no data. */
bool sdc_imatrix_values(const sdc_imatrix *im, int i, float *out);

/* Parses a file image (label names it in errors) and merges it. All or nothing. */
sdc_status sdc_imatrix_load_memory(sdc_imatrix *im, const void *data, size_t size,
                                   const char *label);
/* Serialises into a malloc'ed buffer (caller frees). Entries with missing columns are
 * left out with a warning. */
sdc_status sdc_imatrix_save_memory(const sdc_imatrix *im, void **out, size_t *size);

#endif
