#!/usr/bin/env bash
# sdc-server with Qwen-Image-Layered (tests/cli/server_layered.py): reference images in the
# three APIs, batch x (layers + 1) RGBA PNGs back, against sd-cli's golden PNGs. Runs only
# when $SDC_QWEN_IMAGE_DIR names the random-weight checkpoints (minutes); else skipped.
# Usage: server_layered.sh BUILD_DIR GOLDEN_DIR
set -u
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
exec python3 "$(dirname "$0")/server_layered.py" "${1:?build dir}" "${2:?golden dir}"
