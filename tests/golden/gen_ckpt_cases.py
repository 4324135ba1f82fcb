#!/usr/bin/env python3
"""Test data for the PyTorch checkpoint reader (src/io/zip.c, pickle.c, ckpt.c) and the
diffusers folder loader (src/io/diffusers_names.c).

Independent implementation: PyTorch itself. Every .ckpt here is written by torch.save
(except the deliberately malformed or malicious ones, which are handwritten pickles put
in a zip by Python's zipfile), and next to each loadable one is a .safetensors with the
same tensors (made contiguous) written by the safetensors package: the C test loads both
through sdc_loader and compares every tensor byte for byte.

The diffusers part (--diffusers, default on) builds a tiny random SD-1.x-shaped model in
the original LDM layout, converts it with diffusers' own convert_ldm_unet_checkpoint /
convert_ldm_vae_checkpoint (diffusers.loaders.single_file_utils), loads the result into
UNet2DConditionModel / AutoencoderKL / CLIPTextModel and writes the folder with
save_pretrained (the UNet as the fp16 variant, the text encoder as a torch.save
pytorch_model.bin); diffusers_ldm.safetensors holds the LDM-named tensors of the same weights.

Re-run (needs torch, safetensors, diffusers 0.42, transformers 5.x):
    python3 tests/golden/gen_ckpt_cases.py tests/data/ckpt
"""
import collections
import io
import os
import pickle
import struct
import sys
import types
import zipfile

import torch
from safetensors.torch import save_file

OUT = sys.argv[1] if len(sys.argv) > 1 else "tests/data/ckpt"


def ref(path, tensors):
    save_file({k: v.detach().contiguous().clone() for k, v in tensors.items()}, path)


def basic_state():
    g = torch.Generator().manual_seed(1234)
    sd = collections.OrderedDict()
    sd["w_f32"] = torch.randn(3, 5, generator=g)
    sd["w_f16"] = torch.randn(4, 2, 3, generator=g).half()
    sd["w_bf16"] = torch.randn(7, generator=g).bfloat16()
    sd["conv.weight"] = torch.randn(4, 3, 3, 3, generator=g)
    sd["position_ids"] = torch.arange(77, dtype=torch.int64).unsqueeze(0)
    sd["i32"] = torch.tensor([-3, 0, 7, 2**31 - 1], dtype=torch.int32)
    sd["u8"] = torch.tensor([0, 1, 255], dtype=torch.uint8)
    sd["flags"] = torch.tensor([True, False, True])
    sd["f64"] = torch.randn(2, 2, generator=g, dtype=torch.float64)
    sd["scalar"] = torch.tensor(2.5)
    big = torch.randn(6, 4, generator=g)
    sd["big"] = big
    sd["big_rows"] = big[2:5]            # a view with a storage offset (shares big's storage)
    sd["transposed"] = big.t()           # non-contiguous: strides (1, 4)
    sd["strided"] = big[:, ::2]          # non-contiguous, every other column
    sd["param"] = torch.nn.Parameter(torch.randn(3, generator=g))
    sd["empty"] = torch.zeros(0, 3)
    return sd


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.norm = torch.nn.LayerNorm(2)
        self.register_buffer("buf", torch.arange(4, dtype=torch.float16))


def zinfo(name, compress=zipfile.ZIP_STORED):
    """A zip entry with a fixed date, so that re-running gives the same bytes."""
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = compress
    return info


def write_zip(path, pkl, storages):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(zinfo("archive/data.pkl"), pkl)
        for k, v in storages.items():
            z.writestr(zinfo("archive/data/" + k), v)
        z.writestr(zinfo("archive/version"), "3\n")


