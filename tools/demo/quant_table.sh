#!/usr/bin/env bash
# The demo model's quantisation table (docs/quantization.md, "The demo model"): for F16 and
# q8_0, q5_K, q4_K, q3_K, q2_K, each without and with an importance matrix collected on the
# data's training prompts, the held-back accuracy (tools/demo/score.c) and the PSNR of the
# pictures against F16's (same prompts and seeds).
#
#   tools/demo/quant_table.sh [BUILD_DIR (build)] [N_PROMPTS (120)] [IMAT_PROMPTS (64)]
#
# Uses `-m demo` (models/demo/, or $SDC_DEMO_DIR). Writes its files under BUILD_DIR/demo_quant/
# and prints a Markdown table. The imatrix: `sdc-demo eval --split train --imat-out`, which
# collects during ordinary generation as `sdc --imat-out` does; then `sdc -M convert --imat-in`.
set -euo pipefail
build=${1:-build}
n=${2:-120}
n_imat=${3:-64}
threads=${THREADS:-2}
out=$build/demo_quant
mkdir -p "$out"
demo=$build/sdc-demo
sdc=$build/sdc

# row LOG -> "csb|colour|background|shape|position|size|psnr|stored types"
row_of() {
    local log=$1 acc psnr types
    acc=$(grep '^eval:' "$log")
    psnr=$(sed -n 's/^PSNR vs .*: \([0-9.inf]*\) dB.*/\1/p' "$log")
    types=$(sed -n 's/.*; weights \([^;]*\);.*/\1/p' "$log" | head -n 1)
    pct() { echo "$acc" | sed -n "s/.* $1 \([0-9.]*\)%.*/\1/p"; }
    echo "$(pct 'colour+background+shape')|$(pct colour)|$(pct background)|$(pct shape)|$(pct position)|$(pct size)|${psnr:--}|$types"
}

# eval LABEL MODEL_ARGS...: the held-back prompts on a model, PSNR against F16's pictures
eval_model() {
    local label=$1
    shift
    "$demo" eval "$@" --n "$n" -t "$threads" --ref "$out/f16" >"$out/$label.log" 2>&1 ||
        { cat "$out/$label.log" >&2; exit 1; }
    row_of "$out/$label.log"
}

echo "F16 reference: $n held-back prompts" >&2
"$demo" eval -m demo --n "$n" -t "$threads" -o "$out/f16" >"$out/f16.log" 2>&1 ||
    { cat "$out/f16.log" >&2; exit 1; }
echo "imatrix: $n_imat training prompts" >&2
"$demo" eval -m demo --split train --n "$n_imat" -t "$threads" --imat-out "$out/imatrix.dat" \
    >"$out/imatrix.log" 2>&1 || { cat "$out/imatrix.log" >&2; exit 1; }

printf '| type | imatrix | colour+bg+shape | colour | background | shape | position | size | PSNR vs F16 (dB) | stored as |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
row=$(row_of "$out/f16.log")
IFS='|' read -r csb c b s p z ps ty <<<"$row"
printf '| F16 | - | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s | %s |\n' "$csb" "$c" "$b" "$s" "$p" "$z" "$ps" "$ty"
for t in q8_0 q5_K q4_K q3_K q2_K; do
    for im in no yes; do
        f=$out/$t-$im.gguf
        args=(-M convert -m demo --type "$t" -o "$f")
        [ "$im" = yes ] && args+=(--imat-in "$out/imatrix.dat")
        "$sdc" "${args[@]}" >"$out/$t-$im.convert.log" 2>&1 ||
            { cat "$out/$t-$im.convert.log" >&2; exit 1; }
        echo "$t, imatrix $im" >&2
        row=$(eval_model "$t-$im" -m "$f")
        IFS='|' read -r csb c b s p z ps ty <<<"$row"
        printf '| %s | %s | %s%% | %s%% | %s%% | %s%% | %s%% | %s%% | %s | %s |\n' "$t" "$im" "$csb" "$c" "$b" "$s" "$p" "$z" "$ps" "$ty"
    done
done
