#!/usr/bin/env python3
"""Reference data for tests/unit/test_unet.c: tiny random LDM UNets and their outputs.

Independent implementation: diffusers' UNet2DConditionModel (diffusers 0.42). The random
weights are written in the original LDM key layout (openaimodel.UNetModel: input_blocks.*,
middle_block.*, output_blocks.*, time_embed.*, label_emb.*, out.*), converted to diffusers
with diffusers.loaders.single_file_utils.convert_ldm_unet_checkpoint and loaded strictly,
so a wrong key or shape here fails the conversion or the load.

Three configurations, the smallest that still have every block kind:
  sd1  : 2 levels (32, 64), 1 res block, attention at level 0 and in the middle,
         1x1-conv proj_in/proj_out, 8 heads (4 and 8 wide), context 32
  sd2  : 2 levels (32, 32), attention at both levels and in the middle, Linear
         proj_in/proj_out, heads of 8 channels
  sdxl : 2 levels (32, 32), no attention at level 0, transformer depth 2 at level 1 and in
         the middle, Linear proj, heads of 8, label_emb (adm 24, diffusers' "projection"
         class embedding, the same two Linear layers)
GroupNorm eps is 1e-6 everywhere, as sd.cpp's GroupNorm32 (LDM's ResBlock has 1e-5).

Outputs per configuration (tests/data/unet/<cfg>.safetensors): the weights under
"model.diffusion_model." in F16 (drawn in float64, rounded to F16; the C test makes its
F32/BF16 copies from them, so one file serves every weight type), plus
  x [2,in,8,16], t [2], ctx [2,5,ctx_dim], (y [2,adm]),
  out.exact  : float64 forward of those weights (plain math)
  out.sdcpp  : float64 forward of the same weights emulating sd.cpp's ggml CPU numerics: the
               input of every Linear/Conv2d rounded to float16 (ggml converts it for its F16
               dot products / F16 im2col), GEGLU's gate GELU = f16(gelu_tanh(f16(x))) for
               |x| < 10 (ggml's F16 table), x above 10, 0 below -10.
Batch item 1 has its own t, ctx (and y), so batching is checked.

Full size (tests/data/unet/sd1_full_ref.safetensors): the UNet of the random SD 1.5
checkpoint that ../shared/golden/tools/make_sd1_random.py --seed 1001 makes (md5
a0115b95cc3a8871042661ff76e14650; not stored here), in diffusers' SD 1.5 configuration
(norm_eps 1e-6 as above), float32, at an 8x8 latent: x [1,4,8,8], t [1] = 999,
ctx [1,77,768] (RandomState(5) normals), out.exact and out.sdcpp as above. The C test
compares against it when the checkpoint is at /work/sd1/sd1_random_1001.safetensors.

Re-run: /usr/bin/python3 tests/golden/gen_unet_ref.py  (writes tests/data/unet/, ~30 s)
        /usr/bin/python3 tests/golden/gen_unet_ref.py --full /work/sd1/sd1_random_1001.safetensors
        (the full-size reference only; ~4 GB of memory, ~1 min)
"""
import sys
import os

import numpy as np
import torch
from diffusers import UNet2DConditionModel
from diffusers.loaders.single_file_utils import convert_ldm_unet_checkpoint
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "unet")
P = "model.diffusion_model."

CONFIGS = {
    "sd1": dict(ch=(32, 64), attn=(True, False), depth=(1, 1), mid_depth=1, nrb=1, ctx=32,
                linear=False, heads=(8, 8), adm=0),
    "sd2": dict(ch=(32, 32), attn=(True, True), depth=(1, 1), mid_depth=1, nrb=1, ctx=24,
                linear=True, heads=(4, 4), adm=0),
    "sdxl": dict(ch=(32, 32), attn=(False, True), depth=(0, 2), mid_depth=2, nrb=1, ctx=16,
                 linear=True, heads=(4, 4), adm=24),
}


