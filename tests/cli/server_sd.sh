#!/usr/bin/env bash
# sdc-server for the SD families (tests/cli/server_sd.py): A1111 sampler/scheduler labels,
# checkpoint switching (--model-dir, /sdapi/v1/options, override_settings) on the golden
# MiniT2I F32/F16 sets, and one SD1 txt2img when SDC_SD1_MODEL exists. python3 only (no
# packages). Usage: server_sd.sh BUILD_DIR GOLDEN_DIR
set -u
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
exec python3 "$(dirname "$0")/server_sd.py" "${1:?build dir}" "${2:?golden dir}"
