#!/usr/bin/env bash
# Cross-compiles the library, sdc and the CPU kernel tests for aarch64 (Debian 12:
# gcc-aarch64-linux-gnu + multiarch arm64 -dev packages; installs them when run as root).
# usage: tests/cross/build.sh [BUILD_DIR]   (default build-aarch64)
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-build-aarch64}
# the CPU kernels' tests (each compares every ISA level with the scalar one) and sdc
targets="sdc test_gemm_kernels test_matmul test_quant test_quant_dispatch test_ops_elementwise test_ops_norm test_ops_attention"
need=""
for p in gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user libpng-dev:arm64 libjpeg-dev:arm64 \
  libcjson-dev:arm64 zlib1g-dev:arm64 libmicrohttpd-dev:arm64; do
  dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
  [ "$(id -u)" = 0 ] || { echo "missing:$need (run as root to install)"; exit 1; }
  dpkg --add-architecture arm64
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need >/dev/null
fi
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-toolchain.cmake >/dev/null
cmake --build "$dir" -j"$(nproc)" --target $targets
