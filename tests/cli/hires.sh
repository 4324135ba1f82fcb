#!/usr/bin/env bash
# Hires fix (--hires*) end to end on the sdc binary with the golden MiniT2I: output sizes
# for --hires-scale / --hires-width / --hires-height (aligned up to the patch size), every
# upscaler name, an ESRGAN model from --hires-upscalers-dir, --hires-sigmas, determinism,
# flags without --hires ignored, "None" = off, the PNG's parameters (sd-cli's: the base
# size), and one-line errors for bad values. The numbers are checked in test_hires.c.
# Usage: hires.sh BUILD_DIR GOLDEN_DIR
set -u
BUILD=${1:?build dir}
GOLDEN=${2:?golden dir}
SDC="$BUILD/sdc"
HERE=$(cd "$(dirname "$0")" && pwd)
DATA="$HERE/../data"
DIT="$GOLDEN/minit2i/minit2i_a_dit_f32.safetensors"
T5="$GOLDEN/minit2i/minit2i_a_t5_f32.safetensors"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
source "$HERE/check.bash"
if [[ ! -x $SDC || ! -s $DIT ]]; then
    echo "FAIL: $SDC or $DIT missing"
    exit 1
fi

size_of() { # WxH of a PNG from its IHDR
    od -An -tu1 -j16 -N8 "$1" | awk '{printf "%dx%d\n", $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}'
}
is_size() {
    [[ -s $1 && $(size_of "$1") == "$2" ]] || {
        echo "     $1: $(size_of "$1" 2>/dev/null), expected $2"
        return 1
    }
}
# NEEDLE args...: exit 1 and one error line "sdc: error: ...NEEDLE...", the last one (the
# library checks the hires values once the model is loaded, after its "loaded" line)
one_error() {
    local needle=$1
    shift
    "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$?
    local last
    last=$(tail -n 1 "$TMP/err")
    if [[ $rc -eq 1 && $(grep -c "error" "$TMP/err") -eq 1 && $last == "sdc: error: "*"$needle"* ]]; then
        echo "     $last"
        return 0
    fi
    echo "     rc=$rc stderr: $(cat "$TMP/err")"
    return 1
}
run() { "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null; }

GEN=(--diffusion-model "$DIT" --t5xxl "$T5" -p "a cat" -W 64 -H 64 --steps 2 -t 2 -s 7)
run "${GEN[@]}" -o "$TMP/plain.png"
check "no hires: 64x64" is_size "$TMP/plain.png" 64x64
run "${GEN[@]}" --hires -o "$TMP/h.png"
check "--hires (scale 2, Latent): 128x128" is_size "$TMP/h.png" 128x128
check "its parameters say the base size, as sd-cli's do" grep -aq "Size: 64x64" "$TMP/h.png"
run "${GEN[@]}" --hires -o "$TMP/h2.png"
check "same seed, same file" cmp -s "$TMP/h.png" "$TMP/h2.png"
run "${GEN[@]}" --hires-width 128 --hires-steps 3 --hires-upscaler Lanczos -o "$TMP/noh.png"
check "--hires-* without --hires: ignored (same file as no hires)" cmp -s "$TMP/plain.png" "$TMP/noh.png"
run "${GEN[@]}" --hires --hires-upscaler None -o "$TMP/none.png"
check "--hires-upscaler None: hires off" cmp -s "$TMP/plain.png" "$TMP/none.png"
run "${GEN[@]}" --hires --hires-scale 1.5 -o "$TMP/s15.png"
check "--hires-scale 1.5: 96x96" is_size "$TMP/s15.png" 96x96
run "${GEN[@]}" --hires --hires-width 80 -o "$TMP/w80.png"
check "--hires-width 80 alone: 80x80" is_size "$TMP/w80.png" 80x80
run "${GEN[@]}" --hires --hires-width 96 --hires-height 70 -o "$TMP/wh.png"
check "--hires-width 96 --hires-height 70: aligned up to 96x80" is_size "$TMP/wh.png" 96x80
check "... with a warning about the alignment" grep -q "align hires target up 96x70 to 96x80" "$TMP/err"
for up in "Latent" "Latent (nearest)" "Latent (nearest-exact)" "Latent (antialiased)" \
    "Latent (bicubic)" "Latent (bicubic antialiased)" "Lanczos" "Nearest"; do
    run "${GEN[@]}" --hires --hires-upscaler "$up" --hires-steps 1 -o "$TMP/up.png"
    check "--hires-upscaler '$up': 128x128" is_size "$TMP/up.png" 128x128
done
# (3 steps: 4 scheduled, the pass starts below sigma max, so the upscaled image matters)
run "${GEN[@]}" --hires --hires-upscaler "Latent (nearest)" --hires-steps 3 -o "$TMP/n1.png"
run "${GEN[@]}" --hires --hires-upscaler "Latent (bicubic)" --hires-steps 3 -o "$TMP/b1.png"
check "different upscalers give different images" bash -c "! cmp -s '$TMP/n1.png' '$TMP/b1.png'"
run "${GEN[@]}" --hires --hires-upscalers-dir "$DATA/esrgan" --hires-upscaler x4 \
    --hires-upscale-tile-size 16 --hires-steps 1 -o "$TMP/x4.png"
check "ESRGAN x4 from --hires-upscalers-dir, resized to the target: 128x128" is_size "$TMP/x4.png" 128x128
run "${GEN[@]}" --hires --hires-sigmas 0.8,0.4,0 -o "$TMP/sg.png"
check "--hires-sigmas 0.8,0.4,0: 128x128" is_size "$TMP/sg.png" 128x128
check "... runs 2 second-pass steps" grep -q "2/2" "$TMP/err"

check "strength 0" one_error "hires denoising strength must be in (0, 1]" "${GEN[@]}" --hires --hires-denoising-strength 0 -o "$TMP/never.png"
check "strength 1.5" one_error "hires denoising strength must be in (0, 1]" "${GEN[@]}" --hires --hires-denoising-strength 1.5 -o "$TMP/never.png"
check "negative steps" one_error "hires steps must be >= 0" "${GEN[@]}" --hires --hires-steps -2 -o "$TMP/never.png"
check "scale 0 without a size" one_error "hires scale must be positive" "${GEN[@]}" --hires --hires-scale 0 -o "$TMP/never.png"
check "negative width" one_error "must be >= 0" "${GEN[@]}" --hires --hires-width -64 -o "$TMP/never.png"
check "tile size 0" one_error "hires upscale tile size must be positive" "${GEN[@]}" --hires --hires-upscale-tile-size 0 -o "$TMP/never.png"
check "one hires sigma" one_error "hires sigmas need at least 2 values" "${GEN[@]}" --hires --hires-sigmas 0.5 -o "$TMP/never.png"
check "a non-number hires sigma" one_error "--hires-sigmas" "${GEN[@]}" --hires --hires-sigmas 1,x,0 -o "$TMP/never.png"
check "unknown upscaler, no folder" one_error "no --hires-upscalers-dir" "${GEN[@]}" --hires --hires-upscaler Bogus -o "$TMP/never.png"
check "a model that is not there" one_error "cannot find hires upscaler 'nope'" "${GEN[@]}" --hires --hires-upscalers-dir "$DATA/esrgan" --hires-upscaler nope -o "$TMP/never.png"
check "a model name with its extension" one_error "without path or extension" "${GEN[@]}" --hires --hires-upscalers-dir "$DATA/esrgan" --hires-upscaler x4.safetensors -o "$TMP/never.png"
check "a file in the folder that is not ESRGAN" one_error "not an ESRGAN model" "${GEN[@]}" --hires --hires-upscalers-dir "$DATA/esrgan" --hires-upscaler ref -o "$TMP/never.png"
check "... and nothing was written" test ! -e "$TMP/never.png"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
