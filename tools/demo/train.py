#!/usr/bin/env python3
"""Train sdc's demo text-to-image model (issue 14): MiniT2I's architecture with a small T5 encoder and
its own word-level tokenizer, on the pictures of tools/demo/make_data.py.

The torch model below mirrors sdc's MiniT2I forward (src/models/minit2i.c, docs/minit2i.md) and T5
encoder (src/models/t5.c) exactly, with the Hugging Face tensor names sdc and sd.cpp load, so the
exported files run unchanged:
  * the DiT ignores the timestep and predicts x0 from x_s = (1 - s) * x0 + s * 2 * noise (sdc's
    MiniT2I flow: sigmas 1 -> 0, start 2 * noise);
  * text: T5 states of the real tokens (caption + </s>), the remaining positions of the 256-long prompt
    are the learned mask_token; the unconditional branch is 256 mask_token rows (trained by dropping
    the caption 10% of the time, for classifier-free guidance).

    python3 tools/demo/train.py                      # full run, writes checkpoints to --ckpt-dir
    python3 tools/demo/train.py --quick              # a few steps (CI): trains, exports, reloads
    python3 tools/demo/train.py --export-only CKPT --out models/demo   # write the shipped files

Seeded: the same arguments give the same weights on the same machine/torch build (data, noise, caption
dropout and init all come from --seed). torch.set_num_threads(--threads).
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_data as md  # noqa: E402

PROMPT_LEN = 256  # sdc/sd.cpp MiniT2I conditioner length
HEAD_DIM = 64  # sd.cpp assumes 64 for these widths; sdc reads it from q_norm
META = "\u2581"  # sentencepiece's word-boundary mark

# ---------------------------------------------------------------------------------------------
# Tokenizer: a Unigram tokenizer.json over the grammar's words (+ letters, so any lowercase word
# still tokenizes), upper case folded, </s> appended, as sdc's T5 tokenizer loader reads it.
# ---------------------------------------------------------------------------------------------
SPECIALS = ["<pad>", "</s>", "<unk>"]
LETTERS = [chr(c) for c in range(ord("a"), ord("z") + 1)]


def vocab_pieces():
    """[(piece, score)] in id order: specials, the word-boundary mark, the words, single letters."""
    v = [(s, 0.0) for s in SPECIALS] + [(META, -5.0)]
    v += [(META + w, -2.0) for w in md.vocabulary()]
    v += [(c, -10.0) for c in LETTERS]
    return v


def tokenizer_json():
    """The Hugging Face tokenizer.json (dict) of the demo vocabulary."""
    norm = [{"type": "Replace", "pattern": {"String": c.upper()}, "content": c} for c in LETTERS]
    norm += [{"type": "Strip", "strip_left": True, "strip_right": True},
             {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "}]
    meta = {"type": "Metaspace", "replacement": META, "prepend_scheme": "always", "split": True}
    added = [{"id": i, "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for i, s in enumerate(SPECIALS)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": norm}, "pre_tokenizer": meta,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [1], "tokens": ["</s>"]}}},
        "decoder": meta,
        "model": {"type": "Unigram", "unk_id": 2, "vocab": [[p, s] for p, s in vocab_pieces()],
                  "byte_fallback": False},
    }


class Tokenizer:
    """Python form of tokenizer_json() (Viterbi over the pieces of each word), for training."""

    def __init__(self):
        self.pieces = vocab_pieces()
        self.ids = {p: i for i, (p, _) in enumerate(self.pieces)}

    def _word(self, w):
        n = len(w)
        best = [(-1e30, -1, -1)] * (n + 1)  # (score, start, id)
        best[0] = (0.0, -1, -1)
        for end in range(1, n + 1):
            for start in range(end):
                i = self.ids.get(w[start:end])
                if i is not None and best[start][0] > -1e29:
                    sc = best[start][0] + self.pieces[i][1]
                    if sc > best[end][0]:
                        best[end] = (sc, start, i)
            if best[end][0] < -1e29 and best[end - 1][0] > -1e29:  # unknown character
                best[end] = (best[end - 1][0] - 100.0, end - 1, 2)
        out, e = [], n
        while e > 0:
            out.append(best[e][2])
            e = best[e][1]
        return out[::-1]

    def encode(self, text):
        t = " ".join(text.lower().split())
        ids = []
        for w in t.split(" ") if t else []:
            ids += self._word(META + w)
        return ids + [1]


# ---------------------------------------------------------------------------------------------
# Model: T5 encoder + MiniT2I DiT, parameter names = the checkpoint's names
# ---------------------------------------------------------------------------------------------
def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def t5_buckets(L, num_buckets=32, max_distance=128):
    """HF T5 bidirectional relative-position bucket [q, k] of offset k - q."""
    rel = torch.arange(L)[None, :] - torch.arange(L)[:, None]
    nb = num_buckets // 2
    b = (rel > 0).long() * nb
    n = rel.abs()
    me = nb // 2
    large = me + (torch.log(n.float().clamp(min=1) / me) / math.log(max_distance / me) * (nb - me)).long()
    return b + torch.where(n < me, n, torch.clamp(large, max=nb - 1))


class T5Encoder(nn.Module):
    def __init__(self, vocab, d, layers, ff):
        super().__init__()
        self.d, self.heads, self.layers = d, d // HEAD_DIM, layers
        inner = self.heads * HEAD_DIM
        P = {"shared.weight": (vocab, d), "encoder.final_layer_norm.weight": (d,),
             "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": (32, self.heads)}
        for i in range(layers):
            b = "encoder.block.%d.layer." % i
            P.update({b + "0.SelfAttention.q.weight": (inner, d), b + "0.SelfAttention.k.weight": (inner, d),
                      b + "0.SelfAttention.v.weight": (inner, d), b + "0.SelfAttention.o.weight": (d, inner),
                      b + "0.layer_norm.weight": (d,), b + "1.layer_norm.weight": (d,),
                      b + "1.DenseReluDense.wi_0.weight": (ff, d), b + "1.DenseReluDense.wi_1.weight": (ff, d),
                      b + "1.DenseReluDense.wo.weight": (d, ff)})
        self.names = list(P)
        self.p = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(torch.empty(s)) for k, s in P.items()})

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def init(self, g):
        for k in self.names:
            t = self.w(k)
            with torch.no_grad():
                if k.endswith("layer_norm.weight"):
                    t.fill_(1.0)
                elif k == "shared.weight":
                    t.normal_(0, 1.0, generator=g)
                elif "relative_attention_bias" in k:
                    t.normal_(0, 0.1, generator=g)
                elif k.endswith("q.weight"):  # T5 has no 1/sqrt(d) in attention
                    t.normal_(0, (self.d * HEAD_DIM) ** -0.5, generator=g)
                else:
                    t.normal_(0, t.shape[1] ** -0.5, generator=g)

    def forward(self, ids, mask):
        """ids [B, L] int64, mask [B, L] (1 real, 0 pad) -> [B, L, d]"""
        B, L = ids.shape
        H = self.heads
        x = self.w("shared.weight")[ids]
        rb = self.w("encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight")
        bias = rb[t5_buckets(L)].permute(2, 0, 1)[None]  # [1, H, L, L]
        bias = bias + torch.where(mask > 0, 0.0, float("-inf"))[:, None, None, :]
        for i in range(self.layers):
            b = "encoder.block.%d.layer." % i
            h = rms_norm(x, self.w(b + "0.layer_norm.weight"))

            def heads(n):
                return F.linear(h, self.w(b + "0.SelfAttention.%s.weight" % n)).view(B, L, H, HEAD_DIM).transpose(1, 2)

            q, k, v = heads("q"), heads("k"), heads("v")
            a = torch.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
            o = (a @ v).transpose(1, 2).reshape(B, L, H * HEAD_DIM)
            x = x + F.linear(o, self.w(b + "0.SelfAttention.o.weight"))
            h = rms_norm(x, self.w(b + "1.layer_norm.weight"))
            g = F.gelu(F.linear(h, self.w(b + "1.DenseReluDense.wi_0.weight")), approximate="tanh")
            u = F.linear(h, self.w(b + "1.DenseReluDense.wi_1.weight"))
            x = x + F.linear(g * u, self.w(b + "1.DenseReluDense.wo.weight"))
        return rms_norm(x, self.w("encoder.final_layer_norm.weight"))


def mlp_hidden(h):
    """sd.cpp's SwiGLU width: ceil8(int(float32(h) * 2.6667f))"""
    return ((int(np.float32(h) * np.float32(2.6667)) + 7) // 8) * 8


def pos_embed(gw, gh, hidden):
    """[gh*gw, hidden]: [sin(x w), cos(x w), sin(y w), cos(y w)], w_i = 10000^(-i/(hidden/4))"""
    q = hidden // 4
    om = 1.0 / np.power(np.float32(10000.0), np.arange(q, dtype=np.float32) / np.float32(q))
    y, x = np.mgrid[0:gh, 0:gw]
    ax, ay = x.reshape(-1, 1) * om, y.reshape(-1, 1) * om
    return torch.from_numpy(np.concatenate([np.sin(ax), np.cos(ax), np.sin(ay), np.cos(ay)], 1).astype(np.float32))


def rope_tables(Lt, gw, gh, hd):
    """cos, sin [Lt + gh*gw, hd/2]: text positions 0..Lt-1, then image (y pairs, then x pairs)."""
    half = hd // 2
    end = np.float32(hd - 2) / np.float32(hd)
    om_t = 1.0 / np.power(np.float32(10000.0), np.arange(half, dtype=np.float32) * np.float32(end / (half - 1)))
    at = np.arange(Lt, dtype=np.float32)[:, None] * om_t[None]
    q = half // 2
    fr = 1.0 / np.power(np.float32(10000.0), np.arange(q, dtype=np.float32) * 2 / np.float32(half))
    y, x = np.mgrid[0:gh, 0:gw]
    ai = np.concatenate([y.reshape(-1, 1) * fr, x.reshape(-1, 1) * fr], 1)
    a = np.concatenate([at, ai], 0).astype(np.float32)
    return torch.from_numpy(np.cos(a)), torch.from_numpy(np.sin(a))


def rope(x, cos, sin):
    """x [B, H, L, d], rotate-half pairs (j, j + d/2) by angle [L, j]"""
    d2 = x.shape[-1] // 2
    x0, x1 = x[..., :d2], x[..., d2:]
    return torch.cat([x0 * cos - x1 * sin, x0 * sin + x1 * cos], dim=-1)


class MiniT2I(nn.Module):
    def __init__(self, hidden, depth, txt_depth, patch, pca, txt_input, channels=3):
        super().__init__()
        self.c = dict(hidden=hidden, depth=depth, txt_depth=txt_depth, patch=patch, pca=pca,
                      txt_input=txt_input, channels=channels)
        H, M, pp = hidden, mlp_hidden(hidden), patch * patch * channels
        self.heads = H // HEAD_DIM
        P = {"img_embedder.proj1.weight": (pca, channels, patch, patch), "img_embedder.proj2.weight": (H, pca, 1, 1),
             "img_embedder.proj2.bias": (H,), "txt_embedder.weight": (H, txt_input),
             # read by neither sdc nor sd.cpp's MiniT2I graph; kept so the file has MiniT2I's full layout
             "t_embedder.mlp.0.weight": (H, 256), "t_embedder.mlp.0.bias": (H,),
             "t_embedder.mlp.2.weight": (H, H), "t_embedder.mlp.2.bias": (H,),
             "pooled_embedder.weight": (H, txt_input)}

        def swi(b):
            return {b + ".w1.weight": (M, H), b + ".w3.weight": (M, H), b + ".w2.weight": (H, M)}

        for i in range(txt_depth):
            b = "txt_preamble_blocks.%d." % i
            P.update({b + "norm1.weight": (H,), b + "norm2.weight": (H,), b + "qkv.weight": (3 * H, H),
                      b + "qkv.bias": (3 * H,), b + "attn_proj.weight": (H, H), b + "attn_proj.bias": (H,),
                      b + "q_norm.weight": (HEAD_DIM,), b + "k_norm.weight": (HEAD_DIM,)})
            P.update(swi(b + "mlp"))
        for i in range(depth):
            b = "double_blocks.%d." % i
            for s in ("img", "txt"):
                P.update({b + s + "_norm1.weight": (H,), b + s + "_norm2.weight": (H,),
                          b + s + "_qkv.weight": (3 * H, H), b + s + "_qkv.bias": (3 * H,),
                          b + s + "_attn_proj.weight": (H, H), b + s + "_attn_proj.bias": (H,)})
                P.update(swi(b + s + "_mlp"))
            P.update({b + "q_norm.weight": (HEAD_DIM,), b + "k_norm.weight": (HEAD_DIM,)})
        P.update({"final_layer.norm_final.weight": (H,), "final_layer.linear.weight": (pp, H),
                  "final_layer.linear.bias": (pp,), "mask_token": (1, 1, txt_input)})
        self.names = list(P)
        self.p = nn.ParameterDict({k.replace(".", "__"): nn.Parameter(torch.empty(s)) for k, s in P.items()})
        self._tab = {}

    def w(self, name):
        return self.p[name.replace(".", "__")]

    def init(self, g, zero_out=True, qk_scale=1.0):
        """Small normal weights; residual outputs (attn_proj, w2) and the final layer start at zero
        unless zero_out=False (the forward check wants every path non-trivial)."""
        for k in self.names:
            t = self.w(k)
            with torch.no_grad():
                if "norm" in k:
                    # q/k RMSNorm gains set how sharp the joint attention can be at the start:
                    # with 1.0 the logits stay within +-8 and one caption word among 256 text
                    # rows and the image tokens gets little weight until the gains have grown
                    t.fill_(qk_scale if k.endswith(("q_norm.weight", "k_norm.weight")) else 1.0)
                    if not zero_out:
                        t.add_(torch.randn(t.shape, generator=g) * 0.1)
                elif k.endswith(".bias"):
                    t.zero_()
                    if not zero_out:
                        t.normal_(0, 0.05, generator=g)
                elif k == "mask_token":
                    t.normal_(0, 1.0, generator=g)
                elif zero_out and (k.endswith("attn_proj.weight") or k.endswith("w2.weight")
                                   or k.startswith("final_layer.linear")):
                    t.zero_()
                else:
                    fan_in = int(np.prod(t.shape[1:]))
                    t.normal_(0, fan_in ** -0.5, generator=g)

    def tables(self, gw, gh):
        key = (gw, gh)
        if key not in self._tab:
            cos, sin = rope_tables(PROMPT_LEN, gw, gh, HEAD_DIM)
            self._tab[key] = (pos_embed(gw, gh, self.c["hidden"]), cos, sin)
        return self._tab[key]

    def text_input(self, ctx, n_real):
        """T5 states ctx [B, Lc, d] with n_real[b] real rows (0: unconditional) -> [B, 256, d], the
        rest of each row the mask token."""
        B = ctx.shape[0]
        mt = self.w("mask_token").reshape(1, 1, -1).expand(B, PROMPT_LEN, -1)
        Lc = ctx.shape[1]
        pad = torch.zeros(B, PROMPT_LEN - Lc, ctx.shape[2], dtype=ctx.dtype)
        full = torch.cat([ctx, pad], 1)
        keep = (torch.arange(PROMPT_LEN)[None, :] < n_real[:, None]).to(ctx.dtype)[..., None]
        return full * keep + mt * (1 - keep)

    def _attn(self, q, k, v):
        B, H, L, d = q.shape
        return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(B, L, H * d)

    def _split(self, t):
        B, L, _ = t.shape
        return t.view(B, L, 3, self.heads, HEAD_DIM).permute(2, 0, 3, 1, 4)  # [3, B, heads, L, hd]

    def _swiglu(self, x, b):
        w = self.w
        return F.linear(F.silu(F.linear(x, w(b + ".w1.weight"))) * F.linear(x, w(b + ".w3.weight")), w(b + ".w2.weight"))

    def _patch_embed(self, x):
        w, p = self.w, self.c["patch"]
        h = F.conv2d(x, w("img_embedder.proj1.weight"), stride=p)
        h = F.conv2d(h, w("img_embedder.proj2.weight"), w("img_embedder.proj2.bias"))
        gh, gw = x.shape[2] // p, x.shape[3] // p
        pos, cos, sin = self.tables(gw, gh)
        return h.flatten(2).transpose(1, 2) + pos, cos, sin  # [B, gh*gw, H], token y*gw + x

    def _unpatch(self, img, shape):
        w, p = self.w, self.c["patch"]
        B, C, Hh, Ww = shape
        y = F.linear(rms_norm(img, w("final_layer.norm_final.weight")), w("final_layer.linear.weight"),
                     w("final_layer.linear.bias"))  # [B, tokens, p*p*C], feature (py*p + px)*C + ch
        return y.view(B, Hh // p, Ww // p, p, p, C).permute(0, 5, 1, 3, 2, 4).reshape(B, C, Hh, Ww)

    def _img_half(self, img, b, q_img, k, v):
        """The image stream's update in double block b: image queries over the joint keys/values."""
        w = self.w
        B, Hh, L, d = q_img.shape
        o = F.scaled_dot_product_attention(q_img, k, v).transpose(1, 2).reshape(B, L, Hh * d)
        img = img + F.linear(o, w(b + "img_attn_proj.weight"), w(b + "img_attn_proj.bias"))
        return img + self._swiglu(rms_norm(img, w(b + "img_norm2.weight")), b + "img_mlp")

    def forward(self, x, txt_in):
        """x [B, C, H, W], txt_in [B, 256, txt_input] (text_input()) -> x0 prediction [B, C, H, W].
        The complete graph, as sdc runs it."""
        w, c = self.w, self.c
        img, cos, sin = self._patch_embed(x)
        Lt = PROMPT_LEN
        txt = F.linear(txt_in, w("txt_embedder.weight"))
        tc, ts = cos[:Lt], sin[:Lt]
        for i in range(c["txt_depth"]):
            b = "txt_preamble_blocks.%d." % i
            qkv = self._split(F.linear(rms_norm(txt, w(b + "norm1.weight")), w(b + "qkv.weight"), w(b + "qkv.bias")))
            q = rope(rms_norm(qkv[0], w(b + "q_norm.weight")), tc, ts)
            k = rope(rms_norm(qkv[1], w(b + "k_norm.weight")), tc, ts)
            txt = txt + F.linear(self._attn(q, k, qkv[2]), w(b + "attn_proj.weight"), w(b + "attn_proj.bias"))
            txt = txt + self._swiglu(rms_norm(txt, w(b + "norm2.weight")), b + "mlp")
        for i in range(c["depth"]):
            b = "double_blocks.%d." % i
            iq = self._split(F.linear(rms_norm(img, w(b + "img_norm1.weight")), w(b + "img_qkv.weight"), w(b + "img_qkv.bias")))
            tq = self._split(F.linear(rms_norm(txt, w(b + "txt_norm1.weight")), w(b + "txt_qkv.weight"), w(b + "txt_qkv.bias")))
            qn, kn = w(b + "q_norm.weight"), w(b + "k_norm.weight")
            q = rope(torch.cat([rms_norm(tq[0], qn), rms_norm(iq[0], qn)], 2), cos, sin)
            k = rope(torch.cat([rms_norm(tq[1], kn), rms_norm(iq[1], kn)], 2), cos, sin)
            v = torch.cat([tq[2], iq[2]], 2)
            if i < c["depth"] - 1:  # the text stream's last update is never read
                o = self._attn(q[:, :, :Lt], k, v)
                txt = txt + F.linear(o, w(b + "txt_attn_proj.weight"), w(b + "txt_attn_proj.bias"))
                txt = txt + self._swiglu(rms_norm(txt, w(b + "txt_norm2.weight")), b + "txt_mlp")
            img = self._img_half(img, b, q[:, :, Lt:], k, v)
        return self._unpatch(img, x.shape)

    def forward_fast(self, x, ctx, n_real):
        """forward() for the trained configuration: no text preamble and a text stream that the double
        blocks never change (txt_attn_proj and txt_mlp.w2 are zero), so the 256 text rows are n_real
        T5 rows and copies of one mask-token row; their keys/values are computed once per row kind.
        ctx [B, Lc, d] T5 states, n_real [B] (0: unconditional). Equal to forward(x, text_input())."""
        w, c = self.w, self.c
        assert c["txt_depth"] == 0
        B, Lc, _ = ctx.shape
        Lt = PROMPT_LEN
        img, cos, sin = self._patch_embed(x)
        rows = torch.cat([ctx, w("mask_token").reshape(1, 1, -1).expand(B, 1, -1)], 1)  # [B, Lc+1, d]
        e = F.linear(rows, w("txt_embedder.weight"))
        real = (torch.arange(Lt)[None, :] < n_real[:, None])[:, None, :, None]  # [B, 1, 256, 1]
        for i in range(c["depth"]):
            b = "double_blocks.%d." % i
            iq = self._split(F.linear(rms_norm(img, w(b + "img_norm1.weight")), w(b + "img_qkv.weight"), w(b + "img_qkv.bias")))
            tkv = self._split(F.linear(rms_norm(e, w(b + "txt_norm1.weight")), w(b + "txt_qkv.weight"), w(b + "txt_qkv.bias")))
            pad = torch.zeros(B, self.heads, Lt - Lc, HEAD_DIM)
            tk = torch.where(real, torch.cat([tkv[1][:, :, :Lc], pad], 2), tkv[1][:, :, Lc:])
            tv = torch.where(real, torch.cat([tkv[2][:, :, :Lc], pad], 2), tkv[2][:, :, Lc:])
            qn, kn = w(b + "q_norm.weight"), w(b + "k_norm.weight")
            q = rope(rms_norm(iq[0], qn), cos[Lt:], sin[Lt:])
            k = rope(torch.cat([rms_norm(tk, kn), rms_norm(iq[1], kn)], 2), cos, sin)
            v = torch.cat([tv, iq[2]], 2)
            img = self._img_half(img, b, q, k, v)
        return self._unpatch(img, x.shape)

    def frozen(self, name):
        """Parameters the trained configuration keeps fixed: the text stream's updates (zero) and the
        timestep/pooled embedders neither sdc nor sd.cpp reads."""
        return ("txt_attn_proj" in name or "txt_mlp" in name or "txt_norm2" in name
                or name.startswith("t_embedder") or name.startswith("pooled_embedder"))


class Demo(nn.Module):
    """T5 + MiniT2I, the pair sdc loads with --t5xxl / --diffusion-model."""

    def __init__(self, a):
        super().__init__()
        self.tok = Tokenizer()
        self.t5 = T5Encoder(len(self.tok.pieces), a.t5_dim, a.t5_layers, a.t5_ff)
        self.dit = MiniT2I(a.hidden, a.depth, a.txt_depth, a.patch, a.pca, a.t5_dim)

    def encode(self, captions, drop=None):
        """captions -> T5 states [B, Lc, d] and real-row counts n [B] (drop[b] True: n = 0, the
        unconditional row)."""
        ids = [self.tok.encode(c) for c in captions]
        L = max(len(i) for i in ids)
        t = torch.zeros(len(ids), L, dtype=torch.long)
        m = torch.zeros(len(ids), L)
        for b, i in enumerate(ids):
            t[b, :len(i)] = torch.tensor(i)
            m[b, :len(i)] = 1
        ctx = self.t5(t, m)
        n = m.sum(1).long()
        if drop is not None:
            n = torch.where(drop, torch.zeros_like(n), n)
        return ctx, n

    def condition(self, captions, drop=None):
        """captions -> the DiT's full text input [B, 256, d] (for MiniT2I.forward)."""
        return self.dit.text_input(*self.encode(captions, drop))

    def denoise(self, x, ctx, n):
        """x0 prediction from T5 states (encode()); the fast path when the configuration allows."""
        if self.dit.c["txt_depth"] == 0:
            return self.dit.forward_fast(x, ctx, n)
        return self.dit(x, self.dit.text_input(ctx, n))


# ---------------------------------------------------------------------------------------------
# Sampling (sdc's MiniT2I Euler, CFG) and a quick scorer, for progress reports during training
# ---------------------------------------------------------------------------------------------
@torch.no_grad()
def sample(model, captions, steps=10, cfg=4.0, seed=0, size=64):
    g = torch.Generator().manual_seed(seed)
    B = len(captions)
    x = 2 * torch.randn(B, 3, size, size, generator=g)
    ctx, n = model.encode(captions)
    ctx2, n2 = torch.cat([ctx, ctx], 0), torch.cat([n, torch.zeros_like(n)], 0)
    for i in range(steps):
        s, s1 = 1 - i / steps, 1 - (i + 1) / steps
        o = model.denoise(torch.cat([x, x], 0), ctx2, n2)
        d = o[B:] + cfg * (o[:B] - o[B:])
        x = x + (x - d) / s * (s1 - s)
    return ((x.clamp(-1, 1) + 1) * 127.5).round().byte().permute(0, 2, 3, 1).numpy()


def quick_score(img):
    """(shape colour, shape, background colour) indices read from a uint8 [64,64,3] picture."""
    pal = md.PALETTE.astype(np.float64)
    f = img.astype(np.float64)
    ring = np.concatenate([f[:2].reshape(-1, 3), f[-2:].reshape(-1, 3), f[:, :2].reshape(-1, 3), f[:, -2:].reshape(-1, 3)])
    bgc = np.median(ring, 0)
    bi = int(np.argmin(((pal - bgc) ** 2).sum(1)))
    sm = np.sqrt(((f - pal[bi]) ** 2).sum(2)) > 60
    if sm.sum() < 10:
        return -1, -1, bi
    ci = int(np.argmin(((pal - np.median(f[sm], 0)) ** 2).sum(1)))
    ys, xs = np.nonzero(sm)
    box = (ys.max() - ys.min() + 1) * (xs.max() - xs.min() + 1)
    fill = sm.sum() / box
    si = 1 if fill > 0.9 else (0 if fill > 0.64 else 2)
    return ci, si, bi


def evaluate(model, n=32, steps=8, cfg=4.0):
    caps = md.captions("heldback")
    caps = [caps[i] for i in np.random.default_rng(123).choice(len(caps), n, replace=False)]
    imgs = sample(model, caps, steps, cfg)
    ok = np.zeros(4)
    for img, c in zip(imgs, caps):
        sp = md.parse_caption(c)
        ci, si, bi = quick_score(img)
        ok += [ci == sp["colour"], si == sp["shape"], bi == sp["bg"],
               (ci, si, bi) == (sp["colour"], sp["shape"], sp["bg"])]
    return ok / n, imgs, caps


# ---------------------------------------------------------------------------------------------
# Export: safetensors (F16 matrices, F32 vectors) + tokenizer.json
# ---------------------------------------------------------------------------------------------
def write_safetensors(path, tensors):
    """tensors: [(name, np.ndarray float16/float32)] in file order."""
    header, off, blobs = {}, 0, []
    for name, a in tensors:
        a = np.ascontiguousarray(a)
        b = a.tobytes()
        header[name] = {"dtype": {np.float16: "F16", np.float32: "F32"}[a.dtype.type], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    tmp = path + ".part"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def export(model, out_dir, dtype="f16"):
    """Write out_dir/{minit2i,t5}.safetensors and tokenizer.json. F16: every >= 2-D tensor except
    mask_token and the relative attention bias (small, kept F32); 1-D tensors F32."""
    os.makedirs(out_dir, exist_ok=True)

    def conv(name, t):
        a = t.detach().float().numpy()
        keep = a.ndim < 2 or name.endswith("mask_token") or "relative_attention_bias" in name
        return a.astype(np.float32 if (dtype == "f32" or keep) else np.float16)

    write_safetensors(os.path.join(out_dir, "minit2i.safetensors"),
                      [("model.net." + k, conv(k, model.dit.w(k))) for k in model.dit.names])
    write_safetensors(os.path.join(out_dir, "t5.safetensors"), [(k, conv(k, model.t5.w(k))) for k in model.t5.names])
    with open(os.path.join(out_dir, "tokenizer.json"), "w") as f:
        json.dump(tokenizer_json(), f, ensure_ascii=False, indent=1)


def load_exported(model, out_dir):
    """The inverse of export(): the weights of out_dir/{minit2i,t5}.safetensors into model."""
    from safetensors.numpy import load_file
    W = load_file(os.path.join(out_dir, "minit2i.safetensors"))
    T = load_file(os.path.join(out_dir, "t5.safetensors"))
    with torch.no_grad():
        for k in model.dit.names:
            src = W["model.net." + k]
            if tuple(src.shape) != tuple(model.dit.w(k).shape):
                raise SystemExit("--init-from: %s has shape %s, the arguments make %s" %
                                 (k, list(src.shape), list(model.dit.w(k).shape)))
            model.dit.w(k).copy_(torch.from_numpy(src.astype(np.float32)))
        for k in model.t5.names:
            model.t5.w(k).copy_(torch.from_numpy(T[k].astype(np.float32)))


# ---------------------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------------------
def batch_tensors(rng, n):
    imgs, caps = md.batch(rng, n)
    x0 = torch.from_numpy(imgs).permute(0, 3, 1, 2).float() / 127.5 - 1.0
    return x0, caps


def lr_at(step, a):
    if step < a.warmup:
        return a.lr * (step + 1) / a.warmup
    t = (step - a.warmup) / max(1, a.steps - a.warmup)
    return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(1.0, t))))


