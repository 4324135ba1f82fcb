#!/usr/bin/env python3
"""Reference resizes for the hires fix's upscalers (tests/unit/test_hires.c).

Independent implementations:
  * torch.nn.functional.interpolate (align_corners=False) for nearest, nearest-exact,
    bilinear, bicubic and their antialiased variants: "<case>.torch.<mode>";
  * a double-precision numpy transcription of the rule sd.cpp states for its tensor
    interpolate (src/core/tensor.hpp, commit 97d29908: sample at (dst+0.5)*in/out-0.5,
    taps clamped to the edge, antialias widens the filter by max(1, in/out) and
    normalises the weights; Lanczos-3 always normalised): "<case>.rule.<mode>".
The script checks that the two agree wherever sd.cpp's rule and torch coincide (all
modes but the antialiased ones, where torch drops the taps outside the image and sd.cpp
clamps them to the edge; bilinear antialias agrees when upscaling; torch has no Lanczos)
and prints the distances. The C test compares with torch where they agree and
with the rule elsewhere.

Input: torch.manual_seed(5); x = randn(4, 6, 5) (channels, height, width), float32.
Re-run: /usr/bin/python3 tests/golden/gen_hires_ref.py tests/data/hires/resize_ref.safetensors
"""
import math
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.torch import save_file

SIZES = [(12, 10), (13, 11), (4, 3), (6, 5)]  # (out_h, out_w): 2x, odd up, down, same
MODES = ["nearest", "nearest-exact", "bilinear", "bicubic", "bilinear_aa", "bicubic_aa", "lanczos"]


def weight(mode, x):
    x = abs(x)
    if mode == "bilinear":
        return 1.0 - x if x < 1.0 else 0.0
    if mode == "bicubic":
        a = -0.75
        if x <= 1.0:
            return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
        if x < 2.0:
            return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a
        return 0.0
    if x >= 3.0:
        return 0.0
    if x < 1e-12:
        return 1.0
    px = math.pi * x
    return math.sin(px) / px * math.sin(px / 3.0) / (px / 3.0)


def axis_matrix(n_in, n_out, mode, aa):
    """M[out, in]: the weights sd.cpp's rule gives."""
    m = np.zeros((n_out, n_in))
    scale = n_in / n_out
    if mode == "nearest":
        for o in range(n_out):
            m[o, min(o * n_in // n_out, n_in - 1)] = 1.0
        return m
    if mode == "nearest-exact":
        for o in range(n_out):
            m[o, min(max(int(math.floor((o + 0.5) * scale)), 0), n_in - 1)] = 1.0
        return m
    fs = max(1.0, scale) if aa else 1.0
    radius = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}[mode]
    for o in range(n_out):
        c = (o + 0.5) * scale - 0.5
        row = np.zeros(n_in)
        for i in range(math.ceil(c - radius * fs), math.floor(c + radius * fs) + 1):
            row[min(max(i, 0), n_in - 1)] += weight(mode, (c - i) / fs)
        if (aa or mode == "lanczos") and abs(row.sum()) > 1e-12:
            row /= row.sum()
        m[o] = row
    return m


def rule(x, oh, ow, mode):
    aa = mode.endswith("_aa")
    base = mode[:-3] if aa else mode
    my = axis_matrix(x.shape[1], oh, base, aa)
    mx = axis_matrix(x.shape[2], ow, base, aa)
    return np.einsum("oh,chw,pw->cop", my, x.astype(np.float64), mx)


def torch_ref(x, oh, ow, mode):
    t = x[None]
    if mode in ("nearest", "nearest-exact"):
        return F.interpolate(t, size=(oh, ow), mode=mode)[0]
    aa = mode.endswith("_aa")
    return F.interpolate(t, size=(oh, ow), mode=mode[:-3] if aa else mode, align_corners=False,
                         antialias=aa)[0]


def torch_agrees(mode, oh, ow):
    """torch drops out-of-range taps and renormalises when antialiasing; sd.cpp clamps
    them to the edge. That is the same for bilinear upscaling only."""
    if not mode.endswith("_aa") or (oh, ow) == (6, 5):
        return True
    return mode == "bilinear_aa" and oh >= 6 and ow >= 5


def main():
    out = sys.argv[1]
    torch.manual_seed(5)
    x = torch.randn(4, 6, 5)
    tensors = {"input": x.contiguous()}
    for oh, ow in SIZES:
        case = f"{oh}x{ow}"
        for mode in MODES:
            r = rule(x.numpy(), oh, ow, mode)
            tensors[f"{case}.rule.{mode}"] = torch.from_numpy(r.astype(np.float32))
            if mode == "lanczos":
                continue
            t = torch_ref(x, oh, ow, mode)
            tensors[f"{case}.torch.{mode}"] = t.contiguous()
            d = float(np.abs(t.double().numpy() - r).max())
            agree = torch_agrees(mode, oh, ow)
            print(f"{case:6s} {mode:14s} torch vs sd.cpp rule: max abs {d:.3g}"
                  + ("" if agree else " (differs by design: edge taps)"))
            if agree:
                assert d < 1e-5, (case, mode, d)
    save_file(tensors, out, metadata={"generator": "tests/golden/gen_hires_ref.py",
                                      "torch": torch.__version__})


if __name__ == "__main__":
    main()
