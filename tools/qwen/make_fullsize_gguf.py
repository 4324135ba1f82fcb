#!/usr/bin/env python3
"""Full-size random-weight Qwen-Image GGUF files in the layouts users run, for memory and speed checks.

    make_fullsize_gguf.py dit  --out qwen-image-Q4_K.gguf  [--depth 60]  [--seed 1] [--keep-type bf16]
    make_fullsize_gguf.py llm  --out qwen25vl-7b-Q4_K.gguf [--layers 28] [--seed 1] [--tokenizer DIR]
                               [--no-output]
    make_fullsize_gguf.py list dit|llm [--depth N | --layers N]   # tensors, types and sizes; writes nothing
    make_fullsize_gguf.py selftest                               # checks the q4_K encoder; writes nothing

dit: Qwen-Image's MMDiT (diffusers' QwenImageTransformer2DModel: 24 heads x 128 = 3072 wide, joint_attention_dim
     3584, in_channels 64, out_channels 16, patch 2, 60 blocks) under diffusers' tensor names, as the
     community GGUFs (city96 / QuantStack "qwen-image-Q4_K_M.gguf") name them: transformer_blocks.N.attn.to_q.weight
     and so on, no prefix. Every Linear weight inside the blocks is q4_K (GGML type 12); the embedders and the
     final layer (img_in, txt_in, time_text_embed.*, norm_out.linear, proj_out), which the GGUF converters keep
     unquantised, are --keep-type (default bf16, the checkpoint's own type); biases and norm weights are F32.
llm: Qwen2.5-VL-7B-Instruct's language model under llama.cpp's names (general.architecture "qwen2vl"):
     token_embd.weight [3584 x 152064], blk.N.{attn_norm, attn_q/k/v (+ bias), attn_output, ffn_norm, ffn_gate,
     ffn_up, ffn_down}, output_norm.weight, output.weight (unused by sdc; --no-output leaves it out). 28 layers,
     28 query / 4 key-value heads of 128, MLP 18944, RMS eps 1e-6, rope theta 1e6. Matrices q4_K, vectors F32.
     The tokenizer keys (tokenizer.ggml.*) hold a small stand-in vocabulary (default: the golden set's,
     ../shared/golden/qwen_image/tokenizer) padded with unused "[PADi]" tokens to the 152064 embedding rows, as
     llama.cpp's converter pads the real one.

Real Q4_K_M files keep a few tensors in q5_K / q6_K (llama.cpp's "more bits" layers: some attn_v / ffn_down,
output.weight): they are about 10% larger than these all-q4_K files. The weights are random, so the images are
noise; the files exist to measure peak memory and seconds per step with the real shapes and types.

Random values depend only on --seed and the tensor's name (numpy PCG64 seeded with [seed, crc32(name)]):
  q4_K: per 256-value block d = a per-tensor f16 constant, dmin = 7.5 d (exact in f16), the eight 6-bit scales
        random in 16..31 and each min equal to its scale, the 4-bit quants uniform random. A value is then
        d * sc * (q - 7.5): zero mean, std = d * 4.61 * rms(sc), with d chosen for std 1/sqrt(fan_in) (the
        golden generator's init; 1.0 for the token embedding), so that a 60-block forward stays finite.
  F32 / BF16: normal(mean, std) with the golden generator's rules (biases 0.02, norm weights 1 +- 0.1, the DiT's
        q/k norm weights 2.5 +- 0.1).
Files are streamed tensor by tensor in chunks of 64k blocks (~10 MB), so memory stays small at any size.
GGUF v3, little endian, general.alignment 32, every tensor's data aligned to 32.
"""
import argparse
import json
import math
import os
import struct
import sys
import time
import zlib

import numpy as np

# ------------------------------------------------------------------------------------------------------------
# GGUF constants (ggml's type ids and GGUF value types)
# ------------------------------------------------------------------------------------------------------------

