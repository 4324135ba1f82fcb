#!/usr/bin/env python3
"""Check that sdc runs the demo model exactly as tools/demo/train.py's torch model does.

Exports a model (random weights with every path non-zero, or a trained checkpoint's EMA weights), runs
`sdc` for one Euler step (sigmas [1, 0]: the output is the DiT's x0 prediction from x = 2 * noise, with
CFG combining cond and uncond) and compares its PNG with the torch forward on the same noise
(torch.randn after manual_seed(seed), sdc's --rng cpu). Also compares the tokenizer's ids with the
Hugging Face `tokenizers` library reading the same tokenizer.json.

    python3 tools/demo/check_sdc.py --sdc build/sdc [--ckpt CKPT | --dir models/demo]
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data as md  # noqa: E402
import train as T  # noqa: E402


def read_png(path):
    import zlib
    data = open(path, "rb").read()
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        tag = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        if tag == b"IHDR":
            w, h, depth, ctype = int.from_bytes(body[:4], "big"), int.from_bytes(body[4:8], "big"), body[8], body[9]
            assert depth == 8 and ctype in (2, 6), "RGB(A) 8-bit PNG expected"
            ch = 3 if ctype == 2 else 4
        elif tag == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * ch
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int32)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int32)
        cur = np.zeros(stride, np.int32)
        for x in range(stride):
            a = cur[x - ch] if x >= ch else 0
            b, c = prev[x], (prev[x - ch] if x >= ch else 0)
            if f == 0:
                p = 0
            elif f == 1:
                p = a
            elif f == 2:
                p = b
            elif f == 3:
                p = (a + b) // 2
            else:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                p = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
            cur[x] = (line[x] + p) & 255
        out[y] = cur
        prev = cur
    return out.reshape(h, w, ch)[:, :, :3]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdc", default="build/sdc")
    ap.add_argument("--ckpt", help="trained checkpoint (EMA weights); default: random weights")
    ap.add_argument("--txt-depth", type=int, default=0)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    torch.manual_seed(0)
    if a.ckpt:
        ck = torch.load(a.ckpt, weights_only=False)
        targs = T.parse_args([])
        for k, v in ck["args"].items():
            setattr(targs, k, v)
        model = T.Demo(targs)
        model.load_state_dict(ck["ema"])
    else:
        targs = T.parse_args(["--txt-depth", str(a.txt_depth)])
        model = T.Demo(targs)
        g = torch.Generator().manual_seed(3)
        model.t5.init(g)
        model.dit.init(g, zero_out=False)
        if a.txt_depth == 0:  # the trained configuration: the text stream's updates are zero
            with torch.no_grad():
                for k, q in model.dit.p.items():
                    if "txt_attn_proj" in k or "txt_mlp__w2" in k:
                        q.zero_()
            # a smaller final layer keeps the random output mostly inside [-1, 1] (not clamped)
            model.dit.w("final_layer.linear.weight").data *= 0.3
    # the F16 file is what sdc reads: compare against the torch model with the same rounded weights
    with torch.no_grad():
        for mod in (model.dit, model.t5):
            for k in mod.names:
                t = mod.w(k)
                if t.dim() >= 2 and not k.endswith("mask_token") and "relative_attention_bias" not in k:
                    t.copy_(t.half().float())
    tmp = tempfile.mkdtemp(prefix="sdc_demo_check_")
    T.export(model, tmp)
    prompts = ["a small red circle on the left on a blue background", "a large green triangle at the top on a white background",
               "A  Purple square  on a yellow background", "a zebra on a black and orange striped background"]
    # tokenizer: ours vs the Hugging Face library on the same file
    try:
        from tokenizers import Tokenizer as HFT
        hf = HFT.from_file(os.path.join(tmp, "tokenizer.json"))
        for p in prompts:
            ours, theirs = model.tok.encode(p), hf.encode(p).ids
            print("tokens %-60r ours %s hf %s" % (p, ours, "same" if ours == theirs else theirs))
            if ours != theirs:
                return 1
    except ImportError:
        print("tokenizers not installed: tokenizer comparison skipped")
    worst = 0
    for p, cfg in ((prompts[0], 1.0), (prompts[1], 4.0), (prompts[2], 2.5)):
        out = os.path.join(tmp, "o.png")
        cmd = [a.sdc, "--diffusion-model", os.path.join(tmp, "minit2i.safetensors"), "--t5xxl",
               os.path.join(tmp, "t5.safetensors"), "-p", p, "-W", "64", "-H", "64", "--steps", "1",
               "--cfg-scale", str(cfg), "-s", str(a.seed), "--sampling-method", "euler", "--rng", "cpu", "-t", "2",
               "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(r.stdout, r.stderr)
            return 1
        got = read_png(out).astype(np.int32)
        g = torch.Generator().manual_seed(a.seed)
        x = 2 * torch.randn(1, 3, 64, 64, generator=g)
        with torch.no_grad():
            ctx, n = model.encode([p])
            cond = model.dit(x, model.dit.text_input(ctx, n))  # the complete graph
            unc = model.dit(x, model.dit.text_input(ctx, torch.zeros_like(n)))
            fast = model.denoise(x, ctx, n)
            d = unc + cfg * (cond - unc)
        ref = ((d[0].clamp(-1, 1) + 1) / 2 * 255 + 0.5).floor().clamp(0, 255).permute(1, 2, 0).numpy().astype(np.int32)
        diff = np.abs(got - ref)
        clip = float(((d.abs() >= 1).float().mean()))
        print("sdc vs torch, %r cfg %.1f: max |diff| %d/255, mean %.3f, %.0f%% of values clamped; "
              "fast path vs full graph %.2e" % (p, cfg, diff.max(), diff.mean(), 100 * clip,
                                                float((fast - cond).abs().max())))
        worst = max(worst, int(diff.max()))
    print("worst %d/255" % worst)
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    sys.exit(main())
