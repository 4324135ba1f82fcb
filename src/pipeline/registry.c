/* The model registry (see registry.h). Detection facts come from sd.cpp
 * (model_loader.cpp get_sd_version, flux.hpp detect_from_weights, stable-diffusion.cpp
 * component setup, name_conversion.cpp prefixes), re-stated as data; where sd.cpp
 * needs a second encoder to call a UNet SDXL, we use the UNet's own adm input width
 * (label_emb), which a split --diffusion-model file has too. */
#include "pipeline/registry.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "io/model_loader.h"
#include "io/name_index.h"

/* ---- the table ----------------------------------------------------------------------- */

#define DIT "model.diffusion_model."

/* components */
#define C_DIT(what)                                                                                \
    { SDC_ROLE_DIFFUSION, DIT, NULL, true, what }
#define C_T5(req, what)                                                                            \
    { SDC_ROLE_T5XXL, "text_encoders.t5xxl.transformer.", NULL, req, what }
#define C_LLM(what)                                                                                \
    { SDC_ROLE_LLM, "text_encoders.llm.", NULL, true, what }
#define C_LLM_VISION(what)                                                                         \
    { SDC_ROLE_LLM_VISION, "text_encoders.llm.visual.", NULL, false, what }
#define C_CLIP_L_DIT(req)                                                                          \
    { SDC_ROLE_CLIP_L, "text_encoders.clip_l.transformer.", NULL, req, "CLIP ViT-L/14 text" }
#define C_CLIP_G_DIT(req)                                                                          \
    { SDC_ROLE_CLIP_G, "text_encoders.clip_g.transformer.", NULL, req, "OpenCLIP ViT-bigG/14 text" }
#define C_VAE(req, what)                                                                           \
    { SDC_ROLE_VAE, "first_stage_model.", NULL, req, what }
/* a VAE that split files give with --vae, which the context loads under "vae." (the family
 * looks there and under first_stage_model.) */
#define C_VAE_FILE(what)                                                                           \
    { SDC_ROLE_VAE, "first_stage_model.", "vae.", true, what }
#define C_TAESD                                                                                    \
    {                                                                                              \
        SDC_ROLE_TAESD, "tae.", NULL, false,                                                       \
            "tiny autoencoder (TAESD/TAEF/TAEHV), instead of the VAE"                              \
    }
#define C_CLIP_VISION(req)                                                                         \
    { SDC_ROLE_CLIP_VISION, "cond_stage_model.transformer.", NULL, req, "OpenCLIP ViT-H/14 vision" }
#define C_AUDIO_VAE(what)                                                                          \
    { SDC_ROLE_AUDIO_VAE, "", NULL, false, what }

/* rules: R(key) present; R_ANY(k1, k2) either; R_NOT(key) absent; R_NE(key, dim, v) shape */
#define R(k)                                                                                       \
    { {k, NULL, NULL}, false, -1, 0 }
#define R_ANY(a, b)                                                                                \
    { {a, b, NULL}, false, -1, 0 }
#define R_NOT(k)                                                                                   \
    { {k, NULL, NULL}, true, -1, 0 }
#define R_NOT2(a, b)                                                                               \
    { {a, b, NULL}, true, -1, 0 }
#define R_NE(k, d, v)                                                                              \
    { {k, NULL, NULL}, false, d, v }
#define R_NE2(a, b, d, v)                                                                          \
    { {a, b, NULL}, false, d, v }

/* COMPS(...) / RULES(...): the count and the array, so counts never go stale */
#define COMPS(...)                                                                                 \
    (int)(sizeof((sdc_component_desc[]){__VA_ARGS__}) / sizeof(sdc_component_desc)), {             \
        __VA_ARGS__                                                                                \
    }
#define RULES(...)                                                                                 \
    (int)(sizeof((sdc_detect_rule[]){__VA_ARGS__}) / sizeof(sdc_detect_rule)), {                   \
        __VA_ARGS__                                                                                \
    }

#define FLUX_KEY_ST DIT "double_blocks.0.img_attn.qkv.weight"
#define FLUX_KEY_HF DIT "single_transformer_blocks.0.attn.to_q.weight"
#define FLUX_IMG_IN DIT "img_in.weight"
#define FLUX_IMG_HF DIT "x_embedder.weight"
#define UNET_IN0    DIT "input_blocks.0.0.weight"
#define UNET_CTX    DIT "input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight"
#define SDXL_ADM    DIT "label_emb.0.0.weight"
/* distilled UNets (sd.cpp's tests): a level-1 context key every layout has, the middle
 * block's transformer, level 0's last up transformer (and its self-attention key), the second
 * transformer of output block 3 */
#define UNET_CTX_L1  DIT "input_blocks.4.1.transformer_blocks.0.attn2.to_k.weight"
#define UNET_MID1    DIT "middle_block.1.transformer_blocks.0.attn2.to_k.weight"
#define UNET_OUT71   DIT "output_blocks.7.1.transformer_blocks.0.attn2.to_k.weight"
#define UNET_OUT71K1 DIT "output_blocks.7.1.transformer_blocks.0.attn1.to_k.weight"
#define UNET_OUT311  DIT "output_blocks.3.1.transformer_blocks.1.attn2.to_k.weight"
#define QWEN_KEY     DIT "transformer_blocks.0.img_mod.1.weight"
#define WAN_KEY      DIT "blocks.0.cross_attn.norm_k.weight"
#define WAN_PATCH    DIT "patch_embedding.weight"
#define WAN_IMG_EMB0 DIT "img_emb.proj.0.weight"
#define WAN_IMG_EMB1 DIT "img_emb.proj.1.weight"

