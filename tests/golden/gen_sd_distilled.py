#!/usr/bin/env python3
"""Reference data for tests/unit/test_sd_distilled.c: the distilled SD UNet layouts.

Independent implementation: diffusers' UNet2DConditionModel (diffusers 0.42), configured as
each distilled model's diffusers config is (fewer res blocks per level, fewer levels, no or a
res-only middle block, per-block transformer depths), with random weights. The weights are
written in the original single-file (LDM) key layout the way diffusers'
scripts/convert_diffusers_to_original_stable_diffusion.py maps them (down_blocks.i.resnets.j ->
input_blocks.{3i+j+1}.0, up_blocks.i.resnets.j -> output_blocks.{3i+j}.0, downsamplers ->
input_blocks.{3(i+1)}.0.op, upsamplers -> output_blocks.{3i+2}.{1|2}, mid_block.resnets.j ->
middle_block.{2j}), which is how the distilled checkpoints sd.cpp runs were made. For the
layouts sd.cpp supports, the generator also re-states sd.cpp's own block naming
(UnetModelBlock in src/model/diffusion/unet.hpp: tiny_unet index skipping, SSD-1B depths,
Vega, SDXS-512's attention resolutions) and asserts the two name sets agree, so the files
are the layout sd.cpp loads.

Layouts (reduced: 32 channels at every level, 8 heads or heads of 8, small contexts):
  sd1_tiny   BK-SDM-Tiny / segmind tiny-sd (sd.cpp "SD 1.x Tiny UNet"): 3 levels, 1 res block
             down, 2 up, attention at every level, no middle block, 1x1-conv proj, 8 heads
  sd2_tiny   BK-SDM-v2-Tiny (sd.cpp "SD 2.x Tiny UNet"): the same with Linear proj, 64-wide
             heads in the real model (8 here)
  sdxs512    SDXS-512-DreamShaper (sd.cpp "SDXS (512-DS)"): sd1_tiny without level-0 attention
  ssd1b      SSD-1B (sd.cpp "SDXL (SSD1B)"): SDXL with a res-only middle block and per-block
             transformer depths (down 2/4, up 4,4,10 / 2,1,1 in the real model; 2,2 and 2,2,3 /
             2,1,1 here), adm 24
  vega       Segmind-Vega (sd.cpp "SDXL (Vega)"): SDXL, res-only middle block, depths 1/2
  sd1_small  BK-SDM-Small: 4 levels, 1 res block down / 2 up, no middle block (sdc loads it
             from the weights; sd.cpp would take it for a tiny UNet and fail)
(BK-SDM-Base, 1 res block per level with the full middle block, is tests/data/unet/sd1.)
GroupNorm eps 1e-6 (sd.cpp's GroupNorm32), as tests/golden/gen_unet_ref.py.

Per layout, tests/data/sd_distilled/<name>.safetensors: weights under "model.diffusion_model."
in F16 (drawn in float64, rounded), x [2,4,8,16], t [2], ctx [2,5,ctx], (y [2,24]),
out.exact (float64 forward, plain math) and out.sdcpp (float64 forward with sd.cpp's ggml CPU
numerics emulated: F16-rounded Linear/Conv inputs, ggml's F16 GELU table in GEGLU).

Registry lists (--lists): tests/data/registry/{sd1_tiny,sdxs512,sd2_tiny,sdxs09,sdxl_ssd1b,
sdxl_vega}.txt, the same layouts at full size (the real models' diffusers configs: 320/640/1280
channels, contexts 768/1024/2048, adm 2816; SDXS-09 = the SD 2.x tiny layout with level-0
self-attention keys 1024 wide, as sd.cpp detects it), the UNet's structural tensors (each
block's first conv, transformer keys) plus the text encoder / VAE lines of the sd1/sd2/sdxl
lists, built on torch's meta device (shapes only).

Re-run: /usr/bin/python3 tests/golden/gen_sd_distilled.py   (~1 min, writes tests/data/sd_distilled/)
        /usr/bin/python3 tests/golden/gen_sd_distilled.py --lists   (then sdcpp_reference.py)
"""
import os
import re
import sys

