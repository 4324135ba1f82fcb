"""sdc-server serving SD checkpoints through the A1111 API (issue 11, item 8).

References, independent of the server's code paths:
- sd-cli's PNGs of the golden MiniT2I set A (GOLDEN/minit2i/png, README "sd-cli runs"):
  a01 (euler), a07 (euler_a), a09 (heun) at 64x64, 4 steps, cfg 6, seed 42, rng cpu;
- the sdc CLI run directly on the F16 DiT (another process loading that file alone), for
  the image after a switch to it;
- Python's hashlib for A1111's short model hash (sha256 of the 64 KiB at 1 MiB, 8 hex);
- with SDC_SD1_MODEL: the sdc CLI with the same SD1 settings (clip skip 2, negative prompt).
Stdlib only (CI has no Pillow). Usage: server_sd.py BUILD_DIR GOLDEN_DIR
"""
import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from png_util import png_decode  # noqa: E402
from srv_util import call  # noqa: E402
from srv_util import start_server as srv_start  # noqa: E402

BUILD, GOLDEN = sys.argv[1], sys.argv[2]
MINI = os.path.join(GOLDEN, "minit2i")
passed = failed = 0


def check(what, ok, detail=""):
    global passed, failed
    passed, failed = (passed + 1, failed) if ok else (passed, failed + 1)
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def max_diff(png_a, png_b):
    wa, ha, ca, a = png_decode(png_a)
    wb, hb, cb, b = png_decode(png_b)
    if (wa, ha) != (wb, hb):
        return 999
    return max(abs(a[i * ca + c] - b[i * cb + c]) for i in range(wa * ha) for c in range(3))


