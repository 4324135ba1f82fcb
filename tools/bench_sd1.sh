#!/usr/bin/env bash
# SD1.5 at 512x512 (and 256x256) on the full-size random checkpoint of ../shared/golden/sd1 (F16
# weights, CFG 7, euler, 2 steps: sd.cpp's p512 speed anchor): text encode time, seconds per sampling
# step, VAE decode time, peak RSS, and the ratio to sd.cpp's figures. With SDCPP=/path/to/sd-cli the
# same command runs through sd.cpp in the same script; without it the figures sd.cpp measured on this
# machine kind (../shared/golden/sd1/README.md) are used. Usage: tools/bench_sd1.sh [BUILD] [MODEL]
set -eu
BUILD=${1:-build}
MODEL=${2:-$(dirname "$0")/../../sd1/sd1_random_1001.safetensors}
THREADS=${THREADS:-2}
GOLDEN=${GOLDEN:-$(dirname "$0")/../../shared/golden}
if [ ! -s "$MODEL" ]; then
  echo "generating $MODEL (2.1 GB, ~1 min)"
  mkdir -p "$(dirname "$MODEL")"
  python3 "$GOLDEN/tools/make_sd1_random.py" --seed 1001 "$MODEL"
fi
# sd.cpp 97d29908, quiet machine (golden sd1/README.md): s/step, VAE decode s, text s, peak RSS MiB
declare -A PEER_STEP=([256]=8.3 [512]=45.2) PEER_VAE=([256]=18.3 [512]=76.6) PEER_RSS=([256]=2377 [512]=3692)
printf '%-8s %8s %9s %9s %9s %10s %9s %9s\n' size text_s s/step vae_s peak_MiB step_vs_sd vae_vs_sd rss_vs_sd
for S in 256 512; do
  log=$(mktemp)
  "$BUILD/sdc" -m "$MODEL" --clip-tokenizer "$GOLDEN/sd1/tokenizer/vocab.json" -p "a lovely cat" -W $S -H $S \
    --steps 2 --cfg-scale 7 -s 42 --sampling-method euler --rng cpu -t "$THREADS" -v -o /tmp/sdc-bench-sd1-$S.png \
    >"$log" 2>&1 || { cat "$log"; exit 1; }
  te=$(sed -n 's/.*text encoded in \([0-9.]*\)s.*/\1/p' "$log" | tail -1)
  step=$(sed -n 's/.*(\([0-9.]*\)s\/step).*/\1/p' "$log" | tail -1)
  vae=$(sed -n 's/.*decoded in \([0-9.]*\)s.*/\1/p' "$log" | tail -1)
  rss=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' "$log" | tail -1)
  ps=${PEER_STEP[$S]} pv=${PEER_VAE[$S]} pr=${PEER_RSS[$S]}
  if [ -n "${SDCPP:-}" ]; then
    plog=$(mktemp)
    /usr/bin/time -v "$SDCPP" -m "$MODEL" -p "a lovely cat" -W $S -H $S --steps 2 --cfg-scale 7 -s 42 \
      --sampling-method euler --rng cpu -t "$THREADS" -v -o /tmp/sdcpp-bench-sd1-$S.png >"$plog" 2>&1
    ps=$(grep -o 'step [0-9]*/[0-9]* .* \([0-9.]*\)s' "$plog" | tail -1 | grep -o '[0-9.]*s$' | tr -d s || echo $ps)
    pr=$(awk '/Maximum resident/ {printf "%d", $NF/1024}' "$plog")
    rm -f "$plog"
  fi
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "") print "-"; else printf "%.2fx", a/b }'; }
  printf '%-8s %8s %9s %9s %9s %10s %9s %9s\n' ${S}x$S "$te" "$step" "$vae" "$rss" "$(ratio "$step" $ps)" \
    "$(ratio "$vae" $pv)" "$(ratio "$rss" $pr)"
  rm -f "$log"
done
echo "sd.cpp (quiet, golden README): 512x512 45.2 s/step, VAE decode 76.6 s, peak RSS 3.61 GiB; 256x256 7.8-8.8 s/step, decode 17.8-18.8 s"
echo "one UNet forward at 512x512 ~0.89 TFLOP (2 per CFG step), the VAE decoder ~2.5 TFLOP"
