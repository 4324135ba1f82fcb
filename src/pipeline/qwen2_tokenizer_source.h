/* Where Qwen-Image finds its Qwen2 tokenizer, and how -M convert embeds it: in a GGUF as
 * llama.cpp writes Qwen2 / Qwen2.5-VL models (tokenizer.ggml.model "gpt2", pre "qwen2",
 * tokens, token_type, merges), so the LLM GGUFs users download carry theirs. */
#ifndef SDC_PIPELINE_QWEN2_TOKENIZER_SOURCE_H
#define SDC_PIPELINE_QWEN2_TOKENIZER_SOURCE_H

#include "io/gguf.h"
#include "io/model_loader.h"
#include "text/qwen2_tokenizer.h"

/* First found wins: override_path (--llm-tokenizer: a tokenizer.json, vocab.json, merges.txt
 * or a folder with one), the tokenizer embedded in a loaded GGUF, then files next to
 * near_path (the --llm or -m file): tokenizer/, ../tokenizer/, tokenizer.json, vocab.json,
 * merges.txt in its folder. None: an error naming every place looked at. */
sdc_status sdc_load_qwen2_tokenizer(const sdc_loader *l, const char *near_path,
                                    const char *override_path, sdc_qwen2_tokenizer **out);

/* Writes t as llama.cpp's keys (see above). */
sdc_status sdc_qwen2_tokenizer_write_gguf(const sdc_qwen2_tokenizer *t, sdc_gguf_writer *w);

#endif
