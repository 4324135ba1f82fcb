#!/usr/bin/env bash
# Runs the aarch64 build (tests/cross/build.sh) under qemu-aarch64: the CPU kernel tests
# (NEON level vs scalar and double references), then the tiny MiniT2I golden model
# through sdc, compared with sd.cpp's PNG and, when given, the x86 sdc's image.
# qemu timings are functional only (emulation speed says nothing about ARM speed).
# usage: tests/cross/run.sh [AARCH64_BUILD_DIR] [X86_BUILD_DIR] [GOLDEN_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
arm=${1:-build-aarch64}
x86=${2:-build}
golden=${3:-../shared/golden}
# One glibc for the whole process: with the multiarch libc6:arm64 installed (the -dev:arm64
# packages pull it in), its loader in /lib must load everything; `-L /usr/aarch64-linux-gnu`
# would mix the cross libc with multiarch libraries, which hangs in pthread_create.
if [ -e /lib/ld-linux-aarch64.so.1 ]; then qemu="qemu-aarch64"; else qemu="qemu-aarch64 -L /usr/aarch64-linux-gnu"; fi
for t in test_gemm_kernels test_matmul test_quant test_quant_dispatch test_ops_elementwise test_ops_norm test_ops_attention; do
  echo "-- $t (qemu-aarch64)"
  start=$(date +%s.%N)
  $qemu "$arm/$t" | grep -E "neon|passed|FAIL" | tail -n 8
  echo "   $(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || echo '?') s under qemu"
done

g=$golden/minit2i
if [ ! -f "$g/minit2i_a_dit_f32.safetensors" ]; then
  echo "golden MiniT2I models missing ($g): model run skipped"
  exit 0
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# run a01 of golden/minit2i/runs.json (4 euler steps, CFG 6); NEON with 2 threads (the pool), scalar with 1
args=(--diffusion-model "$g/minit2i_a_dit_f32.safetensors" --t5xxl "$g/minit2i_a_t5_f32.safetensors"
  --t5-tokenizer "$g/tokenizer_sdcpp_compat.json" -p 'a cat' -W 64 -H 64 --steps 4 --cfg-scale 6
  --sampling-method euler -s 42 --rng cpu)
SDC_CPU_ISA=neon $qemu "$arm/sdc" "${args[@]}" -t 2 -o "$out/arm_neon.png" 2>&1 | tail -n 1
SDC_CPU_ISA=scalar $qemu "$arm/sdc" "${args[@]}" -t 1 -o "$out/arm_scalar.png" 2>&1 | tail -n 1
# tolerances as test_minit2i_sdcpp_png (F32 weights): max 1/255, mean 0.05
python3 tests/cross/pngdiff.py "$out/arm_neon.png" "$g/png/a01.png" --max 1 --mean 0.05
python3 tests/cross/pngdiff.py "$out/arm_scalar.png" "$g/png/a01.png" --max 1 --mean 0.05
python3 tests/cross/pngdiff.py "$out/arm_neon.png" "$out/arm_scalar.png" --max 1 --mean 0.05
if [ -x "$x86/sdc" ]; then
  "$x86/sdc" "${args[@]}" -t 1 -o "$out/x86.png" >/dev/null 2>&1
  python3 tests/cross/pngdiff.py "$out/arm_neon.png" "$out/x86.png" --max 1 --mean 0.05
fi
echo "aarch64 cross checks passed"
