#!/usr/bin/env python3
"""Golden data for the VAE tests (tests/unit/test_vae_kl.c, test_taesd.c, test_vae_tiling.c).

Independent implementation: diffusers 0.42 `AutoencoderKL` and `AutoencoderTiny` (PyTorch, float32, CPU).

- AutoencoderKL with a tiny random config (block_out_channels (32, 32, 64, 64), layers_per_block 1,
  latent 4, GroupNorm 32): its diffusers state dict is renamed to the LDM layout (first_stage_model.* as
  SD checkpoints store it, mid attention as 1x1 convs); the renaming is checked by running diffusers'
  own `convert_ldm_vae_checkpoint` on the result, which must give back the diffusers state dict exactly.
  Weights are stored in F16 and the references use those F16 values.
  References: decode of a 6x5 latent, and the raw moments (encoder + quant_conv, before the
  posterior's logvar clamp) of a 48x40 image, each twice: in plain float32 ("exact") and emulating
  sd.cpp's numerics ("sdcpp": every Conv2d and Linear input rounded to F16, as ggml's F16 im2col /
  F16 mul_mat do). `vae_kl_diffusers_names.txt` lists "ldm_name diffusers_name" for every tensor
  (from diffusers' converter), so the C test can also load the diffusers layout.
- AutoencoderTiny (TAESD architecture, channels 32 instead of 64 to keep the file small) with the
  diffusers names that sd.cpp's --taesd loads (decoder.layers.N..., encoder.layers.N...): decode of a
  6x5 latent and encode of a 48x40 image, exact and sdcpp numerics.
- If /work/sd1/sd1_random_1001.safetensors exists (make_sd1_random.py --seed 1001): the real SD1 VAE
  VAE (diffusers AutoencoderKL from first_stage_model.* via convert_ldm_vae_checkpoint): decode of an
  8x8 latent and moments of a 64x64 image; only inputs and outputs are stored.

Re-run: python3 tests/golden/gen_vae_ref.py   (writes tests/data/vae/; seeds fixed, CPU)
"""
import os
import sys

import numpy as np
import torch
from diffusers import AutoencoderKL, AutoencoderTiny
from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint
from safetensors import safe_open
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "vae")
SD1 = "/work/sd1/sd1_random_1001.safetensors"
torch.set_num_threads(2)


def diffusers_to_ldm(name, n_levels):
    """LDM name of a diffusers AutoencoderKL tensor (verified below by diffusers' converter)."""
    p = name.split(".")
    half = p[0]
    if half not in ("encoder", "decoder"):
        return name
    r = p[1:]
    res_map = {"conv_shortcut": "nin_shortcut"}
    if r[0] == "down_blocks" and r[2] == "resnets":
        return ".".join([half, "down", r[1], "block", r[3], res_map.get(r[4], r[4])] + r[5:])
    if r[0] == "down_blocks" and r[2] == "downsamplers":
        return ".".join([half, "down", r[1], "downsample"] + r[4:])
    if r[0] == "up_blocks" and r[2] == "resnets":
        i = n_levels - 1 - int(r[1])
        return ".".join([half, "up", str(i), "block", r[3], res_map.get(r[4], r[4])] + r[5:])
    if r[0] == "up_blocks" and r[2] == "upsamplers":
        i = n_levels - 1 - int(r[1])
        return ".".join([half, "up", str(i), "upsample"] + r[4:])
    if r[0] == "mid_block" and r[1] == "resnets":
        return ".".join([half, "mid", "block_%d" % (int(r[2]) + 1)] + r[3:])
    if r[0] == "mid_block" and r[1] == "attentions":
        sub = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out": "proj_out"}
        rest = r[3:]
        if rest[0] == "to_out":
            rest = rest[1:]  # to_out.0.weight
            rest[0] = "proj_out"
        else:
            rest[0] = sub[rest[0]]
        return ".".join([half, "mid", "attn_1"] + rest)
    if r[0] == "conv_norm_out":
        return ".".join([half, "norm_out"] + r[1:])
    return name


def randomize(model, seed, conv_gain=1.0):
    """Non-trivial norms and biases (defaults are 1 and 0), conv weights times conv_gain (so that
    activations keep their size through the layers), all rounded to F16."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 4:
                p.mul_(conv_gain)
            if name.endswith("bias"):
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
            elif "norm" in name and p.dim() == 1:
                p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            p.copy_(p.half().float())


def sdcpp_hooks(model):
    """Round every Conv2d / Linear input to F16 (sd.cpp's F16 im2col and mul_mat)."""
    hs = []
    for m in model.modules():
        if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear)):
            hs.append(m.register_forward_pre_hook(lambda mod, inp: (inp[0].half().float(),) + inp[1:]))
    return hs


def both(model, fn):
    """fn() in exact float32 and with sd.cpp's F16 rounding."""
    with torch.no_grad():
        exact = fn()
        hs = sdcpp_hooks(model)
        sdcpp = fn()
        for h in hs:
            h.remove()
    return exact, sdcpp


