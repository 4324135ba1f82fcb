#!/usr/bin/env python3
"""Derives tests/data/sdcli_flags.tsv and tools/common/flag_table.c from sd.cpp's sd-cli
sources (examples/common/common.cpp and examples/cli/main.cpp) plus sdc's own status of
each flag (the STATUS table below).

Usage: gen_sdcli_flags.py SDCPP_GIT_DIR [COMMIT]
  reads the two files with `git show COMMIT:path`, writes both outputs next to this
  repository's root. Every sd-cli flag must have a STATUS row and every STATUS row must be
  an sd-cli flag or marked as sdc's own ("own"), else the script fails.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FILES = ["examples/cli/main.cpp", "examples/common/common.cpp"]

# long | status | decided | value | test value | target | special | scope | neutral | value name | text
#  status:  works, note (works, with a note in docs), lib (passed to the library, which
#           decides per model), error (not yet, changes the image), warning (a hint, ignored)
#  decided: cli or library (who answers for this model/device)
#  value:   our value kind (none, path, dir, string, list, int, float, seed, name, sizes)
#  target:  field of sdc_cli_args that receives the value, '-' for none
#  special: how the value is read (generic by kind if '-')
#  scope:   cli, srv or both (which programs accept it)
#  neutral: a value that needs no note (e.g. the default), '-' for none
#  text:    help text (works/note/lib) or the reason printed (error/warning)
STATUS = r"""
--output | works | cli | path | @OUT | output_path | - | cli | - | PATH | output file, .png or .jpg/.jpeg (default: output.png; output.gguf for convert); printf-style %d takes the image index
--image | works | cli | path | @PNG | image_path | - | cli | - | PATH | image to read with -M metadata
--metadata-format | works | cli | name | json | metadata_format | CHOICE:text,json | cli | - | FORMAT | -M metadata output: text or json (default: text)
--preview-path | note | cli | path | @TMP/preview.png | preview_path | - | cli | - | PATH | where --preview writes the preview image (default: preview.png)
--imat-out | works | cli | path | @TMP/imat.dat | imat_out | - | cli | - | PATH | collect an importance matrix during generation and save it here
--preview-interval | note | cli | int | 2 | gen.preview_interval | - | cli | - | N | steps between preview updates (default: 1)
--output-begin-idx | works | cli | int | 3 | output_begin_idx | - | cli | - | N | first index of an image sequence (default: 0)
--canny | warning | cli | none | - | - | - | cli | - | - | the Canny preprocessor applies to --control-image (ControlNet), which is not supported yet; ignored
--convert-name | note | cli | none | - | convert_name | - | cli | - | - | convert tensor names (convert mode; MiniT2I and T5 files already use sd.cpp's names)
--verbose | works | cli | none | - | verbose | - | both | - | - | print extra information
--color | works | cli | none | - | color | - | cli | - | - | colour the warning/error tags of log lines
--taesd-preview-only | lib | library | none | - | ctx.taesd_preview_only | - | cli | - | - | with --taesd: TAESD draws only the previews, the VAE decodes the image
--preview-noisy | warning | cli | none | - | - | - | cli | - | - | previews of the noisy input are not supported yet (previews show the current state); ignored
--metadata-raw | warning | cli | none | - | - | - | cli | - | - | -M metadata prints only the parameters text so far; ignored
--metadata-brief | warning | cli | none | - | - | - | cli | - | - | -M metadata prints only the parameters text so far; ignored
--metadata-all | warning | cli | none | - | - | - | cli | - | - | -M metadata prints only the parameters text so far; ignored
--mode | works | cli | name | img_gen | - | MODE | cli | - | MODE | img_gen, convert, upscale (-i through --upscale-model) or metadata (vid_gen and adetailer: not supported yet)
--preview | note | cli | name | proj | preview_method | CHOICE:none,proj,tae,vae | cli | none | METHOD | write a preview while sampling: none, proj, tae or vae (the library picks the cheapest decode the model allows)
--help | works | cli | none | - | - | HELP | both | - | - | show this help and exit
--imat-in | works | cli | path | @IMAT | - | IMAT_IN | cli | - | PATH | load an importance matrix (repeatable; merged)
--model | works | cli | path | @MODEL | ctx.model_path | - | both | - | PATH | full model checkpoint (tensor names as stored)
--clip_l | lib | library | path | @T5 | ctx.clip_l_path | - | both | - | PATH | CLIP-L text encoder
--clip_g | lib | library | path | @T5 | ctx.clip_g_path | - | both | - | PATH | CLIP-G text encoder
--clip_vision | lib | library | path | @T5 | ctx.clip_vision_path | - | both | - | PATH | CLIP vision encoder
--t5xxl | works | cli | path | @T5 | ctx.t5xxl_path | - | both | - | PATH | T5 text encoder
--llm | lib | library | path | @T5 | ctx.llm_path | - | both | - | PATH | LLM text encoder (Qwen2.5-VL for Qwen-Image, ...)
--llm_vision | lib | library | path | @T5 | ctx.llm_vision_path | - | both | - | PATH | the LLM's vision tower
--qwen2vl | lib | library | path | @T5 | ctx.llm_path | - | both | - | PATH | old name of --llm
--qwen2vl_vision | lib | library | path | @T5 | ctx.llm_vision_path | - | both | - | PATH | old name of --llm_vision
--diffusion-model | works | cli | path | @DIT | ctx.diffusion_model_path | - | both | - | PATH | standalone diffusion model
--high-noise-diffusion-model | error | cli | path | @DIT | - | - | both | - | PATH | Wan2.2 high-noise models (MoE) are not supported yet
--uncond-diffusion-model | error | cli | path | @DIT | - | - | both | - | PATH | a separate unconditional diffusion model (Ideogram) is not supported yet
--embeddings-connectors | error | cli | path | @T5 | - | - | both | - | PATH | LTX-AV embeddings connectors are not supported yet
--vae | lib | library | path | @T5 | ctx.vae_path | - | both | - | PATH | standalone VAE
--vae-format | error | cli | name | flux | - | CHOICE:auto,flux,sd3,flux2,wan | both | auto | FORMAT | VAE latent format overrides are not supported yet (only auto)
--audio-vae | error | cli | path | @T5 | - | - | both | - | PATH | audio VAEs (LTX) are not supported yet
--taesd | lib | library | path | @T5 | ctx.taesd_path | - | both | - | PATH | tiny autoencoder (TAESD) for fast decoding
--tae | lib | library | path | @T5 | ctx.taesd_path | - | both | - | PATH | same as --taesd
--control-net | lib | library | path | @T5 | ctx.control_net_path | - | both | - | PATH | ControlNet model
--ip-adapter | error | cli | path | @T5 | - | - | both | - | PATH | IP-Adapter is not supported yet
--motion-module | error | cli | path | @T5 | - | - | both | - | PATH | AnimateDiff motion modules are not supported yet
--embd-dir | lib | library | dir | @DIR | ctx.embeddings_dir | - | both | - | DIR | folder of textual-inversion embeddings
--lora-model-dir | lib | library | dir | @DIR | ctx.lora_model_dir | - | both | - | DIR | folder of LoRAs named by <lora:name:weight> in the prompt
--hires-upscalers-dir | works | cli | dir | @DIR | gen.hires_upscalers_dir | - | both | - | DIR | folder of hires upscaler models (ESRGAN), named by --hires-upscaler without extension
--tensor-type-rules | works | cli | list | ^t5=f16 | ctx.tensor_type_rules | JOIN | both | - | RULES | weight type per tensor-name pattern, e.g. "^vae\.=f16,model\.=q8_0" (repeats are joined with ',')
--model-args | lib | library | list | chroma_use_dit_mask=false | ctx.model_args | JOIN | both | - | LIST | extra model arguments, key=value list: qwen_image_zero_cond_t (Qwen-Image-Edit 2511 files without the marker tensor); chroma_use_dit_mask, chroma_use_t5_mask, chroma_t5_mask_pad are checked and ignored (Chroma is not loaded)
--photo-maker | error | cli | path | @T5 | - | - | both | - | PATH | PhotoMaker is not supported yet
--pulid-weights | error | cli | path | @T5 | - | - | both | - | PATH | PuLID is not supported yet
--upscale-model | works | cli | path | @ESRGAN | ctx.upscale_model_path | - | cli | - | PATH | ESRGAN upscaler (RealESRGAN_x4plus, anime 6B, x2/x1 models) run on each generated image before it is saved, or on -i with -M upscale
--backend | lib | library | list | cpu | ctx.backend | JOIN | both | - | SPEC | device per module, e.g. cpu or te=cpu0,diffusion=cpu1 (repeats are joined with ',')
--params-backend | lib | library | list | diffusion=cpu | ctx.params_backend | JOIN | both | - | SPEC | where each module's weights live between phases: MODULE=cpu or disk (joined with ',')
--split-mode | lib | library | list | layer | ctx.split_mode | JOIN | both | - | MODE | layer or row split of a module spread over several devices (a&b), or per module: diffusion=row,te=layer
--rpc-servers | warning | cli | list | localhost:50052 | - | JOIN | both | - | LIST | RPC offloading is not supported; ignored
--max-vram | lib | library | string | cpu=4 | ctx.max_vram | - | both | - | GIB | memory budget in GiB, one value or DEV=GiB,...
--threads | works | cli | int | 2 | ctx.n_threads | - | both | - | N | threads; <= 0: all physical cores (default: -1)
--stream-layers | warning | cli | none | - | - | - | both | - | - | layer streaming is not supported yet; ignored
--eager-load | warning | cli | none | - | - | - | both | - | - | sdc loads each module's weights when its phase needs them; ignored
--auto-fit | lib | library | none | - | ctx.auto_fit | - | both | - | - | place te, diffusion and vae from the weight sizes and the --max-vram budgets (--backend and --params-backend are then ignored)
--force-sdxl-vae-conv-scale | warning | cli | none | - | - | - | both | - | - | applies to SDXL VAEs only, which are not supported yet; ignored
--offload-to-cpu | lib | library | none | - | ctx.offload_to_cpu | - | both | - | - | keep weights in RAM and move them to the device when needed
--mmap | warning | cli | none | - | - | - | both | - | - | sdc always memory-maps weight files; ignored
--control-net-cpu | warning | cli | none | - | - | - | both | - | - | ControlNet is not supported yet; ignored (use --backend controlnet=cpu later)
--clip-on-cpu | lib | library | none | - | ctx.clip_on_cpu | - | both | - | - | run the text encoders on the CPU (same as --backend te=cpu)
--vae-on-cpu | lib | library | none | - | ctx.vae_on_cpu | - | both | - | - | run the VAE on the CPU (same as --backend vae=cpu)
--fa | warning | cli | none | - | - | - | both | - | - | attention in sdc is always the fused (flash) kind; ignored
--diffusion-fa | lib | library | none | - | ctx.diffusion_flash_attn | - | both | - | - | flash attention in the diffusion model (a hint: always fused in sdc)
--diffusion-conv-direct | warning | cli | none | - | - | - | both | - | - | sdc picks its convolution method itself; ignored
--vae-conv-direct | warning | cli | none | - | - | - | both | - | - | sdc picks its convolution method itself; ignored
--type | works | cli | name | f16 | - | TYPE | both | - | TYPE | convert weights on load: TYPES (default: as stored)
--rng | works | cli | name | cpu | gen.rng | CHOICE:std_default,cuda,cpu | both | - | RNG | noise generator: std_default, cuda or cpu (default: cuda)
--sampler-rng | works | cli | name | cpu | gen.sampler_rng | CHOICE:std_default,cuda,cpu | both | - | RNG | sampler noise generator (default: as --rng)
--prediction | lib | library | name | eps | ctx.prediction | CHOICE:eps,v,edm_v,sd3_flow,flux_flow,sefi_flow | both | - | TYPE | prediction type override: eps, v, edm_v, sd3_flow, flux_flow or sefi_flow
--lora-apply-mode | lib | library | name | auto | ctx.lora_apply_mode | CHOICE:auto,immediately,at_runtime | both | - | MODE | how LoRAs apply: merged into the weights (immediately), as extra low-rank products (at_runtime), or auto (at_runtime when the weights are quantised)
--list-devices | works | cli | none | - | list_devices | - | both | - | - | list devices (name<TAB>description) and exit
--prompt | works | cli | string | a cat | gen.prompt | - | both | - | TEXT | the prompt (default: "")
--negative-prompt | works | cli | string | blurry | gen.negative_prompt | - | both | - | TEXT | the negative prompt (default: "")
--ad-model | error | cli | path | @T5 | - | - | cli | - | PATH | ADetailer is not supported yet
--ad-prompt | warning | cli | string | a face | - | - | cli | - | TEXT | applies to ADetailer (--ad-model), which is not supported yet; ignored
--ad-negative-prompt | warning | cli | string | blurry | - | - | cli | - | TEXT | applies to ADetailer (--ad-model), which is not supported yet; ignored
--extra-ad-args | warning | cli | list | confidence=0.3 | - | JOIN | cli | - | LIST | applies to ADetailer (--ad-model), which is not supported yet; ignored
--init-img | works | cli | path | @PNG | init_img_path | - | cli | - | PATH | img2img: start from this PNG or JPEG (resized to -W/-H when they are given, else it sets them)
--end-img | error | cli | path | @PNG | - | - | cli | - | PATH | end images (first/last-frame video) are not supported yet
--mask | works | cli | path | @PNG | mask_path | - | cli | - | PATH | inpainting mask PNG or JPEG: white regenerates, black keeps
--control-image | error | cli | path | @PNG | - | - | both | - | PATH | ControlNet is not supported yet
--ip-adapter-image | error | cli | path | @PNG | - | - | both | - | PATH | IP-Adapter is not supported yet
--control-video | error | cli | dir | @DIR | - | - | both | - | DIR | control videos are not supported yet
--pm-id-images-dir | error | cli | dir | @DIR | - | - | both | - | DIR | PhotoMaker is not supported yet
--pm-id-embed-path | error | cli | path | @T5 | - | - | both | - | PATH | PhotoMaker is not supported yet
--pulid-id-embedding | error | cli | path | @T5 | - | - | both | - | PATH | PuLID is not supported yet
--hires-upscaler | works | cli | string | Latent | gen.hires_upscaler | - | both | - | NAME | hires upscaler: Latent, Latent (nearest), Latent (nearest-exact), Latent (antialiased), Latent (bicubic), Latent (bicubic antialiased), Lanczos, Nearest, None, or a model name in --hires-upscalers-dir (default: Latent)
--extra-sample-args | error | cli | list | eta_noise=1 | - | JOIN | both | - | LIST | extra sampler/scheduler arguments are not supported yet
--extra-tiling-args | warning | cli | list | temporal_tile_frames=4 | - | JOIN | both | - | LIST | VAE tiling arguments are not supported yet; ignored
--ref-image-args | lib | library | list | resize_before_vae=0 | gen.ref_image_args | JOIN | both | - | LIST | reference-image preset and overrides, e.g. "preset=qwen,ref_index_mode=fixed,vlm_size=448" (Qwen-Image Edit / Layered; sd.cpp's keys, docs/qwen_image.md; repeats are joined with ',')
--height | works | cli | int | 64 | gen.height | HEIGHT | both | - | N | image height in pixels, a multiple of 8 (default: 512, or the -i image's)
--width | works | cli | int | 64 | gen.width | WIDTH | both | - | N | image width in pixels, a multiple of 8 (default: 512, or the -i image's)
--steps | works | cli | int | 2 | gen.steps | - | both | - | N | sampling steps (default: 20)
--high-noise-steps | warning | cli | int | 4 | - | - | both | -1 | N | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--clip-skip | lib | library | int | 2 | gen.clip_skip | - | cli | -1 | N | CLIP layers to skip at the end; <= 0: the model's default
--batch-count | works | cli | int | 2 | gen.batch_count | - | both | - | N | images to generate, seeds seed, seed+1, ... (default: 1)
--qwen-image-layers | lib | library | int | 2 | gen.qwen_image_layers | - | both | 3 | N | Qwen-Image-Layered: the layers to make from the -r image, giving layers + 1 RGBA images (default: 3)
--video-frames | warning | cli | int | 8 | - | - | both | 1 | N | video generation (-M vid_gen) is not supported yet; ignored
--fps | warning | cli | int | 24 | - | - | both | - | N | video generation (-M vid_gen) is not supported yet; ignored
--timestep-shift | error | cli | int | 250 | - | - | both | 0 | N | timestep shifts (NitroFusion) are not supported yet
--upscale-repeats | works | cli | int | 2 | upscale_repeats | - | cli | 1 | N | times the ESRGAN upscaler runs on each image (default: 1; 0: not at all)
--upscale-tile-size | works | cli | int | 256 | upscale_tile_size | - | cli | 128 | N | tile size of ESRGAN upscaling in input pixels; <= 0: the whole image at once (default: 128)
--hires-width | works | cli | int | 1024 | gen.hires_width | - | both | 0 | N | hires fix target width, 0 to use --hires-scale (default: 0)
--hires-height | works | cli | int | 1024 | gen.hires_height | - | both | 0 | N | hires fix target height, 0 to use --hires-scale (default: 0)
--hires-steps | works | cli | int | 10 | gen.hires_steps | - | both | 0 | N | second-pass steps of the hires fix, 0 to use --steps (default: 0)
--hires-upscale-tile-size | works | cli | int | 256 | gen.hires_upscale_tile_size | - | both | 128 | N | tile size of a hires model upscaler (default: 128)
--cfg-scale | works | cli | float | 6 | gen.cfg_scale | - | both | - | X | classifier-free guidance scale (default: 7.0)
--img-cfg-scale | lib | library | float | 1.5 | gen.img_cfg_scale | - | cli | - | X | image guidance scale of inpainting and InstructPix2Pix UNets and of Qwen-Image Edit / Layered with -r images (unset: 1, as sd.cpp's code; docs/sd.md, docs/qwen_image.md); refused by other models unless equal to --cfg-scale
--guidance | lib | library | float | 3.5 | gen.guidance | - | cli | - | X | distilled guidance of guidance-distilled models; LCM UNets with time_cond_proj: the w embedding of G - 1 (unset: left out, as sd.cpp); refused by other models
--slg-scale | error | cli | float | 2.5 | - | - | both | 0 | X | skip-layer guidance is not supported yet
--skip-layer-start | warning | cli | float | 0.05 | - | - | both | 0.01 | X | applies to skip-layer guidance (--slg-scale), which is not supported yet; ignored
--skip-layer-end | warning | cli | float | 0.3 | - | - | both | 0.2 | X | applies to skip-layer guidance (--slg-scale), which is not supported yet; ignored
--eta | works | cli | float | 0.5 | gen.eta | - | both | - | X | noise multiplier of samplers that have one (default: the sampler's)
--flow-shift | lib | library | float | 3 | ctx.flow_shift | - | both | - | X | shift of flow models (default: the model's)
--high-noise-cfg-scale | warning | cli | float | 7 | - | - | both | - | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-img-cfg-scale | warning | cli | float | 7 | - | - | both | - | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-guidance | warning | cli | float | 3.5 | - | - | both | - | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-slg-scale | warning | cli | float | 2.5 | - | - | both | 0 | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-skip-layer-start | warning | cli | float | 0.05 | - | - | both | 0.01 | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-skip-layer-end | warning | cli | float | 0.3 | - | - | both | 0.2 | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--high-noise-eta | warning | cli | float | 1 | - | - | both | - | X | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--strength | works | cli | float | 0.5 | gen.strength | STRENGTH | both | - | X | img2img: share of the schedule run, (0, 1] (default: 0.75)
--pm-style-strength | warning | cli | float | 20 | - | - | both | - | X | applies to PhotoMaker, which is not supported yet; ignored
--pulid-id-weight | warning | cli | float | 1 | - | - | both | - | X | applies to PuLID, which is not supported yet; ignored
--control-strength | warning | cli | float | 0.9 | - | - | both | - | X | applies to ControlNet, which is not supported yet; ignored
--ip-adapter-strength | warning | cli | float | 1 | - | - | both | - | X | applies to IP-Adapter, which is not supported yet; ignored
--moe-boundary | warning | cli | float | 0.875 | - | - | both | - | X | applies to Wan2.2 MoE models, which are not supported yet; ignored
--vace-strength | warning | cli | float | 1 | - | - | both | - | X | applies to Wan VACE, which is not supported yet; ignored
--vae-tile-overlap | lib | library | float | 0.5 | ctx.vae_tile_overlap | - | both | - | X | overlap of neighbouring VAE tiles, as a fraction of a tile (default 0.5)
--hires-scale | works | cli | float | 2 | gen.hires_scale | - | both | - | X | hires fix scale when no target width/height is set (default: 2)
--hires-denoising-strength | works | cli | float | 0.7 | gen.hires_denoising_strength | - | both | - | X | hires fix second-pass strength, (0, 1] (default: 0.7)
--increase-ref-index | lib | library | none | - | increase_ref_index | - | both | - | - | adds ref_index_mode=increase to --ref-image-args (the -r images at RoPE indices 1, 2, 3, ...)
--disable-auto-resize-ref-image | lib | library | none | - | no_auto_resize_ref | - | both | - | - | deprecated in sd-cli: adds resize_before_vae=0 to --ref-image-args (the -r images are encoded at their own size)
--circular | error | cli | none | - | - | - | both | - | - | tileable (circular padding) output is not supported yet
--circularx | error | cli | none | - | - | - | both | - | - | tileable (circular padding) output is not supported yet
--circulary | error | cli | none | - | - | - | both | - | - | tileable (circular padding) output is not supported yet
--disable-image-metadata | works | cli | none | - | no_metadata | - | cli | - | - | do not store the generation parameters in the image
--vae-tiling | lib | library | none | - | ctx.vae_tiling | - | both | - | - | decode with the VAE in tiles (less memory)
--temporal-tiling | warning | cli | none | - | - | - | both | - | - | applies to video VAEs, which are not supported yet; ignored
--hires | works | cli | none | - | gen.hires | - | both | - | - | hires fix: generate at -W x -H, upscale, then refine at the hires size (docs/cli.md)
--seed | works | cli | seed | 7 | gen.seed | - | both | - | N | RNG seed; < 0 picks a random one (default: 42)
--sampling-method | works | cli | name | euler | gen.sampling_method | SAMPLER | both | - | NAME | SAMPLERS (default: the model's)
--high-noise-sampling-method | warning | cli | name | euler | - | SAMPLER | both | - | NAME | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--scheduler | works | cli | name | discrete | gen.scheduler | SCHEDULER | both | - | NAME | SCHEDULERS; normal = discrete (default: the model's)
--sigmas | works | cli | list | 1,0.5,0 | - | SIGMAS | cli | - | LIST | custom noise schedule, comma-separated, e.g. "1,0.5,0" (sets the steps)
--hires-sigmas | works | cli | list | 0.8,0.4,0 | - | SIGMAS | both | - | LIST | custom sigmas of the hires fix's second pass, comma-separated
--skip-layers | warning | cli | list | [7,8,9] | - | SKIP_LAYERS | both | - | LIST | applies to skip-layer guidance (--slg-scale), which is not supported yet; ignored
--high-noise-skip-layers | warning | cli | list | [7,8,9] | - | SKIP_LAYERS | both | - | LIST | applies to --high-noise-diffusion-model, which is not supported yet; ignored
--ref-image | lib | cli | path | @PNG | - | REF_IMAGE | both | - | PATH | reference image, repeatable (Qwen-Image-Layered: the image to split into layers; other models: not supported yet)
--ref-video | error | cli | dir | @DIR | - | REPEAT | both | - | DIR | reference videos are not supported yet
--ref-video-audio | error | cli | path | @PNG | - | REPEAT | both | - | PATH | reference audio is not supported yet
--ref-audio | error | cli | path | @PNG | - | REPEAT | both | - | PATH | reference audio is not supported yet
--cache-mode | error | cli | name | easycache | - | CHOICE:easycache,ucache,dbcache,taylorseer,cache-dit,spectrum | both | - | MODE | step caching is not supported yet
--cache-option | warning | cli | string | threshold=0.25 | - | - | both | - | LIST | applies to --cache-mode, which is not supported yet; ignored
--scm-mask | warning | cli | string | 1,1,0 | - | - | both | - | LIST | applies to --cache-mode, which is not supported yet; ignored
--scm-policy | warning | cli | name | dynamic | - | CHOICE:dynamic,static | both | - | POLICY | applies to --cache-mode, which is not supported yet; ignored
--vae-tile-size | lib | library | sizes | 32x32 | ctx.vae_tile_size | TILE_SIZE | both | - | XxY | VAE tile size in latent cells (default 32x32)
--vae-relative-tile-size | lib | library | sizes | 0.5x0.5 | ctx.vae_relative_tile_size | TILE_SIZE | both | - | XxY | VAE tile size as a fraction of the latent (or in cells when > 1); overrides --vae-tile-size
--prompt-file | works | cli | path | @TXT | gen.prompt | PROMPT_FILE | both | - | PATH | read the prompt from this file
--negative-prompt-file | works | cli | path | @TXT | gen.negative_prompt | NEG_PROMPT_FILE | both | - | PATH | read the negative prompt from this file
@own --clip-tokenizer | works | cli | path | @TOK | ctx.clip_tokenizer_path | - | both | - | PATH | CLIP tokenizer (vocab.json, merges.txt, tokenizer.json or bpe_simple_vocab_16e6.txt.gz; default: found next to the model)
@own --t5-tokenizer | works | cli | path | @TOK | ctx.t5_tokenizer_path | - | both | - | PATH | T5 tokenizer (tokenizer.json or spiece.model; default: found next to the T5)
@own --llm-tokenizer | works | cli | path | @TOK | ctx.llm_tokenizer_path | - | both | - | PATH | Qwen2 tokenizer for --llm (tokenizer.json, vocab.json, merges.txt or their folder; default: embedded in the LLM GGUF, else found next to it)
@own --cpu-devices | works | library | int | 2 | cpu_devices | CPU_DEVICES | both | - | N | split the CPU into N devices cpu0..cpuN-1 (for placement and splits)
@own --version | works | cli | none | - | - | VERSION | both | - | - | print the version and exit
"""

# sdc's short spellings are sd-cli's; the table only needs the long name.


def read_sources(gitdir, commit):
    out = {}
    for f in FILES:
        out[f] = subprocess.run(["git", "-C", gitdir, "show", f"{commit}:{f}"], check=True,
                                capture_output=True, text=True).stdout
    return out


def extract(src):
    """(group, kind, short, long, concat) for every option entry of every get_options()."""
    flags = []
    owners = [(m.start(), m.group(1) or "SDCliParams") for m in
              re.finditer(r"ArgOptions\s+(?:(\w+)::)?get_options", src)]
    for m in re.finditer(r"options\.(\w+)_options\s*=\s*\{", src):
        kind = m.group(1)
        i, depth = m.end(), 1
        while depth:
            c = src[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            elif c == '"':
                i += 1
                while src[i] != '"':
                    i += 2 if src[i] == "\\" else 1
            i += 1
        block = src[m.end():i]
        owner = [o for p, o in owners if p < m.start()][-1]
        for e in re.finditer(r'\{\s*"(-?[^"]*)"\s*,\s*"(--[^"]*)"\s*,((?:[^"{}]|"(?:[^"\\]|\\.)*")*)',
                             block):
            concat = "(int)','" in e.group(3) and kind == "string"
            flags.append((owner, kind, e.group(1), e.group(2), concat))
    return flags


def parse_status():
    rows = {}
    for line in STATUS.strip().splitlines():
        own = line.startswith("@own ")
        if own:
            line = line[5:]
        cols = [c.strip() for c in line.split(" | ")]
        assert len(cols) == 11, line
        rows[cols[0]] = dict(zip(["long", "status", "decided", "value", "test", "target",
                                  "special", "scope", "neutral", "vname", "text"], cols), own=own)
    return rows


GROUP = {"SDCliParams": "cli", "SDContextParams": "context", "SDGenerationParams": "generation"}
KIND = {"string": "K_STR", "int": "K_INT", "float": "K_FLOAT", "bool": "K_BOOL"}
ST = {"works": "ST_WORKS", "note": "ST_NOTE", "lib": "ST_LIB", "error": "ST_ERROR",
      "warning": "ST_WARN"}
SCOPE = {"cli": "P_CLI", "srv": "P_SRV", "both": "P_CLI | P_SRV"}


def c_str(s):
    return "NULL" if s in ("-", None, "") else '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main():
    gitdir = sys.argv[1]
    commit = sys.argv[2] if len(sys.argv) > 2 else "HEAD"
    full = subprocess.run(["git", "-C", gitdir, "rev-parse", commit], check=True,
                          capture_output=True, text=True).stdout.strip()
    srcs = read_sources(gitdir, full)
    flags = []
    for f in FILES:
        flags += [(f,) + x for x in extract(srcs[f])]
    status = parse_status()
    longs = [x[4] for x in flags]
    missing = [l for l in longs if l not in status]
    extra = [l for l, r in status.items() if not r["own"] and l not in longs]
    if missing or extra or len(set(longs)) != len(longs):
        sys.exit(f"unclassified: {missing}; not in sd-cli: {extra}")

    tsv = [f"# sd-cli's flags, from leejet/stable-diffusion.cpp commit {full}",
           f"# files: {', '.join(FILES)} (every options.*_options entry of each get_options())",
           f"# {len(flags)} flags ({sum(1 for x in flags if x[3])} with a short spelling); "
           "sdc's own flags follow with sdcli_kind 'own'",
           "# status: works | note (works, see docs) | lib (passed to the library, which decides "
           "per model) | error (not yet: refused) | warning (a hint: accepted and ignored)",
           "# expect_minit2i: what sdc answers for this flag with the golden MiniT2I on CPU "
           "(ok, error, warning)",
           "# quiet_value: a value that needs no answer (the default), '-' if every value gets one",
           "# test values: @DIT @T5 @MODEL @PNG @DIR @TXT @TOK @IMAT @OUT @TMP stand for files "
           "the tests make or take from the golden MiniT2I",
           "\t".join(["long", "short", "group", "sdcli_kind", "joined", "value", "test_value",
                      "quiet_value", "status", "decided_by", "expect_minit2i", "scope", "note"])]

    def expect(r):
        if r["status"] in ("works", "note"):
            return "ok"
        if r["status"] in ("error", "warning"):
            return r["status"]
        return LIB_EXPECT[r["long"]]

    rows = [(f, g, k, s, l, c) for (f, g, k, s, l, c) in flags]
    for f, g, k, s, l, c in rows:
        r = status[l]
        tsv.append("\t".join([l, s or "-", GROUP[g], k, "," if c else "-", r["value"],
                              r["test"], r["neutral"], r["status"], r["decided"], expect(r), r["scope"],
                              r["text"]]))
    for l, r in status.items():
        if r["own"]:
            tsv.append("\t".join([l, "-", "own", "own", "-", r["value"], r["test"], r["neutral"],
                                  r["status"],
                                  r["decided"], expect(r), r["scope"], r["text"]]))
    with open(os.path.join(ROOT, "tests/data/sdcli_flags.tsv"), "w") as fp:
        fp.write("\n".join(tsv) + "\n")

    c = ["/* Generated by tests/data/gen_sdcli_flags.py from sd-cli's sources (stable-diffusion.cpp",
         f" * {full[:12]}) and sdc's status of each flag; edit the STATUS table there. */",
         '#include "flag_table.h"', "", "#include <stddef.h>", "",
         "#define T(field) offsetof(sdc_cli_args, field)", "#define NONE SDC_CLI_NO_TARGET", "",
         "const sdc_cli_opt sdc_cli_opts[] = {"]
    seen_short = {}
    for f, g, k, s, l, cc in rows + [(None, "own", None, None, l, False)
                                      for l, r in status.items() if r["own"]]:
        r = status[l]
        special = r["special"]
        choices = "NULL"
        if special.startswith("CHOICE:"):
            choices = c_str(special[7:])
            special = "CHOICE"
        if special == "-":
            special = "JOIN" if cc else "NONE"
        if special == "JOIN" and not cc:
            sys.exit(f"{l}: JOIN but sd-cli does not join it")
        kind = KIND.get(k, "K_STR") if k else ("K_BOOL" if r["value"] == "none" else
                                               "K_INT" if r["value"] == "int" else "K_STR")
        if r["value"] == "seed":
            kind = "K_I64"
        if k == "bool" or r["value"] == "none":
            kind = "K_BOOL"
        target = "NONE" if r["target"] == "-" else f"T({r['target']})"
        group = "G_OWN" if g == "own" else "G_" + GROUP[g].upper()
        c.append(f"    {{{c_str(s)}, {c_str(l)}, {kind}, O_{special}, {target}, {ST[r['status']]}, "
                 f"{SCOPE[r['scope']]}, {group}, {choices}, {c_str(r['neutral'])}, "
                 f"{c_str(r['vname'])}, {c_str(r['text'])}}},")
    c += ["};", "", "const int sdc_cli_opt_count = (int)(sizeof sdc_cli_opts / sizeof sdc_cli_opts[0]);",
          ""]
    write_docs(rows, status, expect, full)
    out = os.path.join(ROOT, "tools/common/flag_table.c")
    with open(out, "w") as fp:
        fp.write("\n".join(c))
    subprocess.run(["clang-format", "-i", out], check=False)
    print(f"{len(flags)} sd-cli flags, {sum(1 for r in status.values() if r['own'])} own")


DOC_STATUS = {"works": "works", "note": "works (see note)", "lib": "library decides",
              "error": "**error**: not yet", "warning": "warning: ignored"}
SECTIONS = [("cli", "Program (sd-cli's CLI options)"), ("context", "Context (models, devices)"),
            ("generation", "Generation"), ("own", "sdc's own")]


def write_docs(rows, status, expect, commit):
    """The flag table of docs/cli.md, between its flags:begin / flags:end markers."""
    path = os.path.join(ROOT, "docs/cli.md")
    doc = open(path).read()
    begin, end = "<!-- flags:begin -->", "<!-- flags:end -->"
    if begin not in doc or end not in doc:
        return
    out = [begin, f"<!-- generated by tests/data/gen_sdcli_flags.py from sd.cpp {commit[:12]} -->"]
    entries = [(GROUP[g], s, l) for (f, g, k, s, l, c) in rows] + \
              [("own", None, l) for l, r in status.items() if r["own"]]
    out += ["", "| group | flags | works | library decides | error: not yet | warning: ignored |",
            "|---|---|---|---|---|---|"]
    for key, title in SECTIONS:
        sts = [status[l]["status"] for grp, _, l in entries if grp == key]
        out.append(f"| {title} | {len(sts)} | {sts.count('works') + sts.count('note')} | "
                   f"{sts.count('lib')} | {sts.count('error')} | {sts.count('warning')} |")
    for key, title in SECTIONS:
        out += ["", f"### {title}", "", "| flag | value | status | sdc |", "|---|---|---|---|"]
        for grp, short, l in entries:
            if grp != key:
                continue
            r = status[l]
            names = f"`{short}`, `{l}`" if short else f"`{l}`"
            val = "" if r["value"] == "none" else r["vname"]
            st = DOC_STATUS[r["status"]]
            text = r["text"].replace("|", "\\|")
            text = text.replace("TYPES", "a weight type (below)").replace(
                "SAMPLERS", "a sampler (below)").replace("SCHEDULERS", "a scheduler (below)")
            if r["status"] == "lib":
                text += f"; MiniT2I: {expect(r)}"
            if r["neutral"] != "-":
                text += f" (`{r['neutral']}` passes quietly)"
            if r["scope"] == "cli":
                text += " (sdc only)"
            out.append(f"| {names} | {val} | {st} | {text} |")
    out.append(end)
    a, b = doc.index(begin), doc.index(end) + len(end)
    with open(path, "w") as fp:
        fp.write(doc[:a] + "\n".join(out) + doc[b:])


# What the library is expected to answer on MiniT2I for the flags it decides.
LIB_EXPECT = {
    "--clip_l": "error", "--clip_g": "error", "--clip_vision": "error", "--llm": "error",
    "--llm_vision": "error", "--qwen2vl": "error", "--qwen2vl_vision": "error",
    "--vae": "error", "--taesd": "error", "--tae": "error", "--control-net": "error",
    "--upscale-model": "error", "--embd-dir": "warning", "--lora-model-dir": "warning", "--lora-apply-mode": "warning",
    "--backend": "ok", "--params-backend": "ok", "--max-vram": "ok", "--auto-fit": "ok",
    "--split-mode": "ok",
    "--offload-to-cpu": "warning", "--clip-on-cpu": "ok", "--vae-on-cpu": "warning",
    "--diffusion-fa": "warning", "--prediction": "error", "--clip-skip": "warning",
    "--img-cfg-scale": "error", "--guidance": "error", "--flow-shift": "warning",
    "--vae-tiling": "warning", "--vae-tile-size": "warning", "--vae-relative-tile-size": "warning",
    "--vae-tile-overlap": "warning", "--taesd-preview-only": "warning",
    "--qwen-image-layers": "ok", "--ref-image": "error", "--ref-image-args": "warning",
    "--disable-auto-resize-ref-image": "warning", "--increase-ref-index": "warning",
    "--model-args": "warning",
}

if __name__ == "__main__":
    main()