/* UNet text encoders: sd.cpp's internal names, and where original checkpoints keep them */
#define C_SD1_CLIP                                                                                 \
    { SDC_ROLE_CLIP_L, "cond_stage_model.transformer.", NULL, true, "CLIP ViT-L/14 text (768)" }
#define C_SD2_CLIP                                                                                 \
    {                                                                                              \
        SDC_ROLE_CLIP_L, "cond_stage_model.transformer.", "cond_stage_model.model.", true,         \
            "OpenCLIP ViT-H/14 text (1024)"                                                        \
    }
#define C_SDXL_CLIP_L                                                                              \
    {                                                                                              \
        SDC_ROLE_CLIP_L, "cond_stage_model.transformer.", "conditioner.embedders.0.transformer.",  \
            true, "CLIP ViT-L/14 text (768)"                                                       \
    }
#define C_SDXL_CLIP_G                                                                              \
    {                                                                                              \
        SDC_ROLE_CLIP_G, "cond_stage_model.1.transformer.", "conditioner.embedders.1.model.",      \
            true, "OpenCLIP ViT-bigG/14 text (1280)"                                               \
    }
#define C_SD_VAE    C_VAE(true, "AutoencoderKL, 4 latent channels")
#define C_FLUX_VAE  C_VAE(true, "Flux VAE (AutoencoderKL, 16 latent channels)")
#define C_FLUX2_VAE C_VAE(true, "Flux.2 VAE (32 latent channels)")
#define C_WAN_VAE   C_VAE(true, "Wan2.1 VAE (16 latent channels)")

#define LATENT SDC_FIRST_STAGE_VAE
#define PIXEL  SDC_FIRST_STAGE_NONE

/* Display names are sd.cpp's version strings (model_version_to_str) where it has one.
 * Most specific first: the first entry whose rules all hold wins. The order follows
 * sd.cpp's early returns, then its flagged families (Wan, SDXL, Flux.2, Flux, SD2/SD1). */