def kl_tiny():
    torch.manual_seed(1234)
    cfg = dict(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
               up_block_types=("UpDecoderBlock2D",) * 4, block_out_channels=(32, 32, 64, 64),
               layers_per_block=1, latent_channels=4, norm_num_groups=32, sample_size=64)
    vae = AutoencoderKL(**cfg).eval()
    randomize(vae, 99)
    dsd = vae.state_dict()
    ldm = {}
    for k, v in dsd.items():
        lk = diffusers_to_ldm(k, 4)
        if ".mid.attn_1." in lk and lk.endswith("weight") and v.dim() == 2:
            v = v[:, :, None, None]  # LDM stores the attention projections as 1x1 convs
        ldm["first_stage_model." + lk] = v.contiguous()
    back = convert_ldm_vae_checkpoint(ldm, dict(vae.config))
    assert set(back) == set(dsd), (set(back) ^ set(dsd))
    for k in dsd:
        assert torch.equal(back[k].reshape(dsd[k].shape), dsd[k]), k
    # the name list from diffusers' own converter: tag each LDM tensor with its index
    ldm_keys = sorted(ldm)
    tagged = {k: torch.full((1,), float(i)) for i, k in enumerate(ldm_keys)}
    conv = convert_ldm_vae_checkpoint(tagged, dict(vae.config))
    with open(os.path.join(OUT, "vae_kl_diffusers_names.txt"), "w") as f:
        for dk in sorted(conv):
            lk = ldm_keys[int(conv[dk].flatten()[0])]
            f.write("%s %s\n" % (lk[len("first_stage_model."):], dk))
    save_file({k: v.half() for k, v in ldm.items()}, os.path.join(OUT, "vae_kl_tiny.safetensors"))

    g = torch.Generator().manual_seed(5)
    z = torch.randn(1, 4, 5, 6, generator=g)
    img = (torch.rand(1, 3, 40, 48, generator=g) * 2 - 1)
    dec_e, dec_s = both(vae, lambda: vae.decode(z).sample)
    mom_e, mom_s = both(vae, lambda: vae.quant_conv(vae.encoder(img)))
    with torch.no_grad():  # the raw moments are what encode() samples from
        ld = vae.encode(img).latent_dist
        assert torch.allclose(ld.mean, mom_e[:, :4], atol=1e-6)
    ref = {"z": z, "decode.exact": dec_e, "decode.sdcpp": dec_s, "image": img,
           "moments.exact": mom_e, "moments.sdcpp": mom_s}
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, "vae_kl_ref.safetensors"))
    print("kl: decode std %.3f |sdcpp-exact| %.2e, moments std %.3f |sdcpp-exact| %.2e" % (
        dec_e.std(), (dec_s - dec_e).abs().max(), mom_e.std(), (mom_s - mom_e).abs().max()))


def taesd_tiny():
    torch.manual_seed(4321)
    ch = (32, 32, 32, 32)
    tae = AutoencoderTiny(in_channels=3, out_channels=3, encoder_block_out_channels=ch,
                          decoder_block_out_channels=ch, num_encoder_blocks=(1, 3, 3, 3),
                          num_decoder_blocks=(3, 3, 3, 1), latent_channels=4).eval()
    randomize(tae, 77, conv_gain=1.8)
    sd = {k: v.half().contiguous() for k, v in tae.state_dict().items()}
    save_file(sd, os.path.join(OUT, "taesd_tiny.safetensors"))
    g = torch.Generator().manual_seed(6)
    lat = torch.randn(1, 4, 5, 6, generator=g)
    img = torch.rand(1, 3, 40, 48, generator=g) * 2 - 1
    dec_e, dec_s = both(tae, lambda: tae.decode(lat).sample)
    enc_e, enc_s = both(tae, lambda: tae.encode(img).latents)
    ref = {"latent": lat, "decode.exact": dec_e, "decode.sdcpp": dec_s, "image": img,
           "encode.exact": enc_e, "encode.sdcpp": enc_s}
    save_file({k: v.contiguous() for k, v in ref.items()}, os.path.join(OUT, "taesd_ref.safetensors"))
    print("taesd: decode std %.3f |sdcpp-exact| %.2e, encode std %.3f |sdcpp-exact| %.2e" % (
        dec_e.std(), (dec_s - dec_e).abs().max(), enc_e.std(), (enc_s - enc_e).abs().max()))


def sd1_full():
    if not os.path.exists(SD1):
        print("skipping the full-size SD1 VAE: %s not found" % SD1)
        return
    with safe_open(SD1, framework="pt") as f:  # only the VAE's tensors
        ldm = {k: f.get_tensor(k).float() for k in f.keys() if k.startswith("first_stage_model.")}
    cfg = dict(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
               up_block_types=("UpDecoderBlock2D",) * 4, block_out_channels=(128, 256, 512, 512),
               layers_per_block=2, latent_channels=4, norm_num_groups=32, sample_size=512)
    vae = AutoencoderKL(**cfg).eval()
    missing, unexpected = vae.load_state_dict(convert_ldm_vae_checkpoint(ldm, cfg), strict=True)
    g = torch.Generator().manual_seed(8)
    z = torch.randn(1, 4, 8, 8, generator=g) / 0.18215  # an SD latent in the VAE's own space
    dec_e, dec_s = both(vae, lambda: vae.decode(z).sample)
    img = torch.rand(1, 3, 64, 64, generator=g) * 2 - 1
    mom_e, mom_s = both(vae, lambda: vae.quant_conv(vae.encoder(img)))
    save_file({"z": z, "decode.exact": dec_e.contiguous(), "decode.sdcpp": dec_s.contiguous(),
               "image": img, "moments.exact": mom_e.contiguous(), "moments.sdcpp": mom_s.contiguous()},
              os.path.join(OUT, "sd1_vae_decode_8x8.safetensors"))
    print("sd1: decode std %.3f |sdcpp-exact| %.2e, moments std %.3f |sdcpp-exact| %.2e" % (
        dec_e.std(), (dec_s - dec_e).abs().max(), mom_e.std(), (mom_s - mom_e).abs().max()))


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    what = sys.argv[1:] or ["kl", "taesd", "sd1"]
    if "kl" in what:
        kl_tiny()
    if "taesd" in what:
        taesd_tiny()
    if "sd1" in what:
        sd1_full()
