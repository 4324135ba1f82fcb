#!/usr/bin/env python3
"""Reference outputs of the Qwen2.5-VL language model (Qwen-Image's text encoder) for a small
random model, for tests/unit/test_qwen25vl_llm.c.

Independent implementation: PyPI transformers' Qwen2_5_VLTextModel (transformers 5.x,
modeling_qwen2_5_vl.py, eager attention) in float64 on torch (CPU), loading the random weights
written here. Two cross-checks run here and must pass before anything is written:
  - hidden_states[-1] (what diffusers' QwenImagePipeline takes, output_hidden_states=True) is
    last_hidden_state, the output of the final RMSNorm (what sd.cpp takes: out_layers empty);
  - the full Qwen2_5_VLModel (with a tiny vision tower that text never reaches) computes its own
    M-RoPE position ids for text-only input (get_rope_index) and gives the same states as the
    text model with positions 0..n-1: for pure text all three M-RoPE sections (temporal, height,
    width) get the same position, so M-RoPE is plain NeoX RoPE there.

Model: hidden 128, 4 query heads / 2 key-value heads (head_dim 32, so M-RoPE sections scaled to
[4, 6, 6]), 2 layers, MLP 256, vocabulary 2650 (the stand-in tokenizer of
../shared/golden/qwen_image/tokenizer), rope_theta 1e6, rms_norm_eps 1e-6, q/k/v biases, no
o_proj bias; the rotary frequencies in float64 too. Weights are stored F16 (torch.manual_seed(1234); embeddings N(0,1), norms
1 + 0.1 N(0,1), linears N(0,1)/sqrt(in), biases 0.1 N(0,1)) in ComfyUI / original HF names
(`model.embed_tokens.weight`, `model.layers.N.self_attn.q_proj.weight`, ..., `model.norm.weight`)
and the reference runs on exactly those F16 values, in float64.

Cases (ids are what the stand-in tokenizer gives; tokens.json of the golden set has the same):
  a1:     the Qwen-Image template around "a red fox sitting in a snowy forest, watercolor painting"
  empty:  the template around "" (the unconditional prompt)
  rand:   96 random ids (positions beyond the template, every part of the vocabulary)

Writes tests/data/qwen_text/qwen25vl_tiny.safetensors (weights) and
tests/data/qwen_text/qwen25vl_tiny_ref.safetensors: ids.<case> (F32), layer0.<case> (the output of
layer 0, hidden_states[1]), hidden.<case> (after the final norm) [n, 128] F32, and sdcpp.<case>:
and sdcpp0.<case> (after layer 0)
the same with every Linear's input rounded to F16 first (an emulation of sd.cpp's ggml CPU
matmul, which converts F32 activations to the F16 weights' type), also in float64.

Re-run:  python3 tests/golden/gen_qwen25vl_llm_ref.py [--golden /work/shared/golden]

With --full CKPT (the golden set's full-width random LLM, qwen25vl_llm_1001.safetensors, made by
../shared/golden/tools/make_qwen_image_random.py weights --seed 1001 --only qwen25vl_llm; 2 GB,
never committed) it writes tests/data/qwen_text/qwen25vl_full_ref.safetensors instead:
full.ids.a1 (F32, the 50 ids of tokens.json's a1 cond prompt, which sd.cpp ran) and
full.hidden.a1 [16, 3584] (the last hidden state of rows 34..49, the DiT context), from the same
transformers model (hidden 3584, 28/4 heads, MLP 18944, 2 layers) in float64 on the F16 weights.
The embedding is cut to the rows those ids use (a lookup: the same values) to fit in memory.
"""
import argparse
import os

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "qwen_text")
PREFIX = ("<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, "
          "quantity, text, spatial relationships of the objects and background:<|im_end|>\n"
          "<|im_start|>user\n")
SUFFIX = "<|im_end|>\n<|im_start|>assistant\n"
H, HEADS, KV, LAYERS, MLP, VOCAB = 128, 4, 2, 2, 256, 2650