static const sdc_family_desc k_families[] = {
    {"PiD", "pid", SDC_FAMILY_PID, false, false, PIXEL, 0, 2048, 2048,
     "pixel-space diffusion decoder of a reference latent (-r); --vae-format names its VAE",
     COMPS(C_DIT("PiD decoder"), C_LLM("Gemma 2 2B"),
           C_VAE(true, "the VAE of the source latent (Flux, SD3, Flux.2 or Qwen-Image)")),
     RULES(R(DIT "net.lq_proj.latent_proj.0.weight"))},
    {"Ideogram 4", "ideogram4", SDC_FAMILY_IDEOGRAM4, false, false, LATENT, 32, 1024, 1024, NULL,
     COMPS(C_DIT("Ideogram4 transformer"),
           {SDC_ROLE_UNCOND_DIFFUSION, DIT "uncond.", NULL, false, "unconditional transformer"},
           C_LLM("Qwen3-VL 8B"), C_FLUX2_VAE),
     RULES(R("embed_image_indicator.weight"))},
    {"Krea2", "krea2", SDC_FAMILY_KREA2, false, false, LATENT, 16, 1024, 1024, NULL,
     COMPS(C_DIT("Krea2 transformer"), C_LLM("Qwen3-VL 4B"), C_WAN_VAE),
     RULES(R_ANY(DIT "txtfusion.projector.weight", DIT "text_fusion.projector.weight"))},
    {"Chroma Radiance", "chroma_radiance", SDC_FAMILY_FLUX, false, false, PIXEL, 0, 1024, 1024,
     "pixel-space Chroma (patch 16, NeRF head)",
     COMPS(C_DIT("Chroma Radiance transformer"), C_T5(true, "T5-XXL encoder")),
     RULES(R(DIT "nerf_final_layer_conv.conv.weight"))},
    {"SD3.x", "sd3", SDC_FAMILY_SD3, false, false, LATENT, 16, 1024, 1024,
     "SD3 Medium, SD3.5 Medium/Large/Large Turbo (MMDiT joint blocks)",
     COMPS(C_DIT("MMDiT"), C_CLIP_L_DIT(true), C_CLIP_G_DIT(true), C_T5(false, "T5-XXL encoder"),
           C_VAE(true, "SD3 VAE (AutoencoderKL, 16 latent channels)")),
     RULES(R(DIT "joint_blocks.0.x_block.attn.qkv.weight"))},
    {"HiDream O1", "hidream_o1", SDC_FAMILY_HIDREAM_O1, false, false, PIXEL, 0, 1024, 1024,
     "one -m checkpoint: pixel-space transformer and its own language model (model.*)",
     COMPS({SDC_ROLE_DIFFUSION, "model.", NULL, true,
            "HiDream-O1 (transformer and language model in one file, via -m)"}),
     RULES(R("model.x_embedder.proj1.weight"),
           R("model.language_model.layers.0.self_attn.q_proj.weight"))},
    {"Lens", "lens", SDC_FAMILY_LENS, false, false, LATENT, 32, 1024, 1024, "Lens, Lens Turbo",
     COMPS(C_DIT("Lens transformer"), C_LLM("GPT-OSS-20B"), C_FLUX2_VAE),
     RULES(R(DIT "transformer_blocks.0.attn.norm_added_q.weight"),
           R(DIT "transformer_blocks.0.img_mlp.w1.weight"))},
    {"MiniT2I", "minit2i", SDC_FAMILY_MINIT2I, true, false, PIXEL, 0, 512, 512,
     "pixel-space DiT; the file keeps its HF names (model.net.*)",
     COMPS(C_DIT("MiniT2I transformer (its own names: model.net.*)"),
           C_T5(true, "flan-T5 encoder")),
     RULES(R("net.img_embedder.proj1.weight"))},
    {"Mage Flow", "mage_flow", SDC_FAMILY_MAGE_FLOW, false, false, LATENT, 32, 1024, 1024,
     "Mage-Flow, Mage-Flow-Edit (Qwen-Image-like blocks, 128-wide img_in)",
     COMPS(C_DIT("Mage-Flow transformer"), C_LLM("Qwen3-VL"),
           C_LLM_VISION("Qwen3-VL vision (edit)"), C_VAE(true, "Mage VAE")),
     RULES(R(QWEN_KEY), R_NE(DIT "img_in.weight", 0, 128))},
    {"Qwen Image Layered", "qwen_image_layered", SDC_FAMILY_QWEN_IMAGE, true, false, LATENT, 16,
     1024, 1024, "RGBA layer decomposition of a reference image (-r)",
     COMPS(C_DIT("Qwen-Image MMDiT"), C_LLM("Qwen2.5-VL 7B (vision unused)"),
           C_VAE_FILE("Qwen-Image-Layered VAE (Wan2.1 layout, RGBA, 16 latent channels)")),
     RULES(R(QWEN_KEY), R(DIT "time_text_embed.addition_t_embedding.weight"))},
    {"Qwen Image", "qwen_image", SDC_FAMILY_QWEN_IMAGE, true, false, LATENT, 16, 1024, 1024,
     "Qwen-Image and Qwen-Image-Edit / 2509 / 2511: same tensors, not told apart by weights",
     COMPS(C_DIT("Qwen-Image MMDiT"), C_LLM("Qwen2.5-VL 7B"),
           C_LLM_VISION("Qwen2.5-VL vision (edit, when not in the --llm file)"),
           C_VAE_FILE("Qwen-Image VAE (Wan2.1 layout, 16 latent channels)")),
     RULES(R(QWEN_KEY))},
    {"Hunyuan Video", "hunyuan_video", SDC_FAMILY_HUNYUAN_VIDEO, false, true, LATENT, 32, 1280, 720,
     NULL,
     COMPS(C_DIT("HunyuanVideo 1.5 transformer"), C_LLM("Qwen2.5-VL 7B"),
           C_T5(false, "ByT5-small Glyph (glyph text)"), C_VAE(true, "HunyuanVideo 1.5 VAE")),
     RULES(R(DIT "txt_in.individual_token_refiner.blocks.0.adaLN_modulation.1.weight"))},
    {"Anima", "anima", SDC_FAMILY_ANIMA, false, false, LATENT, 16, 1024, 1024, NULL,
     COMPS(C_DIT("Anima transformer with LLM adapter"), C_LLM("Qwen3 0.6B"), C_WAN_VAE),
     RULES(R("llm_adapter.blocks.0.cross_attn.q_proj.weight"))},
    {"SeFi-Image", "sefi_image", SDC_FAMILY_SEFI_IMAGE, false, false, LATENT, 32, 1024, 1024,
     "Flux.2-style dual-time transformer (Base/RL/turbo, 1B/2B/5B)",
     COMPS(C_DIT("SeFi transformer"), C_LLM("Qwen3-VL 2B/4B"), C_FLUX2_VAE),
     RULES(R("dual_time_embed.semantic_embedder.linear_1.weight"))},
    {"Ovis Image", "ovis_image", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "Flux layout with gated (SwiGLU) MLPs",
     COMPS(C_DIT("Ovis-Image transformer"), C_LLM("Ovis 2.5 (Qwen3)"), C_FLUX_VAE),
     RULES(R(DIT "double_blocks.0.img_mlp.gate_proj.weight"))},
    {"Z-Image", "z_image", SDC_FAMILY_Z_IMAGE, false, false, LATENT, 16, 1024, 1024,
     "Z-Image, Z-Image-Turbo", COMPS(C_DIT("Z-Image transformer"), C_LLM("Qwen3 4B"), C_FLUX_VAE),
     RULES(R(DIT "cap_embedder.0.weight"))},
    {"Boogu Image", "boogu_image", SDC_FAMILY_BOOGU, false, false, LATENT, 16, 1024, 1024,
     "Boogu Image and Boogu Image Edit",
     COMPS(C_DIT("Boogu transformer"), C_LLM("Qwen3-VL"), C_LLM_VISION("Qwen3-VL vision (edit)"),
           C_FLUX_VAE),
     RULES(R("double_stream_layers.0.img_instruct_attn.processor.img_to_q.weight"))},
    {"Ernie Image", "ernie_image", SDC_FAMILY_ERNIE_IMAGE, false, false, LATENT, 32, 1024, 1024,
     "ERNIE-Image, ERNIE-Image Turbo",
     COMPS(C_DIT("ERNIE-Image transformer"), C_LLM("Ministral 3 3B"), C_FLUX2_VAE),
     RULES(R(DIT "layers.0.adaLN_sa_ln.weight"))},
    {"LTXAV", "ltx2", SDC_FAMILY_LTXAV, false, true, LATENT, 128, 1280, 720,
     "audio+video transformer",
     COMPS(C_DIT("LTX-2 audio-video transformer"), C_LLM("Gemma 3 12B"),
           {SDC_ROLE_EMBEDDINGS_CONNECTORS, "", NULL, true, "text embedding connectors"},
           C_VAE(true, "LTX-2 video VAE (128 latent channels)"), C_AUDIO_VAE("LTX-2 audio VAE")),
     RULES(R(DIT "adaln_single.emb.timestep_embedder.linear_1.bias"))},
    {"MiniMax-H3", "minimax_h3", SDC_FAMILY_MINIMAX_H3, false, true, LATENT, 0, 864, 480,
     "audio+video transformer",
     COMPS(C_DIT("MiniMax-H3 transformer"), C_LLM("Qwen3-VL"), C_LLM_VISION("Qwen3-VL vision"),
           C_VAE(true, "MiniMax-H3 video VAE"), C_AUDIO_VAE("MiniMax-H3 audio VAE")),
     RULES(R(DIT "video_patch_proj.weight"), R(DIT "audio_patch_proj.weight"))},
    {"LingBot Video", "lingbot_video", SDC_FAMILY_LINGBOT_VIDEO, false, true, LATENT, 16, 832, 480,
     "dense 1.3B and MoE 30B-A3B",
     COMPS(C_DIT("LingBot-Video transformer"), C_LLM("Qwen3-VL 4B"),
           C_LLM_VISION("Qwen3-VL vision (I2V prompt enhancer)"), C_WAN_VAE),
     RULES(R(DIT "patch_embedder.weight"))},
    {"SVD", "svd", SDC_FAMILY_SVD, false, true, LATENT, 4, 1024, 576,
     "Stable Video Diffusion (image to video UNet with time mixers)",
     COMPS(C_DIT("video UNet"),
           {SDC_ROLE_CLIP_VISION, "cond_stage_model.transformer.",
            "conditioner.embedders.0.open_clip.model.", true, "OpenCLIP ViT-H/14 vision"},
           C_VAE(true, "AutoencoderKL with temporal decoder, 4 latent channels")),
     RULES(R(DIT "input_blocks.8.0.time_mixer.mix_factor"))},
    {"Wan 2.2 I2V", "wan2_2_i2v", SDC_FAMILY_WAN, false, true, LATENT, 16, 832, 480,
     "36 input channels (noise + image latent + mask), no CLIP image embedding",
     COMPS(C_DIT("Wan low-noise expert"),
           {SDC_ROLE_HIGH_NOISE, "model.high_noise_diffusion_model.", NULL, false,
            "Wan high-noise expert"},
           C_T5(true, "umT5-XXL encoder"), C_WAN_VAE, C_TAESD),
     RULES(R(WAN_KEY), R_NE(WAN_PATCH, 3, 36 * 5120), R_NOT2(WAN_IMG_EMB0, WAN_IMG_EMB1))},
    {"Wan 2.2 TI2V", "wan2_2_ti2v", SDC_FAMILY_WAN, false, true, LATENT, 48, 1280, 704,
     "48-channel Wan2.2 VAE latent",
     COMPS(C_DIT("Wan2.2 TI2V transformer"), C_T5(true, "umT5-XXL encoder"),
           C_VAE(true, "Wan2.2 VAE (48 latent channels)"), C_TAESD),
     RULES(R(WAN_KEY), R_NE(WAN_PATCH, 3, 48 * 3072), R_NOT2(WAN_IMG_EMB0, WAN_IMG_EMB1))},
    {"Wan 2.1 I2V", "wan2_1_i2v", SDC_FAMILY_WAN, false, true, LATENT, 16, 832, 480,
     "image to video with a CLIP image embedding (img_emb)",
     COMPS(C_DIT("Wan2.1 I2V transformer"), C_T5(true, "umT5-XXL encoder"), C_CLIP_VISION(true),
           C_WAN_VAE, C_TAESD),
     RULES(R(WAN_KEY), R_ANY(WAN_IMG_EMB0, WAN_IMG_EMB1))},
    {"Wan 2.x", "wan", SDC_FAMILY_WAN, false, true, LATENT, 16, 832, 480,
     "Wan2.1 T2V 1.3B/14B, VACE, Wan2.2 T2V A14B (--high-noise-diffusion-model)",
     COMPS(C_DIT("Wan transformer"),
           {SDC_ROLE_HIGH_NOISE, "model.high_noise_diffusion_model.", NULL, false,
            "Wan2.2 A14B high-noise expert"},
           C_T5(true, "umT5-XXL encoder"), C_WAN_VAE, C_TAESD),
     RULES(R(WAN_KEY))},
    {"SDXL Refiner", "sdxl_refiner", SDC_FAMILY_SDXL, false, false, LATENT, 4, 1024, 1024,
     "adm input 2560, OpenCLIP bigG only (sd.cpp does not run it either)",
     COMPS(C_DIT("SDXL refiner UNet"),
           {SDC_ROLE_CLIP_G, "cond_stage_model.1.transformer.", "conditioner.embedders.0.model.",
            true, "OpenCLIP ViT-bigG/14 text (1280)"},
           C_SD_VAE),
     RULES(R_NE(SDXL_ADM, 0, 2560))},
    {"SDXL Inpaint", "sdxl_inpaint", SDC_FAMILY_SDXL, true, false, LATENT, 4, 1024, 1024,
     "9 input channels (latent + mask + masked image)",
     COMPS(C_DIT("SDXL UNet"), C_SDXL_CLIP_L, C_SDXL_CLIP_G, C_SD_VAE, C_TAESD),
     RULES(R_NE(SDXL_ADM, 0, 2816), R_NE(UNET_IN0, 2, 9))},
    {"SDXL (SSD1B)", "sdxl_ssd1b", SDC_FAMILY_SDXL, true, false, LATENT, 4, 1024, 1024,
     "SSD-1B: res-only middle block, transformer depths 2/4 down, 4,4,10 / 2,1,1 up",
     COMPS(C_DIT("SSD-1B UNet"), C_SDXL_CLIP_L, C_SDXL_CLIP_G, C_SD_VAE, C_TAESD),
     RULES(R_NE(SDXL_ADM, 0, 2816), R_NOT(UNET_MID1), R(UNET_OUT311))},
    {"SDXL (Vega)", "sdxl_vega", SDC_FAMILY_SDXL, true, false, LATENT, 4, 1024, 1024,
     "Segmind-Vega: res-only middle block, transformer depths 1/2",
     COMPS(C_DIT("Vega UNet"), C_SDXL_CLIP_L, C_SDXL_CLIP_G, C_SD_VAE, C_TAESD),
     RULES(R_NE(SDXL_ADM, 0, 2816), R_NOT(UNET_MID1))},
    {"SDXL", "sdxl", SDC_FAMILY_SDXL, true, false, LATENT, 4, 1024, 1024,
     "SDXL base, SDXL-Turbo (512, --cfg-scale 1 --steps 1), pix2pix (8 input channels), v-pred "
     "and CosXL (EDM-v)",
     COMPS(C_DIT("SDXL UNet"), C_SDXL_CLIP_L, C_SDXL_CLIP_G, C_SD_VAE, C_TAESD),
     RULES(R_NE(SDXL_ADM, 0, 2816))},
    {"Flux.2", "flux2", SDC_FAMILY_FLUX2, false, false, LATENT, 32, 1024, 1024, "48 single blocks",
     COMPS(C_DIT("Flux.2 transformer"), C_LLM("Mistral Small 3.2 24B"), C_FLUX2_VAE),
     RULES(R(DIT "double_stream_modulation_img.lin.weight"),
           R(DIT "single_blocks.47.linear1.weight"))},
    {"Flux.2 klein", "flux2_klein", SDC_FAMILY_FLUX2, false, false, LATENT, 32, 1024, 1024,
     "4B/9B, base and distilled; fewer than 48 single blocks",
     COMPS(C_DIT("Flux.2 klein transformer"), C_LLM("Qwen3 4B/8B"), C_FLUX2_VAE),
     RULES(R(DIT "double_stream_modulation_img.lin.weight"))},
    {"Longcat-Image", "longcat", SDC_FAMILY_LONGCAT, false, false, LATENT, 16, 1024, 1024,
     "Flux layout with a 3584-wide text input; LongCat-Image-Edit too",
     COMPS(C_DIT("LongCat transformer"), C_LLM("Qwen2.5-VL 7B"),
           C_LLM_VISION("Qwen2.5-VL vision (edit)"), C_FLUX_VAE),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF), R_NE(DIT "txt_in.weight", 0, 3584))},
    {"Chroma", "chroma", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "Flux layout with a distilled guidance approximator instead of time/vector/guidance inputs",
     COMPS(C_DIT("Chroma transformer"), C_T5(true, "T5-XXL encoder"), C_FLUX_VAE),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF), R("distilled_guidance_layer.in_proj.weight"))},
    {"Flux Fill", "flux_fill", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "384 input channels (latent + masked image + mask)",
     COMPS(C_DIT("Flux transformer"), C_CLIP_L_DIT(true), C_T5(true, "T5-XXL encoder"), C_FLUX_VAE),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF), R_NE2(FLUX_IMG_IN, FLUX_IMG_HF, 0, 384))},
    {"Flux Control", "flux_controls", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "Canny/Depth dev: 128 input channels (latent + control latent)",
     COMPS(C_DIT("Flux transformer"), C_CLIP_L_DIT(true), C_T5(true, "T5-XXL encoder"), C_FLUX_VAE),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF), R_NE2(FLUX_IMG_IN, FLUX_IMG_HF, 0, 128))},
    {"Flex.2", "flex2", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "196 input channels (latent + inpaint + control)",
     COMPS(C_DIT("Flex.2 transformer"), C_CLIP_L_DIT(true), C_T5(true, "T5-XXL encoder"),
           C_FLUX_VAE),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF), R_NE2(FLUX_IMG_IN, FLUX_IMG_HF, 0, 196))},
    {"Flux", "flux", SDC_FAMILY_FLUX, false, false, LATENT, 16, 1024, 1024,
     "dev (guidance_in), schnell (none), Kontext-dev (same tensors as dev: not told apart)",
     COMPS(C_DIT("Flux transformer"), C_CLIP_L_DIT(true), C_T5(true, "T5-XXL encoder"), C_FLUX_VAE,
           C_TAESD),
     RULES(R_ANY(FLUX_KEY_ST, FLUX_KEY_HF))},
    {"SD 2.x Inpaint", "sd2_inpaint", SDC_FAMILY_SD2, true, false, LATENT, 4, 512, 512,
     "9 input channels", COMPS(C_DIT("SD2 UNet"), C_SD2_CLIP, C_SD_VAE, C_TAESD),
     RULES(R_NE(UNET_CTX, 0, 1024), R_NE(UNET_IN0, 2, 9))},
    {"SDXS (09)", "sdxs09", SDC_FAMILY_SD2, false, false, LATENT, 4, 512, 512,
     "SDXS-512-0.9: tiny layout whose level-0 self-attention is keyed by the text context",
     COMPS(C_DIT("SDXS-09 UNet"), C_SD2_CLIP, C_SD_VAE, C_TAESD),
     RULES(R_NE(UNET_CTX_L1, 0, 1024), R_NOT(UNET_MID1), R_NE(UNET_OUT71K1, 0, 1024))},
    {"SD 2.x Tiny UNet", "sd2_tiny", SDC_FAMILY_SD2, true, false, LATENT, 4, 512, 512,
     "no middle block: BK-SDM-v2-Tiny/Small (1 res block per level down, 2 up)",
     COMPS(C_DIT("SD2 tiny UNet"), C_SD2_CLIP, C_SD_VAE, C_TAESD),
     RULES(R_NE(UNET_CTX_L1, 0, 1024), R_NOT(UNET_MID1))},
    {"SD 2.x", "sd2", SDC_FAMILY_SD2, true, false, LATENT, 4, 768, 768,
     "SD2.0/2.1 (512 eps, 768 v: v is found by probing the model, not by weights), SD-Turbo "
     "(512, --cfg-scale 1 --steps 1)",
     COMPS(C_DIT("SD2 UNet"), C_SD2_CLIP, C_SD_VAE, C_TAESD), RULES(R_NE(UNET_CTX, 0, 1024))},
    {"SD 1.x Inpaint", "sd1_inpaint", SDC_FAMILY_SD1, true, false, LATENT, 4, 512, 512,
     "9 input channels", COMPS(C_DIT("SD1 UNet"), C_SD1_CLIP, C_SD_VAE, C_TAESD),
     RULES(R_NE(UNET_CTX, 0, 768), R_NE(UNET_IN0, 2, 9))},
    {"SDXS (512-DS)", "sdxs512", SDC_FAMILY_SD1, true, false, LATENT, 4, 512, 512,
     "SDXS-512-DreamShaper: tiny layout without level-0 attention, one step at --cfg-scale 1 "
     "(sd.cpp decodes it with the tiny autoencoder: pass --taesd)",
     COMPS(C_DIT("SDXS UNet"), C_SD1_CLIP, C_VAE(false, "AutoencoderKL (or --taesd)"), C_TAESD),
     RULES(R_NE(UNET_CTX_L1, 0, 768), R_NOT(UNET_MID1), R_NOT(UNET_OUT71))},
    {"SD 1.x Tiny UNet", "sd1_tiny", SDC_FAMILY_SD1, true, false, LATENT, 4, 512, 512,
     "no middle block: BK-SDM-Tiny/Small, segmind tiny-sd/small-sd (1 res block down, 2 up)",
     COMPS(C_DIT("SD1 tiny UNet"), C_SD1_CLIP, C_SD_VAE, C_TAESD),
     RULES(R_NE(UNET_CTX_L1, 0, 768), R_NOT(UNET_MID1))},
    {"SD 1.x", "sd1", SDC_FAMILY_SD1, true, false, LATENT, 4, 512, 512,
     "SD1.4/1.5 and fine-tunes, pix2pix (8 input channels), LCM fine-tunes (--sampling-method "
     "lcm)",
     COMPS(C_DIT("SD1 UNet"), C_SD1_CLIP, C_SD_VAE, C_TAESD), RULES(R_NE(UNET_CTX, 0, 768))},
};

