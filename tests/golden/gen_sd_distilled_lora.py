#!/usr/bin/env python3
"""A random LoRA in the LCM-LoRA layout for the reduced SD 2.x checkpoint
(tests/data/sd_distilled/lora/lcm.safetensors, used by test_sd_distilled_sdcpp.c and by the
sd.cpp runs in tests/data/sd_distilled/runs.json as <lora:lcm:1>).

Layout: as latent-consistency/lcm-lora-sdv1-5 / -sdxl ship it (kohya names over diffusers module
paths): lora_unet_<diffusers path with '_'>.{lora_down.weight, lora_up.weight, alpha} on every
attention projection (attn1/attn2 to_q/to_k/to_v/to_out_0), the GEGLU in/out (ff_net_0_proj,
ff_net_2), proj_in/proj_out, and the res blocks' conv1/conv2/time_emb_proj/conv_shortcut and the
down/up sampler convs (conv LoRAs: down [r, in, kh, kw], up [out, r, 1, 1]). Rank 2, alpha 1.
The UNet is the one tests/golden/make_sd_reduced.py sd writes (64 channels, SD 2.x layout); the
module list and shapes are read from that file's header (--ckpt).

The factors are F16 normals (RandomState(4242)) scaled so that the update (alpha/r) up @ down
has entries about 0.3x as large as a 1/sqrt(fan_in) weight's: enough to move the image, not
enough to blow it up.

Re-run: /usr/bin/python3 tests/golden/gen_sd_distilled_lora.py --ckpt sd2_reduced_2002.safetensors
"""
import json
import os
import re
import struct
import sys

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "sd_distilled", "lora")
P = "model.diffusion_model."
RANK, ALPHA = 2, 1.0
RES = {"in_layers.2": "conv1", "out_layers.3": "conv2", "emb_layers.1": "time_emb_proj",
       "skip_connection": "conv_shortcut"}


def ldm_to_diffusers(name):
    """An SD1/SD2 (4 levels, 2 res blocks) LDM module path -> diffusers module path, or None."""
    m = re.match(r"input_blocks\.(\d+)\.(\d+)\.(.*)", name)
    if m:
        n, sub, rest = int(m.group(1)), int(m.group(2)), m.group(3)
        if n == 0:
            return None
        i, j = (n - 1) // 3, (n - 1) % 3
        if j == 2:  # input_blocks.3, 6, 9: the downsample of level i
            return f"down_blocks.{i}.downsamplers.0.conv" if rest == "op" else None
        kind = "resnets" if sub == 0 else "attentions"
        return f"down_blocks.{i}.{kind}.{j}.{RES.get(rest, rest) if sub == 0 else rest}"
    m = re.match(r"middle_block\.(\d)\.(.*)", name)
    if m:
        sub, rest = int(m.group(1)), m.group(2)
        if sub == 1:
            return f"mid_block.attentions.0.{rest}"
        return f"mid_block.resnets.{sub // 2}.{RES.get(rest, rest)}"
    m = re.match(r"output_blocks\.(\d+)\.(\d)\.(.*)", name)
    if m:
        n, sub, rest = int(m.group(1)), int(m.group(2)), m.group(3)
        i, j = n // 3, n % 3
        if rest == "conv":
            return f"up_blocks.{i}.upsamplers.0.conv"
        kind = "resnets" if sub == 0 else "attentions"
        return f"up_blocks.{i}.{kind}.{j}.{RES.get(rest, rest) if sub == 0 else rest}"
    return None


TARGET = re.compile(r"(attn[12]\.to_(q|k|v|out\.0)|ff\.net\.(0\.proj|2)|proj_in|proj_out|in_layers\.2|"
                    r"out_layers\.3|emb_layers\.1|skip_connection|\.op|\.conv)$")


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--ckpt":
        h = header(sys.argv[2])
        shapes = {k[len(P):-len(".weight")]: v["shape"] for k, v in h.items()
                  if k.startswith(P) and k.endswith(".weight")}
    else:
        sys.exit("usage: gen_sd_distilled_lora.py --ckpt sd2_reduced_2002.safetensors")
    rng = np.random.RandomState(4242)
    out = {}
    for mod in sorted(shapes):
        shp = shapes[mod]
        if not TARGET.search(mod) or len(shp) not in (2, 4):
            continue
        d = ldm_to_diffusers(mod)
        if d is None:
            continue
        key = "lora_unet_" + d.replace(".", "_")
        o, i = shp[0], shp[1]
        k = shp[2:] if len(shp) == 4 else []
        fan_in = i * int(np.prod(k)) if k else i
        down = rng.standard_normal([RANK, i] + k) / np.sqrt(fan_in)
        # the weight's scale is ~1/sqrt(fan_in) per entry: up scaled so delta ~ 0.3x that
        # delta = (alpha/r) up @ down has entries of std 0.3/sqrt(fan_in), 0.3x a weight's
        up = rng.standard_normal([o, RANK] + ([1, 1] if k else [])) * 0.3 * np.sqrt(RANK) / ALPHA
        out[key + ".lora_down.weight"] = torch.from_numpy(down).to(torch.float16)
        out[key + ".lora_up.weight"] = torch.from_numpy(up).to(torch.float16)
        out[key + ".alpha"] = torch.tensor(ALPHA, dtype=torch.float16)
    os.makedirs(OUT, exist_ok=True)
    save_file(out, os.path.join(OUT, "lcm.safetensors"))
    print(f"{len(out) // 3} modules, {sum(v.numel() for v in out.values())} values")


if __name__ == "__main__":
    main()