def ldm_shapes(c):
    """Key -> shape of the LDM layout for config c (PyTorch order)."""
    s = {}
    mc = c["ch"][0]
    ted = 4 * mc

    def lin(name, i, o, bias=True):
        s[name + ".weight"] = (o, i)
        if bias:
            s[name + ".bias"] = (o,)

    def conv(name, i, o, k):
        s[name + ".weight"] = (o, i, k, k)
        s[name + ".bias"] = (o,)

    def norm(name, n):
        s[name + ".weight"] = (n,)
        s[name + ".bias"] = (n,)

    def res(name, i, o):
        norm(name + ".in_layers.0", i)
        conv(name + ".in_layers.2", i, o, 3)
        lin(name + ".emb_layers.1", ted, o)
        norm(name + ".out_layers.0", o)
        conv(name + ".out_layers.3", o, o, 3)
        if i != o:
            conv(name + ".skip_connection", i, o, 1)

    def st(name, C, depth):
        norm(name + ".norm", C)
        if c["linear"]:
            lin(name + ".proj_in", C, C)
            lin(name + ".proj_out", C, C)
        else:
            conv(name + ".proj_in", C, C, 1)
            conv(name + ".proj_out", C, C, 1)
        for d in range(depth):
            b = f"{name}.transformer_blocks.{d}"
            for a, kv in (("attn1", C), ("attn2", c["ctx"])):
                lin(f"{b}.{a}.to_q", C, C, False)
                lin(f"{b}.{a}.to_k", kv, C, False)
                lin(f"{b}.{a}.to_v", kv, C, False)
                lin(f"{b}.{a}.to_out.0", C, C)
            lin(f"{b}.ff.net.0.proj", C, 8 * C)
            lin(f"{b}.ff.net.2", 4 * C, C)
            for n in ("norm1", "norm2", "norm3"):
                norm(f"{b}.{n}", C)

    lin("time_embed.0", mc, ted)
    lin("time_embed.2", ted, ted)
    if c["adm"]:
        lin("label_emb.0.0", c["adm"], ted)
        lin("label_emb.0.2", ted, ted)
    conv("input_blocks.0.0", 4, mc, 3)
    chans, ch, idx = [mc], mc, 0
    nl = len(c["ch"])
    for lvl in range(nl):
        for _ in range(c["nrb"]):
            idx += 1
            res(f"input_blocks.{idx}.0", ch, c["ch"][lvl])
            ch = c["ch"][lvl]
            if c["attn"][lvl]:
                st(f"input_blocks.{idx}.1", ch, c["depth"][lvl])
            chans.append(ch)
        if lvl != nl - 1:
            idx += 1
            conv(f"input_blocks.{idx}.0.op", ch, ch, 3)
            chans.append(ch)
    res("middle_block.0", ch, ch)
    st("middle_block.1", ch, c["mid_depth"])
    res("middle_block.2", ch, ch)
    idx = 0
    for lvl in reversed(range(nl)):
        for j in range(c["nrb"] + 1):
            res(f"output_blocks.{idx}.0", ch + chans.pop(), c["ch"][lvl])
            ch = c["ch"][lvl]
            up = 1
            if c["attn"][lvl]:
                st(f"output_blocks.{idx}.1", ch, c["depth"][lvl])
                up = 2
            if lvl > 0 and j == c["nrb"]:
                conv(f"output_blocks.{idx}.{up}.conv", ch, ch, 3)
            idx += 1
    norm("out.0", mc)
    conv("out.2", mc, 4, 3)
    return s


def random_weights(shapes, seed):
    rng = np.random.RandomState(seed)
    w = {}
    for k, shp in shapes.items():
        x = rng.standard_normal(shp)
        if k.endswith(".bias"):
            x = 0.02 * x
        elif len(shp) == 1:  # GroupNorm / LayerNorm weight
            x = 1.0 + 0.1 * x
        else:
            x = x / np.sqrt(np.prod(shp[1:]))
        w[P + k] = torch.from_numpy(x.astype(np.float32))
    return w


def diffusers_config(c):
    down = ["CrossAttnDownBlock2D" if a else "DownBlock2D" for a in c["attn"]]
    up = ["CrossAttnUpBlock2D" if a else "UpBlock2D" for a in reversed(c["attn"])]
    cfg = dict(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=list(c["ch"]),
        layers_per_block=c["nrb"], down_block_types=down, up_block_types=up,
        cross_attention_dim=c["ctx"], attention_head_dim=list(c["heads"]),
        use_linear_projection=c["linear"], norm_num_groups=32, norm_eps=1e-6,
        transformer_layers_per_block=[max(d, 1) for d in c["depth"][:-1]] + [c["depth"][-1]],
        flip_sin_to_cos=True, freq_shift=0,
    )
    if c["mid_depth"] != c["depth"][-1]:
        raise ValueError("diffusers ties the middle depth to the last level's")
    if c["adm"]:
        cfg.update(class_embed_type="projection", projection_class_embeddings_input_dim=c["adm"])
    return cfg