#define N_FAMILIES ((int)(sizeof k_families / sizeof k_families[0]))

/* ---- lookup -------------------------------------------------------------------------- */

static const char *const k_role_names[SDC_ROLE_COUNT] = {
    "diffusion-model",
    "high-noise-diffusion-model",
    "uncond-diffusion-model",
    "clip_l",
    "clip_g",
    "t5xxl",
    "llm",
    "llm_vision",
    "clip_vision",
    "vae",
    "taesd",
    "audio-vae",
    "embeddings-connectors",
};

const char *sdc_role_name(sdc_role r) {
    return ((int)r >= 0 && r < SDC_ROLE_COUNT) ? k_role_names[r] : "unknown";
}

int sdc_registry_count(void) {
    return N_FAMILIES;
}

const sdc_family_desc *sdc_registry_at(int i) {
    return i >= 0 && i < N_FAMILIES ? &k_families[i] : NULL;
}

/* The generic entry of a family is its last one: variants come before it. */
const sdc_family_desc *sdc_registry_find(sdc_model_family f) {
    for (int i = N_FAMILIES - 1; i >= 0; i--)
        if (k_families[i].family == f) return &k_families[i];
    return NULL;
}

const sdc_family_desc *sdc_registry_find_name(const char *name) {
    if (!name) return NULL;
    for (int i = 0; i < N_FAMILIES; i++)
        if (!strcasecmp(k_families[i].name, name) || !strcasecmp(k_families[i].id, name))
            return &k_families[i];
    return NULL;
}

