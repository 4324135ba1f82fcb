#!/usr/bin/env python3
"""Reference images for tests/unit/test_image_api.c, written by Pillow (an independent
encoder/decoder) into tests/data/images/.

    pip install --break-system-packages pillow
    python3 tests/golden/gen_image_refs.py

Deterministic: pixels come from a fixed-seed PRNG. Each JPEG comes with Pillow's own
decode of it as a lossless PNG (*.pillow.png), the pixels our decoder must match.
"""
import os
import random
import sys

from PIL import Image, PngImagePlugin, features

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "images")

# the text stored in the metadata files (the test holds the same strings)
PARAMS_ASCII = "a cat\nNegative prompt: dog\nSteps: 4, Sampler: euler, CFG scale: 6, Seed: 42, Size: 48x40"
PARAMS_UNICODE = "un chat caf\u00e9 \u732b \U0001F431\nSteps: 4, Seed: 7"


def source(w, h, seed):
    """Smooth gradients plus noise and a sharp edge: a photo-like test for JPEG."""
    rnd = random.Random(seed)
    img = Image.new("RGB", (w, h))
    px = []
    for y in range(h):
        for x in range(w):
            r = int(255 * x / (w - 1))
            g = int(255 * y / (h - 1))
            b = 200 if (x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2 else 40
            n = rnd.randint(-12, 12)
            px.append(tuple(max(0, min(255, v + n)) for v in (r, g, b)))
    img.putdata(px)
    return img


def save_jpeg_with_decode(img, name, **kw):
    path = os.path.join(OUT, name + ".jpg")
    img.save(path, "JPEG", **kw)
    with Image.open(path) as dec:
        dec.convert("RGB").save(os.path.join(OUT, name + ".pillow.png"))


def srgb_to_linear(v):
    c = v / 255.0
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def linear_to_srgb(v):
    c = min(1.0, max(0.0, v))
    c = c * 12.92 if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055
    return int(c * 255.0 + 0.5)


def resize_linear_box(img, w, h):
    """Pillow's BOX filter on linear-light float planes. For integer ratios it is the
    exact area average, which is what stb_image_resize's box filter (sd-cli) computes."""
    planes = []
    for band in img.split():
        f = Image.new("F", img.size)
        f.putdata([srgb_to_linear(v) for v in band.tobytes()])
        r = f.resize((w, h), Image.BOX)
        b = Image.new("L", (w, h))
        b.putdata([linear_to_srgb(v) for v in (r.getpixel((x, y)) for y in range(h) for x in range(w))])
        planes.append(b)
    return Image.merge("RGB", planes)


def main():
    os.makedirs(OUT, exist_ok=True)
    print("Pillow", Image.__version__, "libjpeg", features.version("jpg"))
    src = source(48, 40, 1)

    # PNG with the "parameters" tEXt chunk (A1111 / sd.cpp layout); also the JPEG source
    info = PngImagePlugin.PngInfo()
    info.add_text("parameters", PARAMS_ASCII)
    src.save(os.path.join(OUT, "src.png"), pnginfo=info)
    # the same text compressed (zTXt), and non-Latin text as compressed iTXt
    small = source(8, 8, 2)
    info = PngImagePlugin.PngInfo()
    info.add_text("Software", "gen_image_refs")
    info.add_text("parameters", PARAMS_ASCII, zip=True)
    small.save(os.path.join(OUT, "meta_ztxt.png"), pnginfo=info)
    info = PngImagePlugin.PngInfo()
    info.add_itxt("parameters", PARAMS_UNICODE, zip=True)
    small.save(os.path.join(OUT, "meta_itxt.png"), pnginfo=info)
    small.save(os.path.join(OUT, "meta_none.png"))

    # JPEGs of several kinds and Pillow's decodes of them
    save_jpeg_with_decode(src, "q90", quality=90)  # 4:2:0
    save_jpeg_with_decode(src, "q95_444", quality=95, subsampling=0)
    save_jpeg_with_decode(src, "progressive", quality=80, progressive=True)
    save_jpeg_with_decode(src.convert("L"), "gray", quality=90)
    save_jpeg_with_decode(src.convert("CMYK"), "cmyk", quality=90)
    small.save(os.path.join(OUT, "small.jpg"), "JPEG", quality=75)  # for truncation tests

    # A1111-style EXIF UserComment: "UNICODE\0" + UTF-16BE (piexif's encoding), in a
    # little-endian TIFF as Pillow writes it; and sd.cpp's COM "parameters\0text\0"
    exif = Image.Exif()
    exif.get_ifd(0x8769)[0x9286] = b"UNICODE\0" + PARAMS_UNICODE.encode("utf-16-be")
    small.save(os.path.join(OUT, "meta_exif.jpg"), "JPEG", quality=90, exif=exif.tobytes())
    comment = b"parameters\0" + PARAMS_ASCII.encode() + b"\0"
    small.save(os.path.join(OUT, "meta_com.jpg"), "JPEG", quality=90, comment=comment)

    # resize references: integer ratios down (exact area averages in linear light)
    rs = source(64, 48, 3)
    rs.save(os.path.join(OUT, "resize_src.png"))
    resize_linear_box(rs, 32, 24).save(os.path.join(OUT, "resize_32x24.pillow.png"))
    resize_linear_box(rs, 16, 12).save(os.path.join(OUT, "resize_16x12.pillow.png"))
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("wrote", len(os.listdir(OUT)), "files,", total, "bytes to", os.path.normpath(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
