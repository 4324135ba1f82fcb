#!/usr/bin/env python3
"""Tiny random ESRGAN (RRDBNet) models and their reference outputs for tests/unit/test_esrgan.c.

Producer: spandrel 0.4.2 (PyPI `spandrel`, the model loader ComfyUI uses; its own RRDBNet and its own
key conversion), float32 on CPU. Nothing here comes from sdc's C code.

Exact command (from the repository root):
    pip install spandrel==0.4.2
    python3 tests/golden/gen_esrgan_ref.py --out tests/data/esrgan
and, for the printed timing only (never committed, ~67 MB):
    python3 tests/golden/gen_esrgan_ref.py --full /tmp/RealESRGAN_x4plus_random.safetensors

Models (spandrel hard-codes the growth channels at 32, as RealESRGAN_x4plus and the anime 6B
variant have, so only the width and depth are shrunk):
  - x4.safetensors: BasicSR/Real-ESRGAN key layout (conv_first, body.N.rdbK.convJ, conv_body,
    conv_up1, conv_up2, conv_hr, conv_last), 2 RRDB blocks, 8 features, F16 weights.
  - x2_old.safetensors: the old ESRGAN layout (model.0, model.1.sub.N.RDBk.convJ.0, model.1.sub.NB,
    model.3, model.5, model.7), one upsampling conv: x2, 1 block, 8 features, F32 weights.
  - x2_unshuffle.safetensors: Real-ESRGAN x2plus style: pixel-unshuffle by 2 in front (conv_first
    takes 12 channels), conv_up1 and conv_up2: x2 overall, 1 block, 8 features, F16 weights.
Each model's weights are drawn at random (seeded), scaled like BasicSR's default init, and
rounded to the stored dtype before the reference runs, so the reference sees the stored values.

Reference data (ref.safetensors), images as float32 [H, W, 3] (outermost first), values 0..255 for
inputs, model-range floats (unclamped) for outputs:
  - in_a: a 50x20 image; in_b: a 21x15 image (odd sizes, for the unshuffle padding).
  - x4.full: x4 model on in_a as one piece; x4.tiled16: the same with sd.cpp's tiling rule, tile 16.
  - x2_old.full: on in_a. x2_unshuffle.full: on in_b (spandrel reflect-pads to even sizes and crops).
  - x2_unshuffle.tiled8: on in_b with tile 8.
  - each of these again with suffix "_sdcpp": the same run in sd.cpp's arithmetic (conv weights and
    conv inputs rounded to F16, as ggml_conv_2d's F16 im2col does; see sdcpp_numerics), which is
    what sdc's upscaler computes by default.
The tiling rule (sd.cpp's process_tiles_2d / sd_tiling_calc_tiles, for an upscaler: overlap factor
0.25, non-circular, tiles blended with smootherstep weights over the overlap) is re-implemented below
from its description; the model runs on each input tile separately (zero padding at tile borders).
"""
import argparse
import os

import numpy as np
import torch
from safetensors.torch import save_file

F32 = np.float32


def rdb_names(prefix, old):
    for r in range(1, 4):
        for c in range(1, 6):
            if old:
                yield f"{prefix}.RDB{r}.conv{c}.0", r, c
            else:
                yield f"{prefix}.rdb{r}.conv{c}", r, c


