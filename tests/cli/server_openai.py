#!/usr/bin/env python3
"""sdc-server driven by the official OpenAI Python client (PyPI `openai`), as a new user
would: images.generate against the golden MiniT2I model (compared with sd-cli's PNG for the
same settings), images.edit with an RGBA mask (OpenAI's rule: transparent = edit), and the
errors a multipart upload can meet (wrong key 401, a 40 MB upload 413, the unsupported
images.create_variation 404, stream=True 400) arriving as the client's typed errors, not
as "Connection error". Usage: server_openai.py BUILD_DIR GOLDEN_DIR. Exit 77: skipped."""
import base64
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_util import png_decode, png_encode  # noqa: E402

try:
    import openai
except ImportError:
    print("the openai package is not installed (pip install openai): skipped")
    sys.exit(77)

BUILD, GOLDEN = sys.argv[1], sys.argv[2]
DIT = os.path.join(GOLDEN, "minit2i", "minit2i_a_dit_f32.safetensors")
T5 = os.path.join(GOLDEN, "minit2i", "minit2i_a_t5_f32.safetensors")
# the tokenizer sd-cli used for the golden runs (test_minit2i_sdcpp_png.c)
TOK = os.path.join(GOLDEN, "minit2i", "tokenizer_sdcpp_compat.json")
REF = os.path.join(GOLDEN, "minit2i", "png", "a01.png")
for f in (DIT, T5, TOK, REF):
    if not os.path.exists(f):
        print(f"FAIL golden file missing: {f}")
        sys.exit(1)

passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   {what}{': ' + detail if detail else ''}")
    else:
        failed += 1
        print(f"FAIL {what}{': ' + detail if detail else ''}")


# ---- PNG in pure Python (CI has no Pillow) ----
def diff_stats(a, b, x0, x1, w, h, ch=3):
    """max and mean |a-b| over the columns [x0, x1)."""
    mx, s, n = 0, 0, 0
    for y in range(h):
        for x in range(x0, x1):
            for c in range(ch):
                d = abs(a[(y * w + x) * ch + c] - b[(y * w + x) * ch + c])
                mx, s, n = max(mx, d), s + d, n + 1
    return mx, s / n


# ---- the server: golden run a01's settings as its defaults ----
KEY = "sk-test-key-42"
tmp = tempfile.mkdtemp()
out, err = open(os.path.join(tmp, "out"), "w+"), open(os.path.join(tmp, "err"), "w+")
server = subprocess.Popen(
    [os.path.join(BUILD, "sdc-server"), "--diffusion-model", DIT, "--t5xxl", T5, "--t5-tokenizer", TOK,
     "-l", "127.0.0.1", "--listen-port", "0", "--api-key", KEY, "-W", "64", "-H", "64", "--steps", "4",
     "--cfg-scale", "6", "--sampling-method", "euler", "-s", "42", "--rng", "cpu", "-t", "2"],
    stdout=out, stderr=err)
port = None
for _ in range(300):
    out.seek(0)
    text = out.read()
    if "listening on" in text:
        port = int(text.split("listening on http://127.0.0.1:")[1].split()[0])
        break
    if server.poll() is not None:
        break
    time.sleep(0.1)
if port is None:
    err.seek(0)
    print("FAIL server did not start\n" + err.read())
    server.kill()
    sys.exit(1)
print(f"server on port {port}, openai {openai.__version__}")
base = f"http://127.0.0.1:{port}/v1"
client = openai.OpenAI(base_url=base, api_key=KEY, max_retries=0, timeout=120)
wrong = openai.OpenAI(base_url=base, api_key="sk-wrong", max_retries=0, timeout=120)

