#!/usr/bin/env python3
"""Reference data for tests/unit/test_clip_text.c (the CLIP text encoders, src/models/clip_text.c).

Producers (both independent of sdc's C code):
  1. transformers' CLIPTextModel / CLIPTextModelWithProjection (eager attention, float64), the
     "reference" numerics: exact GELU (erf) or quick_gelu, float activations, OpenCLIP's
     pooled @ text_projection.
  2. sdcpp_forward() below, a torch re-implementation of what stable-diffusion.cpp (97d2990, ggml
     8e800cef, CPU) computes, the "sdcpp" numerics: a matmul with an F16 weight rounds its input
     to F16 (ggml's vec_dot_type), gelu / gelu_quick go through ggml's F16 tables
     (f16(act(f16(x))), gelu clamped outside +-10), the OpenCLIP text_projection is applied as
     sd.cpp loads it (a Linear over the stored [hidden, proj] matrix, i.e. text_projection @ x),
     everything else in float64.

Small random models (weights rounded to F16, stored F16 like real checkpoints):
  l: ViT-L-like, quick_gelu, no projection: 3 layers, hidden 128, 2 heads (head_dim 64 as in every
     real CLIP), ff 256, vocab 512, 77 positions.
  g: bigG-like, gelu, text_projection 128 -> 128 (square like bigG), otherwise the same.
l is written in HF layout (cond_stage_model.transformer.), g in HF layout (no prefix, as a --clip_g
file) and re-laid out in OpenCLIP layout (conditioner.embedders.1.model.: q/k/v stacked into
in_proj_weight, text_projection transposed), so both loaders are checked against one reference.
Inputs: a 77-token chunk BOS, 9 words, EOS, pads (EOS for l as SD1 pads, 0 for g as sd.cpp pads
clip_g), the first 12 tokens of l's chunk (n < n_pos), and l's chunk with two textual-inversion
ids (VOCAB, VOCAB+1 -> the rows of l.extra). Outputs (clip_text_ref.safetensors, F32, rows outermost):
  ids.{l,g,short,ti}; {l,g}.extra [2, 128];
  M.ref.skipS.{ln,noln} [77, 128] (S = layer_skip 1, 2, 3; ln = final layer norm applied),
  M.ref.pooled [128] (final LN of the last layer at the first EOS), g.ref.proj [128] (projected),
  M.ref.short.{skip1.ln,pooled} (n = 12), l.ref.ti.skip1.ln (textual inversion);
  M.sdcpp.skipS.{ln,noln} (S = 1, 2; skip3.noln only), M.sdcpp.pooled, g.sdcpp.proj_{hf,openclip}
  (the projection as sd.cpp applies each layout), l.sdcpp.ti.skip1.ln;
  M.sdcpp32.{skip1.ln,pooled}, g.sdcpp32.proj_{hf,openclip}: sd.cpp numerics with the weights as
  F32 (no activation rounding; only the activation tables and the projection rule).
sd1_vitl_ref.safetensors: ids [77] (I32), ref.skip1.ln and sdcpp.skip1.ln [77, 768].

Full size (optional, --sd1 FILE): the ViT-L text encoder of sd1_random_1001.safetensors
(cond_stage_model.transformer.*) on sd.cpp's ids for "a lovely cat" (clip_tokens.json case t01):
last layer + final layer norm [77, 768], reference and sdcpp numerics.

Re-run (from the repository root; torch 2.x, transformers 5.x, safetensors):
    python3 tests/golden/gen_clip_text_ref.py --out tests/data/clip_text \\
        [--sd1 /work/sd1/sd1_random_1001.safetensors --tokens ../shared/golden/sd1/clip_tokens.json]
"""
import argparse
import json
import os

import torch
from safetensors.torch import load_file, save_file
from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

VOCAB, HIDDEN, LAYERS, FF, NPOS, PROJ = 512, 128, 3, 256, 77, 128
BOS, EOS = 510, 511
N_EXTRA = 2