const sdc_component_desc *sdc_family_component(const sdc_family_desc *d, sdc_role role) {
    if (!d) return NULL;
    for (int i = 0; i < d->n_components; i++)
        if (d->components[i].role == role) return &d->components[i];
    return NULL;
}

/* public enumerations (sdc.h) */
int sdc_family_count(void) {
    return N_FAMILIES;
}
const char *sdc_family_name(int index) {
    const sdc_family_desc *d = sdc_registry_at(index);
    return d ? d->name : NULL;
}
bool sdc_family_implemented(int index) {
    const sdc_family_desc *d = sdc_registry_at(index);
    return d && d->implemented;
}

/* ---- the name index ------------------------------------------------------------------ */

/* Every tensor name is copied once; each '.'-boundary suffix of it maps to the tensor
 * (the first tensor wins when two share a suffix). */
typedef struct suffix_index {
    sdc_name_index ix;
    char *names;      /* all names, NUL-separated */
    int64_t (*ne)[4]; /* per tensor */
    int n;
} suffix_index;

static void suffix_index_free(suffix_index *s) {
    sdc_name_index_free(&s->ix);
    free(s->names);
    free(s->ne);
    memset(s, 0, sizeof *s);
}

static void fold_dims(const sdc_tensor_desc *t, int64_t ne[4]) {
    for (int d = 0; d < 4; d++) ne[d] = t->ne[d] > 0 ? t->ne[d] : 1;
}