import numpy as np
import torch
from diffusers import UNet2DConditionModel
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_unet_ref import f16, ggml_gelu_f16  # noqa: E402  (the same emulation as test_unet)

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "sd_distilled")
P = "model.diffusion_model."

# ch: block_out_channels; attn: per level; down/up depth: per level (up: per layer, deepest
# level first as diffusers' reverse_transformer_layers_per_block); mid: None | "res" | "attn"
CONFIGS = {
    "sd1_tiny": dict(ch=(32, 32, 32), attn=(1, 1, 1), nrb=1, mid=None, linear=False, ctx=32,
                     heads="n8", adm=0, sdcpp="sd1_tiny"),
    "sd2_tiny": dict(ch=(32, 32, 32), attn=(1, 1, 1), nrb=1, mid=None, linear=True, ctx=24,
                     heads="d8", adm=0, sdcpp="sd2_tiny"),
    "sdxs512": dict(ch=(32, 32, 32), attn=(0, 1, 1), nrb=1, mid=None, linear=False, ctx=32,
                    heads="n8", adm=0, sdcpp="sdxs512"),
    "ssd1b": dict(ch=(32, 32, 32), attn=(0, 1, 1), nrb=2, mid="res", linear=True, ctx=16,
                  heads="d8", adm=24, down_depth=(1, 2, 2),
                  up_depth=((2, 2, 3), (2, 1, 1), (1, 1, 1)), sdcpp="ssd1b"),
    "vega": dict(ch=(32, 32, 32), attn=(0, 1, 1), nrb=2, mid="res", linear=True, ctx=16,
                 heads="d8", adm=24, down_depth=(1, 1, 2), sdcpp="vega"),
    "sd1_small": dict(ch=(32, 32, 32, 32), attn=(1, 1, 1, 0), nrb=1, mid=None, linear=False,
                      ctx=32, heads="n8", adm=0, sdcpp=None),
}


