"""sdc-server with Qwen-Image-Edit: sd.cpp's per-request guidance and reference options
(sample_params.guidance.img_cfg, sample_params.flow_shift, auto_resize_ref_image) reach the
generation as sd-cli's flags do.

Reference, independent of the server's request path: sdc (the CLI, its own flag parser) with
--img-cfg-scale 1.6 --flow-shift 3 --disable-auto-resize-ref-image. The server is started with
other defaults (--flow-shift 1, no img-cfg) and gets the three as request fields; its image must
equal the CLI's exactly (same library, same seed). A second job without them must differ (so
the comparison can fail). The reference is 192x224, not the output's 256x256: without
auto-resize it is encoded at its own size, which only the option changes.
Needs the Edit checkpoints of tests/data/qwen_edit/README.md in $SDC_QWEN_IMAGE_DIR (default
../qwen_ckpt beside the source tree), else skipped (77). Stdlib only.
Usage: server_edit.py BUILD_DIR SOURCE_DIR
"""
import base64
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_util import png_decode, png_encode  # noqa: E402
from srv_util import Checks, call, max_diff, start_server  # noqa: E402

BUILD, SRC = sys.argv[1], sys.argv[2]
DATA = os.path.join(SRC, "tests", "data", "qwen_edit")
CKPT = os.environ.get("SDC_QWEN_IMAGE_DIR", os.path.join(SRC, "..", "qwen_ckpt"))
FILES = ["qwen_image_dit_1001.safetensors", "qwen25vl_vl_llm_1001.safetensors",
         "qwen_image_vae_1001.safetensors"]
if not all(os.path.exists(os.path.join(CKPT, f)) for f in FILES):
    print(f"the Qwen-Image-Edit checkpoints are not in {CKPT} (SDC_QWEN_IMAGE_DIR): skipped")
    sys.exit(77)
check = Checks()
PROMPT = "make the red disk blue and add snow on the green box"


def get(url):
    return call(url)[1]


tmp = tempfile.mkdtemp(prefix="sdc_server_edit_")
# the reference at 192x224 (nearest samples of ref_e1.png, 180x240)
w, h, ch, px = png_decode(open(os.path.join(DATA, "ref_e1.png"), "rb").read())
RW, RH = 192, 224
small = bytes(px[((y * h // RH) * w + x * w // RW) * ch + c] for y in range(RH) for x in range(RW)
              for c in range(3))
ref_path = os.path.join(tmp, "ref.png")
open(ref_path, "wb").write(png_encode(RW, RH, 3, small))
model = ["--diffusion-model", os.path.join(CKPT, FILES[0]), "--llm", os.path.join(CKPT, FILES[1]),
         "--llm-tokenizer", os.path.join(DATA, "tokenizer"), "--vae", os.path.join(CKPT, FILES[2]),
         "-t", "2", "-W", "256", "-H", "256", "--steps", "2", "--cfg-scale", "2.5",
         "--sampling-method", "euler", "-s", "3"]

cli_png = os.path.join(tmp, "cli.png")
t0 = time.time()
r = subprocess.run([os.path.join(BUILD, "sdc")] + model +
                   ["-p", PROMPT, "-n", "blurry", "--flow-shift", "3", "--img-cfg-scale", "1.6",
                    "--disable-auto-resize-ref-image", "-r", ref_path, "-o", cli_png],
                   capture_output=True, text=True)
check("sdc CLI: --img-cfg-scale 1.6 --flow-shift 3 --disable-auto-resize-ref-image", r.returncode == 0,
      f"{time.time() - t0:.0f} s" + ("" if r.returncode == 0 else r.stderr[-800:]))
if r.returncode != 0:
    sys.exit(1)
cli = png_decode(open(cli_png, "rb").read())

log = os.path.join(tmp, "server")
srv, U = start_server([os.path.join(BUILD, "sdc-server"), "--listen-port", "0", "--flow-shift", "1"] + model,
                      log)
rc = None
try:
    d = get(U + "/sdcpp/v1/capabilities").get("defaults", {})
    sp = d.get("sample_params", {})
    check("defaults: flow_shift 1 (the server's --flow-shift), img_cfg null",
          sp.get("flow_shift") == 1 and sp.get("guidance", {}).get("img_cfg", 0) is None,
          json.dumps(sp)[:200])

    def job(extra):
        body = {"prompt": PROMPT, "negative_prompt": "blurry",
                "ref_images": [base64.b64encode(open(ref_path, "rb").read()).decode()]}
        body.update(extra)
        code, sub = call(U + "/sdcpp/v1/img_gen", body)
        if code != 202:
            return None, f"{code} {sub}"
        while True:
            j = get(U + "/sdcpp/v1/jobs/" + sub["id"])
            if j["status"] in ("completed", "failed", "cancelled"):
                imgs = [png_decode(base64.b64decode(i["b64_json"]))
                        for i in j.get("result", {}).get("images", [])]
                return (imgs[0] if len(imgs) == 1 else None), f"{j['status']} {j.get('error') or ''}"
            time.sleep(0.5)

    t0 = time.time()
    img, why = job({"auto_resize_ref_image": False,
                    "sample_params": {"flow_shift": 3, "guidance": {"img_cfg": 1.6}}})
    dd = max_diff(img, cli) if img else 999
    check("job with img_cfg 1.6, flow_shift 3, auto_resize_ref_image false: the CLI's image",
          dd == 0, f"max |diff| {dd}/255, {time.time() - t0:.0f} s {why}")
    img, why = job({})
    dd = max_diff(img, cli) if img else 999
    check("job without them (flow shift 1, no img-cfg, auto-resize): another image",
          img is not None and 0 < dd < 999, f"max |diff| {dd}/255 {why}")
finally:
    srv.terminate()
    rc = srv.wait(timeout=300)
check("server exits 0 on SIGTERM", rc == 0, str(rc))
sys.exit(check.finish())