/* false: out of memory */
static bool suffix_index_build(suffix_index *s, sdc_tensor_iter_fn it, void *user) {
    memset(s, 0, sizeof *s);
    size_t len = 0, cap = 0, n_suffix = 0;
    int cap_t = 0;
    size_t *offs = NULL;
    sdc_tensor_desc t;
    for (int i = 0; it(user, i, &t); i++) {
        if (!t.name) continue;
        size_t l = strlen(t.name) + 1;
        if (len + l > cap) {
            size_t nc = cap ? cap * 2 : 1 << 16;
            while (nc < len + l) nc *= 2;
            char *p = realloc(s->names, nc);
            if (!p) goto oom;
            s->names = p;
            cap = nc;
        }
        if (s->n == cap_t) {
            int nc = cap_t ? cap_t * 2 : 1024;
            size_t *po = realloc(offs, (size_t)nc * sizeof *offs);
            if (!po) goto oom;
            offs = po;
            int64_t(*pn)[4] = realloc(s->ne, (size_t)nc * sizeof *pn);
            if (!pn) goto oom;
            s->ne = pn;
            cap_t = nc;
        }
        memcpy(s->names + len, t.name, l);
        offs[s->n] = len;
        fold_dims(&t, s->ne[s->n]);
        for (const char *c = t.name; *c; c++) n_suffix += *c == '.';
        n_suffix++;
        len += l;
        s->n++;
    }
    if (sdc_name_index_init(&s->ix, n_suffix ? n_suffix : 1) != 0) goto oom;
    for (int i = 0; i < s->n; i++) {
        const char *name = s->names + offs[i];
        for (const char *c = name; *c; c++) {
            if (c != name && c[-1] != '.') continue;
            if (sdc_name_index_insert(&s->ix, c, i) == -2) goto oom;
        }
    }
    free(offs);
    return true;
oom:
    free(offs);
    suffix_index_free(s);
    return false;
}