def diffusers_config(c):
    n = len(c["ch"])
    down = ["CrossAttnDownBlock2D" if a else "DownBlock2D" for a in c["attn"]]
    up = ["CrossAttnUpBlock2D" if a else "UpBlock2D" for a in reversed(c["attn"])]
    heads = [8] * n if c["heads"] == "n8" else [ch // 8 for ch in c["ch"]]
    cfg = dict(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=list(c["ch"]),
        layers_per_block=c["nrb"], down_block_types=down, up_block_types=up,
        cross_attention_dim=c["ctx"], attention_head_dim=heads,
        use_linear_projection=c["linear"], norm_num_groups=32, norm_eps=1e-6,
        flip_sin_to_cos=True, freq_shift=0,
        mid_block_type={None: None, "res": "UNetMidBlock2D", "attn": "UNetMidBlock2DCrossAttn"}[c["mid"]],
    )
    if "down_depth" in c:
        cfg["transformer_layers_per_block"] = list(c["down_depth"])
    if "up_depth" in c:
        cfg["reverse_transformer_layers_per_block"] = [list(d) for d in c["up_depth"]]
    if c["adm"]:
        cfg.update(class_embed_type="projection", projection_class_embeddings_input_dim=c["adm"])
    return cfg


RES = [("norm1", "in_layers.0"), ("conv1", "in_layers.2"), ("time_emb_proj", "emb_layers.1"),
       ("norm2", "out_layers.0"), ("conv2", "out_layers.3"), ("conv_shortcut", "skip_connection")]


def to_ldm(sd, sdxl):
    """diffusers UNet keys -> LDM keys, as convert_diffusers_to_original_stable_diffusion.py
    (SD1/SD2: up_blocks.0's upsampler at .1, as that script has it) and
    convert_diffusers_to_original_sdxl.py (SDXL: at .2 after a transformer)."""
    up_attn = {int(m.group(1)) for k in sd for m in [re.match(r"up_blocks\.(\d+)\.attentions\.", k)] if m}
    out = {}
    for k, v in sd.items():
        n = k
        m = re.match(r"(down|up)_blocks\.(\d+)\.(resnets|attentions)\.(\d+)\.(.*)", k)
        if m:
            kind, i, part, j, rest = m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), m.group(5)
            idx = 3 * i + j + 1 if kind == "down" else 3 * i + j
            blk = "input_blocks" if kind == "down" else "output_blocks"
            if part == "resnets":
                for a, b in RES:
                    if rest.startswith(a + "."):
                        rest = b + rest[len(a):]
                n = f"{blk}.{idx}.0.{rest}"
            else:
                n = f"{blk}.{idx}.1.{rest}"
        elif (m := re.match(r"down_blocks\.(\d+)\.downsamplers\.0\.conv\.(.*)", k)):
            n = f"input_blocks.{3 * (int(m.group(1)) + 1)}.0.op.{m.group(2)}"
        elif (m := re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.(.*)", k)):
            i = int(m.group(1))
            sub = 2 if i in up_attn and (i > 0 or sdxl) else 1
            n = f"output_blocks.{3 * i + 2}.{sub}.{m.group(2)}"
        elif (m := re.match(r"mid_block\.resnets\.(\d+)\.(.*)", k)):
            rest = m.group(2)
            for a, b in RES:
                if rest.startswith(a + "."):
                    rest = b + rest[len(a):]
            n = f"middle_block.{2 * int(m.group(1))}.{rest}"
        elif k.startswith("mid_block.attentions.0."):
            n = "middle_block.1." + k[len("mid_block.attentions.0."):]
        else:
            for a, b in [("time_embedding.linear_1.", "time_embed.0."), ("time_embedding.linear_2.", "time_embed.2."),
                         ("class_embedding.linear_1.", "label_emb.0.0."), ("class_embedding.linear_2.", "label_emb.0.2."),
                         ("conv_in.", "input_blocks.0.0."), ("conv_norm_out.", "out.0."), ("conv_out.", "out.2.")]:
                if k.startswith(a):
                    n = b + k[len(a):]
            if n == k:
                raise KeyError(f"unmapped diffusers key {k}")
        out[n] = v
    return out


def sdcpp_blocks(kind, n_levels):
    """The block names (and transformer depths) sd.cpp's UnetModelBlock creates for a version,
    re-stated from unet.hpp: {name: depth or 'res'/'down'/'up'}."""
    tiny = kind in ("sd1_tiny", "sd2_tiny", "sdxs512")
    nrb = 1 if tiny else 2
    attn_res = {4, 2} if kind in ("sdxs512", "ssd1b", "vega") else {4, 2, 1}
    depth = {"ssd1b": [1, 2, 10], "vega": [1, 1, 2]}.get(kind, [1] * n_levels)
    b = {}
    idx, ds = 0, 1
    for i in range(n_levels):
        for j in range(nrb):
            idx += 1
            b[f"input_blocks.{idx}.0"] = "res"
            if ds in attn_res:
                b[f"input_blocks.{idx}.1"] = 4 if kind == "ssd1b" and i == 2 else depth[i]
            if tiny:
                idx += 1
        if i != n_levels - 1:
            idx += 1
            b[f"input_blocks.{idx}.0.op"] = "down"
            ds *= 2
    if not tiny:
        b["middle_block.0"] = "res"
    o = 0
    for i in reversed(range(n_levels)):
        for j in range(nrb + 1):
            b[f"output_blocks.{o}.0"] = "res"
            up = 1
            if ds in attn_res:
                td = depth[i]
                if kind == "ssd1b":
                    td = 4 if i == 2 and j in (0, 1) else 1 if i == 1 and j in (1, 2) else td
                b[f"output_blocks.{o}.1"] = td
                up = 2
            if i > 0 and j == nrb:
                if tiny:
                    o += 1
                    if o == 2:
                        up = 1
                b[f"output_blocks.{o}.{up}"] = "up"
                ds //= 2
            o += 1
    return b


def ldm_blocks(ldm):
    """The same summary of an LDM state dict: block name -> depth or kind."""
    b = {}
    for k in ldm:
        m = re.match(r"(input_blocks\.\d+\.\d+|output_blocks\.\d+\.\d+|middle_block\.\d+)\.(.*)", k)
        if not m or k.startswith("input_blocks.0.0."):
            continue
        name, rest = m.group(1), m.group(2)
        if rest.startswith("op."):
            b[name + ".op"] = "down"
        elif rest.startswith("in_layers"):
            b[name] = "res"
        elif rest.startswith("conv."):
            b[name] = "up"
        elif (t := re.match(r"transformer_blocks\.(\d+)\.", rest)):
            b[name] = max(b.get(name, 0) if isinstance(b.get(name), int) else 0, int(t.group(1)) + 1)
    return b


def build(cfg, sd64, sdcpp):
    model = UNet2DConditionModel(**cfg)
    missing, unexpected = model.load_state_dict(sd64, strict=True)
    assert not missing and not unexpected
    model = model.double().eval()
    if sdcpp:
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d)):
                mod.register_forward_pre_hook(lambda m, a: (f16(a[0]),) + tuple(a[1:]))
            if type(mod).__name__ == "GEGLU":
                mod.gelu = ggml_gelu_f16
    return model