T_F32, T_F16, T_Q4_K, T_BF16 = 0, 1, 12, 30
TYPE_NAMES = {T_F32: "f32", T_F16: "f16", T_Q4_K: "q4_K", T_BF16: "bf16"}
TYPE_IDS = {v: k for k, v in TYPE_NAMES.items()}
QK_K = 256            # values per q4_K super-block
Q4_K_BYTES = 144      # f16 d, f16 dmin, 12 bytes of 6-bit scales/mins, 128 bytes of 4-bit quants
ALIGN = 32

V_U32, V_I32, V_F32, V_BOOL, V_STR, V_ARR, V_U64 = 4, 5, 6, 7, 8, 9, 10

# llama.cpp's token types
TT_NORMAL, TT_CONTROL, TT_USER_DEFINED, TT_UNUSED = 1, 3, 4, 5

LLAMA_FTYPE_MOSTLY_Q4_K_M = 15

# ------------------------------------------------------------------------------------------------------------
# Model shapes
# ------------------------------------------------------------------------------------------------------------

DIT_HID, DIT_HEAD_DIM, DIT_JOINT, DIT_IN, DIT_OUT, DIT_PATCH, DIT_DEPTH = 3072, 128, 3584, 64, 16, 2, 60
LLM_HID, LLM_HEADS, LLM_KV, LLM_HEAD_DIM, LLM_FF, LLM_VOCAB, LLM_LAYERS = 3584, 28, 4, 128, 18944, 152064, 28

# DiT tensors kept unquantised (name prefixes): the embedders and the final layer
DIT_KEEP = ("img_in.", "txt_in.", "time_text_embed.", "norm_out.", "proj_out.")


class Tensor:
    """One tensor to write: GGUF name, ne (innermost first), type and the (mean, std) it is drawn from."""

    def __init__(self, name, ne, ttype, mean, std):
        self.name, self.ne, self.type, self.mean, self.std = name, list(ne), ttype, mean, std
        self.offset = 0  # from the start of the data section, set by write_gguf()
        assert ttype != T_Q4_K or self.ne[0] % QK_K == 0, "%s: rows of %d are not whole q4_K blocks" % (name, ne[0])

    def count(self):
        return int(np.prod(self.ne, dtype=np.int64))

    def nbytes(self):
        n = self.count()
        if self.type == T_Q4_K:
            return n // QK_K * Q4_K_BYTES
        return n * (4 if self.type == T_F32 else 2)


def dit_init(name, ne):
    """(mean, std) as the golden generator draws this DiT tensor (ne[0] = fan_in of a Linear)."""
    if name.endswith(".bias"):
        return 0.0, 0.02
    if name.endswith(("norm_q.weight", "norm_k.weight", "norm_added_q.weight", "norm_added_k.weight")):
        return 2.5, 0.1  # sharp joint attention, as in the golden checkpoints
    if len(ne) == 1:
        return 1.0, 0.1  # txt_norm
    return 0.0, 1.0 / math.sqrt(ne[0])


def dit_tensors(depth, keep_type):
    """The MMDiT's tensors in diffusers' names, sorted by name (the order the converters write them)."""
    out = []

    def add(name, ne, ttype):
        mean, std = dit_init(name, ne)
        out.append(Tensor(name, ne, ttype, mean, std))

    def linear(name, n_out, n_in):
        kept = (name + ".").startswith(DIT_KEEP)
        add(name + ".weight", [n_in, n_out], keep_type if kept else T_Q4_K)
        add(name + ".bias", [n_out], T_F32)

    h = DIT_HID
    linear("time_text_embed.timestep_embedder.linear_1", h, 256)
    linear("time_text_embed.timestep_embedder.linear_2", h, h)
    add("txt_norm.weight", [DIT_JOINT], T_F32)
    linear("img_in", h, DIT_IN)
    linear("txt_in", h, DIT_JOINT)
    for b in range(depth):
        p = "transformer_blocks.%d." % b
        for s in ("img", "txt"):
            linear(p + s + "_mod.1", 6 * h, h)
            linear(p + s + "_mlp.net.0.proj", 4 * h, h)
            linear(p + s + "_mlp.net.2", h, 4 * h)
        for k in ("to_q", "to_k", "to_v", "add_q_proj", "add_k_proj", "add_v_proj", "to_out.0", "to_add_out"):
            linear(p + "attn." + k, h, h)
        for k in ("norm_q", "norm_k", "norm_added_q", "norm_added_k"):
            add(p + "attn." + k + ".weight", [DIT_HEAD_DIM], T_F32)
    linear("norm_out.linear", 2 * h, h)
    linear("proj_out", DIT_PATCH * DIT_PATCH * DIT_OUT, h)
    out.sort(key=lambda t: t.name)
    return out