def make_weights(seed, with_proj):
    """HF-layout state dict, values rounded to F16 (float32 tensors)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, std=1.0, mean=0.0):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std + mean).half().float()

    sd = {}
    p = "text_model."
    sd[p + "embeddings.token_embedding.weight"] = rnd(VOCAB, HIDDEN)
    sd[p + "embeddings.position_embedding.weight"] = rnd(NPOS, HIDDEN, std=0.5)
    for i in range(LAYERS):
        lp = f"{p}encoder.layers.{i}."
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            sd[lp + f"self_attn.{n}.weight"] = rnd(HIDDEN, HIDDEN, std=HIDDEN**-0.5)
            sd[lp + f"self_attn.{n}.bias"] = rnd(HIDDEN, std=0.02)
        for n in ("layer_norm1", "layer_norm2"):
            sd[lp + f"{n}.weight"] = rnd(HIDDEN, std=0.1, mean=1.0)
            sd[lp + f"{n}.bias"] = rnd(HIDDEN, std=0.02)
        sd[lp + "mlp.fc1.weight"] = rnd(FF, HIDDEN, std=HIDDEN**-0.5)
        sd[lp + "mlp.fc1.bias"] = rnd(FF, std=0.02)
        sd[lp + "mlp.fc2.weight"] = rnd(HIDDEN, FF, std=FF**-0.5)
        sd[lp + "mlp.fc2.bias"] = rnd(HIDDEN, std=0.02)
    sd[p + "final_layer_norm.weight"] = rnd(HIDDEN, std=0.1, mean=1.0)
    sd[p + "final_layer_norm.bias"] = rnd(HIDDEN, std=0.02)
    if with_proj:
        sd["text_projection.weight"] = rnd(PROJ, HIDDEN, std=HIDDEN**-0.5)  # Linear [out, in]
    extra = rnd(N_EXTRA, HIDDEN)  # textual-inversion rows (ids VOCAB, VOCAB+1)
    return sd, extra


def to_openclip(sd):
    """The same weights in OpenCLIP layout (names as stored under cond_stage_model.model.)."""
    p = "text_model."
    oc = {
        "token_embedding.weight": sd[p + "embeddings.token_embedding.weight"],
        "positional_embedding": sd[p + "embeddings.position_embedding.weight"],
        "ln_final.weight": sd[p + "final_layer_norm.weight"],
        "ln_final.bias": sd[p + "final_layer_norm.bias"],
    }
    for i in range(LAYERS):
        lp, op = f"{p}encoder.layers.{i}.", f"transformer.resblocks.{i}."
        oc[op + "attn.in_proj_weight"] = torch.cat(
            [sd[lp + f"self_attn.{n}_proj.weight"] for n in "qkv"], 0)
        oc[op + "attn.in_proj_bias"] = torch.cat([sd[lp + f"self_attn.{n}_proj.bias"] for n in "qkv"], 0)
        oc[op + "attn.out_proj.weight"] = sd[lp + "self_attn.out_proj.weight"]
        oc[op + "attn.out_proj.bias"] = sd[lp + "self_attn.out_proj.bias"]
        for a, b in (("ln_1", "layer_norm1"), ("ln_2", "layer_norm2"), ("mlp.c_fc", "mlp.fc1"),
                     ("mlp.c_proj", "mlp.fc2")):
            oc[op + a + ".weight"] = sd[lp + b + ".weight"]
            oc[op + a + ".bias"] = sd[lp + b + ".bias"]
    if "text_projection.weight" in sd:
        oc["text_projection"] = sd["text_projection.weight"].t().contiguous()  # [hidden, proj]
    return oc


def hf_config(act, n_layers=LAYERS, hidden=HIDDEN, heads=HIDDEN // 64, ff=FF, vocab=VOCAB, eos=EOS,
              proj=PROJ):
    return CLIPTextConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=ff,
                          num_hidden_layers=n_layers, num_attention_heads=heads,
                          max_position_embeddings=NPOS, hidden_act=act, layer_norm_eps=1e-5,
                          projection_dim=proj, bos_token_id=BOS, eos_token_id=eos, pad_token_id=eos,
                          attn_implementation="eager")


def load_hf(model, st):
    """Loads HF-layout names; transformers 5 may drop the text_model. prefix in the module tree."""
    keys = set(model.state_dict().keys())
    fixed = {}
    for k, v in st.items():
        if k not in keys and k.startswith("text_model.") and k[len("text_model."):] in keys:
            k = k[len("text_model."):]
        fixed[k] = v
    missing, unexpected = model.load_state_dict(fixed, strict=False)
    assert not unexpected and all("position_ids" in m for m in missing), (missing, unexpected)


def hf_outputs(sd, act, ids, with_proj, extra=None):
    """transformers in float64: hidden per (layer_skip, final_ln), pooled, and projected."""
    cfg = hf_config(act)
    model = (CLIPTextModelWithProjection if with_proj else CLIPTextModel)(cfg).double().eval()
    st = {k: v.double() for k, v in sd.items() if with_proj or k != "text_projection.weight"}
    load_hf(model, st)
    tm = model.text_model if with_proj else model
    if extra is not None:  # textual inversion: extra rows after the vocabulary
        emb = tm.embeddings.token_embedding.weight.data
        tm.embeddings.token_embedding = torch.nn.Embedding(VOCAB + N_EXTRA, HIDDEN).double()
        tm.embeddings.token_embedding.weight.data = torch.cat([emb, extra.double()], 0)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True)
    hs = out.hidden_states
    fln = tm.final_layer_norm
    r = {}
    for skip in (1, 2, 3):
        h = hs[-skip][0]
        r[f"skip{skip}.noln"] = h
        r[f"skip{skip}.ln"] = fln(h)
    eos_pos = ids.index(EOS) if EOS in ids else len(ids) - 1
    r["pooled"] = fln(hs[-1][0])[eos_pos]
    if with_proj:
        r["proj"] = out.text_embeds[0]
    return r


def f16(x):
    return x.to(torch.float16).to(x.dtype)


def ggml_gelu_f16(x):
    """ggml_vec_gelu_f32 with GGML_GELU_FP16: table of f16 inputs, f32 tanh formula, f16 out."""
    xh = x.to(torch.float16).to(torch.float32)
    c = 0.79788456080286535587989
    y = 0.5 * xh * (1.0 + torch.tanh(c * xh * (1.0 + 0.044715 * xh * xh)))
    y = y.to(torch.float16).to(x.dtype)
    return torch.where(x <= -10.0, torch.zeros_like(x), torch.where(x >= 10.0, x, y))


def ggml_gelu_quick_f16(x):
    """ggml_vec_gelu_quick_f32 with GGML_GELU_QUICK_FP16 (no clamp): f16(x*sigmoid(1.702x))."""
    xh = x.to(torch.float16).to(torch.float32)
    y = xh * (1.0 / (1.0 + torch.exp(-1.702 * xh)))
    return y.to(torch.float16).to(x.dtype)


def sdcpp_forward(sd, act, ids, layer_skip, final_ln, openclip_proj, extra=None, heads=HIDDEN // 64, eos=EOS,
                  dtype=torch.float64, f16_weights=True):
    """sd.cpp's CLIPTextModel numerics (see the module docstring); float64 apart from roundings."""
    p = "text_model."
    d = {k: v.to(dtype) for k, v in sd.items()}
    tok = d[p + "embeddings.token_embedding.weight"]
    if extra is not None:
        tok = torch.cat([tok, extra.to(dtype)], 0)
    n = len(ids)
    hidden = tok.shape[1]
    x = tok[torch.tensor(ids)] + d[p + "embeddings.position_embedding.weight"][:n]
    mask = torch.full((n, n), float("-inf"), dtype=dtype).triu(1)

    def lin(h, name):  # F16 weight: ggml rounds the activations to F16
        return (f16(h) if f16_weights else h) @ d[name + ".weight"].t() + d[name + ".bias"]

    def ln(h, name):
        return torch.nn.functional.layer_norm(h, (hidden,), d[name + ".weight"], d[name + ".bias"], 1e-5)

    n_layers = sum(1 for k in d if k.endswith("mlp.fc1.weight"))

    def run(x, upto):
        for i in range(upto):
            lp = f"{p}encoder.layers.{i}."
            h = ln(x, lp + "layer_norm1")
            q, k, v = (lin(h, lp + f"self_attn.{c}_proj").view(n, heads, -1).transpose(0, 1) for c in "qkv")
            a = torch.softmax(q @ k.transpose(1, 2) / (q.shape[-1] ** 0.5) + mask, -1) @ v
            x = x + lin(a.transpose(0, 1).reshape(n, hidden), lp + "self_attn.out_proj")
            h = ln(x, lp + "layer_norm2")
            f = lin(h, lp + "mlp.fc1")
            f = ggml_gelu_quick_f16(f) if act == "quick_gelu" else ggml_gelu_f16(f)
            x = x + lin(f, lp + "mlp.fc2")
        return x

    h = run(x, n_layers - layer_skip + 1)
    out = ln(h, p + "final_layer_norm") if final_ln else h
    eos_pos = ids.index(eos) if eos in ids else n - 1  # sd.cpp: the first EOS, else the last
    pooled = ln(run(x, n_layers), p + "final_layer_norm")[eos_pos]
    proj = None
    if "text_projection.weight" in d:
        w = d["text_projection.weight"]  # HF Linear [proj, hidden]
        # sd.cpp keeps the projection in F32 (no activation rounding); an OpenCLIP-layout matrix
        # T = w^T [hidden, proj] is used as a Linear weight, i.e. T @ pooled (= w^T @ pooled)
        proj = (w.t() @ pooled) if openclip_proj else (w @ pooled)
    return out, pooled, proj


