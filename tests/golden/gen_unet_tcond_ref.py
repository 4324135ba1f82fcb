#!/usr/bin/env python3
"""Reference data for test_unet.c's LCM case: a tiny UNet with `time_cond_proj` (the w
embedding of LCM-distilled models such as LCM-Dreamshaper, diffusers' `time_cond_proj_dim`).

Independent implementation: diffusers' UNet2DConditionModel with time_cond_proj_dim=16,
and the w embedding of diffusers' LatentConsistencyModelPipeline
(get_guidance_scale_embedding(guidance_scale - 1), dim = time_cond_proj_dim). The weights are
gen_unet_ref.py's "sd1" layout plus `time_embedding.cond_proj.weight` under the LDM prefix,
the name LCM single-file checkpoints carry (sd.cpp lists it among the tensors it ignores).

tests/data/unet/sd1_tcond.safetensors: the F16 weights, x [2,4,8,16], t [2], ctx [2,5,32],
  w_emb [2,16]        : the pipeline's embedding for guidance_scale 8.5 (w = 7.5)
  out.tcond.exact     : float64 forward with timestep_cond = w_emb
  out.tcond.sdcpp     : the same with sd.cpp's F16 numerics emulated (gen_unet_ref.build)
  out.nocond.exact    : float64 forward without timestep_cond (what sd.cpp computes: it
                        drops the weight)

Re-run: python3 tests/golden/gen_unet_tcond_ref.py  (~10 s)
"""
import os

import numpy as np
import torch
from diffusers import LatentConsistencyModelPipeline, UNet2DConditionModel
from diffusers.loaders.single_file_utils import convert_ldm_unet_checkpoint
from safetensors.torch import save_file

from gen_unet_ref import CONFIGS, OUT, P, diffusers_config, f16, ggml_gelu_f16, ldm_shapes, \
    random_weights

DIM = 16
GUIDANCE = 8.5


def build(cfg, ldm, sdcpp):
    model = UNet2DConditionModel(**cfg, time_cond_proj_dim=DIM)
    sd = convert_ldm_unet_checkpoint(ldm, cfg)
    sd["time_embedding.cond_proj.weight"] = ldm[P + "time_embedding.cond_proj.weight"]
    missing, unexpected = model.load_state_dict(sd, strict=True)
    assert not missing and not unexpected, (missing, unexpected)
    model = model.double().eval()
    if sdcpp:
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Conv2d)):
                mod.register_forward_pre_hook(lambda m, a: (f16(a[0]),) + tuple(a[1:]))
            if type(mod).__name__ == "GEGLU":
                mod.gelu = ggml_gelu_f16
    return model


def main():
    c = CONFIGS["sd1"]
    shapes = ldm_shapes(c)
    shapes["time_embedding.cond_proj.weight"] = (c["ch"][0], DIM)
    w16 = {k: v.to(torch.float16) for k, v in random_weights(shapes, 1100).items()}
    cfg = diffusers_config(c)
    rng = np.random.RandomState(91)
    x = torch.from_numpy(rng.standard_normal((2, 4, 8, 16)).astype(np.float32))
    t = torch.tensor([999.0, 259.0], dtype=torch.float32)
    ctx = torch.from_numpy(rng.standard_normal((2, 5, c["ctx"])).astype(np.float32))
    w = torch.tensor(GUIDANCE - 1).repeat(2)
    w_emb = LatentConsistencyModelPipeline.get_guidance_scale_embedding(None, w, embedding_dim=DIM)
    data = {"x": x, "t": t, "ctx": ctx, "w_emb": w_emb.float()}
    ldm = {k: v.double() for k, v in w16.items()}
    for key, emu, cond in (("out.tcond.exact", False, True), ("out.tcond.sdcpp", True, True),
                           ("out.nocond.exact", False, False)):
        model = build(cfg, ldm, emu)
        with torch.no_grad():
            kw = {"timestep_cond": w_emb.double()} if cond else {}
            o = model(x.double(), t.double(), encoder_hidden_states=ctx.double(), **kw).sample
        data[key] = o.float()
        print(f"{key}: std {o.std().item():.4f} max {o.abs().max().item():.4f}")
    d = (data["out.tcond.exact"] - data["out.nocond.exact"]).abs().max().item()
    print(f"w embedding changes the output by up to {d:.3g}")
    save_file({**w16, **data}, os.path.join(OUT, "sd1_tcond.safetensors"))


if __name__ == "__main__":
    main()