def n_diff(png_a, png_b):
    """values that differ at all"""
    _, _, ca, a = png_decode(png_a)
    _, _, cb, b = png_decode(png_b)
    return sum(a[i * ca + c] != b[i * cb + c] for i in range(len(a) // ca) for c in range(3))


def a1111_hash(path):
    with open(path, "rb") as f:
        f.seek(0x100000)
        return hashlib.sha256(f.read(0x10000)).hexdigest()[:8]


def start_server(args, log):
    return srv_start([os.path.join(BUILD, "sdc-server"), "--listen-port", "0", "-t", "2"] + args, log)


def first_image(resp):
    return base64.b64decode(resp["images"][0])


def stop(p):
    p.terminate()
    return p.wait(timeout=120)


tmp = tempfile.mkdtemp(prefix="sdc_server_sd_")
try:
    # ---- MiniT2I: two checkpoints of set A (DiT F32 and F16) in a model dir ----
    md = os.path.join(tmp, "models")
    os.mkdir(md)
    f32, f16 = os.path.join(md, "a_f32.safetensors"), os.path.join(md, "a_f16.safetensors")
    shutil.copy(os.path.join(MINI, "minit2i_a_dit_f32.safetensors"), f32)
    shutil.copy(os.path.join(MINI, "minit2i_a_dit_f16.safetensors"), f16)
    t5 = os.path.join(MINI, "minit2i_a_t5_f32.safetensors")
    tok = os.path.join(MINI, "tokenizer_sdcpp_compat.json")  # sd-cli's tokenization
    srv, U = start_server(["--model-dir", md, "--diffusion-model", f32, "--t5xxl", t5, "--t5-tokenizer", tok, "-W", "64",
                           "-H", "64", "--steps", "4", "--cfg-scale", "6", "--rng", "cpu"],
                          os.path.join(tmp, "mini"))
    h32, h16 = a1111_hash(f32), a1111_hash(f16)
    t32, t16 = f"a_f32.safetensors [{h32}]", f"a_f16.safetensors [{h16}]"
    st, models = call(U + "/sdapi/v1/sd-models")
    titles = [m["title"] for m in models]
    check("sd-models lists both checkpoints with A1111 titles (hashlib short hashes)",
          st == 200 and titles == [t32, t16] and [m["hash"] for m in models] == [h32, h16] and
          [m["model_name"] for m in models] == ["a_f32", "a_f16"], str(titles))
    st, opts = call(U + "/sdapi/v1/options")
    check("options: sd_model_checkpoint is the loaded model's title", opts.get("sd_model_checkpoint") == t32,
          opts.get("sd_model_checkpoint", ""))
    st, samplers = call(U + "/sdapi/v1/samplers")
    aliases = {s["name"]: s["aliases"] for s in samplers}
    check("samplers list A1111 labels as aliases", "Euler a" in aliases.get("euler_a", []) and
          "DPM++ 2M" in aliases.get("dpm++2m", []))
    st, scheds = call(U + "/sdapi/v1/schedulers")
    labels = {s["name"]: s["label"] for s in scheds}
    check("schedulers carry A1111 labels", labels.get("karras") == "Karras" and
          labels.get("sgm_uniform") == "SGM Uniform" and labels.get("ays") == "Align Your Steps")

    base = {"prompt": "a cat", "width": 64, "height": 64, "steps": 4, "cfg_scale": 6, "seed": 42}
    gold = {k: open(os.path.join(MINI, "png", k + ".png"), "rb").read() for k in ("a01", "a07", "a09")}
    img_f32 = None
    for label, ref in (("Euler", "a01"), ("Euler a", "a07"), ("Heun", "a09"), ("k_euler", "a01")):
        st, r = call(U + "/sdapi/v1/txt2img", dict(base, sampler_name=label, scheduler="Automatic"))
        d = max_diff(first_image(r), gold[ref]) if st == 200 else 999
        if label == "Euler" and st == 200:
            img_f32 = first_image(r)
        check(f"txt2img sampler_name '{label}' = sd-cli {ref}.png within 1/255", d <= 1, f"max {d}")

    for body, want in ((dict(base, sampler_name="UniPC"), "'UniPC'"),
                       (dict(base, sampler_name="DPM++ SDE"), "'DPM++ SDE'"),
                       (dict(base, scheduler="Turbo"), "'Turbo'")):
        st, r = call(U + "/sdapi/v1/txt2img", body)
        msg = r.get("error", {}).get("message", "")
        check(f"unknown name {want}: 400 listing the known ones", st == 400 and want in msg and
              ("euler_a" in msg or "karras" in msg), msg[:100])

    # the F16 reference: the CLI on the F16 DiT file alone
    ref16 = os.path.join(tmp, "ref16.png")
    subprocess.run([os.path.join(BUILD, "sdc"), "--diffusion-model", f16, "--t5xxl", t5, "--t5-tokenizer", tok, "-p", "a cat",
                    "-W", "64", "-H", "64", "--steps", "4", "--cfg-scale", "6", "-s", "42",
                    "--sampling-method", "euler", "--rng", "cpu", "-t", "2", "-o", ref16],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ref16 = open(ref16, "rb").read()
    # F16 rounding moves the image by at most 1/255 (a few values), so the switch is
    # checked exactly: the same library on the same file gives the same bytes
    n_f32_f16 = n_diff(ref16, img_f32)
    st, r = call(U + "/sdapi/v1/txt2img", dict(base, sampler_name="Euler",
                                                override_settings={"sd_model_checkpoint": "a_f16"}))
    d = max_diff(first_image(r), ref16) if st == 200 else 999
    check("override_settings a_f16: the F16 DiT's image (sdc CLI on that file) exactly", d == 0,
          f"max {d}; the F16 and F32 images differ in {n_f32_f16} values")
    check("the F16 and F32 images differ (so the switch is visible)", n_f32_f16 > 0)
    st, opts = call(U + "/sdapi/v1/options")
    check("options now names a_f16", opts.get("sd_model_checkpoint") == t16, opts.get("sd_model_checkpoint"))

    st, r = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": t32, "samples_format": "png"})
    st2, opts = call(U + "/sdapi/v1/options")
    check("POST options switches back by title", st == 200 and opts.get("sd_model_checkpoint") == t32)
    st, r = call(U + "/sdapi/v1/txt2img", dict(base, sampler_name="Euler"))
    d = max_diff(first_image(r), img_f32) if st == 200 else 999
    check("after the switch back: the first F32 image exactly", d == 0, f"max {d}")
    st, r = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": h16})
    st2, opts = call(U + "/sdapi/v1/options")
    check("POST options switches by short hash", st == 200 and opts.get("sd_model_checkpoint") == t16)
    # an async sdcpp job behind a switch runs on the model switched to
    st, r = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": "a_f32.safetensors"})
    st, job = call(U + "/sdcpp/v1/img_gen", {"prompt": "a cat", "width": 64, "height": 64, "seed": 42,
                                            "sample_params": {"sample_method": "euler", "sample_steps": 4,
                                                              "guidance": {"txt_cfg": 6}}})
    for _ in range(600):
        st, jd = call(U + "/sdcpp/v1/jobs/" + job["id"])
        if jd.get("status") in ("completed", "failed", "cancelled"):
            break
        time.sleep(0.1)
    img = base64.b64decode(jd["result"]["images"][0]["b64_json"]) if jd.get("status") == "completed" else None
    d = max_diff(img, img_f32) if img else 999
    check("sdcpp async job after a switch by file name: the F32 image exactly", d == 0, f"max {d}")

    for path, body in (("/sdapi/v1/options", {"sd_model_checkpoint": "nope.safetensors"}),
                       ("/sdapi/v1/txt2img", dict(base, override_settings={"sd_model_checkpoint": "nope"}))):
        st, r = call(U + path, body)
        msg = r.get("error", {}).get("message", "")
        check(f"{path}: unknown checkpoint is a 400 listing the titles",
              st == 400 and "unknown checkpoint" in msg and t32 in msg and t16 in msg, msg[:120])
    st, r = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": 3})
    check("options: a non-string checkpoint is a 400", st == 400)
    st, opts = call(U + "/sdapi/v1/options")
    check("refused switches leave the model loaded", opts.get("sd_model_checkpoint") == t32)
    rc = stop(srv)
    check("server exits 0 on SIGTERM", rc == 0, f"rc {rc}")

    # without --model-dir: the one model, by name; another name is a 400
    srv, U = start_server(["--diffusion-model", f32, "--t5xxl", t5, "-W", "64", "-H", "64"],
                          os.path.join(tmp, "single"))
    st, r = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": "a_f32"})
    st2, r2 = call(U + "/sdapi/v1/options", {"sd_model_checkpoint": "a_f16"})
    check("single model: its own name is accepted, another a 400", st == 200 and st2 == 400,
          r2.get("error", {}).get("message", "")[:100])
    stop(srv)

    # ---- SD1 (the full-size random checkpoint), when present ----
    sd1 = os.environ.get("SDC_SD1_MODEL", "")
    vocab = os.path.join(GOLDEN, "sd1", "tokenizer", "vocab.json")
    if not (sd1 and os.path.exists(sd1) and os.path.exists(vocab)):
        print("skip SD1 request: no SDC_SD1_MODEL checkpoint")
    else:
        t0 = time.time()
        srv, U = start_server(["-m", sd1, "--clip-tokenizer", vocab], os.path.join(tmp, "sd1"))
        body = {"prompt": "a lovely cat", "negative_prompt": "blurry", "width": 128, "height": 128,
                "steps": 1, "cfg_scale": 7, "seed": 42, "sampler_name": "Euler a",
                "override_settings": {"CLIP_stop_at_last_layers": 2}}
        st, r = call(U + "/sdapi/v1/txt2img", body)
        stop(srv)
        ref = os.path.join(tmp, "sd1_ref.png")
        subprocess.run([os.path.join(BUILD, "sdc"), "-m", sd1, "--clip-tokenizer", vocab, "-p", "a lovely cat",
                        "-n", "blurry", "-W", "128", "-H", "128", "--steps", "1", "--cfg-scale", "7",
                        "-s", "42", "--sampling-method", "euler_a", "--clip-skip", "2", "-t", "2", "-o", ref],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        d = max_diff(first_image(r), open(ref, "rb").read()) if st == 200 else 999
        info = json.loads(r.get("info", "{}")) if st == 200 else {}
        text = (info.get("infotexts") or [""])[0]
        check("SD1 txt2img 128x128 'Euler a', clip skip 2, negative prompt = sdc CLI within 1/255",
              d <= 1, f"max {d}, {time.time() - t0:.1f} s")
        check("SD1 infotext carries the clip skip and the negative prompt",
              "Clip skip: 2" in text and "Negative prompt: blurry" in text, repr(text[:200]))
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