def make_state(gen, nb, nf, gc, in_ch, n_up, old, dtype):
    """Random RRDBNet state dict (new or old key layout)."""
    sd = {}

    def conv(name, cin, cout, scale):
        w = torch.randn(cout, cin, 3, 3, generator=gen) * (scale * (2.0 / (cin * 9)) ** 0.5)
        b = torch.randn(cout, generator=gen) * 0.05
        sd[name + ".weight"] = w.to(dtype)
        sd[name + ".bias"] = b.to(dtype)

    conv("model.0" if old else "conv_first", in_ch, nf, 1.0)
    for i in range(nb):
        for name, r, c in rdb_names(f"model.1.sub.{i}" if old else f"body.{i}", old):
            cin = nf + (c - 1) * gc
            conv(name, cin, gc if c < 5 else nf, 0.1)
    conv(f"model.1.sub.{nb}" if old else "conv_body", nf, nf, 1.0)
    for u in range(1, n_up + 1):
        conv(f"model.{3 * u}" if old else f"conv_up{u}", nf, nf, 1.0)
    m = 3 * n_up
    conv(f"model.{m + 2}" if old else "conv_hr", nf, nf, 1.0)
    conv(f"model.{m + 4}" if old else "conv_last", nf, 3, 0.5)
    return sd


def spandrel_model(sd):
    from spandrel import ModelLoader
    desc = ModelLoader().load_from_state_dict({k: v.float() for k, v in sd.items()})
    desc.model.eval()
    return desc


def sdcpp_numerics(desc):
    """sd.cpp's arithmetic on the same model: every Conv2d weight held in F16 and its input
    rounded to F16 (ggml_conv_2d's im2col takes the kernel's type), F32 accumulation and
    F32 bias; everything else (leaky ReLU, concat, nearest upsampling, residuals) in F32."""
    for mod in desc.model.modules():
        if isinstance(mod, torch.nn.Conv2d):
            mod.weight.data = mod.weight.data.half().float()
            mod.register_forward_pre_hook(lambda m, inp: (inp[0].half().float(),) + inp[1:])
    return desc


def run(desc, img):
    """img float32 [H, W, 3] in 0..255 -> model output [H*s, W*s, 3] (float32, unclamped)."""
    x = torch.from_numpy(np.ascontiguousarray(img.transpose(2, 0, 1)[None] / F32(255)))
    with torch.no_grad():
        y = desc.model(x.float())
    return y[0].permute(1, 2, 0).numpy().astype(F32)


