#!/usr/bin/python3
"""Runs stable-diffusion.cpp's sd-cli for the inpainting cases of tests/unit/test_sd_inpaint_sdcpp.c and writes
tests/data/sd_inpaint/png/<id>.png and runs.json (the exact command, parameters, rc, seconds, md5 of each PNG).

    python3 tests/golden/run_sd_inpaint_sdcpp.py SD_CLI CKPT_DIR [ID ...]

SD_CLI: an sd-cli binary (stable-diffusion.cpp 97d29908, CPU build; how it was built: tests/data/sd_inpaint/README.md);
CKPT_DIR: a folder with the checkpoints of FILES (tests/golden/make_sd_reduced.py sd1, sd1inpaint, sd2inpaint,
sdxlinpaint with their default seeds). The inputs init.png and mask.png come from
tests/golden/gen_sd_inpaint_inputs.py. Needs nothing but the Python standard library.
"""
import hashlib
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "sd_inpaint")
FILES = {"sd1": "sd1_reduced_1101.safetensors", "sd1inpaint": "sd1inpaint_reduced_1109.safetensors",
         "sd2inpaint": "sd2inpaint_reduced_2009.safetensors", "sdxlinpaint": "sdxlinpaint_reduced_3009.safetensors"}
COMMON = dict(W=128, H=128, steps=4, cfg=7.0, seed=42, scheduler="discrete", negative_prompt="")
RUNS = [
    # 9-channel inpainting UNet
    dict(id="i01", model="sd1inpaint", prompt="a lovely cat", sampler="euler_a", rng="cuda", strength=0.75,
         init="init.png", mask="mask.png"),
    dict(id="i02", model="sd1inpaint", prompt="a red car on a hill, sunset", negative_prompt="blurry",
         sampler="euler", rng="cpu", strength=1.0, init="init.png", mask="mask.png"),
    dict(id="i03", model="sd1inpaint", prompt="a lovely cat", sampler="euler_a", rng="cuda", strength=0.75,
         init="", mask=""),
    dict(id="i04", model="sd1inpaint", prompt="a lovely cat", sampler="euler", rng="cuda", strength=0.8,
         init="init.png", mask=""),
    dict(id="s01", model="sd2inpaint", prompt="a lovely cat", sampler="euler_a", rng="cuda", strength=1.0,
         init="init.png", mask="mask.png"),
    dict(id="x01", model="sdxlinpaint", prompt="a lovely cat", sampler="euler", rng="cpu", strength=0.75,
         init="init.png", mask="mask.png"),
    # plain 4-channel UNet with a mask: sd.cpp's latent blend
    dict(id="p01", model="sd1", prompt="a lovely cat", sampler="euler_a", rng="cuda", strength=0.75,
         init="init.png", mask="mask.png"),
    dict(id="p02", model="sd1", prompt="a red car on a hill, sunset", negative_prompt="blurry",
         sampler="euler", rng="cpu", strength=1.0, init="init.png", mask="mask.png"),
]


def command(r):
    c = ["SD_CLI", "-m", FILES[r["model"]], "-p", r["prompt"], "-W", str(r["W"]), "-H", str(r["H"]),
         "--steps", str(r["steps"]), "--cfg-scale", "%g" % r["cfg"], "-s", str(r["seed"]),
         "--sampling-method", r["sampler"], "--scheduler", r["scheduler"], "--rng", r["rng"], "-t", "2"]
    if r["negative_prompt"]:
        c += ["-n", r["negative_prompt"]]
    if r["init"]:
        c += ["-i", "INPUTS/" + r["init"], "--strength", "%g" % r["strength"]]
    if r["mask"]:
        c += ["--mask", "INPUTS/" + r["mask"]]
    return c + ["-o", "png/%s.png" % r["id"]]


def main():
    cli, ckpt = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    only = set(sys.argv[3:])
    os.makedirs(os.path.join(DATA, "png"), exist_ok=True)
    path = os.path.join(DATA, "runs.json")
    old = {r["id"]: r for r in json.load(open(path))["runs"]} if os.path.exists(path) else {}
    out = []
    for r in RUNS:
        r = {**COMMON, **r}
        if only and r["id"] not in only:
            out.append(old.get(r["id"], r))
            continue
        cmd = command(r)
        r["command"] = " ".join("'%s'" % a if (" " in a or "," in a) else a for a in cmd)
        argv = [cli if a == "SD_CLI" else a.replace("INPUTS", os.path.abspath(DATA)) for a in cmd]
        argv = [os.path.join(ckpt, a) if a in FILES.values() else a for a in argv]
        argv = [os.path.join(DATA, a) if a.startswith("png/") else a for a in argv]
        t0 = time.time()
        p = subprocess.run(argv, capture_output=True, text=True)
        r["rc"], r["seconds"] = p.returncode, round(time.time() - t0, 1)
        png = os.path.join(DATA, "png", r["id"] + ".png")
        r["md5"] = hashlib.md5(open(png, "rb").read()).hexdigest() if p.returncode == 0 else ""
        print(r["id"], r["rc"], r["seconds"], r["md5"], flush=True)
        if p.returncode:
            print(p.stderr[-3000:])
        out.append(r)
    json.dump({"runs": out}, open(path, "w"), indent=1)


if __name__ == "__main__":
    main()
