#!/usr/bin/env python3
"""Reference data for tests/unit/test_qwen_image_dit.c: a tiny random Qwen-Image MMDiT and its outputs.

Producer: diffusers 0.42's QwenImageTransformer2DModel (diffusers/models/transformers/
transformer_qwenimage.py) on torch, CPU, float64 (its RoPE tables are complex64, so positions go
through float32). Nothing here comes from sdc's C code. The weights are drawn at random (seeded),
rounded to F16 and stored as F16 under diffusers' own names (no prefix), so the reference sees
exactly the stored values; the model is loaded from them with strict=True.

Reduced configuration: 2 blocks, 2 heads of 32 (hidden 64), joint_attention_dim 40, in_channels 64
(16 latent channels, 2x2 patches), out_channels 16, axes_dims_rope (4, 14, 14) (sdc's rule for
head_dim != 128: frame axis head_dim/8, the rest split evenly; 128 gives the real 16/56/56).

tests/data/qwen_dit/weights.safetensors: the plain model's tensors plus
time_text_embed.addition_t_embedding.weight [2, 64] (the Layered model = the plain one + that
table; the C test hides it for the plain cases).

tests/data/qwen_dit/cases.safetensors, per case K (arrays outermost first):
  K.x [B, 16, F, h, w] latents (F frames: 1 plain, layers+1 Layered), K.t [B] (sigma*1000),
  K.ctx [B, n_ctx, 40], K.ref0 [B, 16, rh, rw] (cases with a reference latent), K.add [B] (Layered:
  addition_t_cond), K.out.diffusers [B, 16, F, h, w] (diffusers' own positions) and, where sd.cpp's
  position rule differs, K.out.sdcpp (the same model with sd.cpp's positions, below), and
  K.out.ggml: sd.cpp's positions and sd.cpp's CPU arithmetic with F16 weights (see ggml_numerics).
Cases:
  plain   : B=2 (own t and ctx each), latent 8x12 (4x6 tokens), 7 text tokens
  odd     : B=1, latent 10x6 (5x3 tokens: odd counts), 5 text tokens
  pad     : B=1, latent 7x9 (odd sizes: sd.cpp zero-pads to 8x10 and crops; the reference is the model
            on the zero-padded latent, cropped), 4 text tokens, sd.cpp positions only
  layered : Layered model, B=2 (addition_t_cond 0 and 1), 3 frames of 6x8, one reference latent 6x8
            (the condition image, frame index -1), 6 text tokens
  edit    : plain model, B=1, latent 8x8 and one reference 12x6 (frame index 1), 5 text tokens
  zero    : like edit with zero_cond_t=True (Edit 2511: reference tokens modulated with t = 0), B=2

sd.cpp's positions (src/model/common/rope.hpp gen_qwen_image_ids, 97d29908): image rows
-(gh/2) .. gh-1-(gh/2) (diffusers: -(gh - gh//2) ..), the same for columns; frames 0..F-1; reference
j at frame j+1 (INCREASE, Edit) or -(j+1) (DECREASE, Layered), rows/columns centred the same way;
text tokens at max(gh, gw)/2 + i on all three axes, from the main latent only (diffusers: the
maximum over every image, and for Layered at least the layer count).

Re-run (from the repository root, about a minute):
    python3 tests/golden/gen_qwen_image_dit_ref.py
Full size (the golden generator's random checkpoint, not stored: ../shared/golden/tools/
make_qwen_image_random.py weights --seed 1001 --only qwen_image_dit,qwen_image_layered_dit):
    python3 tests/golden/gen_qwen_image_dit_ref.py --full DIR
writes tests/data/qwen_dit/full_ref.safetensors (small inputs and the float32 outputs of both
full-width models: plain at latent 8x8 with 6 text tokens, Layered with 2 frames and a reference).
"""
import argparse
import os

import numpy as np
import torch
from diffusers import QwenImageTransformer2DModel
from safetensors.torch import load_file, save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "qwen_dit")
HID, HEADS, HD, TXT, LAYERS = 64, 2, 32, 40, 2
AXES = (4, 14, 14)


