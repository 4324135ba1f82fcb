#!/usr/bin/env python3
"""Reference bytes for uniform-importance quantisation (what sd.cpp's -M convert writes).

sd.cpp's convert calls ggml_quantize_chunk with an importance vector of ones, so ggml uses
its weighted quantisers (quantize_row_<t>_impl), not the _ref ones. This script builds
ggml_uniform_quant.c against ggml's own ggml-quants.c / ggml.c (ggml-org/ggml commit
d99724f2b141fed9e1a9f402213506c081433465, the oracle of the golden gguf/ files; baseline
x86-64, -O3, no FMA), runs it on the golden matrices (golden gguf/quant_expected.safetensors:
m4x256.src, m3x512.src) and writes tests/data/sdconvert/uniform_expected.safetensors with
U8 tensors "<matrix>.<type>.ones.q" (rows x row bytes). The same build fed the golden
importance vector must reproduce the golden imatrix bytes (asserted), so it is the oracle's
arithmetic.

Re-run:  GGML_SRC=/path/to/ggml-checkout python3 tests/golden/gen_sdconvert_uniform.py
(GGML_SRC holds include/ and src/ of that commit; SDC_GOLDEN defaults to ../shared/golden.)
Needs numpy, safetensors, gcc and g++.
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
from safetensors.numpy import load_file, save_file

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))
golden = os.environ.get("SDC_GOLDEN", os.path.join(repo, "..", "shared", "golden"))
ggml = os.environ.get("GGML_SRC")
if not ggml:
    sys.exit("set GGML_SRC to a ggml checkout at d99724f2")

TYPES = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"]

with tempfile.TemporaryDirectory() as tmp:
    inc = ["-I" + os.path.join(ggml, "include"), "-I" + os.path.join(ggml, "src")]
    flags = ["-O3", "-std=gnu11", "-ffp-contract=off", "-march=x86-64", "-D_GNU_SOURCE"]
    objs = []
    for src, extra in [("ggml-quants.c", []),
                       ("ggml.c", ['-DGGML_VERSION="0.21.0"', '-DGGML_COMMIT="d99724f2"'])]:
        obj = os.path.join(tmp, src + ".o")
        subprocess.check_call(["gcc", *flags, *extra, *inc, "-c",
                               os.path.join(ggml, "src", src), "-o", obj])
        objs.append(obj)
    obj = os.path.join(tmp, "threading.o")
    subprocess.check_call(["g++", "-O2", *inc, "-c",
                           os.path.join(ggml, "src", "ggml-threading.cpp"), "-o", obj])
    objs.append(obj)
    exe = os.path.join(tmp, "uq")
    subprocess.check_call(["gcc", "-O2", *inc, os.path.join(here, "ggml_uniform_quant.c"),
                           *objs, "-lm", "-lstdc++", "-lpthread", "-o", exe])

    gold = load_file(os.path.join(golden, "gguf", "quant_expected.safetensors"))
    out = {}
    for m in ["m4x256", "m3x512"]:
        x = np.ascontiguousarray(gold[m + ".src"], dtype=np.float32)
        raw = os.path.join(tmp, m + ".f32")
        x.tofile(raw)
        subprocess.check_call([exe, m, str(x.shape[0]), str(x.shape[1]), raw, tmp])
        # the same build with the golden importances must give the golden imatrix bytes
        imp = os.path.join(tmp, m + ".imp.f32")
        np.ascontiguousarray(gold[m + ".imatrix"], dtype=np.float32).tofile(imp)
        subprocess.check_call([exe, m, str(x.shape[0]), str(x.shape[1]), raw, tmp, imp])
        for t in TYPES:
            q = np.fromfile(os.path.join(tmp, f"{m}.{t}.imp.bin"), dtype=np.uint8)
            assert (q == gold[f"{m}.{t}.imatrix.q"].reshape(-1)).all(), f"{m} {t}: not the oracle"
        for t in TYPES:
            q = np.fromfile(os.path.join(tmp, f"{m}.{t}.bin"), dtype=np.uint8)
            q = q.reshape(x.shape[0], -1)
            plain = gold[f"{m}.{t}.plain.q"]
            assert q.shape == plain.shape, (m, t, q.shape, plain.shape)
            same = bool((q == plain).all())
            # q8_0 ignores importances; every other type must take the weighted path
            assert same == (t == "q8_0"), f"{m} {t}: ones == plain is {same}"
            out[f"{m}.{t}.ones.q"] = q
    dst = os.path.join(repo, "tests", "data", "sdconvert", "uniform_expected.safetensors")
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    save_file(out, dst, metadata={"ggml_commit": "d99724f2b141fed9e1a9f402213506c081433465",
                                  "producer": "quantize_<t>(src, dst, rows, cols, ones)"})
    print("wrote", dst, len(out), "tensors")
