#!/usr/bin/env bash
# Full-size MiniT2I-B/16 + flan-t5-large timing on random weights (sdc-genmodel --preset b16,
# F16 storage, as the peer figures in ../shared/golden/README.md): text encode time, seconds per
# sampling step with CFG, peak RSS, the FLOPs one step computes and the GFLOP/s achieved, beside
# sd.cpp's figures for the same shapes. Usage: tools/bench_minit2i.sh [BUILD_DIR] [MODEL_DIR]
# With SDCPP=/path/to/sd-cli, sd.cpp runs the same files and flags right after sdc at each size
# and its measured row is printed beside sdc's (the ratios then compare the two runs); without
# it the ratios use the stored figures below, measured on an AVX2-only machine.
set -eu
BUILD=${1:-build}
MODELS=${2:-/tmp/sdc-b16}
STEPS=${STEPS:-4}
THREADS=${THREADS:-2}
if [ ! -s "$MODELS/minit2i.safetensors" ]; then
  "$BUILD/sdc-genmodel" --preset b16 --dtype f16 -o "$MODELS" >/dev/null
fi
# sd.cpp 97d29908 on this machine kind (golden README): s/step with CFG 6, text encode, peak RSS MB
declare -A PEER_STEP=([256]=7.8 [512]=22.75) PEER_TE=([256]=3.55 [512]=3.55) PEER_RSS=([256]=1220 [512]=1350)
SDCPP=${SDCPP:-}
printf '%-8s %-6s %9s %9s %10s %9s %9s %10s %9s\n' size engine text_s s/step GFLOP/step GFLOP/s peak_MiB step_vs_sd rss_vs_sd
for S in 256 512; do
  log=$(mktemp)
  args=(--diffusion-model "$MODELS/minit2i.safetensors" --t5xxl "$MODELS/t5/model.safetensors"
    -p "a cat" -W $S -H $S --steps "$STEPS" --cfg-scale 6 -s 42 --sampling-method euler --rng cpu
    -t "$THREADS")
  "$BUILD/sdc" "${args[@]}" -v -o /tmp/sdc-bench-$S.png >"$log" 2>&1
  te=$(sed -n 's/.*text encoded in \([0-9.]*\)s.*/\1/p' "$log" | tail -1)
  step=$(sed -n 's/.*(\([0-9.]*\)s\/step).*/\1/p' "$log" | tail -1)
  rss=$(sed -n 's/.*peak memory \([0-9]*\) MiB.*/\1/p' "$log" | tail -1)
  # FLOPs of one CFG step as sdc computes it (two DiT passes; preamble once per prompt):
  # per double block and token 2*768*(2304+768+3*2048); the last block's text stream only
  # needs its qkv; attention 2*L^2*(64+64)*12 per block; final layer on image tokens.
  gflop=$(awk -v s=$S 'BEGIN { ni=(s/16)^2; lt=256; l=lt+ni; tok=2*768*(2304+768+3*2048);
    f=16*l*tok + ni*tok + lt*2*768*2304 + 17*2*l*l*128*12 + ni*2*768*768 + ni*4*768*128;
    printf "%.1f", 2*f/1e9 }')
  gfs=$(awk -v g=$gflop -v t=$step 'BEGIN { printf "%.1f", g/t }')
  peer_step=${PEER_STEP[$S]} peer_rss=${PEER_RSS[$S]}
  if [ -n "$SDCPP" ]; then
    # sd.cpp's time per step: its sampling time over the steps (as sdc's figure); peak RSS from
    # GNU time when installed
    plog=$(mktemp)
    timer=()
    [ -x /usr/bin/time ] && timer=(/usr/bin/time -f "peak_kb %M")
    "${timer[@]}" "$SDCPP" "${args[@]}" -o /tmp/sdcpp-bench-$S.png >"$plog" 2>&1 || {
      echo "sd.cpp failed at ${S}x$S:"; tail -5 "$plog"; }
    pte=$(sed -n 's/.*get_learned_condition completed, taking \([0-9.]*\)s.*/\1/p' "$plog" | tail -1)
    psamp=$(sed -n 's/.*sampling completed, taking \([0-9.]*\)s.*/\1/p' "$plog" | tail -1)
    pkb=$(sed -n 's/^peak_kb \([0-9]*\).*/\1/p' "$plog" | tail -1)
    rm -f "$plog"
    if [ -n "$psamp" ]; then
      peer_step=$(awk -v t=$psamp -v n=$STEPS 'BEGIN { printf "%.2f", t/n }')
      prss=n/a
      [ -n "$pkb" ] && prss=$((pkb / 1024)) && peer_rss=$(awk -v k=$pkb 'BEGIN { printf "%.0f", k*1.024/1000 }')
      pgfs=$(awk -v g=$gflop -v t=$peer_step 'BEGIN { printf "%.1f", g/t }')
      printf '%-8s %-6s %9s %9s %10s %9s %9s %10s %9s\n' ${S}x$S sd.cpp "${pte:-n/a}" "$peer_step" \
        "$gflop" "$pgfs" "$prss" 1.00x 1.00x
    fi
  fi
  rs=$(awk -v a=$step -v b=$peer_step 'BEGIN { printf "%.2fx", a/b }')
  rr=$(awk -v a=$rss -v b=$peer_rss 'BEGIN { printf "%.2fx", a*1.048576/b }')
  printf '%-8s %-6s %9s %9s %10s %9s %9s %10s %9s\n' ${S}x$S sdc "$te" "$step" "$gflop" "$gfs" "$rss" "$rs" "$rr"
  rm -f "$log"
done
[ -n "$SDCPP" ] || echo "stored sd.cpp figures (AVX2-only machine): 256x256 7.1-8.5 s/step, 512x512 22.5-23.0 s/step, text encode 3.4-3.7 s, RSS 1.22/1.35 GB"