def chunk_ids(seed, pad):
    g = torch.Generator().manual_seed(seed)
    words = torch.randint(1, BOS, (9,), generator=g).tolist()
    ids = [BOS] + words + [EOS]
    return ids + [pad] * (NPOS - len(ids))


def f32(t):
    return t.detach().to(torch.float32).contiguous()


def small_models(out_dir):
    ref = {}
    ids_l = chunk_ids(11, EOS)  # SD1 / clip_l: pads are EOS
    ids_g = chunk_ids(12, 0)  # SDXL clip_g: pads after EOS are 0
    ids_ti = ids_l[:3] + [VOCAB, VOCAB + 1] + ids_l[3:-2]  # two textual-inversion tokens
    ids_short = ids_l[:12]  # n = 12 < n_pos
    ref["ids.l"], ref["ids.g"] = torch.tensor(ids_l, dtype=torch.int32), torch.tensor(ids_g, dtype=torch.int32)
    ref["ids.ti"], ref["ids.short"] = torch.tensor(ids_ti, dtype=torch.int32), torch.tensor(ids_short, dtype=torch.int32)
    for name, seed, act, with_proj, ids in (("l", 101, "quick_gelu", False, ids_l), ("g", 202, "gelu", True, ids_g)):
        sd, extra = make_weights(seed, with_proj)
        ref[f"{name}.extra"] = f32(extra)
        r = hf_outputs(sd, act, ids, with_proj)
        for k, v in r.items():
            ref[f"{name}.ref.{k}"] = f32(v)
        r = hf_outputs(sd, act, ids_short, with_proj)
        ref[f"{name}.ref.short.skip1.ln"] = f32(r["skip1.ln"])
        ref[f"{name}.ref.short.pooled"] = f32(r["pooled"])
        if name == "l":
            r = hf_outputs(sd, act, ids_ti, with_proj, extra)
            ref["l.ref.ti.skip1.ln"] = f32(r["skip1.ln"])
        for skip in (1, 2):
            for fl in (0, 1):
                o, pooled, proj = sdcpp_forward(sd, act, ids, skip, bool(fl), False)
                ref[f"{name}.sdcpp.skip{skip}.{'ln' if fl else 'noln'}"] = f32(o)
        ref[f"{name}.sdcpp.pooled"] = f32(pooled)
        ref[f"{name}.sdcpp.skip3.noln"] = f32(sdcpp_forward(sd, act, ids, 3, False, False)[0])
        if with_proj:
            ref[f"{name}.sdcpp.proj_hf"] = f32(proj)
            ref[f"{name}.sdcpp.proj_openclip"] = f32(sdcpp_forward(sd, act, ids, 1, True, True)[2])
        # the same weights as F32: no activation rounding, only ggml's activation tables (and the
        # projection quirk) remain; these do not amplify chaotically, so they can be checked tightly
        o, pooled, proj = sdcpp_forward(sd, act, ids, 1, True, False, f16_weights=False)
        ref[f"{name}.sdcpp32.skip1.ln"], ref[f"{name}.sdcpp32.pooled"] = f32(o), f32(pooled)
        if with_proj:
            ref[f"{name}.sdcpp32.proj_hf"] = f32(proj)
            ref[f"{name}.sdcpp32.proj_openclip"] = f32(
                sdcpp_forward(sd, act, ids, 1, True, True, f16_weights=False)[2])
        if name == "l":
            o = sdcpp_forward(sd, act, ids_ti, 1, True, False, extra)[0]
            ref["l.sdcpp.ti.skip1.ln"] = f32(o)
        half = lambda dct, pre: {pre + k: v.half().contiguous() for k, v in dct.items()}
        if name == "l":
            save_file(half(sd, "cond_stage_model.transformer."), os.path.join(out_dir, "clip_l_hf.safetensors"))
        else:
            save_file(half(sd, ""), os.path.join(out_dir, "clip_g_hf.safetensors"))
            save_file(half(to_openclip(sd), "conditioner.embedders.1.model."),
                      os.path.join(out_dir, "clip_g_openclip.safetensors"))
    save_file(ref, os.path.join(out_dir, "clip_text_ref.safetensors"),
              metadata={"producer": "tests/golden/gen_clip_text_ref.py", "torch": torch.__version__})


