#!/usr/bin/env bash
# End to end: sdc-genmodel writes a tiny random MiniT2I + T5 + tokenizer.json, sdc finds the
# tokenizer next to the T5 weights and generates square, non-square (sd.cpp aborts on those)
# and batched images. Checks exit codes, PNG sizes, file names and the parameters text.
# Usage: cli_generate.sh BUILD_DIR GOLDEN_DIR
set -u
BUILD=${1:?build dir}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$(dirname "$0")/check.bash"
png_size() { # prints WxH of a PNG from its IHDR
    od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'
}

"$BUILD/sdc-genmodel" --preset tiny -o "$TMP/m" >/dev/null
check "genmodel wrote the tiny model" test -s "$TMP/m/minit2i.safetensors" -a -s "$TMP/m/t5/model.safetensors" -a -s "$TMP/m/t5/tokenizer.json"
run() { "$BUILD/sdc" --diffusion-model "$TMP/m/minit2i.safetensors" --t5xxl "$TMP/m/t5/model.safetensors" -t 2 "$@" >"$TMP/log" 2>&1; }

check "64x64 euler cfg 6" run -p "a cat" -W 64 -H 64 --steps 3 --cfg-scale 6 -s 7 -o "$TMP/a.png"
check "64x64 size" test "$(png_size "$TMP/a.png")" = 64x64
check "summary line" grep -q "generated 1 image(s) in .*s/step), peak memory" "$TMP/log"
check "parameters text" grep -aq "Steps: 3" "$TMP/a.png"
check "128x96 non-square" run -p "a red car" -W 128 -H 96 --steps 2 --cfg-scale 6 -o "$TMP/b.png"
check "128x96 size" test "$(png_size "$TMP/b.png")" = 128x96
check "96x160 non-square, euler_a, cuda rng" run -p "a dog" -W 96 -H 160 --steps 2 --sampling-method euler_a --rng cuda -o "$TMP/c.png"
check "96x160 size" test "$(png_size "$TMP/c.png")" = 96x160
check "batch of 3" run -p "a cat" -W 32 -H 32 --steps 1 --cfg-scale 1 -b 3 -o "$TMP/d.png"
n=$(ls "$TMP"/d*.png 2>/dev/null | wc -l)
check "batch wrote 3 files ($n)" test "$n" -eq 3
check "seed 5" run -p "a cat" -W 64 -H 64 --steps 1 -s 5 -o "$TMP/e1.png"
check "seed 5 again" run -p "a cat" -W 64 -H 64 --steps 1 -s 5 -o "$TMP/e2.png"
check "same seed, same image" cmp -s "$TMP/e1.png" "$TMP/e2.png"
check "seed 6" run -p "a cat" -W 64 -H 64 --steps 1 -s 6 -o "$TMP/e3.png"
# both files must exist and be 64x64 PNGs: `! cmp` alone is also true when one is missing
check "seed 6 wrote a 64x64 PNG" test "$(png_size "$TMP/e3.png")" = 64x64
check "other seed, other image" bash -c "cmp -s '$TMP/e1.png' '$TMP/e3.png'; test \$? -eq 1"
run -p "a cat" -W 72 -H 64 --steps 1 -o "$TMP/f.png"
check "size not a multiple of the patch: exit 1" test $? -eq 1
check "... with a clear message" grep -q "multiples of 16" "$TMP/log"
# SDC_PROFILE=2: the per-kind table, then rows per op and operand shapes; the matmul rows
# name the weight and activation types and extents (tiny preset: hidden 64)
check "SDC_PROFILE=2" env SDC_PROFILE=2 "$BUILD/sdc" --diffusion-model "$TMP/m/minit2i.safetensors" \
    --t5xxl "$TMP/m/t5/model.safetensors" -t 2 -p "a cat" -W 32 -H 32 --steps 1 -o "$TMP/p.png" 2>"$TMP/prof"
check "... per-kind table" grep -qE '^matmul +[0-9]+ +[0-9.]+ +[0-9.]+% +[0-9.]+$' "$TMP/prof"
check "... per-shape rows" grep -qE '^ +[0-9]+ +[0-9.]+ +[0-9.]+% +[0-9.]+  matmul [a-z0-9_]+\[[0-9,]+\] f32\[[0-9,]+\]' "$TMP/prof"
"$BUILD/sdc" --list-devices >"$TMP/dev" 2>&1
check "--list-devices prints name<TAB>description" grep -qP '^cpu\t.+' "$TMP/dev"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