# ---- handwritten pickles ----------------------------------------------------------------
def p_str(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def p_int(v):
    return b"J" + struct.pack("<i", v)


def p_tensor(storage_type, key, numel, offset, size, stride):
    """torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict())"""
    tup = lambda xs: b"(" + b"".join(p_int(x) for x in xs) + b"t"
    return (b"ctorch._utils\n_rebuild_tensor_v2\n(" +
            b"(" + p_str("storage") + b"ctorch\n" + storage_type.encode() + b"\n" + p_str(key) +
            p_str("cpu") + p_int(numel) + b"tQ" + p_int(offset) + tup(size) + tup(stride) +
            b"\x89ccollections\nOrderedDict\n)Rt" + b"R")


def p_dict(items):
    return b"\x80\x02}(" + b"".join(p_str(k) + v for k, v in items) + b"u."


def evil_cases():
    floats = struct.pack("<4f", 1, 2, 3, 4)
    ok = p_tensor("FloatStorage", "0", 4, 0, [4], [1])
    cases = {}
    # os.system("echo pwned") through GLOBAL + REDUCE, as a tensor value
    cases["evil_os_system"] = p_dict([("a", ok), ("b", b"cos\nsystem\n(" + p_str("echo pwned") +
                                                       b"tR")])
    # builtins.eval through the protocol-4 STACK_GLOBAL opcode
    cases["evil_builtins_eval"] = (b"\x80\x04\x95\x00\x00\x00\x00\x00\x00\x00\x00" +
                                   b"\x8c\x08builtins\x94\x8c\x04eval\x94\x93\x94" +
                                   b"\x8c\x041+1)\x94\x85R\x94.")
    cases["evil_builtin_exec"] = b"\x80\x02c__builtin__\nexec\n" + p_str("x=1") + b"\x85R."
    # storage bounds: 4 floats in the storage, a tensor of 5 / a tensor at offset 3 of 2
    cases["bad_storage_bounds"] = p_dict([("a", p_tensor("FloatStorage", "0", 4, 0, [5], [1]))])
    cases["bad_storage_offset"] = p_dict([("a", p_tensor("FloatStorage", "0", 4, 3, [2], [1]))])
    cases["bad_missing_storage"] = p_dict([("a", p_tensor("FloatStorage", "9", 4, 0, [4], [1]))])
    cases["bad_expanded"] = p_dict([("a", p_tensor("FloatStorage", "0", 4, 0, [8], [0]))])
    cases["bad_memo"] = b"\x80\x02}q\x00h\x05."
    # 20 dicts nested through SETITEM (the walk stops at 16), a string longer than the
    # pickle, a LONG1 wider than 64 bits
    cases["bad_deep"] = b"\x80\x02" + (b"}" + p_str("a")) * 20 + b"N" + b"s" * 20 + b"."
    cases["bad_string_len"] = b"\x80\x02}X\xff\xff\xff\x7fabc."
    cases["bad_long"] = b"\x80\x02}(" + p_str("a") + b"\x8a\x09" + b"\x01" * 9 + b"u."
    for name, pkl in cases.items():
        write_zip(os.path.join(OUT, name + ".ckpt"), pkl, {"0": floats})


def write_zip64(path, entries):
    """A stored zip in which every size and offset is given in Zip64 form (the 32-bit
    fields 0xffffffff, the values in the Zip64 extra field; the directory found through
    the Zip64 end record and locator), as archives over 4 GB have them; torch's data
    alignment is kept (64 bytes, padded with an extra field)."""
    import zlib
    out = bytearray()
    central = bytearray()
    for name, data in entries:
        nb = name.encode()
        off = len(out)
        pad = (-(off + 30 + len(nb) + 4)) % 64
        extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad
        crc = zlib.crc32(data)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 45, 0, 0, 0, 0x21, crc, len(data),
                           len(data), len(nb), len(extra)) + nb + extra + data
        z64 = struct.pack("<HHQQQ", 1, 24, len(data), len(data), off)
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 45, 45, 0, 0, 0, 0x21, crc,
                               0xFFFFFFFF, 0xFFFFFFFF, len(nb), len(z64), 0, 0, 0, 0,
                               0xFFFFFFFF) + nb + z64
    cd_off = len(out)
    out += central
    z64_off = len(out)
    n = len(entries)
    out += struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, n, n, len(central), cd_off)
    out += struct.pack("<IIQI", 0x07064B50, 0, z64_off, 1)
    out += struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    with open(path, "wb") as f:
        f.write(out)