# the arguments that shape the model (taken from a checkpoint on --resume / --export-only)
ARCH_ARGS = ("hidden", "depth", "txt_depth", "patch", "pca", "t5_dim", "t5_layers", "t5_ff")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description="train sdc's demo model")
    ap.add_argument("--steps", type=int, default=3200)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--lr", type=float, default=1.5e-3)
    ap.add_argument("--warmup", type=int, default=50)
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--shift", type=float, default=3.0, help="noise-level shift towards pure noise")
    ap.add_argument("--qk-scale", type=float, default=1.0, help="initial q/k RMSNorm gain of the DiT")
    ap.add_argument("--drop", type=float, default=0.1, help="caption dropout (CFG)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: the shared machine)")
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--depth", type=int, default=4)
    ap.add_argument("--txt-depth", type=int, default=0, help="text preamble blocks (0: the fast path)")
    ap.add_argument("--patch", type=int, default=4)
    ap.add_argument("--pca", type=int, default=64)
    ap.add_argument("--t5-dim", type=int, default=128)
    ap.add_argument("--t5-layers", type=int, default=2)
    ap.add_argument("--t5-ff", type=int, default=256)
    ap.add_argument("--ckpt-dir", default="/tmp/sdc_demo_ckpt")
    ap.add_argument("--ckpt-every", type=float, default=300.0, help="seconds between checkpoints")
    ap.add_argument("--eval-every", type=int, default=300, help="steps between held-back evaluations")
    ap.add_argument("--resume", help="checkpoint .pt to continue from")
    ap.add_argument("--init-from", metavar="DIR", help="start from the exported weights in DIR (e.g. "
                    "models/demo: a warm start with a fresh optimizer; shapes must match the arguments)")
    ap.add_argument("--stop-at", type=int, help="save a checkpoint after this many steps and stop")
    ap.add_argument("--out", help="export the final EMA weights here (models/demo)")
    ap.add_argument("--export-only", metavar="CKPT", help="export CKPT's EMA weights to --out and stop")
    ap.add_argument("--quick", action="store_true", help="a few small steps, export, reload (CI, < 1 min)")
    return ap.parse_args(argv)


