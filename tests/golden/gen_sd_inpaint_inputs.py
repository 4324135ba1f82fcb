#!/usr/bin/python3
"""The init image and mask of the inpainting runs in tests/data/sd_inpaint (numpy + zlib only).

    python3 tests/golden/gen_sd_inpaint_inputs.py tests/data/sd_inpaint

init.png  128x128 RGB: smooth colour gradients with a bright disc and a dark bar (something for the VAE to keep).
mask.png  128x128 RGB, gray (r = g = b): white (255) rectangle x 37..89, y 21..76 (not on the 8-pixel latent grid,
          so latent cells are partly covered); a column of 128 at x 100 (>= 128: regenerates after sd.cpp's
          round(v / 255)) and a column of 127 at x 110 (keeps); everything else black (keeps).
Both are inputs, not references: the references are sd.cpp's images from them (README.md).
"""
import os
import struct
import sys
import zlib

import numpy as np


def write_png(path, rgb):
    h, w, _ = rgb.shape
    raw = b"".join(b"\x00" + rgb[y].tobytes() for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    W = H = 128
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    r = 40 + 180 * x / (W - 1)
    g = 60 + 150 * y / (H - 1)
    b = 120 + 100 * np.sin(x / 9.0) * np.cos(y / 13.0)
    disc = (x - 84) ** 2 + (y - 44) ** 2 < 18 ** 2
    r[disc], g[disc], b[disc] = 250, 235, 90
    bar = (y > 92) & (y < 104) & (x > 12) & (x < 116)
    r[bar], g[bar], b[bar] = 25, 30, 60
    init = np.clip(np.stack([r, g, b], -1).round(), 0, 255).astype(np.uint8)
    m = np.zeros((H, W), np.uint8)
    m[21:77, 37:90] = 255
    m[:, 100] = 128
    m[:, 110] = 127
    os.makedirs(out, exist_ok=True)
    write_png(os.path.join(out, "init.png"), init)
    write_png(os.path.join(out, "mask.png"), np.repeat(m[:, :, None], 3, axis=2))


if __name__ == "__main__":
    main()
