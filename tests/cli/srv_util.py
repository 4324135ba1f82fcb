"""Helpers of the sdc-server end-to-end scripts (stdlib only): start a server on a free port,
call its JSON API, compare decoded images."""
import json
import subprocess
import time
import urllib.error
import urllib.request


def start_server(argv, log):
    """Runs argv (sdc-server ... --listen-port 0) with stdout/stderr in log.out/log.err; returns
    (process, base URL). Raises SystemExit when it does not come up."""
    srv = subprocess.Popen(argv, stdout=open(log + ".out", "w"), stderr=open(log + ".err", "w"))
    for _ in range(3000):
        time.sleep(0.1)
        text = open(log + ".out").read()
        if "listening on" in text:
            return srv, "http://127.0.0.1:" + text.strip().rsplit(":", 1)[1]
        if srv.poll() is not None:
            break
    print(open(log + ".err").read())
    srv.terminate()
    raise SystemExit("FAIL the server did not start")


def call(url, body=None, data=None, ctype="application/json"):
    """(status, decoded JSON) of a GET (no body, no data) or POST."""
    if body is not None:
        data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def max_diff(a, b):
    """over every channel of two decoded images (png_util.png_decode); 999 when their shapes
    differ"""
    if a[:3] != b[:3]:
        return 999
    return max(abs(x - y) for x, y in zip(a[3], b[3]))


class Checks:
    """check(what, ok, detail): prints ok/FAIL lines and counts them."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, what, ok, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
