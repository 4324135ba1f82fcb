#!/usr/bin/env bash
# The OpenAI Python client against sdc-server (tests/cli/server_openai.py). Skipped (77)
# when python3 or its openai package is missing; CI installs it (.ci/run).
# Usage: server_openai.sh BUILD_DIR GOLDEN_DIR
set -u
command -v python3 >/dev/null || { echo "python3 is not installed: skipped"; exit 77; }
exec python3 "$(dirname "$0")/server_openai.py" "${1:?build dir}" "${2:?golden dir}"
