"""Packs sd.cpp's SD2 v-prediction sampler states into tests/data/sd_reduced/sdcpp_v_latents.safetensors.

Independent implementation: stable-diffusion.cpp 97d29908 (ggml 8e800cef, CPU build as in
tests/data/sd_reduced/README.md), run on runs b03 and b04 of tests/data/sd_reduced/runs.json with a
local, uncommitted instrumentation that writes, at each call of its denoise callback, the sampler
state x it was given (raw float32, ggml order [W/8, H/8, 4]) and, after sampling, the final latent.
This script only packs those files; it does not run or build sd.cpp.

Usage: python3 tests/golden/pack_sd2v_latents.py DUMPDIR_b03 DUMPDIR_b04 OUT.safetensors
Each DUMPDIR holds sNN_x.f32 (NN = 1..steps: the state before step NN) and s99_final.f32.
Tensors: <id>.step<k>, k = 0..steps, F32 [4, H/8, W/8] (PyTorch order): the state after k steps
(step0 = x_T), i.e. what sdc's sdc_latent_fn sees at step k.
"""
import os, sys
import numpy as np
from safetensors.numpy import save_file

SHAPES = {'b03': (4, 256 // 8, 256 // 8), 'b04': (4, 192 // 8, 320 // 8)}


def main():
    d03, d04, out = sys.argv[1:4]
    tensors = {}
    for rid, d in (('b03', d03), ('b04', d04)):
        shape = SHAPES[rid]
        k = 0
        while os.path.exists(os.path.join(d, 's%02d_x.f32' % (k + 1))):
            x = np.fromfile(os.path.join(d, 's%02d_x.f32' % (k + 1)), np.float32)
            tensors['%s.step%d' % (rid, k)] = x.reshape(shape)
            k += 1
        x = np.fromfile(os.path.join(d, 's99_final.f32'), np.float32)
        tensors['%s.step%d' % (rid, k)] = x.reshape(shape)
    save_file(tensors, out, metadata={'producer': 'stable-diffusion.cpp 97d29908, ggml 8e800cef, CPU, -t 2',
                                      'runs': 'b03 b04 of tests/data/sd_reduced/runs.json'})


if __name__ == '__main__':
    main()
