#!/usr/bin/env python3
"""Max and mean |difference| of two 8-bit PNGs (Python standard library only).

usage: pngdiff.py A.png B.png [--max N] [--mean X]
Prints "max M mean X" (in u8 steps) and exits 1 when a limit is exceeded. Reads only
non-interlaced 8-bit greyscale/RGB/RGBA (what sdc and sd.cpp write).
"""
import struct
import sys
import zlib


def read_png(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    w, h, depth, ctype, _, _, interlace = hdr
    ch = {0: 1, 2: 3, 6: 4}.get(ctype)
    if depth != 8 or ch is None or interlace:
        raise SystemExit(f"{path}: only 8-bit grey/RGB/RGBA non-interlaced PNGs")
    raw, stride = zlib.decompress(idat), w * ch
    out, prev = bytearray(), bytearray(stride)
    for y in range(h):
        ft, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if ft == 1:
                line[i] = (line[i] + a) & 255
            elif ft == 2:
                line[i] = (line[i] + b) & 255
            elif ft == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        out += line
        prev = line
    return (w, h, ch), bytes(out)


def main():
    args = sys.argv[1:]
    lim_max = lim_mean = None
    if "--max" in args:
        i = args.index("--max")
        lim_max = int(args[i + 1])
        del args[i:i + 2]
    if "--mean" in args:
        i = args.index("--mean")
        lim_mean = float(args[i + 1])
        del args[i:i + 2]
    (sa, a), (sb, b) = read_png(args[0]), read_png(args[1])
    if sa != sb:
        print(f"shape differs: {sa} vs {sb}")
        return 1
    d = [abs(x - y) for x, y in zip(a, b)]
    mx, mean = max(d), sum(d) / len(d)
    print(f"{args[0]} vs {args[1]}: {sa[0]}x{sa[1]}x{sa[2]} max {mx} mean {mean:.4f} (u8 steps)")
    bad = (lim_max is not None and mx > lim_max) or (lim_mean is not None and mean > lim_mean)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