def text_config():
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLTextConfig
    return Qwen2_5_VLTextConfig(
        vocab_size=VOCAB, hidden_size=H, intermediate_size=MLP, num_hidden_layers=LAYERS,
        num_attention_heads=HEADS, num_key_value_heads=KV, hidden_act="silu",
        max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                         "mrope_section": [4, 6, 6]},
        attn_implementation="eager")


def exact_inv_freq(head_dim):
    """theta^(-2j/D) in float64 (transformers computes it in float32, then .double() keeps that
    rounding): the reference is float64 throughout."""
    return 1.0 / (1000000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))


def random_weights():
    g = torch.Generator().manual_seed(1234)

    def n(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)
    hd = H // HEADS
    w = {"model.embed_tokens.weight": n(VOCAB, H)}
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = 1 + 0.1 * n(H)
        w[p + "post_attention_layernorm.weight"] = 1 + 0.1 * n(H)
        for name, o in (("q", HEADS * hd), ("k", KV * hd), ("v", KV * hd)):
            w[p + "self_attn.%s_proj.weight" % name] = n(o, H) / H ** 0.5
            w[p + "self_attn.%s_proj.bias" % name] = 0.1 * n(o)
        w[p + "self_attn.o_proj.weight"] = n(H, HEADS * hd) / (HEADS * hd) ** 0.5
        w[p + "mlp.gate_proj.weight"] = n(MLP, H) / H ** 0.5
        w[p + "mlp.up_proj.weight"] = n(MLP, H) / H ** 0.5
        w[p + "mlp.down_proj.weight"] = n(H, MLP) / MLP ** 0.5
    w["model.norm.weight"] = 1 + 0.1 * n(H)
    return {k: v.to(torch.float16) for k, v in w.items()}


