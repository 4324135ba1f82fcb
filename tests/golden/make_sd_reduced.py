#!/usr/bin/python3
"""Deterministic random-weight SD 2.x and SDXL checkpoints, reduced where sd.cpp allows, original single-file
(LDM / SGM) layout.  numpy only.

    python3 make_sd_reduced.py sd1        --seed 1101 OUT.safetensors    # ~0.42 GB, ~15 s
    python3 make_sd_reduced.py sd1inpaint --seed 1109 OUT.safetensors    # the same with a 9-channel UNet input
    python3 make_sd_reduced.py sd1pix2pix --seed 1108 OUT.safetensors    # 8 channels (InstructPix2Pix)
    python3 make_sd_reduced.py sd2  --seed 2002 OUT.safetensors    # ~0.95 GB, ~30 s
    python3 make_sd_reduced.py sdxl --seed 3003 OUT.safetensors    # ~1.92 GB, ~60 s
    python3 make_sd_reduced.py sd2inpaint|sdxlinpaint OUT          # seeds 2009 / 3009: 9-channel UNet input
    python3 make_sd_reduced.py sd2 --list                          # names, shapes, init rule; writes nothing

Independent reference: the images these checkpoints give are compared with stable-diffusion.cpp's sd-cli
(commit 97d29908, CPU build) — see tests/data/sd_reduced/README.md for the exact runs.

What is reduced, and why only that: sd.cpp (97d29908) reads from the weights only the UNet model_channels
(`input_blocks.0.0`), time_embed_dim, adm_in_channels, context_dim (`attn2.to_k`) and the VAE decoder ch
(`decoder.conv_in`); everything else is fixed per version: UNet channel_mult / res blocks / transformer depth /
head_dim 64, and every text encoder's width, heads and layer count (all its tensors must be in the file).
So the text encoders are full size (the bulk of the file) and only the UNet is narrow:
  sd1   cond_stage_model.transformer.text_model.*   CLIP ViT-L/14 text, HF layout (12 layers, 768)
        model.diffusion_model.*    UNet model_channels 64 (sd.cpp SD1: channel_mult 1,2,4,4, 2 res blocks,
                                   depth 1, 8 heads, 1x1-conv proj_in/proj_out), context 768; sd1inpaint: the
                                   same with 9 input channels (latent + mask + masked-image latent), as the
                                   sd-v1-5-inpainting checkpoint
  sd2   cond_stage_model.model.*   OpenCLIP ViT-H/14 text (24 layers, 1024 wide, 16 heads, mlp 4096, OpenCLIP
                                   layout: token_embedding, positional_embedding, transformer.resblocks.N.{ln_1,
                                   attn.in_proj_weight/bias, attn.out_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_final,
                                   text_projection [1024, 1024])
        model.diffusion_model.*    UNet model_channels 64 (sd.cpp SD2: channel_mult 1,2,4,4, 2 res blocks,
                                   depth 1, head_dim 64, linear proj_in/proj_out), context 1024
  sdxl  conditioner.embedders.0.transformer.text_model.*   CLIP ViT-L/14 text, HF layout (12 layers, 768)
        conditioner.embedders.1.model.*                    OpenCLIP ViT-bigG/14 text (32 layers, 1280 wide, 20 heads,
                                                           mlp 5120), text_projection [1280, 1280]
        model.diffusion_model.*    UNet model_channels 32 (sd.cpp SDXL: channel_mult 1,2,4, 2 res blocks,
                                   attention at levels 1,2 with depth 2,10, middle depth 10, head_dim 64, linear
                                   proj), context 2048, label_emb 2816 -> 128 -> 128
  both  first_stage_model.*        the SD AutoencoderKL at full size (ch 128, ch_mult 1,2,4,4, 2 res blocks, z 4):
                                   sd.cpp infers only the decoder's ch and wants every encoder tensor with ch 128,
                                   and sdc's VAE wants encoder and decoder of one width
        LDM schedule buffers       as make_sd1_random.py (scaled-linear 0.00085..0.012, float64 math, F32)
All weights F16.

Random values (depend only on --seed and the tensor name), as in /work/shared/golden/tools/make_sd1_random.py:
  rs  = numpy.random.RandomState((seed * 1000003 + zlib.crc32(name.encode())) % 2**32)
  val = (mean + std * rs.standard_normal(shape)).astype(float32).astype(float16)
  conv / linear weight: N(0, gain^2/fan_in), fan_in = prod(shape[1:]) (text_projection: shape[0]), gain 1 except
  first_stage_model.decoder.conv_in (1/64: the decoder input latent/scale has std ~80-110 with a random UNet);
  norm weights 1 + 0.1 N; biases 0.02 N; token embeddings N(0,1); position embeddings 0.5 N.
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import zlib

import numpy as np

UNET = "model.diffusion_model."
VAE = "first_stage_model."
SPECIAL_GAIN = {VAE + "decoder.conv_in.weight": 1.0 / 64.0}


def unet_tensors(mc, mult, attn_depth, mid_depth, ctx, adm, in_ch=4, linear=True):
    """LDM UNetModel keys; attn_depth[level] = transformer depth (0: no attention); proj_in/out linear
    (SD2, SDXL) or 1x1 convolutions (SD1)."""
    t = []
    temb = 4 * mc

    def add(n, *shape):
        t.append((UNET + n, list(shape)))

    def res(p, cin, cout):
        add(p + "in_layers.0.weight", cin), add(p + "in_layers.0.bias", cin)
        add(p + "in_layers.2.weight", cout, cin, 3, 3), add(p + "in_layers.2.bias", cout)
        add(p + "emb_layers.1.weight", cout, temb), add(p + "emb_layers.1.bias", cout)
        add(p + "out_layers.0.weight", cout), add(p + "out_layers.0.bias", cout)
        add(p + "out_layers.3.weight", cout, cout, 3, 3), add(p + "out_layers.3.bias", cout)
        if cin != cout:
            add(p + "skip_connection.weight", cout, cin, 1, 1), add(p + "skip_connection.bias", cout)

    def xf(p, c, depth):
        add(p + "norm.weight", c), add(p + "norm.bias", c)
        add(p + "proj_in.weight", *([c, c] if linear else [c, c, 1, 1])), add(p + "proj_in.bias", c)
        for d in range(depth):
            b = p + f"transformer_blocks.{d}."
            add(b + "attn1.to_q.weight", c, c), add(b + "attn1.to_k.weight", c, c), add(b + "attn1.to_v.weight", c, c)
            add(b + "attn1.to_out.0.weight", c, c), add(b + "attn1.to_out.0.bias", c)
            add(b + "ff.net.0.proj.weight", 8 * c, c), add(b + "ff.net.0.proj.bias", 8 * c)
            add(b + "ff.net.2.weight", c, 4 * c), add(b + "ff.net.2.bias", c)
            add(b + "attn2.to_q.weight", c, c), add(b + "attn2.to_k.weight", c, ctx)
            add(b + "attn2.to_v.weight", c, ctx)
            add(b + "attn2.to_out.0.weight", c, c), add(b + "attn2.to_out.0.bias", c)
            for k in ("norm1", "norm2", "norm3"):
                add(b + k + ".weight", c), add(b + k + ".bias", c)
        add(p + "proj_out.weight", *([c, c] if linear else [c, c, 1, 1])), add(p + "proj_out.bias", c)

    add("time_embed.0.weight", temb, mc), add("time_embed.0.bias", temb)
    add("time_embed.2.weight", temb, temb), add("time_embed.2.bias", temb)
    if adm:
        add("label_emb.0.0.weight", temb, adm), add("label_emb.0.0.bias", temb)
        add("label_emb.0.2.weight", temb, temb), add("label_emb.0.2.bias", temb)
    add("input_blocks.0.0.weight", mc, in_ch, 3, 3), add("input_blocks.0.0.bias", mc)
    hs, ch, ib = [mc], mc, 1
    for lvl, m in enumerate(mult):
        for _ in range(2):
            res(f"input_blocks.{ib}.0.", ch, mc * m)
            ch = mc * m
            if attn_depth[lvl]:
                xf(f"input_blocks.{ib}.1.", ch, attn_depth[lvl])
            hs.append(ch)
            ib += 1
        if lvl != len(mult) - 1:
            add(f"input_blocks.{ib}.0.op.weight", ch, ch, 3, 3), add(f"input_blocks.{ib}.0.op.bias", ch)
            hs.append(ch)
            ib += 1
    res("middle_block.0.", ch, ch), xf("middle_block.1.", ch, mid_depth), res("middle_block.2.", ch, ch)
    ob = 0
    for lvl in reversed(range(len(mult))):
        for i in range(3):
            cin = ch + hs.pop()
            res(f"output_blocks.{ob}.0.", cin, mc * mult[lvl])
            ch = mc * mult[lvl]
            k = 1
            if attn_depth[lvl]:
                xf(f"output_blocks.{ob}.1.", ch, attn_depth[lvl])
                k = 2
            if lvl and i == 2:
                add(f"output_blocks.{ob}.{k}.conv.weight", ch, ch, 3, 3), add(f"output_blocks.{ob}.{k}.conv.bias", ch)
            ob += 1
    add("out.0.weight", mc), add("out.0.bias", mc)
    add("out.2.weight", 4, mc, 3, 3), add("out.2.bias", 4)
    return t


def vae_tensors(ch, enc_ch):
    t = []

    def add(n, *shape):
        t.append((VAE + n, list(shape)))

    def conv(p, cout, cin, k):
        add(p + ".weight", cout, cin, k, k), add(p + ".bias", cout)

    def norm(p, c):
        add(p + ".weight", c), add(p + ".bias", c)

    def res(p, cin, cout):
        norm(p + "norm1", cin), conv(p + "conv1", cout, cin, 3)
        norm(p + "norm2", cout), conv(p + "conv2", cout, cout, 3)
        if cin != cout:
            conv(p + "nin_shortcut", cout, cin, 1)

    def attn(p, c):
        norm(p + "norm", c)
        for k in ("q", "k", "v", "proj_out"):
            conv(p + k, c, c, 1)

    mult = [1, 2, 4, 4]
    conv("encoder.conv_in", enc_ch, 3, 3)
    cin = enc_ch
    for i, m in enumerate(mult):
        for j in range(2):
            res(f"encoder.down.{i}.block.{j}.", cin, enc_ch * m)
            cin = enc_ch * m
        if i != len(mult) - 1:
            conv(f"encoder.down.{i}.downsample.conv", cin, cin, 3)
    res("encoder.mid.block_1.", cin, cin), attn("encoder.mid.attn_1.", cin), res("encoder.mid.block_2.", cin, cin)
    norm("encoder.norm_out", cin), conv("encoder.conv_out", 8, cin, 3)
    conv("quant_conv", 8, 8, 1)
    conv("post_quant_conv", 4, 4, 1)
    cin = ch * mult[-1]
    conv("decoder.conv_in", cin, 4, 3)
    res("decoder.mid.block_1.", cin, cin), attn("decoder.mid.attn_1.", cin), res("decoder.mid.block_2.", cin, cin)
    for i in reversed(range(len(mult))):
        for j in range(3):
            res(f"decoder.up.{i}.block.{j}.", cin, ch * mult[i])
            cin = ch * mult[i]
        if i != 0:
            conv(f"decoder.up.{i}.upsample.conv", cin, cin, 3)
    norm("decoder.norm_out", cin), conv("decoder.conv_out", 3, cin, 3)
    return t


def hf_clip_tensors(prefix, d, ff, layers):
    t = []

    def add(n, *shape):
        t.append((prefix + n, list(shape)))

    add("embeddings.token_embedding.weight", 49408, d)
    add("embeddings.position_embedding.weight", 77, d)
    for i in range(layers):
        p = f"encoder.layers.{i}."
        for k in ("k_proj", "v_proj", "q_proj", "out_proj"):
            add(p + f"self_attn.{k}.weight", d, d), add(p + f"self_attn.{k}.bias", d)
        add(p + "layer_norm1.weight", d), add(p + "layer_norm1.bias", d)
        add(p + "mlp.fc1.weight", ff, d), add(p + "mlp.fc1.bias", ff)
        add(p + "mlp.fc2.weight", d, ff), add(p + "mlp.fc2.bias", d)
        add(p + "layer_norm2.weight", d), add(p + "layer_norm2.bias", d)
    add("final_layer_norm.weight", d), add("final_layer_norm.bias", d)
    return t


def openclip_tensors(prefix, d, ff, layers, proj):
    t = []

    def add(n, *shape):
        t.append((prefix + n, list(shape)))

    add("token_embedding.weight", 49408, d)
    add("positional_embedding", 77, d)
    for i in range(layers):
        p = f"transformer.resblocks.{i}."
        add(p + "ln_1.weight", d), add(p + "ln_1.bias", d)
        add(p + "attn.in_proj_weight", 3 * d, d), add(p + "attn.in_proj_bias", 3 * d)
        add(p + "attn.out_proj.weight", d, d), add(p + "attn.out_proj.bias", d)
        add(p + "ln_2.weight", d), add(p + "ln_2.bias", d)
        add(p + "mlp.c_fc.weight", ff, d), add(p + "mlp.c_fc.bias", ff)
        add(p + "mlp.c_proj.weight", d, ff), add(p + "mlp.c_proj.bias", d)
    add("ln_final.weight", d), add("ln_final.bias", d)
    add("text_projection", d, proj)  # OpenCLIP: x @ text_projection, [width, embed_dim]
    return t


def model_tensors(kind):
    if kind in ("sd1", "sd1inpaint", "sd1pix2pix"):
        te = hf_clip_tensors("cond_stage_model.transformer.text_model.", 768, 3072, 12)
        in_ch = {"sd1inpaint": 9, "sd1pix2pix": 8}.get(kind, 4)
        un = unet_tensors(64, [1, 2, 4, 4], [1, 1, 1, 0], 1, 768, 0, in_ch, False)
    elif kind in ("sd2", "sd2inpaint"):
        te = openclip_tensors("cond_stage_model.model.", 1024, 4096, 24, 1024)
        un = unet_tensors(64, [1, 2, 4, 4], [1, 1, 1, 0], 1, 1024, 0, 9 if kind == "sd2inpaint" else 4)
    else:
        te = hf_clip_tensors("conditioner.embedders.0.transformer.text_model.", 768, 3072, 12)
        te += openclip_tensors("conditioner.embedders.1.model.", 1280, 5120, 32, 1280)
        un = unet_tensors(32, [1, 2, 4], [0, 2, 10], 10, 2048, 2816, 9 if kind == "sdxlinpaint" else 4)
    return te + un + vae_tensors(128, 128)


def schedule_buffers():
    """ldm DDPM.register_schedule(linear, 1000, 0.00085, 0.012), float64 math, stored float32."""
    betas = np.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000, dtype=np.float64) ** 2
    alphas = 1.0 - betas
    ac = np.cumprod(alphas, axis=0)
    acp = np.append(1.0, ac[:-1])
    pv = betas * (1.0 - acp) / (1.0 - ac)
    b = {
        "betas": betas,
        "alphas_cumprod": ac,
        "alphas_cumprod_prev": acp,
        "sqrt_alphas_cumprod": np.sqrt(ac),
        "sqrt_one_minus_alphas_cumprod": np.sqrt(1.0 - ac),
        "log_one_minus_alphas_cumprod": np.log(1.0 - ac),
        "sqrt_recip_alphas_cumprod": np.sqrt(1.0 / ac),
        "sqrt_recipm1_alphas_cumprod": np.sqrt(1.0 / ac - 1),
        "posterior_variance": pv,
        "posterior_log_variance_clipped": np.log(np.maximum(pv, 1e-20)),
        "posterior_mean_coef1": betas * np.sqrt(acp) / (1.0 - ac),
        "posterior_mean_coef2": (1.0 - acp) * np.sqrt(alphas) / (1.0 - ac),
    }
    return {k: v.astype(np.float32) for k, v in b.items()}


def init_rule(name, shape):
    """(mean, std) of the normal distribution a tensor is drawn from."""
    if name.endswith("token_embedding.weight"):
        return 0.0, 1.0
    if name.endswith("position_embedding.weight") or name.endswith("positional_embedding"):
        return 0.0, 0.5
    if name.endswith(".bias") or name.endswith("in_proj_bias"):
        return 0.0, 0.02
    if len(shape) == 1:  # GroupNorm / LayerNorm weight
        return 1.0, 0.1
    if name.endswith("text_projection"):  # [in, out]
        return 0.0, 1.0 / np.sqrt(shape[0])
    fan_in = int(np.prod(shape[1:]))
    return 0.0, SPECIAL_GAIN.get(name, 1.0) / np.sqrt(fan_in)


def tensor_value(seed, name, shape):
    mean, std = init_rule(name, shape)
    rs = np.random.RandomState((seed * 1000003 + zlib.crc32(name.encode())) % 2 ** 32)
    z = rs.standard_normal(shape)
    z *= std
    z += mean
    return z.astype(np.float32).astype(np.float16)


def layout(kind):
    items = [(n, "F16", s) for n, s in model_tensors(kind)]
    items += [(n, "F32", [1000]) for n in schedule_buffers()]
    items.sort(key=lambda x: x[0])
    return items


def write(path, kind, seed):
    items = layout(kind)
    bufs = schedule_buffers()
    size = {"F16": 2, "F32": 4}
    meta = {"format": "pt", "generator": "make_sd_reduced.py", "kind": kind, "seed": str(seed)}
    header, off = {"__metadata__": meta}, 0
    for name, dt, shape in items:
        n = int(np.prod(shape)) * size[dt]
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + n]}
        off += n
    hj = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((8 - len(hj) % 8) % 8)
    md5 = hashlib.md5()
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        for chunk in (struct.pack("<Q", len(hj)), hj):
            f.write(chunk), md5.update(chunk)
        for name, dt, shape in items:
            a = tensor_value(seed, name, shape) if dt == "F16" else bufs[name]
            raw = np.ascontiguousarray(a).tobytes()
            assert len(raw) == header[name]["data_offsets"][1] - header[name]["data_offsets"][0], name
            f.write(raw), md5.update(raw)
    os.replace(tmp, path)
    return md5.hexdigest(), os.path.getsize(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("kind", choices=["sd1", "sd1inpaint", "sd1pix2pix", "sd2", "sd2inpaint", "sdxl", "sdxlinpaint"])
    ap.add_argument("out", nargs="?")
    ap.add_argument("--seed", type=int, default=None, help="default 2002 (sd2) / 3003 (sdxl)")
    ap.add_argument("--list", action="store_true", help="print name, dtype, shape, init rule; write nothing")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else {"sd1": 1101, "sd1inpaint": 1109, "sd1pix2pix": 1108, "sd2": 2002, "sd2inpaint": 2009, "sdxl": 3003,
                                               "sdxlinpaint": 3009}[a.kind]
    if a.list:
        cnt = {}
        for name, dt, shape in layout(a.kind):
            rule = "%.3g+%.4g*N(0,1)" % init_rule(name, shape) if dt == "F16" else "buffer"
            print(f"{name}\t{dt}\t{shape}\t{rule}")
            part = ".".join(name.split(".")[:2]) if dt == "F16" else "buffers"
            cnt[part] = cnt.get(part, 0) + int(np.prod(shape))
        print("# parameters:", json.dumps(cnt), file=sys.stderr)
        return
    if not a.out:
        ap.error("output path required")
    md5, size = write(a.out, a.kind, seed)
    print(json.dumps({"path": a.out, "kind": a.kind, "seed": seed, "bytes": size, "md5": md5}))


if __name__ == "__main__":
    main()
