#!/usr/bin/env python3
"""Reference images for tests/unit/test_sd_pix2pix.c: InstructPix2Pix with --img-cfg-scale.

Independent implementation: diffusers' StableDiffusionInstructPix2PixPipeline (diffusers 0.42,
transformers 5) on the reduced random SD 1.x checkpoint with an 8-channel UNet that
`make_sd_reduced.py sd1pix2pix` writes (seed 1108): the UNet and VAE converted with
diffusers' convert_ldm_*_checkpoint, the text encoder loaded into transformers'
CLIPTextModel, the tokenizer from ../shared/golden/sd1/tokenizer, EulerDiscreteScheduler
(scaled_linear 0.00085..0.012, linspace spacing: at 4 steps the timesteps 999, 666, 333, 0
are sd.cpp's discrete schedule exactly), float32. The initial latent is
torch.manual_seed(42); torch.randn(1, 4, 16, 16), which sdc's `--rng cpu` reproduces.

diffusers' guidance, uncond + g (text - image) + ig (image - uncond) with passes
(prompt, image), (negative, image), (negative, zero latent), is sd.cpp's
img_uncond + ig (uncond - img_uncond) + g (cond - uncond) with the names swapped; sd.cpp
(and sdc) skip the passes whose weight is zero (ig = 1: no zero-latent pass; ig = g: no
(negative, image) pass), which changes nothing in the sum. Not compared: guidance_scale <= 1 or image_guidance_scale < 1,
where diffusers turns all guidance off (image guidance too) while sd.cpp still runs the
image passes when --img-cfg-scale differs from --cfg-scale. Like diffusers, sd.cpp encodes
the SD 1.x edit image to the VAE's mean without the 0.18215 scale.

Writes tests/data/sd_pix2pix/: ref.png (the image to edit, 128x128, drawn here) and one
PNG per case in CASES (128x128, 4 euler steps, seed 42).

Re-run: python3 tests/golden/gen_sd_pix2pix_ref.py CKPT  (CKPT from make_sd_reduced.py
sd1pix2pix; ~1 min)
"""
import os
import sys

import numpy as np
import torch
from diffusers import (AutoencoderKL, EulerDiscreteScheduler, StableDiffusionInstructPix2PixPipeline,
                       UNet2DConditionModel)
from diffusers.loaders.single_file_utils import convert_ldm_unet_checkpoint, convert_ldm_vae_checkpoint
from PIL import Image
from safetensors.torch import load_file
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "sd_pix2pix")
TOK = os.path.join(HERE, "..", "..", "..", "shared", "golden", "sd1", "tokenizer")
PROMPT, NEG = "turn the cat into a painting", ""
# name: (cfg, img_cfg); img_cfg None = not given (sd.cpp: 1)
CASES = {"g7_i1.5": (7.0, 1.5), "g7_unset": (7.0, None), "g5_i5": (5.0, 5.0), "g3_i2": (3.0, 2.0)}


def ref_image():
    y, x = np.mgrid[0:128, 0:128].astype(np.float32)
    r = 127 + 120 * np.sin(x / 9.0) * np.cos(y / 13.0)
    g = 255 * (((x - 64) ** 2 + (y - 50) ** 2) < 30 ** 2)
    b = 2 * y
    return np.clip(np.stack([r, g, b], -1), 0, 255).astype(np.uint8)


def pipeline(ckpt):
    sd = load_file(ckpt)
    unet_cfg = dict(sample_size=16, in_channels=8, out_channels=4, block_out_channels=[64, 128, 256, 256],
                    layers_per_block=2, cross_attention_dim=768, attention_head_dim=8, norm_eps=1e-6,
                    down_block_types=["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"],
                    up_block_types=["UpBlock2D"] + ["CrossAttnUpBlock2D"] * 3)
    unet = UNet2DConditionModel(**unet_cfg)
    m, u = unet.load_state_dict(convert_ldm_unet_checkpoint(sd, unet_cfg), strict=True)
    assert not m and not u
    vae_cfg = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=[128, 256, 512, 512],
                   down_block_types=["DownEncoderBlock2D"] * 4, up_block_types=["UpDecoderBlock2D"] * 4,
                   layers_per_block=2, scaling_factor=0.18215)
    vae = AutoencoderKL(**vae_cfg)
    m, u = vae.load_state_dict(convert_ldm_vae_checkpoint(sd, vae_cfg), strict=True)
    assert not m and not u
    te = CLIPTextModel(CLIPTextConfig(vocab_size=49408, hidden_size=768, intermediate_size=3072,
                                      num_hidden_layers=12, num_attention_heads=12, max_position_embeddings=77,
                                      hidden_act="quick_gelu", projection_dim=768))
    p = "cond_stage_model.transformer.text_model."  # transformers 5 keys lack "text_model."
    m, u = te.load_state_dict({k[len(p):]: v.float() for k, v in sd.items() if k.startswith(p)}, strict=False)
    assert not u and all("position_ids" in k for k in m), (m[:3], u[:3])
    sched = EulerDiscreteScheduler(num_train_timesteps=1000, beta_start=0.00085, beta_end=0.012,
                                   beta_schedule="scaled_linear", timestep_spacing="linspace")
    pipe = StableDiffusionInstructPix2PixPipeline(vae=vae.float(), text_encoder=te.float(),
                                                  tokenizer=CLIPTokenizer.from_pretrained(TOK, model_max_length=77),
                                                  unet=unet.float(), scheduler=sched, safety_checker=None,
                                                  feature_extractor=None, requires_safety_checker=False)
    pipe.set_progress_bar_config(disable=True)
    return pipe


def main():
    os.makedirs(OUT, exist_ok=True)
    img = ref_image()
    Image.fromarray(img).save(os.path.join(OUT, "ref.png"))
    pipe = pipeline(sys.argv[1])
    for name, (g, ig) in CASES.items():
        torch.manual_seed(42)
        latents = torch.randn(1, 4, 16, 16)
        with torch.no_grad():
            out = pipe(PROMPT, image=Image.fromarray(img), num_inference_steps=4, guidance_scale=g,
                       image_guidance_scale=1.0 if ig is None else ig, negative_prompt=NEG,
                       latents=latents, output_type="np").images[0]
        png = (out * 255).round().astype(np.uint8)
        Image.fromarray(png).save(os.path.join(OUT, f"{name}.png"))
        print(name, "mean", png.mean(), "std", png.std())


if __name__ == "__main__":
    main()
