/* Model loader: opens weight files (safetensors, GGUF or PyTorch zip checkpoints, told
 * apart by their first bytes; or a diffusers folder), each under an optional name prefix
 * ("model.diffusion_model." for
 * --diffusion-model, "text_encoders.t5xxl.transformer." for --t5xxl, none for -m), into
 * one name -> sdc_tensor map.
 *
 * Tensors are weights (SDC_TENSOR_PARAM, op NONE) with ne in ggml order (innermost
 * first: a PyTorch shape reversed), contiguous nb, and data pointing into the file
 * mapping. F32/F16/BF16/I32 and every GGUF quantised type stay as they are; F64 becomes
 * F32 and the other integer dtypes (I8/I16/I64/U8/U16/U32/U64/BOOL) become I32, in
 * memory the loader owns. Data whose address is not a multiple of 4 (possible in
 * safetensors) is copied to aligned memory. Everything stays valid until
 * sdc_loader_free. */
#ifndef SDC_IO_MODEL_LOADER_H
#define SDC_IO_MODEL_LOADER_H

#include "core/status.h"
#include "core/tensor.h"
#include "io/ckpt.h"
#include "io/gguf.h"
#include "io/safetensors.h"

typedef struct sdc_loader sdc_loader;

typedef enum sdc_file_format {
    SDC_FORMAT_UNKNOWN = 0,
    SDC_FORMAT_SAFETENSORS,
    SDC_FORMAT_GGUF,
    SDC_FORMAT_CKPT, /* PyTorch .ckpt/.pt/.bin (zip of pickles, io/ckpt.h) */
} sdc_file_format;

/* Format of a file image by its first bytes (needs at least 9 bytes for safetensors). */
sdc_file_format sdc_detect_format(const void *head, size_t size);

sdc_status sdc_loader_create(sdc_loader **out);
void sdc_loader_free(sdc_loader *l);

/* Adds every tensor of the file under `prefix` (NULL or "" for none). On failure nothing
 * of this file is added and the message names the file (and tensor). A name already
 * loaded from another file is an error naming both files. */
sdc_status sdc_loader_add_file(sdc_loader *l, const char *path, const char *prefix);
/* A path that is a folder is a diffusers folder (see sdc_loader_add_diffusers_folder). */

/* Maps a file's tensor name to the full name it is loaded under; false when it has none
 * (the file is then refused with an error naming the tensor). */
typedef bool (*sdc_loader_rename_fn)(void *ctx, const char *name, char *out, size_t n);
/* sdc_loader_add_file with names given by `rename` instead of a prefix. */
sdc_status sdc_loader_add_file_renamed(sdc_loader *l, const char *path, sdc_loader_rename_fn rename,
                                       void *ctx);
/* Drops every file from index n_files on (undoing a partly added group of files). */
void sdc_loader_truncate(sdc_loader *l, int n_files);

/* A diffusers folder (model_index.json, unet/, vae/, text_encoder/, text_encoder_2/,
 * tokenizer/, tokenizer_2/; io/diffusers_names.c): every component's weights under the
 * LDM names a single-file checkpoint has (model.diffusion_model., first_stage_model.,
 * cond_stage_model.transformer. or, for SDXL, conditioner.embedders.0/1.transformer.).
 * All or nothing. */
sdc_status sdc_loader_add_diffusers_folder(sdc_loader *l, const char *dir);
/* The CLIP tokenizer folders of a loaded diffusers folder: i = 0 for tokenizer/, 1 for
 * tokenizer_2/ (SDXL); NULL when absent or when no folder was loaded. */
const char *sdc_loader_tokenizer_dir(const sdc_loader *l, int i);
sdc_status sdc_loader_set_tokenizer_dir(sdc_loader *l, int i, const char *dir);
/* Same for a file image in memory (not copied: keep it alive). */
sdc_status sdc_loader_add_memory(sdc_loader *l, const void *data, size_t size, const char *label,
                                 const char *prefix);

int sdc_loader_tensor_count(const sdc_loader *l);
sdc_tensor *sdc_loader_tensor_at(const sdc_loader *l, int i); /* load order */
sdc_tensor *sdc_loader_find(const sdc_loader *l, const char *name);
/* Index of the file a tensor came from (see sdc_loader_file_*), -1 if not ours. */
int sdc_loader_tensor_file(const sdc_loader *l, const sdc_tensor *t);

int sdc_loader_file_count(const sdc_loader *l);
const char *sdc_loader_file_path(const sdc_loader *l, int i);
const char *sdc_loader_file_prefix(const sdc_loader *l, int i);
sdc_file_format sdc_loader_file_format(const sdc_loader *l, int i);
/* The parsed file, for its metadata: NULL when the file has the other format. */
const sdc_gguf_file *sdc_loader_file_gguf(const sdc_loader *l, int i);
const sdc_st_file *sdc_loader_file_st(const sdc_loader *l, int i);
const sdc_ckpt_file *sdc_loader_file_ckpt(const sdc_loader *l, int i);
/* A GGUF KV from the first loaded GGUF file that has `key` (e.g. tokenizer.ggml.tokens),
 * or NULL. `file` (may be NULL) receives that file's index. */
/* Drops the resident pages of file i's mapped tensors (re-read on next use). */
void sdc_loader_release_pages(sdc_loader *l, int file);
/* The same for one tensor of ours (no-op for others). */
void sdc_loader_release_tensor_pages(sdc_loader *l, const sdc_tensor *t);

const sdc_gguf_kv *sdc_loader_find_kv(const sdc_loader *l, const char *key, int *file);

#endif
