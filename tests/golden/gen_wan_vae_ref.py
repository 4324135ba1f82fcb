#!/usr/bin/env python3
"""Reference data for tests/unit/test_wan_vae.c: tiny random Qwen-Image VAEs and their outputs.

Producer: diffusers 0.42's AutoencoderKLQwenImage (diffusers/models/autoencoders/
autoencoder_kl_qwenimage.py) on torch, CPU, float64, one frame per image (T = 1), run through its own
chunked paths with feature caches (encoder: `_encode`; decoder: post_quant_conv + `decoder` with
the cache, as `_decode` does, but without its final clamp so that errors are not hidden). Nothing here
comes from sdc's C code. The weights are drawn at random (seeded) and stored under Wan2.1's original
names (the layout of the golden checkpoints, ../shared/golden/qwen_image/README.md), mapped from
diffusers' names by `wan_name` below; the model is then loaded back from the stored values (F16 files:
the F16-rounded values) with strict=True, so the reference sees exactly what the C test loads.

Files (tests/data/wan_vae/):
  rgb.safetensors : base_dim 8, dim_mult [1,2,4,4], num_res_blocks 1, 3 image channels, F16 weights
  rgba.safetensors: base_dim 4, dim_mult [1,2,4,4], num_res_blocks 2, 4 image channels (Layered), F32
Each holds the weights (Conv3d weights 5-D [O, I, T, H, W]) plus, per case K (outermost first):
  K.z [16, h, w] latent -> K.img [C, 8h, 8w] decoder output (not clamped),
  K.x [C, H, W] image  -> K.moments [32, H/8, W/8] (mean, logvar after quant_conv),
  K.noise [16, H/8, W/8] -> K.sample (DiagonalGaussianDistribution: mean + exp(0.5*clamp(logvar,
  -30, 20)) * noise), K.norm ((sample - latents_mean) / latents_std with diffusers' config stats).
Cases: d0 latent 5x3 (w x h), d1 latent 4x7, e0 image 48x40 (latent 6x5), e1 image 24x56 (3x7).

Also tests/data/wan_vae/full_ref.safetensors: the full-width golden VAEs (base_dim 96, 2 blocks,
../shared/golden/tools/make_qwen_image_random.py, seed 1001; F16 weights, read as float64) run the same
way: rgb.z [16, 4, 6] -> rgb.img [3, 32, 48], rgb.x [3, 24, 32] -> rgb.moments [32, 3, 4], and rgba.*
for the Layered VAE (4 channels).

Re-run (from the repository root, a minute):
    python3 tests/golden/gen_wan_vae_ref.py
    python3 tests/golden/gen_wan_vae_ref.py full DIR   # DIR holds qwen_image{,_layered}_vae_1001.safetensors
"""
import sys
import os

import torch
from diffusers import AutoencoderKLQwenImage
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "wan_vae")


def wan_name(n, nrb):
    """diffusers name -> Wan2.1 original name."""
    res = {"norm1.gamma": "residual.0.gamma", "conv1.weight": "residual.2.weight",
           "conv1.bias": "residual.2.bias", "norm2.gamma": "residual.3.gamma",
           "conv2.weight": "residual.6.weight", "conv2.bias": "residual.6.bias",
           "conv_shortcut.weight": "shortcut.weight", "conv_shortcut.bias": "shortcut.bias"}
    top = {"quant_conv.": "conv1.", "post_quant_conv.": "conv2."}
    for a, b in top.items():
        if n.startswith(a):
            return b + n[len(a):]
    half, rest = n.split(".", 1)
    p = rest.split(".")
    if p[0] == "conv_in":
        return f"{half}.conv1.{p[1]}"
    if p[0] == "norm_out":
        return f"{half}.head.0.{p[1]}"
    if p[0] == "conv_out":
        return f"{half}.head.2.{p[1]}"
    if p[0] == "mid_block":
        if p[1] == "resnets":
            idx = 0 if p[2] == "0" else 2
            return f"{half}.middle.{idx}." + res[".".join(p[3:])]
        return f"{half}.middle.1." + ".".join(p[3:])  # attentions.0.{norm.gamma,to_qkv,proj}
    if p[0] == "down_blocks":  # already flat in diffusers
        tail = ".".join(p[2:])
        return f"{half}.downsamples.{p[1]}." + res.get(tail, tail)
    if p[0] == "up_blocks":
        i = int(p[1])
        if p[2] == "resnets":
            return f"{half}.upsamples.{i * (nrb + 2) + int(p[3])}." + res[".".join(p[4:])]
        return f"{half}.upsamples.{i * (nrb + 2) + nrb + 1}." + ".".join(p[4:])  # upsamplers.0
    raise KeyError(n)


