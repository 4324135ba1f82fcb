/* PyTorch checkpoints (.ckpt/.pt/.pth/.bin written by torch.save >= 1.6): a zip archive
 * holding <archive>/data.pkl (the pickled object) and <archive>/data/<key> (one raw
 * storage per key). The pickle runs on the restricted VM of io/pickle.h; the tensors of
 * the pickled dict (and of dicts nested in it; keys under a "state_dict" entry keep
 * their own names, other nested dicts prefix theirs with "<key>.") are exposed as
 * sdc_st_tensor records, so the model loader serves them like safetensors ones.
 * Contiguous tensors of stored (uncompressed) entries point into the file image;
 * strided views and deflated entries are copied to memory the checkpoint owns. The
 * legacy (pre-1.6, non-zip) torch.save stream (pickles followed by raw storages) is read
 * too, its storages in place. */
#ifndef SDC_IO_CKPT_H
#define SDC_IO_CKPT_H

#include "io/safetensors.h"

#include <stdbool.h>

typedef struct sdc_ckpt_file sdc_ckpt_file;

/* A zip archive or a pickle stream (the legacy format) by its first bytes. */
bool sdc_ckpt_detect(const void *head, size_t size);

sdc_status sdc_ckpt_open(const char *path, sdc_ckpt_file **out);
/* Parses a file image in memory (not copied: keep it alive). */
sdc_status sdc_ckpt_open_memory(const void *data, size_t size, const char *label,
                                sdc_ckpt_file **out);
void sdc_ckpt_close(sdc_ckpt_file *f);

int sdc_ckpt_count(const sdc_ckpt_file *f);
const sdc_st_tensor *sdc_ckpt_at(const sdc_ckpt_file *f, int i); /* in pickle order */
/* true when tensor i's data lies in the file image (else in memory of the checkpoint) */
bool sdc_ckpt_in_file(const sdc_ckpt_file *f, int i);
const sdc_st_tensor *sdc_ckpt_find(const sdc_ckpt_file *f, const char *name);
/* An int entry of the top-level dict (e.g. "global_step"), false if absent. */
bool sdc_ckpt_int(const sdc_ckpt_file *f, const char *key, int64_t *value);

#endif
