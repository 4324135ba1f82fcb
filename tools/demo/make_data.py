#!/usr/bin/env python3
"""Demo data for sdc's shipped demo model (issue 14): captioned 64x64 pictures of simple scenes.

numpy only, seeded, no downloads. The shared demo-data specification (palette, shapes, sizes,
positions, caption grammar, held-back triples) lives in tools/demo/README.md; this file is its
executable form, used by the trainer (tools/demo/train.py) and by the quality check's authors to
render ground-truth images.

    python3 tools/demo/make_data.py --list train|heldback    # print captions, one a line
    python3 tools/demo/make_data.py --render "a small red circle on the left on a blue background" -o x.png
    python3 tools/demo/make_data.py --sample 16 -o dir/      # random training pictures + captions.txt

Library use: parse_caption(text) -> spec dict, render(spec, rng=None) -> uint8 [64,64,3] (rng=None
renders the exact nominal scene without jitter), captions(split), random_spec(rng), caption(spec).
"""
import argparse
import itertools
import os
import re
import struct
import sys
import zlib

import numpy as np

SIZE = 64
COLOURS = ["red", "green", "blue", "yellow", "white", "black", "orange", "purple"]
PALETTE = np.array(
    [
        (220, 40, 40),
        (40, 170, 60),
        (40, 80, 220),
        (240, 220, 40),
        (245, 245, 245),
        (15, 15, 15),
        (245, 140, 30),
        (140, 60, 190),
    ],
    dtype=np.uint8,
)
SHAPES = ["circle", "square", "triangle"]
SIZES = {"small": 9.0, "": 14.0, "large": 20.0}  # half-extent in px; "" = medium (no word)
POSITIONS = {
    "on the left": (20.0, 32.0),
    "on the right": (44.0, 32.0),
    "at the top": (32.0, 20.0),
    "at the bottom": (32.0, 44.0),
    "in the centre": (32.0, 32.0),
    "": (32.0, 32.0),
}
# Two-shape captions place the first on the left, the second on the right.
TWO_LEFT, TWO_RIGHT = (20.0, 32.0), (44.0, 32.0)


def held_back(ci, si, bi):
    """True for the (shape colour, shape, background colour) triples never shown in training."""
    return ci != bi and (7 * ci + 3 * si + 5 * bi) % 11 == 0


def triples(split):
    """All valid (ci, si, bi) triples of a split: 'train' or 'heldback'."""
    out = []
    for ci, si, bi in itertools.product(range(8), range(3), range(8)):
        if ci == bi:
            continue
        if held_back(ci, si, bi) == (split == "heldback"):
            out.append((ci, si, bi))
    return out


def caption(spec):
    """Caption text of a spec (the grammar of the shared specification)."""
    if spec.get("kind", "single") == "two":
        a, b = spec["shapes"]
        return "a %s %s and a %s %s on a %s background" % (
            COLOURS[a[0]], SHAPES[a[1]], COLOURS[b[0]], SHAPES[b[1]], COLOURS[spec["bg"]])
    size = spec.get("size", "")
    pos = spec.get("pos", "")
    s = "a " + (size + " " if size else "") + COLOURS[spec["colour"]] + " " + SHAPES[spec["shape"]]
    if pos:
        s += " " + pos
    if spec.get("kind") == "stripes":
        return s + " on a %s and %s striped background" % (COLOURS[spec["bg"]], COLOURS[spec["bg2"]])
    return s + " on a %s background" % COLOURS[spec["bg"]]


_COL = "(" + "|".join(COLOURS) + ")"
_SHP = "(" + "|".join(SHAPES) + ")"
_POS = "(" + "|".join(p for p in POSITIONS if p) + ")"
_RE_SINGLE = re.compile(r"^a (?:(small|large) )?%s %s(?: %s)? on a %s background$" % (_COL, _SHP, _POS, _COL))
_RE_STRIPES = re.compile(
    r"^a (?:(small|large) )?%s %s(?: %s)? on a %s and %s striped background$" % (_COL, _SHP, _POS, _COL, _COL))
_RE_TWO = re.compile(r"^a %s %s and a %s %s on a %s background$" % (_COL, _SHP, _COL, _SHP, _COL))


def parse_caption(text):
    """Spec dict of a caption; raises ValueError if it is outside the grammar."""
    t = " ".join(text.strip().lower().split())
    m = _RE_SINGLE.match(t)
    if m:
        return {"kind": "single", "size": m.group(1) or "", "colour": COLOURS.index(m.group(2)),
                "shape": SHAPES.index(m.group(3)), "pos": m.group(4) or "", "bg": COLOURS.index(m.group(5))}
    m = _RE_STRIPES.match(t)
    if m:
        return {"kind": "stripes", "size": m.group(1) or "", "colour": COLOURS.index(m.group(2)),
                "shape": SHAPES.index(m.group(3)), "pos": m.group(4) or "", "bg": COLOURS.index(m.group(5)),
                "bg2": COLOURS.index(m.group(6))}
    m = _RE_TWO.match(t)
    if m:
        return {"kind": "two", "shapes": [(COLOURS.index(m.group(1)), SHAPES.index(m.group(2))),
                                          (COLOURS.index(m.group(3)), SHAPES.index(m.group(4)))],
                "bg": COLOURS.index(m.group(5))}
    raise ValueError("caption outside the demo grammar: %r" % text)


