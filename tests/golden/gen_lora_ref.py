#!/usr/bin/env python3
"""LoRA test data for tests/unit/test_lora.c (written to tests/data/lora/).

A tiny random "model" whose tensors carry real SD checkpoint names (LDM UNet, HF CLIP text
encoder, SDXL OpenCLIP bigG) in F32 and F16, and LoRAs for it in the layouts sdc reads:

  kohya.safetensors        kohya/A1111: lora_unet_<LDM name>, lora_te_<HF name>, .alpha;
                           a LoCon with a 3x3 lora_down, a Tucker LoCon (lora_mid), F16 parts
  kohya_diffusers.safetensors  the same tensors under kohya's SD1 spelling of diffusers block
                           names (lora_unet_down_blocks_0_attentions_0_...)
  peft.safetensors         diffusers/PEFT: unet.<diffusers name>.lora_A/.lora_B.weight,
                           text_encoder.<HF name>...; no alpha (alpha/rank folded into lora_B)
  diffusers_old.safetensors  kohya_diffusers run through diffusers' own kohya converter (its
                           attention-processor spelling), alpha folded in; deltas as peft's
  te2.safetensors          SDXL lora_te2_ q/k/v/out projections: the q/k/v thirds of the
                           stacked OpenCLIP attn.in_proj_weight
  bad_*.safetensors        broken files the loader must refuse with a clear error
  sd1_unet_names.*, sdxl_unet_names.*  every SD1 / SDXL UNet conv/linear weight name (LDM,
                           values dummies) and its diffusers name from diffusers'
                           convert_ldm_unet_checkpoint: checks the diffusers -> LDM map on the
                           whole layouts (the SDXL key list is checked against diffusers' UNet)

ref.safetensors holds, per LoRA file and target weight, the weight difference for
multiplier 1 ("<file>/<target>"), computed in numpy float64 from the values as stored
(the independent reference: merged W = W + multiplier * delta).

The diffusers names come from the hand-written table LDM_TO_DIFFUSERS below; the script
checks that each one exists in a tiny diffusers UNet2DConditionModel of the same block
structure (SD1-like: attention on the first level, none on the last).

Re-run: python3 tests/golden/gen_lora_ref.py   (numpy, torch, safetensors, diffusers; reads
/work/shared/golden/tools/make_sd1_random.py for the SD1 key list)
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "lora")
rng = np.random.default_rng(1234)

C, CTX, TEMB, D, QK = 32, 48, 64, 32, 256
U = "model.diffusion_model."
TE = "cond_stage_model.transformer."
TE2 = "conditioner.embedders.1.model."

# name -> (PyTorch shape, dtype)
MODEL = {
    U + "input_blocks.1.1.proj_in.weight": ((C, C, 1, 1), np.float32),
    U + "input_blocks.1.1.transformer_blocks.0.attn1.to_q.weight": ((C, C), np.float16),
    U + "input_blocks.1.1.transformer_blocks.0.attn2.to_k.weight": ((C, CTX), np.float32),
    U + "input_blocks.1.1.transformer_blocks.0.ff.net.2.weight": ((64, QK), np.float32),
    U + "input_blocks.1.0.in_layers.2.weight": ((C, C, 3, 3), np.float32),
    U + "output_blocks.2.1.conv.weight": ((C, C, 3, 3), np.float16),
    U + "middle_block.0.emb_layers.1.weight": ((C, TEMB), np.float32),
    TE + "text_model.encoder.layers.0.self_attn.q_proj.weight": ((D, D), np.float32),
    TE + "text_model.encoder.layers.0.mlp.fc1.weight": ((4 * D, D), np.float16),
    TE2 + "transformer.resblocks.0.attn.in_proj_weight": ((3 * D, D), np.float32),
    TE2 + "transformer.resblocks.0.attn.out_proj.weight": ((D, D), np.float16),
}

LDM_TO_DIFFUSERS = {
    "input_blocks.1.1.proj_in": "down_blocks.0.attentions.0.proj_in",
    "input_blocks.1.1.transformer_blocks.0.attn1.to_q":
        "down_blocks.0.attentions.0.transformer_blocks.0.attn1.to_q",
    "input_blocks.1.1.transformer_blocks.0.attn2.to_k":
        "down_blocks.0.attentions.0.transformer_blocks.0.attn2.to_k",
    "input_blocks.1.1.transformer_blocks.0.ff.net.2":
        "down_blocks.0.attentions.0.transformer_blocks.0.ff.net.2",
    "input_blocks.1.0.in_layers.2": "down_blocks.0.resnets.0.conv1",
    "output_blocks.2.1.conv": "up_blocks.0.upsamplers.0.conv",
    "middle_block.0.emb_layers.1": "mid_block.resnets.0.time_emb_proj",
}


def check_diffusers_names():
    from diffusers import UNet2DConditionModel

    unet = UNet2DConditionModel(
        sample_size=8, in_channels=4, out_channels=4, layers_per_block=2,
        block_out_channels=(32, 64), norm_num_groups=8, cross_attention_dim=CTX,
        attention_head_dim=8,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
    keys = set(unet.state_dict().keys())
    for d in LDM_TO_DIFFUSERS.values():
        assert d + ".weight" in keys, d


def rnd(shape, dtype, s=0.3):
    return (rng.standard_normal(shape) * s).astype(dtype)


def t(a):
    return torch.from_numpy(np.ascontiguousarray(a))


model = {k: rnd(s, dt, 0.2) for k, (s, dt) in MODEL.items()}

# LoRA modules: (LDM target relative name or full name, kohya module, rank, alpha, kind, dtype)
R = 4
KOHYA = [
    ("input_blocks.1.1.proj_in", R, 2.0, "conv1x1", np.float32),
    ("input_blocks.1.1.transformer_blocks.0.attn1.to_q", R, 2.0, "linear", np.float16),
    ("input_blocks.1.1.transformer_blocks.0.attn2.to_k", R, None, "linear", np.float32),
    ("input_blocks.1.1.transformer_blocks.0.ff.net.2", 8, 4.0, "linear", np.float32),
    ("input_blocks.1.0.in_layers.2", R, 1.0, "locon3x3", np.float32),
    ("output_blocks.2.1.conv", R, 3.0, "tucker", np.float16),
    ("middle_block.0.emb_layers.1", R, 8.0, "linear", np.float32),
]
KOHYA_TE = [
    ("text_model.encoder.layers.0.self_attn.q_proj", R, 2.0),
    ("text_model.encoder.layers.0.mlp.fc1", R, 4.0),
]


def shape_of(name):
    return MODEL[name][0]


def make_module(target, rank, kind, dtype):
    """lora_down, lora_mid (or None), lora_up as stored (PyTorch shapes)."""
    shp = shape_of(target)
    out, inp = shp[0], shp[1]
    if kind == "linear":
        return rnd((rank, inp), dtype), None, rnd((out, rank), dtype)
    if kind == "conv1x1":
        return rnd((rank, inp, 1, 1), dtype), None, rnd((out, rank, 1, 1), dtype)
    if kind == "locon3x3":
        return rnd((rank, inp, 3, 3), dtype), None, rnd((out, rank, 1, 1), dtype)
    if kind == "tucker":
        return (rnd((rank, inp, 1, 1), dtype), rnd((rank, rank, 3, 3), dtype),
                rnd((out, rank, 1, 1), dtype))
    raise ValueError(kind)


def delta64(target, down, mid, up, scale):
    shp = shape_of(target)
    d = down.astype(np.float64)
    u = up.astype(np.float64).reshape(up.shape[0], up.shape[1])
    if mid is None:
        w = u @ d.reshape(d.shape[0], -1)
    else:
        m = mid.astype(np.float64)
        w = np.einsum("oa,abhw,bc->ochw", u, m, d.reshape(d.shape[0], d.shape[1]))
    return (scale * w).reshape(shp)


ref = {}
kohya, kohya_diff, peft = {}, {}, {}
for rel, rank, alpha, kind, dt in KOHYA:
    target = U + rel + ".weight"
    down, mid, up = make_module(target, rank, kind, dt)
    scale = alpha / rank if alpha is not None else 1.0
    ref["kohya/" + target] = delta64(target, down, mid, up, scale).astype(np.float32)
    for dst, mod in ((kohya, "lora_unet_" + rel.replace(".", "_")),
                     (kohya_diff, "lora_unet_" + LDM_TO_DIFFUSERS[rel].replace(".", "_"))):
        dst[mod + ".lora_down.weight"] = t(down)
        dst[mod + ".lora_up.weight"] = t(up)
        if mid is not None:
            dst[mod + ".lora_mid.weight"] = t(mid)
        if alpha is not None:
            dst[mod + ".alpha"] = torch.tensor(alpha, dtype=torch.float32)
    if mid is None:  # PEFT has no Tucker form
        up_p = (up.astype(np.float64) * scale).astype(np.float32)
        mod = "unet." + LDM_TO_DIFFUSERS[rel]
        peft[mod + ".lora_A.weight"] = t(down.astype(np.float32))
        peft[mod + ".lora_B.weight"] = t(up_p)
        ref["peft/" + target] = delta64(target, down, None, up_p, 1.0).astype(np.float32)

for rel, rank, alpha in KOHYA_TE:
    target = TE + rel + ".weight"
    down, mid, up = make_module(target, rank, "linear", np.float32)
    scale = alpha / rank
    ref["kohya/" + target] = delta64(target, down, None, up, scale).astype(np.float32)
    mod = "lora_te_" + rel.replace(".", "_")
    for dst in (kohya, kohya_diff):
        dst[mod + ".lora_down.weight"] = t(down)
        dst[mod + ".lora_up.weight"] = t(up)
        dst[mod + ".alpha"] = torch.tensor(alpha, dtype=torch.float32)
    up_p = (up.astype(np.float64) * scale).astype(np.float32)
    peft["text_encoder." + rel + ".lora_A.weight"] = t(down)
    peft["text_encoder." + rel + ".lora_B.weight"] = t(up_p)
    ref["peft/" + target] = delta64(target, down, None, up_p, 1.0).astype(np.float32)

# diffusers' own converter (kohya -> diffusers) on the kohya SD1 spelling, alpha/rank folded
# into lora_up as for PEFT: its older attention-processor names (...attn1.processor.to_q_lora
# .down.weight, ...self_attn.to_q_lora..., conv1.lora.down.weight); same deltas as "peft/"
def diffusers_converted():
    from diffusers.loaders.lora_conversion_utils import _convert_non_diffusers_lora_to_diffusers
    src = {}
    for k, v in kohya_diff.items():
        mod = k.rsplit(".lora_", 1)[0] if ".lora_" in k else k.rsplit(".", 1)[0]
        if mod + ".lora_mid.weight" in kohya_diff or k.endswith(".alpha"):
            continue
        if k.endswith(".lora_up.weight"):
            a = kohya_diff.get(mod + ".alpha")
            r = v.shape[1]
            scale = float(a) / r if a is not None else 1.0
            v = torch.from_numpy((v.numpy().astype(np.float64) * scale).astype(np.float32))
        else:
            v = v.float()
        src[k] = v
    out, _ = _convert_non_diffusers_lora_to_diffusers(src)
    return out


# SDXL bigG: kohya names the HF projections; they land on thirds of in_proj_weight
te2 = {}
inproj = TE2 + "transformer.resblocks.0.attn.in_proj_weight"
outproj = TE2 + "transformer.resblocks.0.attn.out_proj.weight"
dq = np.zeros((3 * D, D))
for i, p in enumerate("qkv"):
    down, up = rnd((R, D), np.float32), rnd((D, R), np.float16)
    alpha = 1.0 + i
    mod = "lora_te2_text_model_encoder_layers_0_self_attn_%s_proj" % p
    te2[mod + ".lora_down.weight"] = t(down)
    te2[mod + ".lora_up.weight"] = t(up)
    te2[mod + ".alpha"] = torch.tensor(alpha)
    dq[i * D:(i + 1) * D] = (alpha / R) * (up.astype(np.float64) @ down.astype(np.float64))
ref["te2/" + inproj] = dq.astype(np.float32)
down, up = rnd((R, D), np.float32), rnd((D, R), np.float32)
mod = "lora_te2_text_model_encoder_layers_0_self_attn_out_proj"
te2[mod + ".lora_down.weight"] = t(down)
te2[mod + ".lora_up.weight"] = t(up)
ref["te2/" + outproj] = (up.astype(np.float64) @ down.astype(np.float64)).astype(np.float32)

# broken files
m1 = "lora_unet_input_blocks_1_1_proj_in"
bad = {
    "bad_missing_up": {m1 + ".lora_down.weight": t(rnd((R, C, 1, 1), np.float32)),
                       m1 + ".alpha": torch.tensor(1.0)},
    "bad_rank": {m1 + ".lora_down.weight": t(rnd((R, C, 1, 1), np.float32)),
                 m1 + ".lora_up.weight": t(rnd((C, R - 1, 1, 1), np.float32))},
    "bad_target": {"lora_unet_input_blocks_9_1_proj_in.lora_down.weight":
                   t(rnd((R, C, 1, 1), np.float32)),
                   "lora_unet_input_blocks_9_1_proj_in.lora_up.weight":
                   t(rnd((C, R, 1, 1), np.float32))},
    "bad_shape": {m1 + ".lora_down.weight": t(rnd((R, C + 8, 1, 1), np.float32)),
                  m1 + ".lora_up.weight": t(rnd((C, R, 1, 1), np.float32))},
    "bad_loha": {m1 + ".hada_w1_a": t(rnd((C, R), np.float32)),
                 m1 + ".hada_w1_b": t(rnd((R, C), np.float32)),
                 m1 + ".hada_w2_a": t(rnd((C, R), np.float32)),
                 m1 + ".hada_w2_b": t(rnd((R, C), np.float32))},
    "bad_layout": {"something.else.weight": t(rnd((4, 4), np.float32))},
}


def sd1_name_map():
    """Every SD1 UNet conv/linear weight: diffusers name -> LDM name, from diffusers' own
    convert_ldm_unet_checkpoint run on the LDM key list of make_sd1_random.py (the
    v1-5-pruned-emaonly layout; each tensor a 1-element id). Returns (pairs, LDM names)."""
    import sys
    from diffusers.loaders import single_file_utils as sfu
    sys.path.insert(0, "/work/shared/golden/tools")
    import make_sd1_random as sd1
    names = [n for n, shape in sd1.unet_tensors()]
    shapes = dict(sd1.unet_tensors())
    ck = {n: torch.tensor([float(i)]) for i, n in enumerate(names)}
    cfg = {"layers_per_block": 2, "class_embed_type": None, "addition_embed_type": None,
           "num_class_embeds": None}
    out = sfu.convert_ldm_unet_checkpoint(dict(ck), cfg)
    pairs = []
    for dk, v in out.items():
        ldm = names[int(v[0])]
        if dk.endswith(".weight") and len(shapes[ldm]) >= 2:
            pairs.append((dk[:-7], ldm[len(U):-7]))
    return pairs, [n for n in names if n.endswith(".weight") and len(shapes[n]) >= 2]


def sdxl_ldm_names():
    """The SDXL base UNet key list (SGM layout), written from its structure; checked below by
    converting it with diffusers and comparing with a diffusers SDXL UNet's state dict."""
    n = []
    def res(p, cin, cout):
        n.extend([p + s for s in ("in_layers.0.weight", "in_layers.2.weight", "emb_layers.1.weight", "out_layers.0.weight", "out_layers.3.weight")])
        n.extend([p + s for s in ("in_layers.0.bias", "in_layers.2.bias", "emb_layers.1.bias", "out_layers.0.bias", "out_layers.3.bias")])
        if cin != cout: n.extend([p + "skip_connection.weight", p + "skip_connection.bias"])
    def xf(p, depth):
        for s in ("norm", "proj_in", "proj_out"): n.extend([p + s + ".weight", p + s + ".bias"])
        for d in range(depth):
            b = p + "transformer_blocks.%d." % d
            for a in ("attn1", "attn2"):
                for q in ("to_q", "to_k", "to_v"): n.append(b + a + "." + q + ".weight")
                n.extend([b + a + ".to_out.0.weight", b + a + ".to_out.0.bias"])
            n.extend([b + "ff.net.0.proj.weight", b + "ff.net.0.proj.bias", b + "ff.net.2.weight", b + "ff.net.2.bias"])
            for k in ("norm1", "norm2", "norm3"): n.extend([b + k + ".weight", b + k + ".bias"])
    for s in ("time_embed.0", "time_embed.2", "label_emb.0.0", "label_emb.0.2", "input_blocks.0.0"):
        n.extend([s + ".weight", s + ".bias"])
    ch = [320, 640, 1280]; depth = [0, 2, 10]
    ib = 1; skips = [320]; c = 320
    for lvl in range(3):
        for r in range(2):
            res("input_blocks.%d.0." % ib, c, ch[lvl]); c = ch[lvl]
            if depth[lvl]: xf("input_blocks.%d.1." % ib, depth[lvl])
            skips.append(c); ib += 1
        if lvl < 2:
            n.extend(["input_blocks.%d.0.op.weight" % ib, "input_blocks.%d.0.op.bias" % ib]); skips.append(c); ib += 1
    res("middle_block.0.", c, c); xf("middle_block.1.", 10); res("middle_block.2.", c, c)
    ob = 0
    for lvl in reversed(range(3)):
        for r in range(3):
            sk = skips.pop()
            res("output_blocks.%d.0." % ob, c + sk, ch[lvl]); c = ch[lvl]
            has = bool(depth[lvl])
            if has: xf("output_blocks.%d.1." % ob, depth[lvl])
            if lvl > 0 and r == 2:
                u = "output_blocks.%d.%d.conv." % (ob, 2 if has else 1); n.extend([u + "weight", u + "bias"])
            ob += 1
    n.extend(["out.0.weight", "out.0.bias", "out.2.weight", "out.2.bias"])
    return ["model.diffusion_model." + x for x in n]