def calc_tiles(small, tile, factor=0.25):
    """Number of tiles along one side and the overlap factor (float32 as in C)."""
    overlap = int(tile * factor)
    non = tile - overlap
    n = int((small - overlap) / non)  # C truncation
    overshoot = ((n + 1) * non + overlap) % small
    if overshoot != non and overshoot <= n * (tile // 2 - overlap):
        n += 1
    f = F32(0)
    if n > 2:
        f = F32(tile * n - small) / F32(tile * (n - 1))
    if n <= 2:
        if small <= tile:
            n, f = 1, F32(0)
        else:
            n, f = 2, F32(2 * tile - small) / F32(tile)
    return n, f


def smoother(t):
    t = F32(t)
    return t * t * t * (t * (F32(6) * t - F32(15)) + F32(10))


def tiled(desc, img, tile, scale):
    h, w, _ = img.shape
    if tile <= 0 or (w <= tile and h <= tile):
        return run(desc, img)
    _, fx = calc_tiles(w, tile)
    _, fy = calc_tiles(h, tile)
    ov_x = int(F32(tile) * fx)
    ov_y = int(F32(tile) * fy)
    step_x, step_y = tile - ov_x, tile - ov_y
    tw, th = min(tile, w), min(tile, h)
    out = np.zeros((h * scale, w * scale, 3), F32)
    ow, oh = w * scale, h * scale
    y, last_y = 0, False
    while y < h and not last_y:
        dy = 0
        if y + th >= h:
            dy = (y - (h - th)) * scale
            y = h - th
            last_y = True
        x, last_x = 0, False
        while x < w and not last_x:
            dx = 0
            if x + tw >= w:
                dx = (x - (w - tw)) * scale
                x = w - tw
                last_x = True
            t = run(desc, img[y:y + th, x:x + tw])
            oxs, oys = ov_x * scale, ov_y * scale
            X, Y = x * scale, y * scale
            TH, TW = t.shape[0], t.shape[1]
            for iy in range(dy, TH):
                for ix in range(dx, TW):
                    v = t[iy, ix]
                    if oxs > 0 or oys > 0:
                        xf0 = F32(ix - dx) / F32(oxs) if (oxs > 0 and X > 0) else F32(1)
                        xf1 = F32(TW - ix) / F32(oxs) if (oxs > 0 and X < ow - TW) else F32(1)
                        yf0 = F32(iy - dy) / F32(oys) if (oys > 0 and Y > 0) else F32(1)
                        yf1 = F32(TH - iy) / F32(oys) if (oys > 0 and Y < oh - TH) else F32(1)
                        xf = min(xf0, xf1, F32(1))
                        yf = min(yf0, yf1, F32(1))
                        out[Y + iy, X + ix] += v * smoother(yf) * smoother(xf)
                    else:
                        out[Y + iy, X + ix] = v
            x += step_x
        y += step_y
    return out


def make_image(rng, w, h):
    """Smooth colour ramps plus noise, 0..255 integers, float32 [H, W, 3]."""
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([xx * 255.0 / max(w - 1, 1), yy * 255.0 / max(h - 1, 1),
                     128 + 100 * np.sin(xx * 0.4 + yy * 0.3)], -1)
    img = np.clip(base + rng.normal(0, 20, base.shape), 0, 255).round()
    return img.astype(F32)


def full_size(path):
    """RealESRGAN_x4plus-shaped random weights (23 blocks, 64 features, 32 growth), F16."""
    gen = torch.Generator().manual_seed(7)
    sd = make_state(gen, 23, 64, 32, 3, 2, False, torch.float16)
    save_file({k: v.contiguous() for k, v in sd.items()}, path)
    print(f"wrote {path} ({sum(v.numel() for v in sd.values())} weights)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data/esrgan")
    ap.add_argument("--full", help="write only a full-size random RealESRGAN_x4plus here")
    a = ap.parse_args()
    if a.full:
        full_size(a.full)
        return
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(1234)
    in_a = make_image(rng, 50, 20)
    in_b = make_image(rng, 21, 15)
    ref = {"in_a": in_a, "in_b": in_b}
    models = [
        # name, blocks, features, input channels, upsampling convs, old layout, dtype, seed
        ("x4", 2, 8, 3, 2, False, torch.float16, 11),
        ("x2_old", 1, 8, 3, 1, True, torch.float32, 12),
        ("x2_unshuffle", 1, 8, 12, 2, False, torch.float16, 13),
    ]
    for name, nb, nf, in_ch, n_up, old, dtype, seed in models:
        gen = torch.Generator().manual_seed(seed)
        sd = make_state(gen, nb, nf, 32, in_ch, n_up, old, dtype)
        save_file({k: v.contiguous() for k, v in sd.items()},
                  os.path.join(a.out, f"{name}.safetensors"))
        for suffix in ("", "_sdcpp"):
            desc = spandrel_model(sd)
            if suffix:
                sdcpp_numerics(desc)
            scale = desc.scale
            print(f"{name}{suffix}: spandrel scale {scale}, tags {desc.tags}")
            if name == "x4":
                ref["x4.full" + suffix] = run(desc, in_a)
                ref["x4.tiled16" + suffix] = tiled(desc, in_a, 16, scale)
            elif name == "x2_old":
                ref["x2_old.full" + suffix] = run(desc, in_a)
            else:
                ref["x2_unshuffle.full" + suffix] = run(desc, in_b)
                ref["x2_unshuffle.tiled8" + suffix] = tiled(desc, in_b, 8, scale)
    for k, v in ref.items():
        print(f"  {k}: {v.shape} range [{v.min():.3f}, {v.max():.3f}]")
    save_file({k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in ref.items()},
              os.path.join(a.out, "ref.safetensors"), metadata={"producer": "spandrel 0.4.2"})


if __name__ == "__main__":
    main()