def make_weights(seed):
    g = torch.Generator().manual_seed(seed)

    def n(*shape, std=1.0, mean=0.0):
        return (mean + std * torch.randn(*shape, generator=g, dtype=torch.float64)).half()

    sd = {}

    def lin(name, i, o, gain=1.0):
        sd[name + ".weight"] = n(o, i, std=gain / i**0.5)
        sd[name + ".bias"] = n(o, std=0.05)

    lin("img_in", 64, HID)
    lin("txt_in", TXT, HID)
    sd["txt_norm.weight"] = n(TXT, mean=1.0, std=0.2)
    lin("time_text_embed.timestep_embedder.linear_1", 256, HID, 2.0)
    lin("time_text_embed.timestep_embedder.linear_2", HID, HID)
    sd["time_text_embed.addition_t_embedding.weight"] = n(2, HID, std=0.5)
    for b in range(LAYERS):
        p = f"transformer_blocks.{b}."
        lin(p + "img_mod.1", HID, 6 * HID, 0.7)
        lin(p + "txt_mod.1", HID, 6 * HID, 0.7)
        for nm in ("to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj", "to_out.0",
                   "to_add_out"):
            lin(p + "attn." + nm, HID, HID)
        for nm in ("norm_q", "norm_k", "norm_added_q", "norm_added_k"):
            sd[p + "attn." + nm + ".weight"] = n(HD, mean=1.5, std=0.3)
        for s in ("img_mlp", "txt_mlp"):
            lin(p + s + ".net.0.proj", HID, 4 * HID)
            lin(p + s + ".net.2", 4 * HID, HID)
    lin("norm_out.linear", HID, 2 * HID, 0.7)
    lin("proj_out", HID, 64)
    return sd


def f16(x):
    return x.half().to(x.dtype)


def ggml_gelu_f16(x):
    """ggml's CPU GELU: its F16 table (tanh form in float32, rounded to F16), 0 below -10, x above 10."""
    y = f16(torch.nn.functional.gelu(f16(x).float(), approximate="tanh").to(x.dtype))
    return torch.where(x >= 10, x, torch.where(x <= -10, torch.zeros_like(x), y))


def ggml_numerics(m):
    """sd.cpp's CPU arithmetic with F16 weights: every Linear's input rounded to F16 (ggml's F16 dot
    products) after sd.cpp's input scale (1/32 for to_out.0 and to_add_out, 1/128 for net.2), and
    ggml's F16 GELU."""
    for name, mod in m.named_modules():
        if isinstance(mod, torch.nn.Linear):
            s = 1 / 32 if name.endswith(("to_out.0", "to_add_out")) else \
                1 / 128 if name.endswith("net.2") else 1.0
            mod.register_forward_pre_hook(lambda _m, a, s=s: (f16(a[0] * s) / s,))
        if hasattr(mod, "approximate") and hasattr(mod, "gelu"):
            mod.gelu = ggml_gelu_f16
    return m


def build(sd, layered=False, zero_cond_t=False, dtype=torch.float64, cfg=None):
    cfg = cfg or dict(num_layers=LAYERS, attention_head_dim=HD, num_attention_heads=HEADS,
                      joint_attention_dim=TXT, axes_dims_rope=AXES)
    m = QwenImageTransformer2DModel(patch_size=2, in_channels=64, out_channels=16,
                                    zero_cond_t=zero_cond_t, use_additional_t_cond=layered,
                                    use_layer3d_rope=layered, **cfg)
    w = {k: v.to(dtype) for k, v in sd.items()}
    if not layered:
        w.pop("time_text_embed.addition_t_embedding.weight", None)
    m.load_state_dict(w, strict=True)
    return m.to(dtype).eval()


