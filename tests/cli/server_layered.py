"""sdc-server with Qwen-Image-Layered: reference images in, batch x (layers + 1) RGBA PNGs out,
through the three APIs.

References, independent of the server's code paths:
- sd-cli's PNGs of the golden qwen_image set (GOLDEN/qwen_image, runs.json case l1: 256x256,
  5 steps, euler, flow shift 3, cfg 2.5, seed 42, 1 layer, -r inputs/ref_a.png): the sdcpp
  job's two images must be within 3/255 of l1_0.png and l1_1.png, alpha included (the
  tolerance of tests/unit/test_qwen_image_sdcpp.c);
- that sdcpp job's small twin (64x64, 1 step, batch 2: 4 images) for the OpenAI edit and the
  A1111 txt2img of the same reference: equal, byte for byte of the pixels.
Needs the random-weight checkpoints of GOLDEN/qwen_image/README.md (5 GB, not stored): the
test runs only when $SDC_QWEN_IMAGE_DIR names their folder (minutes on 2 cores), else it
is skipped (77). Stdlib only. Usage: server_layered.py BUILD_DIR GOLDEN_DIR
"""
import base64
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_util import png_decode, png_encode  # noqa: E402
from srv_util import Checks, call, max_diff, start_server  # noqa: E402

BUILD, GOLDEN = sys.argv[1], sys.argv[2]
QI = os.path.join(GOLDEN, "qwen_image")
CKPT = os.environ.get("SDC_QWEN_IMAGE_DIR", "")
FILES = ["qwen_image_layered_dit_1001.safetensors", "qwen25vl_llm_1001.safetensors",
         "qwen_image_layered_vae_1001.safetensors"]
if not CKPT or not all(os.path.exists(os.path.join(CKPT, f)) for f in FILES):
    print("SDC_QWEN_IMAGE_DIR does not name the Qwen-Image-Layered checkpoints: skipped")
    sys.exit(77)
check = Checks()
PROMPT = "a poster with a red ball and a green box on a gradient background"


def decoded(b64s):
    return [png_decode(base64.b64decode(s)) for s in b64s]


def multipart(fields, files):
    bnd = "sdcLayeredB0"
    out = b""
    for k, v in fields:
        out += f'--{bnd}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n'.encode()
    for k, name, data in files:
        out += (f'--{bnd}\r\nContent-Disposition: form-data; name="{k}"; filename="{name}"\r\n'
                f"Content-Type: image/png\r\n\r\n").encode() + data + b"\r\n"
    return out + f"--{bnd}--\r\n".encode(), "multipart/form-data; boundary=" + bnd


tmp = tempfile.mkdtemp(prefix="sdc_server_layered_")
log = os.path.join(tmp, "server")
srv, U = start_server(
    [os.path.join(BUILD, "sdc-server"), "--listen-port", "0", "-t", "2",
     "--diffusion-model", os.path.join(CKPT, FILES[0]), "--llm", os.path.join(CKPT, FILES[1]),
     "--llm-tokenizer", os.path.join(QI, "tokenizer"), "--vae", os.path.join(CKPT, FILES[2]),
     "--flow-shift", "3", "--sampling-method", "euler", "--cfg-scale", "2.5", "-W", "64", "-H",
     "64", "--steps", "1", "-s", "42"], log)
try:

    def job(body):
        code, sub = call(U + "/sdcpp/v1/img_gen", body)
        if code != 202:
            return code, sub
        while True:
            _, j = call(U + "/sdcpp/v1/jobs/" + sub["id"])
            if j["status"] in ("completed", "failed", "cancelled"):
                return code, j
            time.sleep(0.5)

    ref_png = open(os.path.join(QI, "inputs", "ref_a.png"), "rb").read()
    t0 = time.time()
    code, j = job({"prompt": PROMPT, "width": 256, "height": 256, "seed": 42, "qwen_image_layers": 1,
                   "ref_images": [base64.b64encode(ref_png).decode()],
                   "sample_params": {"sample_steps": 5, "guidance": {"txt_cfg": 2.5}}})
    imgs = decoded(i["b64_json"] for i in j.get("result", {}).get("images", []))
    check("sdcpp Layered job (1 layer): completed, 2 RGBA 256x256 images",
          j["status"] == "completed" and len(imgs) == 2 and all(i[:3] == (256, 256, 4) for i in imgs),
          f"{j['status']} {len(imgs)} image(s) in {time.time() - t0:.0f} s {j.get('error', '')}")
    for k, img in enumerate(imgs[:2]):
        gold = png_decode(open(os.path.join(QI, "png", f"l1_{k}.png"), "rb").read())
        d = max_diff(img, gold)
        check(f"... image {k} against sd-cli's l1_{k}.png (RGBA)", d <= 3, f"max |diff| {d}/255")

    # the same reference at 64x64 (RGB), for three small runs that must agree exactly
    w, h, ch, px = png_decode(ref_png)
    small = bytes(px[((y * 4) * w + x * 4) * ch + c] for y in range(64) for x in range(64)
                  for c in range(3))
    ref64 = png_encode(64, 64, 3, small)
    b64 = base64.b64encode(ref64).decode()
    extra = '<sd_cpp_extra_args>{"qwen_image_layers":1,"seed":42}</sd_cpp_extra_args>'
    code, j = job({"prompt": PROMPT, "batch_count": 2, "qwen_image_layers": 1, "ref_images": [b64]})
    base = decoded(i["b64_json"] for i in j.get("result", {}).get("images", []))
    check("sdcpp batch 2 x (1 layer + 1): 4 RGBA 64x64 images",
          len(base) == 4 and all(i[:3] == (64, 64, 4) for i in base), f"{j['status']} {len(base)}")
    body, ctype = multipart([("prompt", PROMPT + extra), ("n", "2")], [("image[]", "r.png", ref64)])
    code, r = call(U + "/v1/images/edits", data=body, ctype=ctype)
    got = decoded(i["b64_json"] for i in r.get("data", []))
    check("OpenAI edit (image[] as the reference, init image dropped): 200, the same 4 images",
          code == 200 and len(got) == 4 and all(max_diff(a, b) == 0 for a, b in zip(got, base)),
          f"{code} {len(got)} {r.get('error', '')}")
    code, r = call(U + "/sdapi/v1/txt2img",
                   {"prompt": PROMPT + extra, "batch_size": 2, "extra_images": [b64]})
    got = decoded(r.get("images", []))
    info = json.loads(r.get("info", "{}") or "{}")
    check("A1111 txt2img extra_images: 200, the same 4 images, all_seeds 42 42 43 43",
          code == 200 and len(got) == 4 and all(max_diff(a, b) == 0 for a, b in zip(got, base)) and
          info.get("all_seeds") == [42, 42, 43, 43] and r.get("parameters", {}).get("extra_images") is None,
          f"{code} {len(got)} {info.get('all_seeds')} {r.get('error', '')}")
finally:
    srv.terminate()
    rc = srv.wait(timeout=300)
check("server exits 0 on SIGTERM", rc == 0, str(rc))
sys.exit(check.finish())