/* ---- detection ----------------------------------------------------------------------- */

static int rule_find(const suffix_index *s, const sdc_detect_rule *r) {
    for (int k = 0; k < SDC_RULE_MAX_KEYS && r->keys[k]; k++) {
        int i = sdc_name_index_find(&s->ix, r->keys[k]);
        if (i >= 0) return i;
    }
    return -1;
}

static bool rule_holds(const suffix_index *s, const sdc_detect_rule *r) {
    int i = rule_find(s, r);
    if (r->absent) return i < 0;
    if (i < 0) return false;
    return r->dim < 0 || (r->dim < 4 && s->ne[i][r->dim] == r->value);
}

static bool family_matches(const suffix_index *s, const sdc_family_desc *d) {
    for (int r = 0; r < d->n_rules; r++)
        if (!rule_holds(s, &d->rules[r])) return false;
    return true;
}

typedef struct sbuf {
    char *p;
    size_t size, len;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) SDC_PRINTF(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...) {
    if (!b->p || b->size == 0 || b->len + 1 >= b->size) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->size - b->len, fmt, ap);
    va_end(ap);
    if (n > 0) b->len = b->len + (size_t)n < b->size ? b->len + (size_t)n : b->size - 1;
}

/* "Name (key1 ne[0]=768 + key2 + no key3)" for each family */
static void describe_rules(sbuf *b) {
    sb_add(b, "no known model family: looked for");
    for (int f = 0; f < N_FAMILIES; f++) {
        const sdc_family_desc *d = &k_families[f];
        sb_add(b, "%s %s (", f ? ";" : "", d->name);
        for (int r = 0; r < d->n_rules; r++) {
            const sdc_detect_rule *ru = &d->rules[r];
            sb_add(b, "%s%s", r ? " + " : "", ru->absent ? "no " : "");
            for (int k = 0; k < SDC_RULE_MAX_KEYS && ru->keys[k]; k++)
                sb_add(b, "%s'%s'", k ? " or " : "", ru->keys[k]);
            if (ru->dim >= 0) sb_add(b, " ne[%d]=%lld", ru->dim, (long long)ru->value);
        }
        sb_add(b, ")");
    }
}