def bad_zip_count():
    """basic.ckpt with its end record claiming 60000 entries."""
    d = bytearray(open(os.path.join(OUT, "basic.ckpt"), "rb").read())
    e = d.rfind(b"PK\x05\x06")
    struct.pack_into("<HH", d, e + 8, 60000, 60000)
    with open(os.path.join(OUT, "bad_zip_count.ckpt"), "wb") as f:
        f.write(d)


def lightning_case():
    """A real torch.save of a Lightning-style checkpoint whose callbacks hold an object of
    class pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint."""
    mod = types.ModuleType("pytorch_lightning.callbacks.model_checkpoint")

    class ModelCheckpoint:
        def __init__(self):
            self.monitor = "val/loss"

    ModelCheckpoint.__module__ = mod.__name__
    ModelCheckpoint.__qualname__ = "ModelCheckpoint"
    mod.ModelCheckpoint = ModelCheckpoint
    for pkg in ("pytorch_lightning", "pytorch_lightning.callbacks"):
        sys.modules.setdefault(pkg, types.ModuleType(pkg))
    sys.modules[mod.__name__] = mod
    ck = {"state_dict": {"w": torch.ones(2)}, "callbacks": {"ModelCheckpoint": ModelCheckpoint()}}
    torch.save(ck, os.path.join(OUT, "evil_lightning.ckpt"))


def ckpt_cases():
    os.makedirs(OUT, exist_ok=True)
    sd = basic_state()
    torch.save(sd, os.path.join(OUT, "basic.ckpt"))
    ref(os.path.join(OUT, "basic.safetensors"), sd)

    # protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE, STACK_GLOBAL
    torch.save(sd, os.path.join(OUT, "proto4.ckpt"), pickle_protocol=4)

    # the same archive with every entry deflated (torch writes stored entries only)
    with zipfile.ZipFile(os.path.join(OUT, "basic.ckpt")) as zin, \
         zipfile.ZipFile(os.path.join(OUT, "deflate.ckpt"), "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(zinfo(info.filename, zipfile.ZIP_DEFLATED), zin.read(info.filename))

    # the same archive with Zip64 sizes, offsets and end records
    with zipfile.ZipFile(os.path.join(OUT, "basic.ckpt")) as zin:
        write_zip64(os.path.join(OUT, "zip64.ckpt"),
                    [(i.filename, zin.read(i.filename)) for i in zin.infolist()])

    # a Lightning-style dict: the module's state_dict (with _metadata -> BUILD) under
    # "state_dict", plus plain values and another nested dict of tensors
    torch.manual_seed(5)
    m = Tiny()
    nested = {"state_dict": m.state_dict(), "global_step": 5, "epoch": 1,
              "pytorch-lightning_version": "1.4.2", "hparams": [1, 2.5, "x", None, (3, 4)],
              "ema": collections.OrderedDict(w=torch.full((2,), 0.5))}
    torch.save(nested, os.path.join(OUT, "nested.ckpt"))
    flat = dict(m.state_dict())
    flat["ema.w"] = nested["ema"]["w"]
    ref(os.path.join(OUT, "nested.safetensors"), flat)

    # the legacy (pre-1.6) stream format: pickles and raw storages, no zip
    torch.save(sd, os.path.join(OUT, "legacy.pt"), _use_new_zipfile_serialization=False)
    evil_cases()
    bad_zip_count()
    lightning_case()


# ---- diffusers folder ---------------------------------------------------------------------
def sd1_ldm_keys():
    """(name, ndim) of every tensor of the SD 1.5 single-file layout, from
    the golden checkpoint generator (../shared/golden/tools/make_sd1_random.py --list)."""
    import subprocess
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                        "golden", "tools", "make_sd1_random.py")
    out = subprocess.run([sys.executable, tool, "--list"], check=True, capture_output=True,
                         text=True).stdout
    keys = []
    for line in out.splitlines():
        name, _, shape = line.split("\t")[:3]
        keys.append((name, len(eval(shape))))
    return keys