def full_width(ckpt, golden):
    import json
    from safetensors import safe_open
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLTextConfig
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLTextModel
    toks = json.load(open(os.path.join(golden, "qwen_image", "tokens.json")))
    ids = next(p["ids"] for p in toks["prompts"] if p["case"] == "a1" and p["kind"] == "cond")
    used = sorted(set(ids))
    remap = {t: i for i, t in enumerate(used)}
    sd = {}
    with safe_open(ckpt, "pt") as f:
        for k in f.keys():
            if k == "model.embed_tokens.weight":
                sd["embed_tokens.weight"] = f.get_tensor(k)[used].to(torch.float64)
            else:
                sd[k[len("model."):]] = f.get_tensor(k).to(torch.float64)
    cfg = Qwen2_5_VLTextConfig(
        vocab_size=len(used), hidden_size=3584, intermediate_size=18944, num_hidden_layers=2,
        num_attention_heads=28, num_key_value_heads=4, hidden_act="silu",
        max_position_embeddings=128000, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                         "mrope_section": [16, 24, 24]},
        attn_implementation="eager")
    with torch.device("meta"):
        m = Qwen2_5_VLTextModel(cfg)
    m = m.to_empty(device="cpu").double().eval()
    m.load_state_dict(sd, strict=True)
    m.rotary_emb.inv_freq = exact_inv_freq(128)  # to_empty left the buffer uninitialised
    with torch.no_grad():
        x = torch.tensor([[remap[t] for t in ids]])
        h = m(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state[0]
    out = {"full.ids.a1": torch.tensor(ids, dtype=torch.float32),
           "full.hidden.a1": h[34:].float().contiguous()}
    path = os.path.join(OUT, "qwen25vl_full_ref.safetensors")
    save_file(out, path, metadata={
        "generator": "tests/golden/gen_qwen25vl_llm_ref.py --full",
        "reference": "transformers %s Qwen2_5_VLTextModel float64" %
                     __import__("transformers").__version__,
        "checkpoint": "qwen25vl_llm_1001.safetensors (md5 43ae4f0703ca4c97d41792696454bae4)"})
    print("wrote %s (%d bytes): %d tokens, |context| max %.3f" %
          (path, os.path.getsize(path), len(ids), h[34:].abs().max().item()))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--golden", default=os.path.join(HERE, "..", "..", "..", "shared", "golden"))
    ap.add_argument("--full", help="the full-width golden LLM checkpoint")
    a = ap.parse_args()
    if a.full:
        full_width(a.full, a.golden)
        return
    import tokenizers
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import (Qwen2_5_VLModel,
                                                                    Qwen2_5_VLTextModel)
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLConfig

    tok = tokenizers.Tokenizer.from_file(
        os.path.join(a.golden, "qwen_image", "tokenizer", "tokenizer.json"))
    w16 = random_weights()
    sd = {k[len("model."):]: v.to(torch.float64) for k, v in w16.items()}
    tm = Qwen2_5_VLTextModel(text_config()).double().eval()
    tm.load_state_dict(sd, strict=True)
    tm.rotary_emb.inv_freq = exact_inv_freq(H // HEADS)

    g = torch.Generator().manual_seed(99)
    cases = {
        "a1": tok.encode(PREFIX + "a red fox sitting in a snowy forest, watercolor painting" +
                         SUFFIX, add_special_tokens=False).ids,
        "empty": tok.encode(PREFIX + SUFFIX, add_special_tokens=False).ids,
        "rand": torch.randint(0, VOCAB, (96,), generator=g).tolist(),
    }
    assert len(cases["a1"]) == 50 and len(cases["empty"]) == 39, {k: len(v) for k, v in cases.items()}

    # the full model: its own M-RoPE positions for text, same weights
    cfg = Qwen2_5_VLConfig(text_config=text_config().to_dict(),
                           vision_config={"depth": 1, "hidden_size": 32, "intermediate_size": 64,
                                          "num_heads": 2, "out_hidden_size": H,
                                          "fullatt_block_indexes": [0]})
    cfg._attn_implementation = "eager"
    full = Qwen2_5_VLModel(cfg).double().eval()
    full.language_model.load_state_dict(sd, strict=True)
    full.language_model.rotary_emb.inv_freq = exact_inv_freq(H // HEADS)

    out = {}
    with torch.no_grad():
        for name, ids in cases.items():
            x = torch.tensor([ids])
            r = tm(input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            hs = r.hidden_states
            assert len(hs) == LAYERS + 1
            assert torch.equal(hs[-1], r.last_hidden_state), "hidden_states[-1] is not post-norm"
            f = full(input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            d = (f.last_hidden_state - r.last_hidden_state).abs().max().item()
            assert d < 1e-12, "full model with M-RoPE positions differs by %g" % d
            out["ids." + name] = torch.tensor(ids, dtype=torch.float32)
            out["layer0." + name] = hs[1][0].float().contiguous()
            out["hidden." + name] = r.last_hidden_state[0].float().contiguous()
            # sd.cpp's ggml numerics: every Linear input rounded to F16 (the weights' type)
            hooks = [mod.register_forward_pre_hook(
                lambda _m, args: (args[0].to(torch.float16).to(torch.float64),))
                for mod in tm.modules() if isinstance(mod, torch.nn.Linear)]
            e = tm(input_ids=x, attention_mask=torch.ones_like(x), output_hidden_states=True)
            for hk in hooks:
                hk.remove()
            out["sdcpp0." + name] = e.hidden_states[1][0].float().contiguous()
            out["sdcpp." + name] = e.last_hidden_state[0].float().contiguous()
            print("%-6s %3d tokens  |hidden| max %.3f  full-model M-RoPE diff %.2g" %
                  (name, len(ids), r.last_hidden_state.abs().max().item(), d))
    os.makedirs(OUT, exist_ok=True)
    meta = {"generator": "tests/golden/gen_qwen25vl_llm_ref.py",
            "reference": "transformers %s Qwen2_5_VLTextModel float64" %
                         __import__("transformers").__version__}
    save_file(w16, os.path.join(OUT, "qwen25vl_tiny.safetensors"), metadata=meta)
    save_file(out, os.path.join(OUT, "qwen25vl_tiny_ref.safetensors"), metadata=meta)
    for f in ("qwen25vl_tiny.safetensors", "qwen25vl_tiny_ref.safetensors"):
        print("wrote %s (%d bytes)" % (f, os.path.getsize(os.path.join(OUT, f))))


main()
