#!/usr/bin/env python3
"""Ground-truth pictures for the demo scorer's test (tests/unit/test_demo_score.c).

Independent implementation: the demo data generator itself, tools/demo/make_data.py (numpy),
which renders the training data from the shared specification; the C scorer
(tools/demo/score.c) never sees it. Writes into tests/data/demo/:
  heldback_truth.png   an atlas of 64x64 tiles, 24 a row: first every held-back caption
                       rendered nominally (no jitter), then the same captions rendered with the
                       training jitter (size +-10%, centre +-3 px; numpy seed 14)
  heldback_truth.txt   the captions, one a line, in tile order (both halves)

Re-run from the repository root: python3 tests/golden/gen_demo_truth.py
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "demo"))
import make_data as m  # noqa: E402

COLS = 24


def main():
    caps = m.captions("heldback")
    rng = np.random.default_rng(14)
    tiles = [m.render(m.parse_caption(c)) for c in caps]
    tiles += [m.render(m.parse_caption(c), rng) for c in caps]
    rows = (len(tiles) + COLS - 1) // COLS
    atlas = np.zeros((rows * 64, COLS * 64, 3), dtype=np.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, COLS)
        atlas[r * 64:(r + 1) * 64, c * 64:(c + 1) * 64] = t
    out = os.path.join(ROOT, "tests", "data", "demo")
    os.makedirs(out, exist_ok=True)
    m.write_png(os.path.join(out, "heldback_truth.png"), atlas)
    with open(os.path.join(out, "heldback_truth.txt"), "w") as f:
        f.write("\n".join(caps + caps) + "\n")
    print("%d tiles (%d captions x nominal, jittered), atlas %dx%d" % (len(tiles), len(caps), atlas.shape[1],
                                                                    atlas.shape[0]))


if __name__ == "__main__":
    main()