try:
    # images.generate = sd-cli's a01 (same model, prompt, size, steps, cfg, sampler, seed,
    # rng): max 1/255 as test_minit2i_sdcpp_png.c measured for F32 weights
    r = client.images.generate(model="sdc-local", prompt="a cat", size="64x64", response_format="b64_json")
    png = base64.b64decode(r.data[0].b64_json)
    w, h, ch, got = png_decode(png)
    rw, rh, rch, ref = png_decode(open(REF, "rb").read())
    mx, mean = diff_stats(got, ref, 0, 64, 64, 64) if (w, h, ch) == (rw, rh, rch) == (64, 64, 3) else (255, 255)
    check("images.generate: one 64x64 PNG equal to sd-cli's a01.png", len(r.data) == 1 and mx <= 1,
          f"{w}x{h}x{ch}, max |diff| {mx}/255 (tolerance 1), mean {mean:.3f}")

    # images.edit with an RGBA mask: left half transparent (edit), right half opaque (keep);
    # its RGB is black, which read as an sd.cpp mask would keep everything (the old no-op)
    mask = bytearray()
    for y in range(64):
        for x in range(64):
            mask += bytes((0, 0, 0, 0 if x < 32 else 255))
    mask_png = png_encode(64, 64, 4, bytes(mask))
    r = client.images.edit(image=("init.png", png, "image/png"), mask=("mask.png", mask_png, "image/png"),
                           prompt="a dog", response_format="b64_json",
                           extra_body={"strength": 1.0})
    ew, eh, ech, edited = png_decode(base64.b64decode(r.data[0].b64_json))
    lmax, lmean = diff_stats(edited, got, 0, 32, 64, 64)
    rmax, rmean = diff_stats(edited, got, 32, 64, 64, 64)
    print(f"     edit vs init: transparent half mean |diff| {lmean:.2f} (max {lmax}), "
          f"opaque half mean {rmean:.2f} (max {rmax})")
    # read as RGB (black: keep all) the edit would change nothing: 0 on both halves
    check("images.edit RGBA mask: the transparent half is regenerated", (ew, eh) == (64, 64) and lmean > 2,
          f"mean |diff| {lmean:.2f} > 2 (measured 15)")
    check("images.edit RGBA mask: the opaque half is kept", rmax <= 1,
          f"max |diff| {rmax}/255 <= 1 (measured 0)")

    # errors during multipart uploads reach the client as typed errors; the uploads are
    # large (8 MB) so that they cannot fit in the socket buffers before the server answers
    upload = png + os.urandom(8 * 1000 * 1000)
    try:
        wrong.images.edit(image=("init.png", upload, "image/png"), prompt="a dog")
        check("wrong API key: AuthenticationError", False, "no error")
    except openai.AuthenticationError as e:
        check("wrong API key (multipart edit): AuthenticationError 401", e.status_code == 401)
    except openai.APIConnectionError as e:
        check("wrong API key (multipart edit): AuthenticationError 401", False, f"connection error: {e}")
    big = b"\x89PNG" + os.urandom(40 * 1000 * 1000)
    try:
        client.images.edit(image=("big.png", big, "image/png"), prompt="a dog")
        check("40 MB upload: 413", False, "no error")
    except openai.APIStatusError as e:
        check("40 MB upload (limit 32 MiB): APIStatusError 413", e.status_code == 413, f"status {e.status_code}")
    except openai.APIConnectionError as e:
        check("40 MB upload (limit 32 MiB): APIStatusError 413", False, f"connection error: {e}")
    try:
        client.images.create_variation(image=("init.png", upload, "image/png"))
        check("images.create_variation: 404", False, "no error")
    except openai.NotFoundError as e:
        check("images.create_variation (not served): NotFoundError 404", e.status_code == 404)
    except openai.APIConnectionError as e:
        check("images.create_variation (not served): NotFoundError 404", False, f"connection error: {e}")
    for name, call in (("generate", lambda: client.images.generate(prompt="a cat", stream=True)),
                       ("edit", lambda: client.images.edit(image=("init.png", png, "image/png"),
                                                           prompt="a dog", stream=True))):
        try:
            call()
            check(f"images.{name}(stream=True): 400", False, "no error")
        except openai.BadRequestError as e:
            check(f"images.{name}(stream=True): BadRequestError 400 naming 'stream'",
                  e.status_code == 400 and "stream" in str(e), str(e)[:120])
        except openai.APIError as e:
            check(f"images.{name}(stream=True): BadRequestError 400", False, repr(e)[:200])
    # the same three with a client that sends the whole body before it reads (urllib, as
    # requests and older SDK versions do): before the fix the server closed the connection
    # under it, and the answer was lost ("Connection reset by peer")
    def raw_status(path, key, body_bytes):
        boundary = "sdcboundary42"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\na dog\r\n"
                f"--{boundary}\r\nContent-Disposition: form-data; name=\"image\"; filename=\"i.png\"\r\n"
                f"Content-Type: image/png\r\n\r\n").encode() + body_bytes + f"\r\n--{boundary}--\r\n".encode()
        req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST", headers={
            "Authorization": f"Bearer {key}", "Content-Type": f"multipart/form-data; boundary={boundary}"})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status
        except urllib.error.HTTPError as e:
            return e.code
        except (urllib.error.URLError, OSError) as e:
            return f"connection error: {e}"
    eight_mb = upload
    for what, path, key, data, want in (("wrong key, 8 MB upload", "/v1/images/edits", "sk-wrong", eight_mb, 401),
                                        ("40 MB upload", "/v1/images/edits", KEY, big, 413),
                                        ("variations, 8 MB upload", "/v1/images/variations", KEY, eight_mb, 404)):
        st = raw_status(path, key, data)
        check(f"urllib, {what}: {want}", st == want, f"got {st}")
    r = client.images.generate(prompt="still here", size="32x32")
    check("the server still answers afterwards", len(r.data) == 1)
finally:
    server.terminate()
    rc = server.wait(timeout=60)
check("SIGTERM: exit 0", rc == 0, f"status {rc}")
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
