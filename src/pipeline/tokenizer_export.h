/* Embeds a T5 tokenizer in a GGUF being written (tokenizer.ggml.* keys, the ones
 * pipeline/tokenizer_source.c reads), so a converted GGUF needs no tokenizer file. */
#ifndef SDC_PIPELINE_TOKENIZER_EXPORT_H
#define SDC_PIPELINE_TOKENIZER_EXPORT_H

#include "io/gguf.h"
#include "io/model_loader.h"

/* Does nothing when the loader holds no T5 ("text_encoders.t5xxl." tensors). Copies the
 * tokenizer.ggml.* keys of a GGUF input that has them; otherwise finds the tokenizer as
 * generation would (override_path, or tokenizer.json / spiece.model near weights_path)
 * and writes its arrays. A T5 without a tokenizer found is only a warning. */
sdc_status sdc_export_t5_tokenizer(const sdc_loader *l, const char *weights_path,
                                   const char *override_path, sdc_gguf_writer *w);

#endif