def llm_tensors(layers, with_output):
    """Qwen2.5-VL-7B's language model in llama.cpp's names and order."""
    out = []

    def mat(name, n_in, n_out, std=None):
        out.append(Tensor(name, [n_in, n_out], T_Q4_K, 0.0, std if std else 1.0 / math.sqrt(n_in)))

    def vec(name, n, mean, std):
        out.append(Tensor(name, [n], T_F32, mean, std))

    q, kv = LLM_HEADS * LLM_HEAD_DIM, LLM_KV * LLM_HEAD_DIM
    mat("token_embd.weight", LLM_HID, LLM_VOCAB, std=1.0)
    for i in range(layers):
        p = "blk.%d." % i
        vec(p + "attn_norm.weight", LLM_HID, 1.0, 0.1)
        mat(p + "attn_q.weight", LLM_HID, q)
        vec(p + "attn_q.bias", q, 0.0, 0.02)
        mat(p + "attn_k.weight", LLM_HID, kv)
        vec(p + "attn_k.bias", kv, 0.0, 0.02)
        mat(p + "attn_v.weight", LLM_HID, kv)
        vec(p + "attn_v.bias", kv, 0.0, 0.02)
        mat(p + "attn_output.weight", q, LLM_HID)
        vec(p + "ffn_norm.weight", LLM_HID, 1.0, 0.1)
        mat(p + "ffn_gate.weight", LLM_HID, LLM_FF)
        mat(p + "ffn_up.weight", LLM_HID, LLM_FF)
        mat(p + "ffn_down.weight", LLM_FF, LLM_HID)
    vec("output_norm.weight", LLM_HID, 1.0, 0.1)
    if with_output:
        mat("output.weight", LLM_HID, LLM_VOCAB)
    return out


# ------------------------------------------------------------------------------------------------------------
# Random data
# ------------------------------------------------------------------------------------------------------------

SC_LO, SC_HI = 16, 31           # the 6-bit sub-block scales (and mins) are drawn from this range
U4_STD = math.sqrt(255.0 / 12)  # std of a uniform 0..15 quant (4.61)
SC_RMS = math.sqrt(sum(s * s for s in range(SC_LO, SC_HI + 1)) / (SC_HI - SC_LO + 1))
CHUNK_BLOCKS = 1 << 16          # q4_K blocks per chunk (9.4 MB)
CHUNK_VALUES = 1 << 22          # F32/BF16 values per chunk


def rng_for(seed, name):
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, zlib.crc32(name.encode())])))


def q4k_d(std):
    """The f16 super-block scale d for a target std, with at most 7 significant bits so that dmin = 7.5 d
    (15 d / 2: 11 bits) is exact in f16 and the dequantised values have exactly zero mean."""
    d = np.float16(std / (U4_STD * SC_RMS))
    if not np.isfinite(d) or d < np.float16(6.2e-05) or d * 7.5 > 60000:
        sys.exit("std %g is outside what the q4_K encoder here represents" % std)
    bits = d.view(np.uint16) & np.uint16(0xFFF0)  # keep sign, exponent and the top 6 mantissa bits
    d = bits.view(np.float16)
    dmin = np.float16(float(d) * 7.5)
    assert float(dmin) == float(d) * 7.5
    return d, dmin