def sdxl_name_map():
    from diffusers import UNet2DConditionModel
    from diffusers.loaders import single_file_utils as sfu
    names = sdxl_ldm_names()
    ck = {k: torch.tensor([float(i)]) for i, k in enumerate(names)}
    cfg = {"layers_per_block": 2, "class_embed_type": None, "addition_embed_type": "text_time",
           "num_class_embeds": None}
    out = sfu.convert_ldm_unet_checkpoint(dict(ck), cfg)
    with torch.device("meta"):
        u = UNet2DConditionModel(
            sample_size=128, cross_attention_dim=2048, block_out_channels=(320, 640, 1280),
            down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
            up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
            transformer_layers_per_block=(1, 2, 10), attention_head_dim=(5, 10, 20),
            use_linear_projection=True, addition_embed_type="text_time",
            addition_time_embed_dim=256, projection_class_embeddings_input_dim=2816)
    assert set(out) == set(u.state_dict()), "SDXL key list does not match diffusers' UNet"
    pairs = []
    for dk, v in out.items():
        ldm = names[int(v[0])]
        if dk.endswith(".weight") and not any(x in ldm for x in ("norm", "in_layers.0",
                                                                  "out_layers.0", "out.0")):
            pairs.append((dk[:-7], ldm[len(U):-7]))
    return pairs, [n for n in names if n.endswith(".weight")]


