#!/usr/bin/python3
"""Runs the Qwen-Image-Edit golden cases (tests/data/qwen_edit/cases.json) with an sd-cli binary built elsewhere
and records what it did (runs.json: commands, md5s, timings; logs/; png/). It does not build sd.cpp.

    python3 tests/golden/run_qwen_edit_sdcpp.py --sd-cli PATH --ckpt-dir DIR [--only e1,e2]

The checkpoints are those of ../shared/golden/tools/make_qwen_image_random.py weights --seed 1001 plus
tests/golden/make_qwen_edit_random.py weights --seed 1001, all in DIR.
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "data", "qwen_edit"))


def log_lines(log):
    """The log lines that say what sd-cli detected and did, and how long each part took."""
    return [l for l in log.splitlines() if "image_pad" not in l and not l.startswith(" ") and re.search(
        r"Version:|num_layers|zero_cond_t|vision|EDIT mode|resize|Pipeline|completed|taking", l)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sd-cli", required=True)
    ap.add_argument("--ckpt-dir", required=True)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    cases = json.load(open(os.path.join(DATA, "cases.json")))
    out_path = os.path.join(DATA, "runs.json")
    old = json.load(open(out_path))["runs"] if os.path.exists(out_path) else []
    runs = {r["id"]: r for r in old}
    os.makedirs(os.path.join(DATA, "png"), exist_ok=True)
    os.makedirs(os.path.join(DATA, "logs"), exist_ok=True)
    only = [x for x in a.only.split(",") if x]
    for c in cases["cases"]:
        if only and c["id"] not in only:
            continue
        png = "png/%s.png" % c["id"]
        args = ["--diffusion-model", os.path.join(a.ckpt_dir, c["dit"]), "--llm", os.path.join(a.ckpt_dir, c["llm"]),
                "--vae", os.path.join(a.ckpt_dir, c["vae"]), "-p", c["prompt"], "-W", str(c["W"]), "-H", str(c["H"]),
                "--steps", str(c["steps"]), "--cfg-scale", str(c["cfg"]), "-s", str(c["seed"]),
                "--sampling-method", c["sampler"], "--flow-shift", str(c["flow_shift"]), "-t", "2", "-v",
                "-o", png]
        if c.get("negative_prompt"):
            args += ["-n", c["negative_prompt"]]
        if c.get("img_cfg") is not None:
            args += ["--img-cfg-scale", str(c["img_cfg"])]
        if c.get("ref_image_args"):
            args += ["--ref-image-args", c["ref_image_args"]]
        for r in c["ref_images"]:
            args += ["-r", r]
        t0 = time.time()
        p = subprocess.run([a.sd_cli] + args, cwd=DATA, capture_output=True, text=True)
        dt = time.time() - t0
        log = p.stdout + p.stderr
        open(os.path.join(DATA, "logs", c["id"] + ".log"), "w").write(log)
        rec = dict(c)
        rec.update({"rc": p.returncode, "seconds": round(dt, 1),
                    "command": "sd-cli " + " ".join(json.dumps(x) if " " in x else x for x in args).replace(
                        a.ckpt_dir.rstrip("/") + "/", "CKPT/"),
                    "log_lines": log_lines(log)})
        if p.returncode == 0:
            rec["png_md5"] = hashlib.md5(open(os.path.join(DATA, png), "rb").read()).hexdigest()
        runs[c["id"]] = rec
        print(c["id"], p.returncode, "%.0fs" % dt, flush=True)
    json.dump({"sd_cpp": cases["sd_cpp"], "runs": [runs[k] for k in sorted(runs)]},
              open(out_path, "w"), indent=1, ensure_ascii=False)


if __name__ == "__main__":
    main()
