/* Where a text encoder's tokenizer comes from: --t5-tokenizer, the arrays embedded in a
 * GGUF (tokenizer.ggml.*), or tokenizer.json / spiece.model next to the weights. */
#ifndef SDC_PIPELINE_TOKENIZER_SOURCE_H
#define SDC_PIPELINE_TOKENIZER_SOURCE_H

#include "io/model_loader.h"
#include "text/tokenizer.h"

sdc_status sdc_load_t5_tokenizer(const sdc_loader *l, const char *weights_path,
                                 const char *override_path, sdc_tokenizer **out);

#endif