def full_size(out_dir, sd1_path, tokens_path):
    cases = json.load(open(tokens_path))["cases"]
    ids = next(c for c in cases if c["prompt"] == "a lovely cat")["sdcpp"]["ids"][:NPOS]
    pre = "cond_stage_model.transformer."
    full = load_file(sd1_path)
    sd = {k[len(pre):]: v.float() for k, v in full.items() if k.startswith(pre) and "position_ids" not in k}
    del full
    cfg = hf_config("quick_gelu", n_layers=12, hidden=768, heads=12, ff=3072, vocab=49408, eos=49407,
                    proj=768)
    model = CLIPTextModel(cfg).double().eval()
    load_hf(model, {k: v.double() for k, v in sd.items()})
    with torch.no_grad():
        ref = model(input_ids=torch.tensor([ids])).last_hidden_state[0]
    sdcpp = sdcpp_forward(sd, "quick_gelu", ids, 1, True, False, heads=12, eos=49407)[0]
    save_file({"ids": torch.tensor(ids, dtype=torch.int32), "ref.skip1.ln": f32(ref), "sdcpp.skip1.ln": f32(sdcpp)},
              os.path.join(out_dir, "sd1_vitl_ref.safetensors"),
              metadata={"producer": "tests/golden/gen_clip_text_ref.py --sd1", "model": os.path.basename(sd1_path),
                        "prompt": "a lovely cat"})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/data/clip_text")
    ap.add_argument("--sd1", help="sd1_random_1001.safetensors (full-size ViT-L reference)")
    ap.add_argument("--tokens", default="../shared/golden/sd1/clip_tokens.json")
    ap.add_argument("--skip-small", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if not a.skip_small:
        small_models(a.out)
    if a.sd1:
        full_size(a.out, a.sd1, a.tokens)


if __name__ == "__main__":
    main()
