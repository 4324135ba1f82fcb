/* Where the CLIP BPE tokenizer comes from. sd.cpp compiles OpenAI's merges into its binary;
 * we may not ship them, so they are looked for where users have them.
 *
 * GGUF keys (string values, written by -M convert so a converted GGUF needs no tokenizer
 * file; which = 0 reads the clip_l names first, which = 1 the clip_g names, then both the
 * shared "tokenizer.clip.*" names):
 *   tokenizer.clip_l.merges / tokenizer.clip_g.merges / tokenizer.clip.merges
 *       merges.txt text ("#version: 0.2" line, then "a b" lines in rank order);
 *   tokenizer.clip_l.vocab_json / tokenizer.clip_g.vocab_json / tokenizer.clip.vocab_json
 *       vocab.json text; optional: without it the vocabulary is built from the merges
 *       (bytes, bytes + "</w>", one token per merge, <|startoftext|>, <|endoftext|>), which is
 *       the real CLIP vocabulary for OpenAI's merges. */
#ifndef SDC_PIPELINE_CLIP_TOKENIZER_SOURCE_H
#define SDC_PIPELINE_CLIP_TOKENIZER_SOURCE_H

#include "text/clip_tokenizer.h"

#define SDC_GGUF_CLIP_MERGES   "tokenizer.clip.merges"
#define SDC_GGUF_CLIP_VOCAB    "tokenizer.clip.vocab_json"
#define SDC_GGUF_CLIP_L_MERGES "tokenizer.clip_l.merges"
#define SDC_GGUF_CLIP_L_VOCAB  "tokenizer.clip_l.vocab_json"
#define SDC_GGUF_CLIP_G_MERGES "tokenizer.clip_g.merges"
#define SDC_GGUF_CLIP_G_VOCAB  "tokenizer.clip_g.vocab_json"

/* Looks for the CLIP (which = 0: ViT-L / SD1 / SDXL clip_l, 1: OpenCLIP ViT-H / bigG) tokenizer,
 * in order:
 *  1. explicit_path (the --clip-tokenizer flag; NULL = none): a file or folder
 *     sdc_clip_tokenizer_load takes; failing to load it is the error;
 *  2. the GGUF keys above in any file of the loader (l may be NULL);
 *  3. next to the model file: its folder, its tokenizer/ (which = 1: tokenizer_2/ first), its
 *     parent and the parent's tokenizer/ (tokenizer_2/) — a diffusers folder whose
 *     unet/ or text_encoder/ holds the weights;
 *  4. the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub or
 *     ~/.cache/huggingface/hub): snapshots of openai/clip-vit-large-patch14, the
 *     stable-diffusion v1-5 / 2-1 / xl-base-1.0 repositories' tokenizer folders, laion's
 *     CLIP-ViT-bigG-14-laion2B-39B-b160k and CLIP-ViT-H-14-laion2B-s32B-b79K (which = 1 tries the
 *     OpenCLIP ones first; the BPE is the same, only padding differs);
 *  5. an installed clip / open_clip Python package: bpe_simple_vocab_16e6.txt.gz under
 *     $VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, ~/.pyenv/versions/<v>, /usr/local and /usr
 *     lib/python3.../{site,dist}-packages.
 * Candidates found implicitly that fail to load (say a T5 tokenizer.json beside the model) are
 * skipped with a warning. When nothing is found: an error listing every place tried and where
 * to get the files. */
struct sdc_loader;
struct sdc_gguf_writer;
sdc_status sdc_load_clip_tokenizer(const struct sdc_loader *l, const char *model_path,
                                   const char *explicit_path, int which, sdc_clip_tokenizer **out);

/* For -M convert: writes t into a GGUF being written under the keys above (which = 0: the
 * clip_l names, 1: the clip_g names): the merges always, the vocab.json only when the vocabulary
 * is not the one the merges build (never for OpenAI's CLIP). */
sdc_status sdc_clip_tokenizer_write_gguf(const sdc_clip_tokenizer *t, int which,
                                         struct sdc_gguf_writer *w);

#endif