def pack_scales(sc, mn):
    """ggml's 12-byte packing of eight 6-bit scales and mins (get_scale_min_k4 reads them back):
    bytes 0-3: sc[0..3] | high 2 bits of sc[4..7] << 6; bytes 4-7: mn[0..3] | high 2 bits of mn[4..7] << 6;
    bytes 8-11: low 4 bits of sc[4..7] | low 4 bits of mn[4..7] << 4."""
    out = np.empty((sc.shape[0], 12), np.uint8)
    out[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    out[:, 4:8] = mn[:, 0:4] | ((mn[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((mn[:, 4:8] & 0x0F) << 4)
    return out


def q4k_chunks(t, seed):
    """The tensor's q4_K bytes, chunk by chunk."""
    g = rng_for(seed, t.name)
    d, dmin = q4k_d(t.std)
    head = np.frombuffer(d.tobytes() + dmin.tobytes(), np.uint8)
    left = t.count() // QK_K
    while left:
        n = min(CHUNK_BLOCKS, left)
        blk = np.empty((n, Q4_K_BYTES), np.uint8)
        blk[:, 0:4] = head
        sc = (np.frombuffer(g.bytes(n * 8), np.uint8).reshape(n, 8) & 0x0F) + SC_LO
        blk[:, 4:16] = pack_scales(sc, sc)
        blk[:, 16:] = np.frombuffer(g.bytes(n * 128), np.uint8).reshape(n, 128)
        yield blk
        left -= n


def float_chunks(t, seed):
    """The tensor's F32 / F16 / BF16 bytes (normal values), chunk by chunk."""
    g = rng_for(seed, t.name)
    left = t.count()
    while left:
        n = min(CHUNK_VALUES, left)
        z = g.standard_normal(n, dtype=np.float32) * np.float32(t.std) + np.float32(t.mean)
        if t.type == T_F32:
            yield z
        elif t.type == T_F16:
            yield z.astype(np.float16)
        else:  # bf16: round to nearest even on the top 16 bits
            u = z.view(np.uint32)
            yield ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
        left -= n


def dequant_q4k(raw):
    """Reference q4_K dequantiser written from the block layout (selftest only): raw [n, 144] -> [n * 256]."""
    raw = raw.reshape(-1, Q4_K_BYTES)
    d = raw[:, 0:2].copy().view(np.float16).astype(np.float32)[:, 0]
    dmin = raw[:, 2:4].copy().view(np.float16).astype(np.float32)[:, 0]
    q = raw[:, 4:16].astype(np.int32)
    out = np.empty((raw.shape[0], QK_K), np.float32)
    for j in range(8):
        if j < 4:
            sc, mn = q[:, j] & 63, q[:, j + 4] & 63
        else:
            sc = (q[:, j + 4] & 0xF) | ((q[:, j - 4] >> 6) << 4)
            mn = (q[:, j + 4] >> 4) | ((q[:, j] >> 6) << 4)
        qs = raw[:, 16 + 32 * (j // 2):16 + 32 * (j // 2) + 32].astype(np.int32)
        nib = qs & 0xF if j % 2 == 0 else qs >> 4
        out[:, 32 * j:32 * j + 32] = (d * sc)[:, None] * nib - (dmin * mn)[:, None]
    return out.reshape(-1)


# ------------------------------------------------------------------------------------------------------------
# GGUF writer (header first, then the data streamed tensor by tensor)
# ------------------------------------------------------------------------------------------------------------

def g_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def g_value(vtype, v):
    if vtype == V_STR:
        return g_str(v)
    fmt = {V_U32: "<I", V_I32: "<i", V_F32: "<f", V_BOOL: "<?", V_U64: "<Q"}[vtype]
    return struct.pack(fmt, v)


def g_kv(key, vtype, v, elem=None):
    """One key/value; arrays are (V_ARR, list, element type)."""
    out = g_str(key) + struct.pack("<I", vtype)
    if vtype == V_ARR:
        out += struct.pack("<IQ", elem, len(v))
        if elem == V_STR:
            out += b"".join(g_str(s) for s in v)
        elif elem == V_I32:
            out += np.asarray(v, "<i4").tobytes()
        else:
            out += b"".join(g_value(elem, x) for x in v)
        return out
    return out + g_value(vtype, v)


def pad_to(n, a=ALIGN):
    return (n + a - 1) // a * a


def write_gguf(path, kvs, tensors, seed):
    """kvs: list of encoded key/values. Writes to path + '.part', then renames."""
    off = 0
    for t in tensors:
        t.offset = off
        off = pad_to(off + t.nbytes())
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs)) + b"".join(kvs)
    for t in tensors:
        head += g_str(t.name) + struct.pack("<I", len(t.ne)) + struct.pack("<%dQ" % len(t.ne), *t.ne)
        head += struct.pack("<IQ", t.type, t.offset)
    head += b"\0" * (pad_to(len(head)) - len(head))
    data_start, total = len(head), len(head) + off
    tmp, t0, done, shown = path + ".part", time.time(), 0, 0
    with open(tmp, "wb") as f:
        f.write(head)
        for i, t in enumerate(tensors):
            assert f.tell() == data_start + t.offset
            chunks = q4k_chunks(t, seed) if t.type == T_Q4_K else float_chunks(t, seed)
            for c in chunks:
                f.write(c.tobytes())
            n = t.nbytes()
            f.write(b"\0" * (pad_to(n) - n))
            done += n
            if done - shown >= total // 20 or (i == len(tensors) - 1 and shown != done):  # every 5%
                shown = done
                print("  %5.1f%%  %.2f GB  %.0f s  %s" % (100.0 * (data_start + done) / total, done / 1e9,
                                                        time.time() - t0, t.name), file=sys.stderr, flush=True)
        assert f.tell() == total
    os.replace(tmp, path)
    return total, time.time() - t0


# ------------------------------------------------------------------------------------------------------------
# Metadata
# ------------------------------------------------------------------------------------------------------------

def dit_kvs(depth):
    return [
        g_kv("general.architecture", V_STR, "qwen_image"),
        g_kv("general.name", V_STR, "random Qwen-Image (make_fullsize_gguf.py, %d blocks)" % depth),
        g_kv("general.quantization_version", V_U32, 2),
        g_kv("general.file_type", V_U32, LLAMA_FTYPE_MOSTLY_Q4_K_M),
        g_kv("general.alignment", V_U32, ALIGN),
    ]


def stand_in_tokenizer(folder):
    """(tokens, types, merges, ids of <|endoftext|> and <|im_end|>) from a Hugging Face tokenizer.json."""
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    n = max(max(vocab.values()), max(a["id"] for a in tj["added_tokens"])) + 1
    tokens, types = [None] * n, [TT_NORMAL] * n
    for s, i in vocab.items():
        tokens[i] = s
    for a in tj["added_tokens"]:
        tokens[a["id"]] = a["content"]
        types[a["id"]] = TT_CONTROL if a.get("special") else TT_USER_DEFINED
    if any(t is None for t in tokens):
        sys.exit("%s: the ids are not contiguous" % folder)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    added = {a["content"]: a["id"] for a in tj["added_tokens"]}
    return tokens, types, merges, added["<|endoftext|>"], added["<|im_end|>"]


# A ChatML template (the conversation format of Qwen2.5), written for this file; llama.cpp reads it only for chat.
CHAT_TEMPLATE = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
                 "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def llm_kvs(layers, tok_dir):
    tokens, types, merges, eot, im_end = stand_in_tokenizer(tok_dir)
    if len(tokens) > LLM_VOCAB:
        sys.exit("%s has %d tokens, more than the %d embedding rows" % (tok_dir, len(tokens), LLM_VOCAB))
    # llama.cpp's converter pads the vocabulary to the embedding's rows with unused "[PADi]" tokens
    for i in range(len(tokens), LLM_VOCAB):
        tokens.append("[PAD%d]" % i)
        types.append(TT_UNUSED)
    a = "qwen2vl."
    return [
        g_kv("general.architecture", V_STR, "qwen2vl"),
        g_kv("general.type", V_STR, "model"),
        g_kv("general.name", V_STR, "random Qwen2.5-VL-7B-Instruct LM (make_fullsize_gguf.py, %d layers)" % layers),
        g_kv("general.basename", V_STR, "Qwen2.5-VL"),
        g_kv("general.finetune", V_STR, "Instruct"),
        g_kv("general.size_label", V_STR, "7B"),
        g_kv(a + "block_count", V_U32, layers),
        g_kv(a + "context_length", V_U32, 128000),
        g_kv(a + "embedding_length", V_U32, LLM_HID),
        g_kv(a + "feed_forward_length", V_U32, LLM_FF),
        g_kv(a + "attention.head_count", V_U32, LLM_HEADS),
        g_kv(a + "attention.head_count_kv", V_U32, LLM_KV),
        g_kv(a + "rope.freq_base", V_F32, 1000000.0),
        g_kv(a + "attention.layer_norm_rms_epsilon", V_F32, 1e-6),
        g_kv(a + "rope.dimension_sections", V_ARR, [16, 24, 24, 0], V_I32),
        g_kv("general.file_type", V_U32, LLAMA_FTYPE_MOSTLY_Q4_K_M),
        g_kv("general.quantization_version", V_U32, 2),
        g_kv("general.alignment", V_U32, ALIGN),
        g_kv("tokenizer.ggml.model", V_STR, "gpt2"),
        g_kv("tokenizer.ggml.pre", V_STR, "qwen2"),
        g_kv("tokenizer.ggml.tokens", V_ARR, tokens, V_STR),
        g_kv("tokenizer.ggml.token_type", V_ARR, types, V_I32),
        g_kv("tokenizer.ggml.merges", V_ARR, merges, V_STR),
        g_kv("tokenizer.ggml.eos_token_id", V_U32, im_end),
        g_kv("tokenizer.ggml.padding_token_id", V_U32, eot),
        g_kv("tokenizer.ggml.bos_token_id", V_U32, eot),
        g_kv("tokenizer.ggml.add_bos_token", V_BOOL, False),
        g_kv("tokenizer.chat_template", V_STR, CHAT_TEMPLATE),
    ]


# ------------------------------------------------------------------------------------------------------------
# Commands
# ------------------------------------------------------------------------------------------------------------

DEFAULT_TOKENIZER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
                                 "golden", "qwen_image", "tokenizer")


def summary(tensors):
    n = sum(t.count() for t in tensors)
    by = {}
    for t in tensors:
        c = by.setdefault(TYPE_NAMES[t.type], [0, 0, 0])
        c[0], c[1], c[2] = c[0] + 1, c[1] + t.count(), c[2] + t.nbytes()
    parts = ", ".join("%s: %d tensors %.3g GB" % (k, v[0], v[2] / 1e9) for k, v in sorted(by.items()))
    return "%d tensors, %.4g G parameters, %.3f GB of data (%s)" % (len(tensors), n / 1e9,
                                                                   sum(t.nbytes() for t in tensors) / 1e9, parts)


def build(a):
    if a.model == "dit":
        return dit_tensors(a.depth, TYPE_IDS[a.keep_type])
    return llm_tensors(a.layers, not a.no_output)


def cmd_list(a):
    ts = build(a)
    for t in ts:
        print("%s\t%s\t%s\t%d\t%.3g+%.4g*N" % (t.name, TYPE_NAMES[t.type], t.ne, t.nbytes(), t.mean, t.std))
    print("# " + summary(ts))


def cmd_write(a):
    ts = build(a)
    kvs = dit_kvs(a.depth) if a.model == "dit" else llm_kvs(a.layers, a.tokenizer)
    print("%s: %s" % (a.out, summary(ts)), file=sys.stderr, flush=True)
    size, secs = write_gguf(a.out, kvs, ts, a.seed)
    print(json.dumps({"model": a.model, "path": a.out, "bytes": size, "seconds": round(secs, 1),
                      "tensors": len(ts), "seed": a.seed}))


def cmd_selftest(_):
    """The q4_K blocks decode (with the reference dequantiser above) to zero-mean values of the target std,
    the scale packing round-trips, and the stream is deterministic."""
    rng = np.random.default_rng(0)
    sc, mn = rng.integers(0, 64, (1000, 8)).astype(np.uint8), rng.integers(0, 64, (1000, 8)).astype(np.uint8)
    raw = np.zeros((1000, Q4_K_BYTES), np.uint8)
    raw[:, 0:4] = np.frombuffer(np.array([1.0, 1.0], np.float16).tobytes(), np.uint8)
    raw[:, 4:16] = pack_scales(sc, mn)
    v = dequant_q4k(raw).reshape(1000, 8, 32)  # all quants 0: value = -dmin * mn
    assert np.array_equal(v[:, :, 0], -mn.astype(np.float32)), "min packing"
    raw[:, 16:] = 0x11  # all quants 1: value = sc - mn
    v = dequant_q4k(raw).reshape(1000, 8, 32)
    assert np.array_equal(v[:, :, 5], sc.astype(np.float32) - mn), "scale packing"
    for std in (1.0, 0.0180, 0.0073):
        t = Tensor("blk.0.test", [3072, 512], T_Q4_K, 0.0, std)
        raw = np.concatenate(list(q4k_chunks(t, 7)))
        again = np.concatenate(list(q4k_chunks(t, 7)))
        assert np.array_equal(raw, again), "not deterministic"
        v = dequant_q4k(raw)
        print("q4_K std %.4g: mean %+.2e std %.4g (%.1f%% off) min %.3g max %.3g" %
              (std, v.mean(), v.std(), 100 * (v.std() / std - 1), v.min(), v.max()))
        assert abs(v.mean()) < 0.01 * std and abs(v.std() / std - 1) < 0.05
    t = Tensor("x", [1000], T_BF16, 1.0, 0.1)
    b = np.concatenate(list(float_chunks(t, 3)))
    f = (b.astype(np.uint32) << 16).view(np.float32)
    assert abs(f.mean() - 1) < 0.02 and abs(f.std() - 0.1) < 0.01, "bf16"
    print("selftest: ok")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    def model_args(p):
        p.add_argument("--depth", type=int, default=DIT_DEPTH, help="dit: transformer blocks (default 60)")
        p.add_argument("--keep-type", choices=["bf16", "f16", "f32"], default="bf16",
                       help="dit: type of img_in, txt_in, time_text_embed, norm_out, proj_out (default bf16)")
        p.add_argument("--layers", type=int, default=LLM_LAYERS, help="llm: layers (default 28)")
        p.add_argument("--no-output", action="store_true", help="llm: leave out output.weight (unused by sdc)")

    for name in ("dit", "llm"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--tokenizer", default=DEFAULT_TOKENIZER,
                       help="llm: folder with the stand-in tokenizer.json (default: the golden set's)")
        model_args(p)
        p.set_defaults(model=name, fn=cmd_write)
    p = sub.add_parser("list")
    p.add_argument("model", choices=["dit", "llm"])
    model_args(p)
    p.set_defaults(fn=cmd_list)
    sub.add_parser("selftest").set_defaults(fn=cmd_selftest)
    a = ap.parse_args()
    a.fn(a)


if __name__ == "__main__":
    main()
