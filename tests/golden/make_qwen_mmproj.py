#!/usr/bin/env python3
"""The Edit golden LLM's vision tower as llama.cpp's mmproj GGUF, and its language model alone, for the
`--llm LLM --llm_vision MMPROJ` way sd.cpp's docs run Qwen-Image-Edit-2509.

    make_qwen_mmproj.py --ckpt-dir DIR      # reads DIR/qwen25vl_vl_llm_1001.safetensors (make_qwen_edit_random.py)
        writes DIR/qwen25vl_mmproj_1001.gguf       the visual.* tensors under llama.cpp's clip names, F16
               DIR/qwen25vl_llm_only_1001.safetensors  every other tensor, bytes unchanged

The mmproj layout (llama.cpp's convert_hf_to_gguf.py for Qwen2.5-VL, as sd.cpp's name_conversion.cpp reads it):
  visual.patch_embed.proj.weight [1280, 3, 2, 14, 14] -> v.patch_embd.weight (frame 0) and v.patch_embd.weight.1
                                                         (frame 1), [1280, 3, 14, 14] each
  visual.blocks.N.attn.qkv.{weight,bias}              -> v.blk.N.attn_q / attn_k / attn_v (rows 0-1279, 1280-2559,
                                                         2560-3839)
  visual.blocks.N.attn.proj / mlp.gate_proj / mlp.up_proj / mlp.down_proj / norm1 / norm2
                                                      -> v.blk.N.attn_out / ffn_gate / ffn_up / ffn_down / ln1 / ln2
  visual.merger.ln_q / mlp.0 / mlp.2                  -> v.post_ln / mm.0 / mm.2
Values are the safetensors' F16 bits, split or renamed only, so sdc must give test_qwen_edit_sdcpp's e1 image from
them (its e1v case). Stdlib + numpy.
"""
import argparse
import json
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "qwen"))
from make_fullsize_gguf import V_BOOL, V_STR, g_kv, g_str, pad_to  # noqa: E402

GGML_F16 = 1
RENAME = {"attn.proj": "attn_out", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
          "mlp.down_proj": "ffn_down", "norm1": "ln1", "norm2": "ln2"}


def read_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return json.loads(f.read(n)), 8 + n


def load(path, hdr, base, name):
    info = hdr[name]
    assert info["dtype"] == "F16", (name, info["dtype"])
    a, b = info["data_offsets"]
    with open(path, "rb") as f:
        f.seek(base + a)
        return np.frombuffer(f.read(b - a), "<f2").reshape(info["shape"])


def mmproj_tensors(path, hdr, base):
    """[(gguf name, F16 array in torch order)] in a fixed order."""
    out = []
    w = load(path, hdr, base, "visual.patch_embed.proj.weight")
    out += [("v.patch_embd.weight", w[:, :, 0]), ("v.patch_embd.weight.1", w[:, :, 1])]
    n = 0
    while "visual.blocks.%d.norm1.weight" % n in hdr:
        p, q = "visual.blocks.%d." % n, "v.blk.%d." % n
        for suf in ("weight", "bias"):
            qkv = load(path, hdr, base, p + "attn.qkv." + suf)
            h = qkv.shape[0] // 3
            out += [(q + "attn_%s.%s" % (x, suf), qkv[i * h:(i + 1) * h]) for i, x in enumerate("qkv")]
        for src, dst in RENAME.items():
            for suf in ("weight", "bias"):
                if p + src + "." + suf in hdr:
                    out.append((q + dst + "." + suf, load(path, hdr, base, p + src + "." + suf)))
        n += 1
    for src, dst in (("visual.merger.ln_q", "v.post_ln"), ("visual.merger.mlp.0", "mm.0"),
                     ("visual.merger.mlp.2", "mm.2")):
        for suf in ("weight", "bias"):
            if src + "." + suf in hdr:
                out.append((dst + "." + suf, load(path, hdr, base, src + "." + suf)))
    return out, n


def write_mmproj(path, tensors, blocks):
    kvs = [g_kv("general.architecture", V_STR, "clip"), g_kv("clip.has_vision_encoder", V_BOOL, True),
           g_kv("clip.projector_type", V_STR, "qwen2.5vl_merger"),
           g_kv("general.description", V_STR, "sdc test: random Qwen2.5-VL vision tower, %d blocks" % blocks)]
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    off = 0
    for name, a in tensors:
        ne = list(reversed(a.shape))
        head += g_str(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
        head += struct.pack("<IQ", GGML_F16, off)
        off = pad_to(off + a.nbytes)
    head += b"\0" * (pad_to(len(head)) - len(head))
    with open(path + ".part", "wb") as f:
        f.write(head)
        for _, a in tensors:
            b = np.ascontiguousarray(a).tobytes()
            f.write(b + b"\0" * (pad_to(len(b)) - len(b)))
    os.replace(path + ".part", path)


def write_llm_only(src, hdr, base, path):
    keep = {k: v for k, v in hdr.items() if k != "__metadata__" and not k.startswith("visual.")}
    new, off = {}, 0
    for k in sorted(keep, key=lambda k: keep[k]["data_offsets"][0]):
        a, b = keep[k]["data_offsets"]
        new[k] = {"dtype": keep[k]["dtype"], "shape": keep[k]["shape"], "data_offsets": [off, off + b - a]}
        off += b - a
    h = json.dumps(new).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(src, "rb") as fi, open(path + ".part", "wb") as fo:
        fo.write(struct.pack("<Q", len(h)) + h)
        for k in sorted(keep, key=lambda k: keep[k]["data_offsets"][0]):
            a, b = keep[k]["data_offsets"]
            fi.seek(base + a)
            fo.write(fi.read(b - a))
    os.replace(path + ".part", path)
    return len(new)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ckpt-dir", required=True)
    a = ap.parse_args()
    src = os.path.join(a.ckpt_dir, "qwen25vl_vl_llm_1001.safetensors")
    hdr, base = read_header(src)
    tensors, blocks = mmproj_tensors(src, hdr, base)
    write_mmproj(os.path.join(a.ckpt_dir, "qwen25vl_mmproj_1001.gguf"), tensors, blocks)
    n = write_llm_only(src, hdr, base, os.path.join(a.ckpt_dir, "qwen25vl_llm_only_1001.safetensors"))
    print("mmproj: %d tensors (%d blocks); LLM alone: %d tensors" % (len(tensors), blocks, n))


if __name__ == "__main__":
    main()