def main(argv=None):
    a = parse_args(argv)
    if a.quick:
        a.steps, a.batch, a.warmup, a.eval_every = 6, 4, 2, 0
        a.out = a.out or os.path.join(a.ckpt_dir, "quick_export")
    torch.set_num_threads(a.threads)
    ck = None
    if a.export_only or a.resume:  # the checkpoint's architecture, whatever the flags say
        ck = torch.load(a.export_only or a.resume, weights_only=False)
        for k in ARCH_ARGS:
            setattr(a, k, ck["args"].get(k, getattr(a, k)))
    torch.manual_seed(a.seed)
    g = torch.Generator().manual_seed(a.seed)
    model = Demo(a)
    model.t5.init(g)
    model.dit.init(g, qk_scale=a.qk_scale)
    ema = Demo(a)
    ema.load_state_dict(model.state_dict())
    for q in ema.parameters():
        q.requires_grad_(False)
    train_p = [q for k, q in model.dit.p.items() if not model.dit.frozen(k.replace("__", "."))]
    for k, q in model.dit.p.items():
        q.requires_grad_(not model.dit.frozen(k.replace("__", ".")))
    train_p += list(model.t5.parameters())
    opt = torch.optim.AdamW(train_p, lr=a.lr, betas=(0.9, 0.99), weight_decay=0.01)
    start = 0
    if a.init_from:
        load_exported(model, a.init_from)
        ema.load_state_dict(model.state_dict())
        print("initialised from the exported weights in %s" % a.init_from, flush=True)
    src = a.export_only or a.resume
    if src:
        model.load_state_dict(ck["model"])
        ema.load_state_dict(ck["ema"])
        opt.load_state_dict(ck["opt"])
        start = ck["step"]
    if a.export_only:
        export(ema, a.out)
        print("exported %s (step %d) to %s" % (src, start, a.out))
        return 0
    n_dit = sum(q.numel() for q in model.dit.parameters())
    n_t5 = sum(q.numel() for q in model.t5.parameters())
    print("demo model: DiT %.2f M parameters, T5 %.2f M, vocab %d; %d steps of batch %d" %
          (n_dit / 1e6, n_t5 / 1e6, len(model.tok.pieces), a.steps, a.batch), flush=True)
    os.makedirs(a.ckpt_dir, exist_ok=True)
    t0 = last_ck = time.time()
    avg = None
    for step in range(start, a.steps):
        rng = np.random.default_rng([a.seed, step])  # per-step data: a resumed run sees the same batches
        x0, caps = batch_tensors(rng, a.batch)
        B = x0.shape[0]
        gen = torch.Generator().manual_seed(a.seed * 1000003 + step)
        noise = torch.randn(x0.shape, generator=gen)
        # noise levels: half uniform, half logit-normal around the middle, where the layout is decided
        u = torch.rand(B, generator=gen)
        ln = torch.sigmoid(torch.randn(B, generator=gen))
        s = torch.where(torch.rand(B, generator=gen) < 0.5, u, ln)
        # shifted towards pure noise (SD3's time shift): the layout is decided at high noise, and
        # that is where the caption alone must say where and what the shape is
        s = (a.shift * s / (1 + (a.shift - 1) * s)).view(B, 1, 1, 1)
        drop = torch.rand(B, generator=gen) < a.drop
        xs = (1 - s) * x0 + s * 2 * noise
        for grp in opt.param_groups:
            grp["lr"] = lr_at(step, a)
        pred = model.denoise(xs, *model.encode(caps, drop))
        loss = F.mse_loss(pred, x0)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(train_p, 1.0)
        opt.step()
        d = min(a.ema, (1 + step) / (10 + step))
        with torch.no_grad():
            for pe, pm in zip(ema.parameters(), model.parameters()):
                pe.lerp_(pm, 1 - d)
        avg = loss.item() if avg is None else 0.98 * avg + 0.02 * loss.item()
        el = time.time() - t0
        if step % 10 == 0 or step == a.steps - 1:
            print("step %5d  loss %.5f  avg %.5f  lr %.2e  %.2f s/step  %.0f s" %
                  (step, loss.item(), avg, lr_at(step, a), el / (step - start + 1), el), flush=True)
        done = step == a.steps - 1 or step + 1 == a.stop_at
        if a.eval_every and ((step + 1) % a.eval_every == 0 or done):
            acc, imgs, _ = evaluate(ema)
            print("eval step %d (EMA, 32 held-back prompts, euler 8 steps cfg 4): colour %.2f shape %.2f "
                  "background %.2f all %.2f" % (step + 1, *acc), flush=True)
            grid = np.concatenate([np.concatenate(list(imgs[r * 8:r * 8 + 8]), 1) for r in range(4)], 0)
            md.write_png(os.path.join(a.ckpt_dir, "eval_%05d.png" % (step + 1)), grid)
        if time.time() - last_ck > a.ckpt_every or done:
            ck = {"model": model.state_dict(), "ema": ema.state_dict(), "opt": opt.state_dict(), "step": step + 1,
                  "args": vars(a)}
            torch.save(ck, os.path.join(a.ckpt_dir, "last.pt.part"))
            os.replace(os.path.join(a.ckpt_dir, "last.pt.part"), os.path.join(a.ckpt_dir, "last.pt"))
            last_ck = time.time()
        if step + 1 == a.stop_at:
            print("stopped after step %d (--stop-at)" % a.stop_at)
            return 0
    if a.out:
        export(ema, a.out)
        print("exported EMA weights to %s" % a.out)
    if a.quick:  # the export must read back as the same model
        from safetensors.numpy import load_file
        W = load_file(os.path.join(a.out, "minit2i.safetensors"))
        err = max(float(np.abs(W["model.net." + k].astype(np.float32) - ema.dit.w(k).detach().numpy()).max())
                  for k in ema.dit.names)
        print("quick: %d DiT tensors exported, max |f16 - f32| %.2e (f16 rounding)" % (len(W), err))
        if not math.isfinite(avg) or err > 1e-2:
            print("quick: FAILED")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
