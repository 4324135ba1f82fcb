#!/usr/bin/env bash
# The demo model's trainer in CI: `tools/demo/train.py --quick` trains a few small steps, exports
# F16 safetensors + tokenizer.json and reads them back; sdc must then load that export and
# generate from it (the export's layout is what sdc reads). Skipped (77) without torch/numpy.
# Usage: demo_train_quick.sh BUILD_DIR [GOLDEN_DIR]
set -u
BUILD=${1:?build dir}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$(dirname "$0")/check.bash"
if ! python3 -c 'import torch, numpy, safetensors' >/dev/null 2>&1; then
    echo "skipped: python3 with torch, numpy and safetensors is needed for tools/demo/train.py"
    exit 77
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
start=$(date +%s)
check "train.py --quick trains, exports and reloads" \
    python3 "$ROOT/tools/demo/train.py" --quick --ckpt-dir "$TMP/ck" --out "$TMP/demo"
echo "quick training took $(($(date +%s) - start)) s"
check "export wrote the DiT, T5 and tokenizer" \
    test -s "$TMP/demo/minit2i.safetensors" -a -s "$TMP/demo/t5.safetensors" -a -s "$TMP/demo/tokenizer.json"
check "sdc generates from the export" "$BUILD/sdc" --diffusion-model "$TMP/demo/minit2i.safetensors" \
    --t5xxl "$TMP/demo/t5.safetensors" -p "a red circle on a blue background" -W 64 -H 64 --steps 2 \
    --cfg-scale 4 -t 2 -o "$TMP/q.png"
check "sdc wrote the picture" test -s "$TMP/q.png"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
