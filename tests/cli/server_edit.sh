#!/usr/bin/env bash
# sdc-server with Qwen-Image-Edit (tests/cli/server_edit.py): sd.cpp's per-request img_cfg,
# flow_shift and auto_resize_ref_image give the image sdc's CLI gives for the same flags.
# Runs only when the Edit checkpoints are there (minutes); else skipped.
# Usage: server_edit.sh BUILD_DIR GOLDEN_DIR
set -u
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
here="$(cd "$(dirname "$0")" && pwd)"
exec python3 "$here/server_edit.py" "${1:?build dir}" "$here/../.."