def random_state(model, seed):
    rng = np.random.RandomState(seed)
    sd = {}
    for k, p in model.state_dict().items():
        shp = tuple(p.shape)
        x = rng.standard_normal(shp)
        if k.endswith(".bias"):
            x = 0.02 * x
        elif len(shp) == 1:
            x = 1.0 + 0.1 * x
        else:
            x = x / np.sqrt(np.prod(shp[1:]))
        sd[k] = torch.from_numpy(x).to(torch.float16)  # stored as F16; the references use these values
    return sd


FULL = {
    "sd1_tiny": ("sd1", dict(block_out_channels=[320, 640, 1280], layers_per_block=1, mid_block_type=None,
                             down_block_types=["CrossAttnDownBlock2D"] * 3, up_block_types=["CrossAttnUpBlock2D"] * 3,
                             cross_attention_dim=768, attention_head_dim=8)),
    "sdxs512": ("sd1", dict(block_out_channels=[320, 640, 1280], layers_per_block=1, mid_block_type=None,
                            down_block_types=["DownBlock2D"] + ["CrossAttnDownBlock2D"] * 2,
                            up_block_types=["CrossAttnUpBlock2D"] * 2 + ["UpBlock2D"],
                            cross_attention_dim=768, attention_head_dim=8)),
    "sd2_tiny": ("sd2", dict(block_out_channels=[320, 640, 1280], layers_per_block=1, mid_block_type=None,
                             down_block_types=["CrossAttnDownBlock2D"] * 3, up_block_types=["CrossAttnUpBlock2D"] * 3,
                             cross_attention_dim=1024, attention_head_dim=[5, 10, 20], use_linear_projection=True)),
    "sdxl_ssd1b": ("sdxl", dict(block_out_channels=[320, 640, 1280], layers_per_block=2, mid_block_type="UNetMidBlock2D",
                                down_block_types=["DownBlock2D"] + ["CrossAttnDownBlock2D"] * 2,
                                up_block_types=["CrossAttnUpBlock2D"] * 2 + ["UpBlock2D"],
                                transformer_layers_per_block=[1, 2, 4],
                                reverse_transformer_layers_per_block=[[4, 4, 10], [2, 1, 1], [1, 1, 1]],
                                cross_attention_dim=2048, attention_head_dim=[5, 10, 20], use_linear_projection=True,
                                class_embed_type="projection", projection_class_embeddings_input_dim=2816)),
    "sdxl_vega": ("sdxl", dict(block_out_channels=[320, 640, 1280], layers_per_block=2, mid_block_type="UNetMidBlock2D",
                               down_block_types=["DownBlock2D"] + ["CrossAttnDownBlock2D"] * 2,
                               up_block_types=["CrossAttnUpBlock2D"] * 2 + ["UpBlock2D"],
                               transformer_layers_per_block=[1, 1, 2], cross_attention_dim=2048,
                               attention_head_dim=[5, 10, 20], use_linear_projection=True,
                               class_embed_type="projection", projection_class_embeddings_input_dim=2816)),
}
FULL["sdxs09"] = ("sd2", FULL["sd2_tiny"][1])
NAMES = {"sd1_tiny": "SD 1.x Tiny UNet (BK-SDM-Tiny, segmind tiny-sd)", "sdxs512": "SDXS-512-DreamShaper",
         "sd2_tiny": "SD 2.x Tiny UNet (BK-SDM-v2-Tiny)", "sdxs09": "SDXS-512-0.9",
         "sdxl_ssd1b": "SSD-1B", "sdxl_vega": "Segmind-Vega"}