def ldm_map(keys, prefix, convert, cfg):
    """diffusers name -> LDM name, as diffusers' own converter maps them: it is fed one
    marker tensor per LDM key (value = the key's index) and every diffusers tensor it
    returns names the LDM key it came from."""
    names = [k for k, _ in keys if k.startswith(prefix)]
    nd = dict(keys)
    marked = {k: torch.full((1,) * nd[k], float(i), dtype=torch.float64)
              for i, k in enumerate(names)}
    conv = convert(marked, cfg)
    return {dk: names[int(v.flatten()[0].item())] for dk, v in conv.items()}


def diffusers_case():
    from diffusers import AutoencoderKL, UNet2DConditionModel
    from diffusers.loaders.single_file_utils import (convert_ldm_unet_checkpoint,
                                                     convert_ldm_vae_checkpoint)
    from transformers import CLIPTextConfig, CLIPTextModel

    folder = os.path.join(OUT, "diffusers")
    torch.manual_seed(11)
    # the SD 1.x structure (4 levels, 2 res blocks, attention in the first three) at
    # tiny widths, so that every LDM index of the real layout occurs
    unet_cfg = dict(sample_size=8, in_channels=4, out_channels=4, layers_per_block=2,
                    block_out_channels=(4, 8, 16, 16),
                    down_block_types=("CrossAttnDownBlock2D",) * 3 + ("DownBlock2D",),
                    up_block_types=("UpBlock2D",) + ("CrossAttnUpBlock2D",) * 3,
                    cross_attention_dim=8, attention_head_dim=2, norm_num_groups=2)
    vae_cfg = dict(in_channels=3, out_channels=3, latent_channels=4,
                   block_out_channels=(4, 8, 16, 16), down_block_types=("DownEncoderBlock2D",) * 4,
                   up_block_types=("UpDecoderBlock2D",) * 4, layers_per_block=2,
                   norm_num_groups=2, sample_size=16)
    unet = UNet2DConditionModel(**unet_cfg)
    vae = AutoencoderKL(**vae_cfg)
    te = CLIPTextModel(CLIPTextConfig(vocab_size=64, hidden_size=8, intermediate_size=16,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      max_position_embeddings=8))
    for mdl in (unet, vae, te):
        with torch.no_grad():
            for p in mdl.parameters():
                p.copy_(torch.randn_like(p))
        mdl.half()  # F16 as most published folders; halves the committed size
    keys_all = sd1_ldm_keys()
    keys = [k for k in keys_all if k[0].startswith(("model.diffusion_model.",
                                                   "first_stage_model."))]
    ldm = {}
    for mdl, prefix, conv, cfg in ((unet, "model.diffusion_model.", convert_ldm_unet_checkpoint,
                                    unet.config), (vae, "first_stage_model.",
                                                   convert_ldm_vae_checkpoint, vae.config)):
        sd = mdl.state_dict()
        m = ldm_map(keys, prefix, conv, cfg)
        if set(m) != set(sd):
            raise SystemExit(f"{prefix}: converter and model differ: "
                             f"{sorted(set(m) ^ set(sd))[:6]}")
        for dk, lk in m.items():
            ldm[lk] = sd[dk].clone()  # the diffusers shape (VAE attention stays Linear)
    # transformers 5 names CLIPTextModel's tensors without "text_model." (older versions,
    # and the SD single-file layout, have it): the LDM name adds it
    sd1_te = {k for k, _ in keys_all if k.startswith("cond_stage_model.transformer.")}
    te_sd = {}
    for k, v in te.state_dict().items():
        hf = k if k.startswith("text_model.") else "text_model." + k
        lk = "cond_stage_model.transformer." + hf
        if lk not in sd1_te:  # layer indices of the tiny model exist in the 12-layer list
            raise SystemExit(f"text encoder: {lk} is not an SD 1.x name")
        ldm[lk] = v.clone()
        te_sd[hf] = v.clone()

    os.makedirs(folder, exist_ok=True)
    # the UNet as the fp16 variant file, the text encoder as a torch.save .bin (a zip
    # checkpoint inside the folder), the VAE plain
    unet.save_pretrained(os.path.join(folder, "unet"), variant="fp16")
    vae.save_pretrained(os.path.join(folder, "vae"))
    te.config.save_pretrained(os.path.join(folder, "text_encoder"))
    # the .bin in the older transformers layout (text_model.* names)
    torch.save(te_sd, os.path.join(folder, "text_encoder", "pytorch_model.bin"))
    os.makedirs(os.path.join(folder, "tokenizer"), exist_ok=True)
    with open(os.path.join(folder, "tokenizer", "vocab.json"), "w") as f:
        f.write('{"a</w>": 0}\n')
    with open(os.path.join(folder, "tokenizer", "merges.txt"), "w") as f:
        f.write("#version: 0.2\n")
    with open(os.path.join(folder, "model_index.json"), "w") as f:
        f.write('{"_class_name": "StableDiffusionPipeline", "unet": ["diffusers", '
                '"UNet2DConditionModel"], "vae": ["diffusers", "AutoencoderKL"], '
                '"text_encoder": ["transformers", "CLIPTextModel"], '
                '"tokenizer": ["transformers", "CLIPTokenizer"]}\n')
    save_file({k: v.contiguous() for k, v in ldm.items()},
              os.path.join(OUT, "diffusers_ldm.safetensors"))
    print(f"diffusers: {len(ldm)} tensors")