const sdc_family_desc *sdc_registry_detect_info(sdc_tensor_iter_fn it, void *user,
                                                sdc_detect_info *info, char *why, size_t why_size) {
    sbuf b = {why, why_size, 0};
    if (why && why_size) why[0] = '\0';
    if (info) memset(info, 0, sizeof *info);
    suffix_index s;
    if (!suffix_index_build(&s, it, user)) {
        sb_add(&b, "model detection: out of memory");
        return NULL;
    }
    const sdc_family_desc *found = NULL;
    for (int f = 0; f < N_FAMILIES && !found; f++)
        if (family_matches(&s, &k_families[f])) found = &k_families[f];
    if (info) {
        info->family = found;
        info->n_tensors = s.n;
        info->has_v_pred = sdc_name_index_find(&s.ix, "v_pred") >= 0;
        info->has_edm_vpred = sdc_name_index_find(&s.ix, "edm_vpred.sigma_max") >= 0;
        /* BFL names, or diffusers' (sd.cpp converts those before it looks) */
        info->has_guidance_in =
            sdc_name_index_find(&s.ix, DIT "guidance_in.in_layer.weight") >= 0 ||
            sdc_name_index_find(&s.ix, DIT "time_text_embed.guidance_embedder.linear_1.weight") >=
                0;
    }
    if (!found) {
        if (s.n == 0) sb_add(&b, "no tensors loaded; ");
        describe_rules(&b);
    }
    suffix_index_free(&s);
    return found;
}

const sdc_family_desc *sdc_registry_detect(sdc_tensor_iter_fn it, void *user, char *why,
                                           size_t why_size) {
    return sdc_registry_detect_info(it, user, NULL, why, why_size);
}

static bool loader_iter(void *user, int i, sdc_tensor_desc *out) {
    const sdc_loader *l = user;
    if (i >= sdc_loader_tensor_count(l)) return false;
    const sdc_tensor *t = sdc_loader_tensor_at(l, i);
    out->name = t->name;
    out->n_dims = 4;
    while (out->n_dims > 1 && t->ne[out->n_dims - 1] == 1) out->n_dims--;
    for (int d = 0; d < 4; d++) out->ne[d] = t->ne[d];
    return true;
}

const sdc_family_desc *sdc_registry_detect_loader(const sdc_loader *l, sdc_detect_info *info,
                                                  char *why, size_t why_size) {
    return sdc_registry_detect_info(loader_iter, (void *)l, info, why, why_size);
}

/* ---- components ---------------------------------------------------------------------- */

static bool has_prefix(const char *name, const char *p) {
    return p && *p && !strncmp(name, p, strlen(p));
}

const sdc_component_desc *sdc_registry_missing(const sdc_family_desc *d, sdc_tensor_iter_fn it,
                                               void *user) {
    if (!d) return NULL;
    bool found[SDC_FAMILY_MAX_COMPONENTS] = {false};
    sdc_tensor_desc t;
    for (int i = 0; it(user, i, &t); i++) {
        if (!t.name) continue;
        for (int c = 0; c < d->n_components; c++)
            if (has_prefix(t.name, d->components[c].prefix) ||
                has_prefix(t.name, d->components[c].file_prefix))
                found[c] = true;
    }
    for (int c = 0; c < d->n_components; c++) {
        const sdc_component_desc *cd = &d->components[c];
        if (cd->required && cd->prefix && *cd->prefix && !found[c]) return cd;
    }
    return NULL;
}

const sdc_component_desc *sdc_registry_missing_loader(const sdc_family_desc *d,
                                                      const sdc_loader *l) {
    return sdc_registry_missing(d, loader_iter, (void *)l);
}

sdc_status sdc_registry_fail_missing(const sdc_family_desc *d, const sdc_component_desc *c) {
    if (!d || !c) return sdc_fail(SDC_ERR_INVALID_ARG, "missing model component");
    return sdc_fail(SDC_ERR_INVALID_ARG, "%s needs its %s: pass --%s", d->name, c->what,
                    sdc_role_name(c->role));
}

/* ---- defaults and errors ------------------------------------------------------------- */

void sdc_registry_defaults(const sdc_family_desc *d, const sdc_detect_info *info,
                           sdc_family_defaults *out) {
    memset(out, 0, sizeof *out);
    if (!d) return;
    bool v = info && info->has_v_pred, edm = info && info->has_edm_vpred;
    bool guid = info && info->has_guidance_in;
    out->sample_method = sdc_default_sample_method(d->family);
    out->prediction = sdc_default_prediction(d->family, v, edm);
    out->scheduler = sdc_default_scheduler(d->family, out->prediction, out->sample_method);
    bool flow = out->prediction == SDC_PRED_SD3_FLOW || out->prediction == SDC_PRED_FLUX_FLOW;
    out->flow_shift = flow ? sdc_default_flow_shift(d->family, guid) : NAN;
    out->eta = sdc_default_eta(d->family, out->sample_method);
    out->width = d->width;
    out->height = d->height;
}

sdc_status sdc_registry_fail_unsupported(const sdc_family_desc *d, const char *why) {
    if (!d) return sdc_fail(SDC_ERR_UNSUPPORTED, "unknown model: %s", why ? why : "");
    return sdc_fail(SDC_ERR_UNSUPPORTED, "%s checkpoint detected; %s is not supported yet", d->name,
                    d->name);
}