KEEP = re.compile(r"(time_embed|label_emb)\.0\.weight|\.0\.weight$|\.(in_layers\.2|op|conv|proj_in|out\.2)\.weight$|"
                  r"transformer_blocks\.\d+\.attn[12]\.to_[kv]\.weight$")


def write_lists():
    reg = os.path.join(os.path.dirname(OUT), "registry")
    for name, (base, cfg) in FULL.items():
        with torch.device("meta"):
            model = UNet2DConditionModel(sample_size=64, in_channels=4, out_channels=4, norm_eps=1e-5, **cfg)
        ldm = to_ldm(model.state_dict(), base == "sdxl")
        shapes = {k: list(v.shape) for k, v in ldm.items()}
        if name == "sdxs09":  # level-0 self-attention keys/values over the 1024-wide context
            for k in shapes:
                if re.match(r"(input_blocks\.[12]|output_blocks\.[67])\.1\..*attn1\.to_[kv]\.weight", k):
                    shapes[k] = [shapes[k][0], 1024]
        lines = open(os.path.join(reg, base + ".txt")).read().splitlines()
        other = [l for l in lines if not l.startswith("#") and not l.startswith(P)]
        unet = [f"{P}{k} " + " ".join(str(x) for x in shapes[k]) for k in sorted(shapes) if KEEP.search(k)]
        head = [f"# family: {name}",
                f"# source: tests/golden/gen_sd_distilled.py --lists: {NAMES[name]} in the single-file layout",
                "#   (diffusers config at full size, keys as convert_diffusers_to_original_stable_diffusion.py /",
                f"#   _sdxl.py write them; the UNet's structural tensors), text encoder and VAE lines of {base}.txt",
                "# format: name then the shape in PyTorch order"]
        open(os.path.join(reg, name + ".txt"), "w").write("\n".join(head + other + unet) + "\n")
        print(f"{name}.txt: {len(unet)} UNet lines")


def main():
    if sys.argv[1:] == ["--lists"]:
        write_lists()
        return
    os.makedirs(OUT, exist_ok=True)
    for ci, (name, c) in enumerate(CONFIGS.items()):
        cfg = diffusers_config(c)
        sd16 = random_state(UNet2DConditionModel(**cfg), 2000 + ci)
        ldm = to_ldm(sd16, c["adm"] > 0)
        if c["sdcpp"]:
            want, got = sdcpp_blocks(c["sdcpp"], len(c["ch"])), ldm_blocks(ldm)
            if c["sdcpp"] == "ssd1b":  # the real depths, reduced: 4 -> 2, 10 -> 3
                want = {k: {4: 2, 10: 3}.get(v, v) if isinstance(v, int) else v for k, v in want.items()}
            assert want == got, f"{name}: sd.cpp's layout differs:\n{sorted(want.items())}\n{sorted(got.items())}"
        rng = np.random.RandomState(300 + ci)
        x = torch.from_numpy(rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
        t = torch.tensor([999.0, 421.5], dtype=torch.float32)
        ctx = torch.from_numpy(rng.standard_normal((2, 5, c["ctx"])).astype(np.float32))
        y = torch.from_numpy(rng.standard_normal((2, c["adm"])).astype(np.float32)) if c["adm"] else None
        data = {"x": x, "t": t, "ctx": ctx}
        if y is not None:
            data["y"] = y
        for key, emu in (("out.exact", False), ("out.sdcpp", True)):
            model = build(cfg, {k: v.double() for k, v in sd16.items()}, emu)
            with torch.no_grad():
                kw = {"class_labels": y.double()} if y is not None else {}
                o = model(x.double(), t.double(), encoder_hidden_states=ctx.double(), **kw).sample
            data[key] = o.float()
        d = (data["out.exact"] - data["out.sdcpp"]).abs().max().item()
        print(f"{name}: {len(ldm)} tensors, {sum(v.numel() for v in ldm.values())} params, out std "
              f"{data['out.exact'].std().item():.4f}; exact vs sdcpp max diff {d:.3g}")
        save_file({**{P + k: v.contiguous() for k, v in ldm.items()}, **data},
                  os.path.join(OUT, f"{name}.safetensors"))


if __name__ == "__main__":
    main()
