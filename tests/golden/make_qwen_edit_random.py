#!/usr/bin/python3
"""Deterministic random-weight checkpoints for Qwen-Image-Edit (2509 and 2511) in the real tensor layouts, built on
the shared golden generator ../shared/golden/tools/make_qwen_image_random.py (imported, not copied: same random
stream per tensor name, same init rules, same file writer conventions).

    /usr/bin/python3 tests/golden/make_qwen_edit_random.py weights --seed 1001 --out-dir DIR [--only PART,...]
    /usr/bin/python3 tests/golden/make_qwen_edit_random.py list
    /usr/bin/python3 tests/golden/make_qwen_edit_random.py inputs --out-dir DIR   # the -r test images

Parts (file name = part + "_" + seed + ".safetensors", F16, little endian, sorted names):
  qwen25vl_vl_llm     the shared qwen25vl_llm tensors (identical values at the same seed) + a Qwen2.5-VL vision tower
                      under ComfyUI's top-level `visual.*` names (qwen_2.5_vl_7b.safetensors): patch_embed.proj
                      Conv3d [1280, 3, 2, 14, 14] (no bias), 8 blocks (real: 32) of hidden 1280 (16 heads x 80),
                      RMSNorm norm1/norm2, attn.qkv [3840, 1280] + bias, attn.proj + bias, SwiGLU mlp gate/up
                      [3420, 1280] + bias, down [1280, 3420] + bias; merger ln_q [1280], mlp.0 [5120, 5120] + bias,
                      mlp.2 [3584, 5120] + bias. 8 blocks so that block 7 (sd.cpp's fullatt_block_indexes 7, 15, 23,
                      31) attends over the whole image and blocks 0..6 within 112 px windows.
  qwen_image_edit_2511_dit  the shared qwen_image_dit tensors (identical values) + `__index_timestep_zero__` F16 [1]
                      = 0, the marker by which sd.cpp (and sdc) switch on zero_cond_t (Qwen-Image-Edit-2511).
Plain Edit / Edit-2509 use the shared qwen_image_dit file as it is: sd.cpp does not tell Edit from plain Qwen-Image
by its weights (Edit mode = an LLM with vision weights + -r images).

Vision init: weights N(0, 1/fan_in) as the shared rule (fan_in = prod(shape[1:]), the Conv3d counts all 1176 inputs),
biases N(0, 0.02^2), RMSNorm weights N(1, 0.1^2); merger mlp.2 gain 2 so that the image tokens reach the LLM with a
size like the token embeddings (std 1).

inputs writes ref_e1.png (240x180 RGB) and ref_e2b.png (160x200 RGB): smooth gradients with a few shapes, numpy only
(zlib PNG writer), deterministic.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SHARED_TOOLS = os.environ.get("SDC_GOLDEN_TOOLS",
                              os.path.normpath(os.path.join(HERE, "..", "..", "..", "shared", "golden", "tools")))
sys.path.insert(0, SHARED_TOOLS)
import make_qwen_image_random as base  # noqa: E402

V_HID, V_HEADS, V_FF, V_BLOCKS, V_OUT, V_PATCH, V_TPATCH, V_MERGE = 1280, 16, 3420, 8, 3584, 14, 2, 2
PARTS = ["qwen25vl_vl_llm", "qwen_image_edit_2511_dit"]
VISION_GAIN = {"visual.merger.mlp.2.weight": 2.0}


def vision_tensors():
    t = []

    def add(n, *shape):
        t.append((n, list(shape)))

    def lin(n, o, i):
        add(n + ".weight", o, i), add(n + ".bias", o)

    add("visual.patch_embed.proj.weight", V_HID, 3, V_TPATCH, V_PATCH, V_PATCH)
    for b in range(V_BLOCKS):
        p = "visual.blocks.%d." % b
        add(p + "norm1.weight", V_HID), add(p + "norm2.weight", V_HID)
        lin(p + "attn.qkv", 3 * V_HID, V_HID), lin(p + "attn.proj", V_HID, V_HID)
        lin(p + "mlp.gate_proj", V_FF, V_HID), lin(p + "mlp.up_proj", V_FF, V_HID)
        lin(p + "mlp.down_proj", V_HID, V_FF)
    m = V_HID * V_MERGE * V_MERGE
    add("visual.merger.ln_q.weight", V_HID)
    lin("visual.merger.mlp.0", m, m), lin("visual.merger.mlp.2", V_OUT, m)
    return t


def part_tensors(part):
    if part == "qwen25vl_vl_llm":
        items = base.part_tensors("qwen25vl_llm") + vision_tensors()
    elif part == "qwen_image_edit_2511_dit":
        items = base.part_tensors("qwen_image_dit") + [("__index_timestep_zero__", [1])]
    else:
        sys.exit("unknown part %s (one of %s)" % (part, ",".join(PARTS)))
    items.sort(key=lambda x: x[0])
    return items


def init_rule(name, shape):
    if not name.startswith("visual."):
        return base.init_rule(name, shape)
    if name.endswith(".bias"):
        return 0.0, 0.02
    if len(shape) == 1:
        return 1.0, 0.1
    return 0.0, VISION_GAIN.get(name, 1.0) / float(np.sqrt(np.prod(shape[1:])))


def tensor_chunks(seed, name, shape):
    if name == "__index_timestep_zero__":
        yield np.zeros(int(np.prod(shape)), "<f2").tobytes()
        return
    if not name.startswith("visual."):
        yield from base.tensor_chunks(seed, name, shape)
        return
    # the shared stream (same seeding by name), with the vision init rule
    mean, std = init_rule(name, shape)
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(name.encode())])))
    z = g.standard_normal(int(np.prod(shape)), dtype=np.float32)
    z *= np.float32(std)
    z += np.float32(mean)
    yield z.astype("<f2").tobytes()


def write_part(path, part, seed):
    import hashlib
    items = part_tensors(part)
    header, off = {"__metadata__": {"format": "pt", "generator": "make_qwen_edit_random.py", "seed": str(seed),
                                    "part": part}}, 0
    for name, shape in items:
        nb = int(np.prod(shape)) * 2
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    hj = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((8 - len(hj) % 8) % 8)
    md5 = hashlib.md5()
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        for chunk in (struct.pack("<Q", len(hj)), hj):
            f.write(chunk), md5.update(chunk)
        for name, shape in items:
            for raw in tensor_chunks(seed, name, shape):
                f.write(raw), md5.update(raw)
    os.replace(tmp, path)
    return md5.hexdigest(), os.path.getsize(path)


def cmd_weights(a):
    os.makedirs(a.out_dir, exist_ok=True)
    for p in ([p for p in a.only.split(",") if p] if a.only else PARTS):
        path = os.path.join(a.out_dir, "%s_%d.safetensors" % (p, a.seed))
        md5, size = write_part(path, p, a.seed)
        print(json.dumps({"part": p, "path": path, "seed": a.seed, "bytes": size, "md5": md5,
                          "params": sum(int(np.prod(s)) for _, s in part_tensors(p))}), flush=True)


def cmd_list(a):
    for p in PARTS:
        for name, shape in part_tensors(p):
            mean, std = init_rule(name, shape)
            print("%s\t%s\tF16\t%s\t%.3g+%.4g*N(0,1)" % (p, name, shape, mean, std))


def write_png(path, img):
    h, w, c = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    color = {3: 2, 4: 6}[c]
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, color, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def test_image(w, h, variant):
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.zeros((h, w, 3))
    img[..., 0] = 0.2 + 0.6 * x / w
    img[..., 1] = 0.3 + 0.5 * y / h
    img[..., 2] = 0.5 + 0.3 * np.sin((x + 2 * y) / (17.0 + 5 * variant))
    cx, cy, r = w * (0.35 + 0.2 * variant), h * 0.45, min(w, h) * 0.22
    disk = (x - cx) ** 2 + (y - cy) ** 2 < r * r
    img[disk] = [0.9, 0.15, 0.1] if variant == 0 else [0.1, 0.2, 0.85]
    box = (abs(x - w * 0.72) < w * 0.12) & (abs(y - h * 0.7) < h * 0.15)
    img[box] = [0.15, 0.75, 0.2]
    return np.clip(np.round(img * 255), 0, 255).astype(np.uint8)


def cmd_inputs(a):
    os.makedirs(a.out_dir, exist_ok=True)
    write_png(os.path.join(a.out_dir, "ref_e1.png"), test_image(240, 180, 0))
    write_png(os.path.join(a.out_dir, "ref_e2b.png"), test_image(160, 200, 1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("weights")
    w.add_argument("--seed", type=int, default=1001)
    w.add_argument("--out-dir", required=True)
    w.add_argument("--only", default="", help="comma-separated parts: " + ",".join(PARTS))
    sub.add_parser("list")
    i = sub.add_parser("inputs")
    i.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    {"weights": cmd_weights, "list": cmd_list, "inputs": cmd_inputs}[a.cmd](a)


if __name__ == "__main__":
    main()
