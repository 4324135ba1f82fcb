#!/usr/bin/env python3
"""Reference outputs of the Qwen2.5-VL vision tower (Qwen-Image-Edit's reference-image encoder)
for a small random model, for tests/unit/test_qwen25vl_vision.c.

Independent implementation: PyPI transformers' Qwen2_5_VisionTransformerPretrainedModel
(transformers 5.x, modeling_qwen2_5_vl.py + vision_utils.py, eager attention) in float64 on torch
(CPU), and transformers' Qwen2VLImageProcessor for the patch layout (pixel_values / grid_thw from
an already-normalised image: no resize, rescale or normalisation there), so the C code's patch
ordering (merge-block-major, frame duplicated to the temporal patch of 2) is checked against
HF's, not against a copy of itself.

Model: hidden 64, 4 heads (head_dim 16), depth 3 with fullatt_block_indexes [1] (layers 0 and 2
windowed), MLP 96 (SwiGLU with biases), out_hidden 128 (the tiny LLM's width), patch 14, temporal patch 2, spatial
merge 2, window_size 56 (2x2 merged units = 4x4 patches per window), rope theta 1e4. Weights
F32 (torch.manual_seed(4321); norms 1 + 0.1 N(0,1), linears N(0,1)/sqrt(in), biases 0.1
N(0,1); the Conv3d's two temporal slices differ), names `visual.*` (ComfyUI / original HF).

Cases: img0 112x84 (W x H; grid 6x8 patches, 3x4 merged, windows of 2x2 merged units with
ragged edges: 4 windows) and img1 140x56 (grid 2x10, merged 1x5: 3 windows). Each image is
N(0,1) values [3, H, W] (what the preprocessing gives: CLIP-normalised).

Writes tests/data/qwen_vision/qwen25vl_vision_tiny.safetensors (weights) and
tests/data/qwen_vision/qwen25vl_vision_ref.safetensors: image.<case> [3, H, W], merged.<case>
[n_merged, 128] (the merger output in original patch order: what replaces the image pads),
hidden.<case> [n_patches, 64] (the last block's output, in window order as transformers
returns last_hidden_state), window_index.<case> (F32).

Edit conditioning (sd.cpp's way: the vision rows replace the image pads' input embeddings,
positions stay 0..n-1): the tiny LLM of tests/data/qwen_text/qwen25vl_tiny.safetensors (F16,
hidden 128; made by gen_qwen25vl_llm_ref.py, whose config this repeats) as transformers'
Qwen2_5_VLTextModel in float64 with inputs_embeds = the embeddings of 110 random ids (seed 7)
with rows 70..81 = merged.img0 and rows 90..99 = merged.img1 (the float32 values written
here); edit.ids (F32) and edit.hidden [110 - 64, 128] (the last hidden state without the
first 64 rows).

Re-run:  python3 tests/golden/gen_qwen25vl_vision_ref.py
"""
import os

import numpy as np
import torch
from safetensors.torch import save_file
from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLVisionConfig
from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import (
    Qwen2_5_VisionTransformerPretrainedModel,
)
from transformers.models.qwen2_vl.image_processing_qwen2_vl import Qwen2VLImageProcessor
from transformers.vision_utils import get_vision_window_index

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "qwen_vision")
CASES = {"img0": (112, 84), "img1": (140, 56)}  # W, H


def main():
    torch.manual_seed(4321)
    cfg = Qwen2_5_VLVisionConfig(depth=3, hidden_size=64, intermediate_size=96, num_heads=4,
                                 out_hidden_size=128, fullatt_block_indexes=[1], window_size=56)
    cfg._attn_implementation = "eager"
    model = Qwen2_5_VisionTransformerPretrainedModel(cfg).eval()
    weights = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name or "ln_q" in name:
                v = 1 + 0.1 * torch.randn(p.shape)
            elif name.endswith(".bias"):
                v = 0.1 * torch.randn(p.shape)
            else:
                fan_in = int(np.prod(p.shape[1:]))
                v = torch.randn(p.shape) / fan_in**0.5
            p.copy_(v.float())
            weights["visual." + name] = p.detach().float().contiguous().clone()
    model = model.double()
    proc = Qwen2VLImageProcessor(do_resize=False, do_rescale=False, do_normalize=False,
                                 patch_size=14, temporal_patch_size=2, merge_size=2)
    ref = {}
    for case, (w, h) in CASES.items():
        img = torch.randn(3, h, w).float()
        out = proc(images=[img.numpy()], return_tensors="pt", input_data_format="channels_first")
        pv, thw = out["pixel_values"].double(), out["image_grid_thw"]
        assert thw.tolist() == [[1, h // 14, w // 14]], thw
        with torch.no_grad():
            r = model(pv, grid_thw=thw)
        wi, cu = get_vision_window_index(thw, 2, 56, 14)
        print(case, "patches", pv.shape[0], "merged", r.pooler_output.shape[0],
              "windows", len(cu) - 1, "cu", cu.tolist(),
              "max|merged|", float(r.pooler_output.abs().max()))
        ref["image." + case] = img.contiguous()
        ref["merged." + case] = r.pooler_output.float().contiguous()
        ref["hidden." + case] = r.last_hidden_state.float().contiguous()
        ref["window_index." + case] = wi.float().contiguous()
    # the Edit conditioning through the tiny LLM
    from safetensors.torch import load_file
    from transformers.models.qwen2_5_vl.configuration_qwen2_5_vl import Qwen2_5_VLTextConfig
    from transformers.models.qwen2_5_vl.modeling_qwen2_5_vl import Qwen2_5_VLTextModel
    H, HEADS, VOCAB = 128, 4, 2650  # as gen_qwen25vl_llm_ref.py made it
    tcfg = Qwen2_5_VLTextConfig(
        vocab_size=VOCAB, hidden_size=H, intermediate_size=256, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=2, hidden_act="silu",
        max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=False,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0,
                         "mrope_section": [4, 6, 6]},
        attn_implementation="eager")
    w = load_file(os.path.join(OUT, "..", "qwen_text", "qwen25vl_tiny.safetensors"))
    tm = Qwen2_5_VLTextModel(tcfg).double().eval()
    tm.load_state_dict({k[len("model."):]: v.double() for k, v in w.items()}, strict=True)
    # theta^(-2j/D) in float64 (transformers rounds it to float32)
    tm.rotary_emb.inv_freq = 1.0 / (1e6 ** (torch.arange(0, H // HEADS, 2,
                                                         dtype=torch.float64) / (H // HEADS)))
    ids = torch.randint(0, VOCAB, (110,), generator=torch.Generator().manual_seed(7))
    with torch.no_grad():
        e = tm.embed_tokens(ids[None]).clone()
        e[0, 70:82] = ref["merged.img0"].double()
        e[0, 90:100] = ref["merged.img1"].double()
        pos = torch.arange(110)[None]
        r = tm(inputs_embeds=e, position_ids=pos, attention_mask=torch.ones(1, 110))
    ref["edit.ids"] = ids.float()
    ref["edit.hidden"] = r.last_hidden_state[0, 64:].float().contiguous()
    print("edit: 110 ids, spans 70+12, 90+10; max|hidden|", float(ref["edit.hidden"].abs().max()))
    os.makedirs(OUT, exist_ok=True)
    save_file(weights, os.path.join(OUT, "qwen25vl_vision_tiny.safetensors"))
    save_file(ref, os.path.join(OUT, "qwen25vl_vision_ref.safetensors"))
    for k, v in weights.items():
        if "blocks.0." in k or "blocks" not in k:
            print(k, list(v.shape))


if __name__ == "__main__":
    main()