def sdxl_ldm_unet_keys(lpb, attn, depth, ch):
    """LDM (sgm UNetModel) parameter names of an SDXL-shaped UNet, from that model's
    constructor: input_blocks = conv_in, per level lpb ResBlocks (+ a SpatialTransformer
    where attn) and a Downsample except on the last level; middle_block = Res, ST, Res;
    output_blocks = per level (reversed) lpb+1 ResBlocks (+ ST), an Upsample in the last
    block of every level but the last. diffusers' converter checks them below."""
    def res(p, skip):
        names = [f"{p}.{m}.{w}" for m in ("in_layers.0", "in_layers.2", "emb_layers.1",
                                          "out_layers.0", "out_layers.3") for w in ("weight", "bias")]
        return names + ([f"{p}.skip_connection.{w}" for w in ("weight", "bias")] if skip else [])

    def st(p, d):
        names = [f"{p}.{m}.{w}" for m in ("norm", "proj_in", "proj_out") for w in ("weight", "bias")]
        for k in range(d):
            b = f"{p}.transformer_blocks.{k}"
            for a in ("attn1", "attn2"):
                names += [f"{b}.{a}.to_{x}.weight" for x in "qkv"]
                names += [f"{b}.{a}.to_out.0.{w}" for w in ("weight", "bias")]
            names += [f"{b}.{m}.{w}" for m in ("norm1", "norm2", "norm3", "ff.net.0.proj",
                                               "ff.net.2") for w in ("weight", "bias")]
        return names

    keys = [f"{m}.{w}" for m in ("time_embed.0", "time_embed.2", "label_emb.0.0", "label_emb.0.2",
                                 "input_blocks.0.0", "out.0", "out.2") for w in ("weight", "bias")]
    L, ib, c_in = len(ch), 1, ch[0]
    chans = [ch[0]]
    for i in range(L):
        for j in range(lpb):
            keys += res(f"input_blocks.{ib}.0", c_in != ch[i])
            if attn[i]:
                keys += st(f"input_blocks.{ib}.1", depth[i])
            c_in = ch[i]
            chans.append(c_in)
            ib += 1
        if i + 1 < L:
            keys += [f"input_blocks.{ib}.0.op.{w}" for w in ("weight", "bias")]
            chans.append(c_in)
            ib += 1
    keys += res("middle_block.0", False) + st("middle_block.1", depth[-1]) + res("middle_block.2", False)
    ob = 0
    for i in reversed(range(L)):
        for j in range(lpb + 1):
            skip_ch = chans.pop()
            keys += res(f"output_blocks.{ob}.0", c_in + skip_ch != ch[i])
            c_in = ch[i]
            if attn[i]:
                keys += st(f"output_blocks.{ob}.1", depth[i])
            if i > 0 and j == lpb:
                keys += [f"output_blocks.{ob}.{2 if attn[i] else 1}.conv.{w}"
                         for w in ("weight", "bias")]
            ob += 1
    return ["model.diffusion_model." + k for k in keys]