def pack(x):
    """[B, C, F, h, w] -> [B, F*h/2*w/2, C*4]: feature c*4 + py*2 + px (the pipelines' packing)."""
    B, C, F, h, w = x.shape
    x = x.reshape(B, C, F, h // 2, 2, w // 2, 2).permute(0, 2, 3, 5, 1, 4, 6)
    return x.reshape(B, F * (h // 2) * (w // 2), C * 4)


def unpack(y, F, h, w):
    B = y.shape[0]
    y = y.reshape(B, F, h // 2, w // 2, 16, 2, 2).permute(0, 4, 1, 2, 5, 3, 6)
    return y.reshape(B, 16, F, h, w)


def rope_axis(pos, dim):
    """Complex e^{i pos omega_k}, omega_k = 10000^(-2k/dim), as diffusers' rope_params."""
    om = 1.0 / torch.pow(10000.0, torch.arange(0, dim, 2, dtype=torch.float32).div(dim))
    ang = torch.outer(torch.tensor(pos, dtype=torch.float32), om)
    return torch.polar(torch.ones_like(ang), ang)


def sdcpp_freqs(ids):
    """ids: list of (f, h, w) -> complex64 [n, HD/2] with the model's axis split."""
    cols = list(zip(*ids))
    return torch.cat([rope_axis(list(cols[a]), dim) for a, dim in enumerate(AXES)], dim=1)


def sdcpp_ids(F, gh, gw, refs, decrease, n_txt):
    """sd.cpp's gen_qwen_image_ids (see the docstring)."""
    img = [(f, y - gh // 2, x - gw // 2) for f in range(F) for y in range(gh) for x in range(gw)]
    idx = 0 if decrease else 1
    for rgh, rgw in refs:
        if decrease:
            idx -= 1
        img += [(idx, y - rgh // 2, x - rgw // 2) for y in range(rgh) for x in range(rgw)]
        if not decrease:
            idx += 1
    s = max(gh, gw) // 2
    txt = [(s + i, s + i, s + i) for i in range(n_txt)]
    return img, txt


def run(m, x, t, ctx, refs=(), add=None, positions="diffusers"):
    """x [B,16,F,h,w]; refs: list of [B,16,rh,rw]; returns [B,16,F,h,w]."""
    B, _, F, h, w = x.shape
    gh, gw = h // 2, w // 2
    layered = m.config.use_layer3d_rope
    hs = [pack(x)]
    ref_shapes = []
    for r in refs:
        hs.append(pack(r.unsqueeze(2)))
        ref_shapes.append((r.shape[2] // 2, r.shape[3] // 2))
    hs = torch.cat(hs, dim=1)
    if layered:
        shapes = [(1, gh, gw)] * F + [(1, a, b) for a, b in ref_shapes]
    else:
        shapes = [(F, gh, gw)] + [(1, a, b) for a, b in ref_shapes]
    img_shapes = [shapes] * B
    saved = m.pos_embed.forward
    if positions == "sdcpp":
        img_ids, txt_ids = sdcpp_ids(F, gh, gw, ref_shapes, layered, ctx.shape[1])
        fixed = (sdcpp_freqs(img_ids), sdcpp_freqs(txt_ids))
        m.pos_embed.forward = lambda *a, **k: fixed
    try:
        with torch.no_grad():
            y = m(hidden_states=hs, encoder_hidden_states=ctx, timestep=t / 1000.0,
                  img_shapes=img_shapes, additional_t_cond=add, return_dict=False)[0]
    finally:
        m.pos_embed.forward = saved
    return unpack(y[:, : F * gh * gw], F, h, w)


def make_cases(sd, seed):
    g = torch.Generator().manual_seed(seed)

    def r(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64)

    models = {
        "plain": build(sd),
        "layered": build(sd, layered=True),
        "zero": build(sd, zero_cond_t=True),
    }
    ggml = {k: ggml_numerics(build(sd, layered=k == "layered", zero_cond_t=k == "zero"))
            for k in models}
    plain, lay, zero = models["plain"], models["layered"], models["zero"]
    out = {}

    def add_ggml(name, m, x, t, ctx, refs=(), add=None, crop=None):
        key = [k for k, v in models.items() if v is m][0]
        y = run(ggml[key], x, t, ctx, refs, add, "sdcpp")
        if crop:
            y = y[..., : crop[0], : crop[1]]
        ref = out[name + ".out.sdcpp"] if name + ".out.sdcpp" in out else out[name + ".out.diffusers"]
        d = ((y - ref).abs().max() / ref.abs().max()).item()
        print(f"  {name}: ggml numerics move the output by {d:.3g} (max err / max|ref|)")
        out[name + ".out.ggml"] = y

    def put(name, m, x, t, ctx, refs=(), add=None, pos=("diffusers", "sdcpp")):
        out[name + ".x"], out[name + ".t"], out[name + ".ctx"] = x, t, ctx
        for i, rf in enumerate(refs):
            out[f"{name}.ref{i}"] = rf
        if add is not None:
            out[name + ".add"] = add.double()
        res = {}
        for p in pos:
            res[p] = run(m, x, t, ctx, refs, add, p)
            out[f"{name}.out.{p}"] = res[p]
        if len(res) == 2:
            d = (res["diffusers"] - res["sdcpp"]).abs().max().item()
            print(f"  {name}: |diffusers - sdcpp positions| max {d:.3g}")
            if d == 0:  # same rule here: keep one
                del out[name + ".out.sdcpp"]
        print(f"  {name}: out {tuple(x.shape)}, max |out| {res[pos[0]].abs().max().item():.3g}")
        add_ggml(name, m, x, t, ctx, refs, add)

    t2 = torch.tensor([937.5, 250.0], dtype=torch.float64)
    put("plain", plain, r(2, 16, 1, 8, 12), t2, r(2, 7, TXT))
    put("odd", plain, r(1, 16, 1, 10, 6), t2[:1], r(1, 5, TXT))
    # odd latent: sd.cpp pads with zeros to the patch size and crops the output
    xp = r(1, 16, 1, 7, 9)
    pad = torch.zeros(1, 16, 1, 8, 10, dtype=torch.float64)
    pad[..., :7, :9] = xp
    ctxp = r(1, 4, TXT)
    out["pad.x"], out["pad.t"], out["pad.ctx"] = xp, t2[1:], ctxp
    out["pad.out.sdcpp"] = run(plain, pad, t2[1:], ctxp, positions="sdcpp")[..., :7, :9]
    add_ggml("pad", plain, pad, t2[1:], ctxp, crop=(7, 9))
    put("layered", lay, r(2, 16, 3, 6, 8), t2, r(2, 6, TXT), [r(2, 16, 6, 8)],
        torch.tensor([0, 1]))
    put("edit", plain, r(1, 16, 1, 8, 8), t2[:1], r(1, 5, TXT), [r(1, 16, 12, 6)])
    put("zero", zero, r(2, 16, 1, 8, 8), t2, r(2, 5, TXT), [r(2, 16, 12, 6)])
    return {k: v.float().contiguous() for k, v in out.items()}


def full(ckpt_dir):
    """Outputs of the full-width golden checkpoints (float32) at tiny inputs."""
    g = torch.Generator().manual_seed(7)
    out = {}
    cfg = dict(num_layers=2, attention_head_dim=128, num_attention_heads=24,
               joint_attention_dim=3584, axes_dims_rope=(16, 56, 56))
    for name, fname, layered in (("plain", "qwen_image_dit_1001.safetensors", False),
                                 ("layered", "qwen_image_layered_dit_1001.safetensors", True)):
        path = os.path.join(ckpt_dir, fname)
        if not os.path.exists(path):
            print("missing", path)
            continue
        sd = load_file(path)
        m = build(sd, layered=layered, dtype=torch.float32, cfg=cfg)
        F = 2 if layered else 1
        x = torch.randn(1, 16, F, 8, 8, generator=g)
        t = torch.tensor([750.0])
        ctx = torch.randn(1, 6, 3584, generator=g)
        refs = [torch.randn(1, 16, 8, 8, generator=g)] if layered else []
        add = torch.tensor([0]) if layered else None
        global AXES
        saved, AXES = AXES, (16, 56, 56)
        y = run(m, x, t, ctx, refs, add, "sdcpp")
        AXES = saved
        out[name + ".x"], out[name + ".t"], out[name + ".ctx"] = x, t, ctx
        if refs:
            out[name + ".ref0"] = refs[0]
            out[name + ".add"] = add.float()
        out[name + ".out.sdcpp"] = y
        print(f"  full {name}: max |out| {y.abs().max().item():.3g}")
        del m, sd
    return {k: v.float().contiguous() for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--full", metavar="DIR")
    ap.add_argument("--out", default=OUT)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    if a.full:
        save_file(full(a.full), os.path.join(a.out, "full_ref.safetensors"))
        return
    sd = make_weights(1234)
    save_file({k: v.contiguous() for k, v in sd.items()}, os.path.join(a.out, "weights.safetensors"))
    save_file(make_cases(sd, 99), os.path.join(a.out, "cases.safetensors"))


if __name__ == "__main__":
    main()
