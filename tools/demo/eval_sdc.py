#!/usr/bin/env python3
"""Score sdc's pictures of held-back demo captions with tools/demo/train.py's quick scorer (border
median -> background, pixels far from it -> shape, median -> shape colour, bounding-box fill ->
shape). A rough check while choosing the sampler/steps/CFG; the project's quality test is the
authority.

    python3 tools/demo/eval_sdc.py --sdc build/sdc --dir models/demo -n 48 --steps 20 --cfg 4
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data as md  # noqa: E402
from check_sdc import read_png  # noqa: E402
from train import quick_score  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sdc", default="build/sdc")
    ap.add_argument("--dir", default="models/demo")
    ap.add_argument("--gguf", help="score this GGUF (-m) instead of the safetensors in --dir")
    ap.add_argument("-n", type=int, default=48)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--cfg", type=float, default=4.0)
    ap.add_argument("--sampler", default="euler")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--grid", help="write the pictures as one PNG")
    a = ap.parse_args()
    caps = md.captions("heldback")
    caps = [caps[i] for i in np.random.default_rng(5).choice(len(caps), min(a.n, len(caps)), replace=False)]
    tmp = tempfile.mkdtemp(prefix="sdc_demo_eval_")
    ok = np.zeros(4)
    imgs = []
    for k, c in enumerate(caps):
        out = os.path.join(tmp, "%03d.png" % k)
        model = ["-m", a.gguf] if a.gguf else ["--diffusion-model", os.path.join(a.dir, "minit2i.safetensors"),
                                              "--t5xxl", os.path.join(a.dir, "t5.safetensors")]
        cmd = [a.sdc] + model + ["-p", c, "-W", "64", "-H", "64", "--steps", str(a.steps), "--cfg-scale",
                                 str(a.cfg), "--sampling-method", a.sampler, "-s", str(a.seed + k), "-t", "1",
                                 "-o", out]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            print(r.stderr)
            return 1
        img = read_png(out)
        imgs.append(img)
        sp = md.parse_caption(c)
        ci, si, bi = quick_score(img)
        hit = [ci == sp["colour"], si == sp["shape"], bi == sp["bg"]]
        ok += hit + [all(hit)]
    ok /= len(caps)
    print("%s %d steps cfg %.1f, %d held-back prompts: colour %.3f shape %.3f background %.3f all three %.3f"
          % (a.sampler, a.steps, a.cfg, len(caps), *ok))
    if a.grid:
        n = len(imgs) // 8 * 8
        md.write_png(a.grid, np.concatenate([np.concatenate(imgs[r:r + 8], 1) for r in range(0, n, 8)], 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