def f16(t):
    return t.to(torch.float16).to(t.dtype)


def ggml_gelu_f16(x):
    y = f16(torch.nn.functional.gelu(f16(x), approximate="tanh"))
    return torch.where(x >= 10, x, torch.where(x <= -10, torch.zeros_like(x), y))


def build(cfg, ldm, sdcpp):
    model = UNet2DConditionModel(**cfg)
    sd = convert_ldm_unet_checkpoint(ldm, cfg)
    missing, unexpected = model.load_state_dict(sd, strict=True)
    assert not missing and not unexpected
    model = model.double().eval()
    if sdcpp:
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d)):
                mod.register_forward_pre_hook(lambda m, a: (f16(a[0]),) + tuple(a[1:]))
            if type(mod).__name__ == "GEGLU":
                mod.gelu = ggml_gelu_f16
    return model


def full_size(path):
    from safetensors import safe_open
    ldm = {}
    with safe_open(path, framework="pt") as f:
        for k in f.keys():
            if k.startswith(P):
                ldm[k] = f.get_tensor(k).float()
    cfg = dict(
        sample_size=8, in_channels=4, out_channels=4, block_out_channels=[320, 640, 1280, 1280],
        layers_per_block=2, cross_attention_dim=768, attention_head_dim=8, norm_eps=1e-6,
        down_block_types=["CrossAttnDownBlock2D"] * 3 + ["DownBlock2D"],
        up_block_types=["UpBlock2D"] + ["CrossAttnUpBlock2D"] * 3,
    )
    rng = np.random.RandomState(5)
    x = torch.from_numpy(rng.standard_normal((1, 4, 8, 8)).astype(np.float32))
    ctx = torch.from_numpy(rng.standard_normal((1, 77, 768)).astype(np.float32))
    t = torch.tensor([999.0])
    data = {"x": x, "t": t, "ctx": ctx}
    for key, emu in (("out.exact", False), ("out.sdcpp", True)):
        model = build(cfg, ldm, emu).float()
        with torch.no_grad():
            data[key] = model(x, t, encoder_hidden_states=ctx).sample
        print(f"full {key}: std {data[key].std().item():.4f} max {data[key].abs().max().item():.4f}")
        del model
    save_file(data, os.path.join(OUT, "sd1_full_ref.safetensors"))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--full":
        full_size(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)
    for ci, (name, c) in enumerate(CONFIGS.items()):
        shapes = ldm_shapes(c)
        w16 = {k: v.to(torch.float16) for k, v in random_weights(shapes, 1000 + ci).items()}
        cfg = diffusers_config(c)
        rng = np.random.RandomState(77 + ci)
        x = torch.from_numpy(rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
        t = torch.tensor([999.0, 421.5], dtype=torch.float32)
        ctx = torch.from_numpy(rng.standard_normal((2, 5, c["ctx"])).astype(np.float32))
        y = torch.from_numpy(rng.standard_normal((2, c["adm"])).astype(np.float32)) if c["adm"] else None
        data = {"x": x, "t": t, "ctx": ctx}
        if y is not None:
            data["y"] = y
        for key, emu in (("out.exact", False), ("out.sdcpp", True)):
            model = build(cfg, {k: v.double() for k, v in w16.items()}, emu)
            with torch.no_grad():
                kw = {"class_labels": y.double()} if y is not None else {}
                o = model(x.double(), t.double(), encoder_hidden_states=ctx.double(), **kw).sample
            data[key] = o.float()
            print(f"{name} {key}: std {o.std().item():.4f} max {o.abs().max().item():.4f}")
        d = (data["out.exact"] - data["out.sdcpp"]).abs().max().item()
        print(f"{name}: {len(shapes)} tensors, {sum(int(np.prod(s)) for s in shapes.values())} params;"
              f" exact vs sdcpp max diff {d:.3g}")
        save_file({**w16, **data}, os.path.join(OUT, f"{name}.safetensors"))


if __name__ == "__main__":
    main()
