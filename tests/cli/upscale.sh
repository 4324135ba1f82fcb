#!/usr/bin/env bash
# ESRGAN upscaling end to end on the sdc binary with the tiny test models
# (tests/data/esrgan, see tests/golden/gen_esrgan_ref.py): -M upscale sizes, repeats,
# tiling and -W/-H resizing, --upscale-model after img_gen (golden MiniT2I), and clear
# one-line errors for a missing -i, model or file. The pixels themselves are checked
# against spandrel in tests/unit/test_esrgan.c.
# Usage: upscale.sh BUILD_DIR GOLDEN_DIR
set -u
BUILD=${1:?build dir}
GOLDEN=${2:?golden dir}
SDC="$BUILD/sdc"
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="$HERE/../data"
X4="$DATA/esrgan/x4.safetensors"
X2="$DATA/esrgan/x2_old.safetensors"
SRC="$DATA/images/src.png" # 48x40
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
source "$HERE/check.bash"

size_of() { # WxH of a PNG from its IHDR
    od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'
}
# is_size FILE WxH: the file is a PNG of that size
is_size() {
    [[ -s $1 && $(size_of "$1") == "$2" ]] || {
        echo "     $1: $(size_of "$1" 2>/dev/null), expected $2"
        return 1
    }
}
# one_error NEEDLE args...: exit 1 and exactly one line "sdc: error: ...NEEDLE..."
one_error() {
    local needle=$1
    shift
    "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$?
    if [[ $rc -eq 1 && $(wc -l <"$TMP/err") -eq 1 && $(cat "$TMP/err") == "sdc: error: "*"$needle"* ]]; then
        echo "     $(cat "$TMP/err")"
        return 0
    fi
    echo "     rc=$rc stderr: $(cat "$TMP/err")"
    return 1
}

run() { "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null; }

run -M upscale --upscale-model "$X4" -i "$SRC" -t 2 -o "$TMP/o/x4.png"
check "-M upscale x4: 48x40 -> 192x160 (output folder made)" is_size "$TMP/o/x4.png" 192x160
run -M upscale --upscale-model "$X4" -i "$SRC" -t 2 --upscale-tile-size 16 -o "$TMP/x4_t16.png"
check "--upscale-tile-size 16: same size" is_size "$TMP/x4_t16.png" 192x160
check "tiles of 16 give another image than one 48x40 pass" bash -c "! cmp -s '$TMP/o/x4.png' '$TMP/x4_t16.png'"
run -M upscale --upscale-model "$X4" -i "$SRC" -t 1 --upscale-tile-size 0 -o "$TMP/x4_t0.png"
check "--upscale-tile-size 0 (no tiling) = default tile 128 on a 48x40 image" cmp -s "$TMP/o/x4.png" "$TMP/x4_t0.png"
"$SDC" -M convert -m "$X4" -o "$TMP/x4.gguf" >/dev/null 2>&1
run -M upscale --upscale-model "$TMP/x4.gguf" -i "$SRC" -t 2 -o "$TMP/x4_gguf.png"
check "the x4 model converted to GGUF (-M convert) gives the same file" cmp -s "$TMP/o/x4.png" "$TMP/x4_gguf.png"
run -M upscale --upscale-model "$X2" -i "$SRC" -t 2 --upscale-repeats 2 -o "$TMP/x2r2.png"
check "old-layout x2 model, --upscale-repeats 2: 192x160" is_size "$TMP/x2r2.png" 192x160
run -M upscale --upscale-model "$X2" -i "$SRC" --upscale-repeats 0 -o "$TMP/x2r0.png"
check "--upscale-repeats 0: the input as it is (48x40)" is_size "$TMP/x2r0.png" 48x40
run -M upscale --upscale-model "$X2" -i "$SRC" -W 32 -H 24 -o "$TMP/x2wh.png"
check "-W 32 -H 24 resizes -i first: 64x48" is_size "$TMP/x2wh.png" 64x48
run -M upscale --upscale-model "$X2" -i "$SRC" -o "$TMP/x2.jpg"
check "JPEG output by extension" bash -c "[[ \$(od -An -tx1 -N2 '$TMP/x2.jpg' | tr -d ' ') == ffd8 ]]"

DIT="$GOLDEN/minit2i/minit2i_a_dit_f32.safetensors"
T5="$GOLDEN/minit2i/minit2i_a_t5_f32.safetensors"
if [[ -s $DIT && -s $T5 ]]; then
    GEN=(--diffusion-model "$DIT" --t5xxl "$T5" -p "a cat" -W 64 -H 64 --steps 1 -t 2 -s 3)
    run "${GEN[@]}" --upscale-model "$X4" -o "$TMP/gen_x4.png"
    check "img_gen with --upscale-model: 64x64 generated, saved 256x256" is_size "$TMP/gen_x4.png" 256x256
    check "the upscaled image keeps its generation parameters" grep -aq "Seed: 3" "$TMP/gen_x4.png"
    run "${GEN[@]}" --disable-image-metadata --upscale-model "$X4" -o "$TMP/gen_x4_plain.png"
    run "${GEN[@]}" --disable-image-metadata -o "$TMP/gen.png"
    run -M upscale --upscale-model "$X4" -i "$TMP/gen.png" -t 2 -o "$TMP/gen_then_x4.png"
    check "generate then -M upscale = generate with --upscale-model (same file)" \
        cmp -s "$TMP/gen_x4_plain.png" "$TMP/gen_then_x4.png"
    check "a non-ESRGAN --upscale-model fails before generating" one_error "not an ESRGAN model" "${GEN[@]}" --upscale-model "$T5" -o "$TMP/never.png"
    check "... and writes nothing" test ! -e "$TMP/never.png"
else
    echo "skip img_gen checks: no golden MiniT2I in $GOLDEN"
fi

check "-M upscale without -i" one_error "needs an input image (-i/--init-img)" -M upscale --upscale-model "$X4"
check "-M upscale without --upscale-model" one_error "needs an upscaler model (--upscale-model)" -M upscale -i "$SRC"
check "a missing model file" one_error "--upscale-model: cannot open '$TMP/none.pth'" -M upscale --upscale-model "$TMP/none.pth" -i "$SRC"
check "a missing input image" one_error "--init-img: cannot open" -M upscale --upscale-model "$X4" -i "$TMP/none.png"
check "a file that is not an ESRGAN model" one_error "not an ESRGAN model" -M upscale --upscale-model "$DATA/esrgan/ref.safetensors" -i "$SRC"
check "not a weight file at all" one_error "--upscale-model" -M upscale --upscale-model "$SRC" -i "$SRC"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