def make(base_dim, nrb, channels, dtype, seed):
    torch.manual_seed(seed)
    m = AutoencoderKLQwenImage(base_dim=base_dim, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=nrb,
                               input_channels=channels).double().eval()
    sd = {}
    for n, t in m.state_dict().items():
        if n.endswith("gamma"):
            v = 1 + 0.1 * torch.randn(t.shape, dtype=torch.float64)
        elif n.endswith("bias"):
            v = 0.05 * torch.randn(t.shape, dtype=torch.float64)
        else:  # fan-in scaled: activations stay O(1) through the net
            fan = t[0].numel()
            v = torch.randn(t.shape, dtype=torch.float64) / fan ** 0.5
        sd[n] = v.to(dtype)
    m.load_state_dict({n: v.double() for n, v in sd.items()}, strict=True)
    return m, {wan_name(n, nrb): v.contiguous() for n, v in sd.items()}


@torch.no_grad()
def decode(m, z):  # z [16, h, w]
    m.clear_cache()
    x = m.post_quant_conv(z[None, :, None])
    m._conv_idx = [0]
    out = m.decoder(x, feat_cache=m._feat_map, feat_idx=m._conv_idx)
    m.clear_cache()
    return out[0, :, 0]


@torch.no_grad()
def encode(m, x):  # x [C, H, W]
    return m._encode(x[None, :, None])[0, :, 0]


def run(name, base_dim, nrb, channels, dtype, seed):
    m, tensors = make(base_dim, nrb, channels, dtype, seed)
    g = torch.Generator().manual_seed(seed + 1)
    mean = torch.tensor(m.config.latents_mean, dtype=torch.float64)[:, None, None]
    std = torch.tensor(m.config.latents_std, dtype=torch.float64)[:, None, None]
    for k, (w, h) in {"d0": (5, 3), "d1": (4, 7)}.items():
        z = torch.randn(16, h, w, generator=g, dtype=torch.float64)
        tensors[f"{k}.z"] = z.float()
        img = decode(m, z.float().double())
        tensors[f"{k}.img"] = img.float()
        print(f"{name} {k}: z {tuple(z.shape)} -> img {tuple(img.shape)} std {img.std():.3f}")
    for k, (W, H) in {"e0": (48, 40), "e1": (24, 56)}.items():
        x = torch.rand(channels, H, W, generator=g, dtype=torch.float64) * 2 - 1
        tensors[f"{k}.x"] = x.float()
        mom = encode(m, x.float().double())
        mu, logvar = mom.chunk(2, 0)
        noise = torch.randn(mu.shape, generator=g, dtype=torch.float64)
        sample = mu + torch.exp(0.5 * torch.clamp(logvar, -30.0, 20.0)) * noise
        tensors[f"{k}.moments"] = mom.float()
        tensors[f"{k}.noise"] = noise.float()
        tensors[f"{k}.sample"] = sample.float()
        tensors[f"{k}.norm"] = ((sample - mean) / std).float()
        print(f"{name} {k}: x {tuple(x.shape)} -> moments {tuple(mom.shape)} "
              f"mean std {mu.std():.3f} logvar mean {logvar.mean():.3f}")
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, f"{name}.safetensors")
    save_file(tensors, path, metadata={"base_dim": str(base_dim), "num_res_blocks": str(nrb),
                                       "input_channels": str(channels)})
    print(path, os.path.getsize(path), "bytes")


def full(ckpt_dir):
    from safetensors.torch import load_file
    out = {}
    g = torch.Generator().manual_seed(77)
    for name, file, ch in (("rgb", "qwen_image_vae_1001.safetensors", 3),
                           ("rgba", "qwen_image_layered_vae_1001.safetensors", 4)):
        wan = load_file(os.path.join(ckpt_dir, file))
        m = AutoencoderKLQwenImage(base_dim=96, z_dim=16, num_res_blocks=2, input_channels=ch)
        m = m.double().eval()
        sd = {n: wan[wan_name(n, 2)].double() for n in m.state_dict()}
        m.load_state_dict(sd, strict=True)
        z = torch.randn(16, 4, 6, generator=g, dtype=torch.float64)
        x = torch.rand(ch, 24, 32, generator=g, dtype=torch.float64) * 2 - 1
        out[f"{name}.z"], out[f"{name}.x"] = z.float(), x.float()
        img = decode(m, z.float().double())
        mom = encode(m, x.float().double())
        out[f"{name}.img"], out[f"{name}.moments"] = img.float(), mom.float()
        print(f"full {name}: img {tuple(img.shape)} mean {img.mean():.3f} std {img.std():.3f}; "
              f"moments {tuple(mom.shape)} std {mom.std():.3f}")
    save_file(out, os.path.join(OUT, "full_ref.safetensors"))


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "full":
        full(sys.argv[2])
        sys.exit(0)
    run("rgb", 8, 1, 3, torch.float16, 2024)
    run("rgba", 4, 2, 4, torch.float32, 2025)