def sdxl_case():
    """A tiny SDXL-shaped folder: UNet (3 levels, attention in levels 1-2, text_time
    embedding), CLIPTextModel + CLIPTextModelWithProjection; no VAE (the SD one is
    covered above). sdxl_ldm.safetensors: the same weights under LDM names."""
    from diffusers import UNet2DConditionModel
    from diffusers.loaders.single_file_utils import convert_ldm_unet_checkpoint
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    torch.manual_seed(12)
    ch, depth = (4, 8, 16), (1, 1, 2)
    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=2, block_out_channels=ch,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
        transformer_layers_per_block=depth, cross_attention_dim=16, attention_head_dim=2,
        norm_num_groups=2, use_linear_projection=True, addition_embed_type="text_time",
        addition_time_embed_dim=4, projection_class_embeddings_input_dim=8 + 6 * 4)
    cfg = dict(vocab_size=64, hidden_size=8, intermediate_size=16, num_hidden_layers=2,
               num_attention_heads=2, max_position_embeddings=8)
    te1 = CLIPTextModel(CLIPTextConfig(**cfg))
    te2 = CLIPTextModelWithProjection(CLIPTextConfig(**cfg, projection_dim=8))
    for mdl in (unet, te1, te2):
        with torch.no_grad():
            for p in mdl.parameters():
                p.copy_(torch.randn_like(p))
        mdl.half()
    names = sdxl_ldm_unet_keys(2, (False, True, True), depth, ch)
    sd = unet.state_dict()
    keys = [(k, sd_nd) for k, sd_nd in zip(names, [1] * len(names))]
    m = ldm_map(keys, "model.diffusion_model.", convert_ldm_unet_checkpoint, unet.config)
    if set(m) != set(sd) or len(m) != len(names):
        raise SystemExit(f"sdxl: converter and model differ: {sorted(set(m) ^ set(sd))[:6]}")
    ldm = {lk: sd[dk].clone() for dk, lk in m.items()}
    folder = os.path.join(OUT, "sdxl")
    os.makedirs(folder, exist_ok=True)
    unet.save_pretrained(os.path.join(folder, "unet"), variant="fp16")
    te1.save_pretrained(os.path.join(folder, "text_encoder"))
    te2.save_pretrained(os.path.join(folder, "text_encoder_2"))
    for i, (te, sub) in enumerate(((te1, "text_encoder"), (te2, "text_encoder_2"))):
        from safetensors.torch import load_file
        saved = load_file(os.path.join(folder, sub, "model.safetensors"))
        for k, v in saved.items():
            hf = k if k.startswith(("text_model.", "text_projection.")) else "text_model." + k
            ldm[f"conditioner.embedders.{i}.transformer." + hf] = v
    for sub in ("tokenizer", "tokenizer_2"):
        os.makedirs(os.path.join(folder, sub), exist_ok=True)
        with open(os.path.join(folder, sub, "vocab.json"), "w") as f:
            f.write('{"a</w>": 0}\n')
    with open(os.path.join(folder, "model_index.json"), "w") as f:
        f.write('{"_class_name": "StableDiffusionXLPipeline"}\n')
    save_file({k: v.contiguous() for k, v in ldm.items()}, os.path.join(OUT, "sdxl_ldm.safetensors"))
    print(f"sdxl: {len(ldm)} tensors")


if __name__ == "__main__":
    ckpt_cases()
    if "--no-diffusers" not in sys.argv:
        diffusers_case()
        sdxl_case()