def _mask(shape, cx, cy, r):
    """Boolean [64,64] mask of a filled shape with centre (cx, cy) and half-extent r (pixel centres)."""
    y, x = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64) + 0.5
    if shape == 0:
        return (x - cx) ** 2 + (y - cy) ** 2 <= r * r
    if shape == 1:
        return (np.abs(x - cx) <= r) & (np.abs(y - cy) <= r)
    # Isosceles, apex up at (cx, cy - r), base from (cx - r, cy + r) to (cx + r, cy + r):
    # the half-width at height y grows linearly from 0 at the apex to r at the base.
    t = (y - (cy - r)) / (2.0 * r)
    return (t >= 0) & (t <= 1) & (np.abs(x - cx) <= r * t)


def render(spec, rng=None):
    """uint8 [64,64,3] picture of a spec; rng (np.random.Generator) jitters size +-10% and centre +-3 px."""
    img = np.empty((SIZE, SIZE, 3), dtype=np.uint8)
    img[:] = PALETTE[spec["bg"]]
    if spec.get("kind") == "stripes":
        # Vertical stripes 8 px wide, starting with the first background colour.
        x = np.arange(SIZE)
        img[:, ((x // 8) % 2) == 1] = PALETTE[spec["bg2"]]

    def jitter_r(r):
        return r if rng is None else r * rng.uniform(0.9, 1.1)

    def jitter_c(c):
        return c if rng is None else (c[0] + rng.uniform(-3, 3), c[1] + rng.uniform(-3, 3))

    if spec.get("kind") == "two":
        for (ci, si), c in zip(spec["shapes"], (TWO_LEFT, TWO_RIGHT)):
            cx, cy = jitter_c(c)
            img[_mask(si, cx, cy, jitter_r(9.0))] = PALETTE[ci]
        return img
    cx, cy = jitter_c(POSITIONS[spec.get("pos", "")])
    img[_mask(spec["shape"], cx, cy, jitter_r(SIZES[spec.get("size", "")]))] = PALETTE[spec["colour"]]
    return img


def single_specs(split):
    """Every single-shape spec of a split (all sizes x positions of its triples)."""
    out = []
    for ci, si, bi in triples(split):
        for size in SIZES:
            for pos in POSITIONS:
                out.append({"kind": "single", "size": size, "colour": ci, "shape": si, "pos": pos, "bg": bi})
    return out


def captions(split):
    """Single-shape captions of a split, sorted: 'train' or 'heldback'."""
    return sorted(caption(s) for s in single_specs(split))


def random_spec(rng, extras=True):
    """A random training spec: 80% single shape, 10% two shapes, 10% stripes (extras=True).

    Never a held-back triple: single and stripes use training triples; two-shape pictures use only
    (colour, shape, background) pairs that are training triples for both shapes."""
    train = triples("train")
    u = rng.random() if extras else 0.0
    if u < 0.8:
        ci, si, bi = train[rng.integers(len(train))]
        return {"kind": "single", "size": list(SIZES)[rng.integers(3)], "colour": ci, "shape": si,
                "pos": list(POSITIONS)[rng.integers(len(POSITIONS))], "bg": bi}
    if u < 0.9:
        while True:
            a, b = train[rng.integers(len(train))], train[rng.integers(len(train))]
            if a[2] == b[2] and (a[0], a[1]) != (b[0], b[1]):
                return {"kind": "two", "shapes": [(a[0], a[1]), (b[0], b[1])], "bg": a[2]}
    while True:
        ci, si, bi = train[rng.integers(len(train))]
        b2 = int(rng.integers(8))
        if b2 != bi and b2 != ci:
            return {"kind": "stripes", "size": list(SIZES)[rng.integers(3)], "colour": ci, "shape": si,
                    "pos": list(POSITIONS)[rng.integers(len(POSITIONS))], "bg": bi, "bg2": b2}


def batch(rng, n, extras=True):
    """n random training pictures (uint8 [n,64,64,3]) and their captions."""
    specs = [random_spec(rng, extras) for _ in range(n)]
    return np.stack([render(s, rng) for s in specs]), [caption(s) for s in specs]


def vocabulary():
    """Every word the grammar uses, sorted (the tokenizer's vocabulary)."""
    words = set("a on the left right at top bottom in centre background and striped small large".split())
    return sorted(words | set(COLOURS) | set(SHAPES))


def write_png(path, img):
    """Minimal RGB PNG writer (no dependency beyond zlib)."""
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[y].tobytes() for y in range(h))

    def chunk(tag, data):
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--list", choices=["train", "heldback"], help="print the single-shape captions of a split")
    ap.add_argument("--render", metavar="CAPTION", help="render one caption (nominal, no jitter) to -o")
    ap.add_argument("--sample", type=int, metavar="N", help="write N random training pictures into -o DIR")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", "--output", default="demo.png")
    a = ap.parse_args()
    if a.list:
        print("\n".join(captions(a.list)))
    elif a.render:
        write_png(a.output, render(parse_caption(a.render)))
    elif a.sample:
        os.makedirs(a.output, exist_ok=True)
        imgs, caps = batch(np.random.default_rng(a.seed), a.sample)
        for i, img in enumerate(imgs):
            write_png(os.path.join(a.output, "%04d.png" % i), img)
        with open(os.path.join(a.output, "captions.txt"), "w") as f:
            f.write("\n".join(caps) + "\n")
    else:
        ap.print_help()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
