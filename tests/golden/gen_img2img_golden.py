#!/usr/bin/env python3
"""Golden img2img and inpainting runs for tests/unit/test_img2img.c.

Producer: the independent torch reference ../shared/golden/tools/minit2i_ref.py (T5, MiniT2I DiT,
CFG, Euler; its numerics emulate sd.cpp's), with the img2img / inpainting stage written here from
sdc's documented semantics (not from sdc's C code). Model: golden set A, F32 files.

Exact command (from the repository root; torch 2.x CPU, the scalar kernel so that torch.randn is
the generator sdc calls "cpu"):
    ATEN_CPU_CAPABILITY=default python3 tests/golden/gen_img2img_golden.py \
        --golden ../shared/golden --out tests/data/img2img_golden.safetensors

What is reproduced:
  - init image u8 RGB -> planar [-1, 1]: v / 127.5 - 1 (float32).
  - sigmas: MiniT2I's linear schedule [1 - i/n] + [0], then cut by strength as sd.cpp's img2img does:
    t_enc = int(float32(n) * float32(strength)), t_enc = n - 1 if it equals n, and the run starts at
    index n - t_enc - 1 (t_enc + 1 steps).
  - noise = torch.manual_seed(seed); torch.randn(1, 3, H, W) (checked here against the golden rng
    data, cpu_randn_scalar); x_T = 2 * noise; x = (1 - s0) * init + s0 * x_T.
  - Euler steps, CFG: uncond + cfg * (cond - uncond) (uncond = the all-zero text mask).
  - inpainting: keep = 1 - mask[..., 0] / 255 per pixel; after every step, with s the sigma just
    reached, x = keep * ((1 - s) * init + s * x_T) + (1 - keep) * x where keep > 0.
  - image: clamp((x + 1) / 2, 0, 1) -> u8 (minit2i_ref.to_uint8).

Output tensors (shapes outermost first): init_image, mask_image U8 [64, 64, 3]; for run r in
{img2img, inpaint}: r.noise F32 [1, 3, 64, 64], r.sigmas F32 [steps + 1], r.x_first (the state before
the first model call) and r.x_final F32 [1, 3, 64, 64], r.image U8 [64, 64, 3]. The run parameters
are in the metadata (runs, JSON).
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

F32 = np.float32
SIDE = 64
RUNS = [
    dict(name="img2img", prompt="a cat", steps=4, strength=0.5, cfg=6.0, seed=42, mask=False),
    dict(name="inpaint", prompt="a red car on a hill, sunset", steps=10, strength=0.65, cfg=6.0, seed=7,
         mask=True),
]


def init_image():
    """A smooth synthetic picture (no other project's data): waves, a gradient and a disc."""
    y, x = np.mgrid[0:SIDE, 0:SIDE].astype(np.float64)
    r = 128 + 110 * np.sin(x / 7.0) * np.cos(y / 11.0)
    g = 255 * (x + y) / (2 * (SIDE - 1))
    b = np.where((x - 40) ** 2 + (y - 22) ** 2 < 15 ** 2, 230.0, 30.0 + y)
    return np.clip(np.rint(np.stack([r, g, b], -1)), 0, 255).astype(np.uint8)


def mask_image():
    """Gray mask: black (keep) for x < 24, a ramp over x = 24..39 (partial keep), white for x >= 40."""
    col = np.clip((np.arange(SIDE) - 24) * 255 // 15, 0, 255).astype(np.uint8)
    m = np.broadcast_to(col[None, :, None], (SIDE, SIDE, 3))
    return np.ascontiguousarray(m)


def strength_sigmas(sigmas, strength):
    n = len(sigmas) - 1
    t_enc = int(F32(n) * F32(strength))
    if t_enc == n:
        t_enc -= 1
    return sigmas[n - t_enc - 1:]


def run(R, pipe, rng_ref, rc, img, mask):
    _, tmask, ctx = pipe.condition(rc["prompt"])
    model = pipe.denoise_fn(ctx, tmask, rc["cfg"])
    torch.manual_seed(rc["seed"])
    noise = torch.randn(1, 3, SIDE, SIDE, dtype=torch.float32).numpy()
    ref = rng_ref["seed%d_1x4x64x64" % rc["seed"]].reshape(-1)[:noise.size]
    # randn(n) for n % 16 == 0 is a prefix of randn(m > n): the golden rng data must agree exactly
    assert np.array_equal(noise.reshape(-1), ref), "torch.randn is not the scalar kernel: set ATEN_CPU_CAPABILITY"
    init = ((img.transpose(2, 0, 1)[None].astype(F32) / F32(127.5)).astype(F32) - F32(1.0)).astype(F32)
    sig = strength_sigmas(R.minit2i_sigmas(rc["steps"]), rc["strength"])
    x_t = (noise * F32(2.0)).astype(F32)
    x = (F32(F32(1.0) - sig[0]) * init + sig[0] * x_t).astype(F32)
    x_first = x.copy()
    keep = None
    if mask is not None:
        keep = (F32(1.0) - (mask[..., 0].astype(F32) / F32(255.0)).astype(F32)).astype(F32)[None, None]
    for i in range(len(sig) - 1):
        den = model(x, i)
        d = ((x - den) / sig[i]).astype(F32)
        x = (x + d * F32(sig[i + 1] - sig[i])).astype(F32)
        if keep is not None:
            s = sig[i + 1]
            known = (F32(F32(1.0) - s) * init + s * x_t).astype(F32)
            blended = (keep * known + (F32(1.0) - keep) * x).astype(F32)
            x = np.where(keep > 0, blended, x).astype(F32)
    if keep is None:   # the plain sampler of the reference must give the same result
        again = R.sample("euler", model, x_first.copy(), sig, None)
        assert np.array_equal(again, x)
    return dict(noise=noise, sigmas=np.array(sig, F32), x_first=x_first, x_final=x, image=R.to_uint8(x))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--golden", default=os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "golden"))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(a.golden, "tools"))
    import minit2i_ref as R  # noqa: E402
    import st  # noqa: E402
    mdir = os.path.join(a.golden, "minit2i")
    pipe = R.Pipeline(os.path.join(mdir, "minit2i_a_dit_f32.safetensors"),
                      os.path.join(mdir, "minit2i_a_t5_f32.safetensors"))
    rng_ref, _ = st.read(os.path.join(a.golden, "rng", "cpu_randn_scalar.safetensors"))
    img, mask = init_image(), mask_image()
    T = {"init_image": img, "mask_image": mask}
    for rc in RUNS:
        out = run(R, pipe, rng_ref, rc, img, mask if rc["mask"] else None)
        for k, v in out.items():
            T["%s.%s" % (rc["name"], k)] = v
        print("%s: sigmas %s, image mean %.2f" % (rc["name"], out["sigmas"].tolist(), out["image"].mean()))
    meta = dict(runs=json.dumps(RUNS), width=str(SIDE), height=str(SIDE), sampler="euler", rng="cpu",
                model="golden minit2i set A f32, tokenizer minit2i/tokenizer_sdcpp_compat.json semantics",
                generator="tests/golden/gen_img2img_golden.py with minit2i_ref.py (torch %s)" % torch.__version__)
    st.write(a.out, T, meta)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