def save_names(stem, pairs, ldm_names, what):
    save_file({n: torch.zeros(1, dtype=torch.float16) for n in ldm_names},
              os.path.join(OUT, stem + ".safetensors"))
    with open(os.path.join(OUT, stem + ".tsv"), "w") as f:
        f.write("# diffusers module\tLDM module (%s UNet, from diffusers "
                "convert_ldm_unet_checkpoint)\n" % what)
        for d, l in pairs:
            f.write("%s\t%s\n" % (d, l))


if __name__ == "__main__":
    check_diffusers_names()
    os.makedirs(OUT, exist_ok=True)
    save_file({k: t(v) for k, v in model.items()}, os.path.join(OUT, "model.safetensors"))
    save_file(kohya, os.path.join(OUT, "kohya.safetensors"))
    save_file(kohya_diff, os.path.join(OUT, "kohya_diffusers.safetensors"))
    save_file(peft, os.path.join(OUT, "peft.safetensors"))
    save_file({k: v.contiguous() for k, v in diffusers_converted().items()},
              os.path.join(OUT, "diffusers_old.safetensors"))
    save_file(te2, os.path.join(OUT, "te2.safetensors"))
    for name, sd in bad.items():
        save_file(sd, os.path.join(OUT, name + ".safetensors"))
    save_file({k: t(v) for k, v in ref.items()}, os.path.join(OUT, "ref.safetensors"))
    save_names("sd1_unet_names", *sd1_name_map(), "SD1")
    save_names("sdxl_unet_names", *sdxl_name_map(), "SDXL")
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))
