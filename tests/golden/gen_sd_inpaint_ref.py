#!/usr/bin/env python3
"""Block-level reference for the 9-channel inpainting UNet (tests/unit/test_sd_inpaint_unet.c).

Independent implementation: diffusers 0.42's UNet2DConditionModel with in_channels=9, run as
StableDiffusionInpaintPipeline runs it: torch.cat([latent_model_input, mask, masked_image_latents], dim=1),
the same mask and masked-image latent for both CFG halves of the batch. Random weights in the LDM key layout
(tests/golden/gen_unet_ref.py's tiny SD1 configuration: 2 levels 32/64, attention at level 0 and in the middle,
1x1-conv proj, 8 heads, context 32) with conv_in widened to 9 input channels, converted with diffusers'
convert_ldm_unet_checkpoint and loaded strictly; float64 forward.

Writes tests/data/sd_inpaint/unet9.safetensors: the F16 weights under model.diffusion_model., plus
  x [2,4,8,16] (the two CFG halves), mask [1,1,8,16] (0/1), masked [1,4,8,16], t [2], ctx [2,5,32],
  out.exact [2,4,8,16]  (float64 forward, stored F32)
  out.swapped           the same with [x, masked, mask] (the wrong order), to show the test can tell them apart
Re-run: /usr/bin/python3 tests/golden/gen_sd_inpaint_ref.py  (a few seconds)
"""
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_unet_ref as g  # noqa: E402  (the LDM layout, random weights and diffusers config helpers)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "sd_inpaint")


def main():
    c = g.CONFIGS["sd1"]
    shapes = g.ldm_shapes(c)
    mc = c["ch"][0]
    shapes["input_blocks.0.0.weight"] = (mc, 9, 3, 3)
    w16 = {k: v.to(torch.float16) for k, v in g.random_weights(shapes, 1909).items()}
    cfg = g.diffusers_config(c)
    cfg["in_channels"] = 9
    rng = np.random.RandomState(99)
    x = torch.from_numpy(rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
    mask = torch.zeros(1, 1, 8, 16)
    mask[:, :, 2:6, 3:11] = 1.0
    masked = torch.from_numpy(rng.standard_normal((1, 4, 8, 16)).astype(np.float32)) * (1 - mask)
    t = torch.tensor([801.0, 801.0])
    ctx = torch.from_numpy(rng.standard_normal((2, 5, c["ctx"])).astype(np.float32))
    model = g.build(cfg, {k: v.double() for k, v in w16.items()}, False)
    data = {"x": x, "mask": mask, "masked": masked, "t": t, "ctx": ctx}
    with torch.no_grad():
        for key, parts in (("out.exact", (mask, masked)), ("out.swapped", (masked, mask))):
            inp = torch.cat([x] + [p.expand(2, -1, -1, -1) for p in parts], dim=1)
            o = model(inp.double(), t.double(), encoder_hidden_states=ctx.double()).sample
            data[key] = o.float()
            print(f"{key}: std {o.std().item():.4f} max {o.abs().max().item():.4f}")
    d = (data["out.exact"] - data["out.swapped"]).abs().max().item()
    print(f"exact vs swapped order: max diff {d:.3g}")
    os.makedirs(OUT, exist_ok=True)
    save_file({**w16, **data}, os.path.join(OUT, "unet9.safetensors"))


if __name__ == "__main__":
    main()
