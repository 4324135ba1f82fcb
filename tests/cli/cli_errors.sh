#!/usr/bin/env bash
# The sdc program's error handling: bad flags, values and files must exit with status 1
# and print exactly one line "sdc: error: ..." on stderr (nothing on stdout);
# --help and --version exit 0. Usage: cli_errors.sh BUILD_DIR GOLDEN_DIR
set -u
BUILD=${1:?build dir}
GOLDEN=${2:?golden dir}
SDC="$BUILD/sdc"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
DIT="$GOLDEN/minit2i/minit2i_a_dit_f32.safetensors"
T5="$GOLDEN/minit2i/minit2i_a_t5_f32.safetensors"
pass=0
fail=0

# expect_error "description" "needle in the message" args...
expect_error() {
    local what=$1 needle=$2
    shift 2
    if [[ -z $needle ]]; then # an empty needle would accept any message
        fail=$((fail + 1))
        echo "FAIL $what: test has no expected message"
        return
    fi
    "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$? lines msg
    lines=$(wc -l <"$TMP/err")
    msg=$(head -n 1 "$TMP/err")
    if [[ $rc -eq 1 && $lines -eq 1 && $msg == "sdc: error: "* && $msg == *"$needle"* && ! -s $TMP/out ]]; then
        pass=$((pass + 1))
        printf 'ok   %-34s %s\n' "$what" "$msg"
    else
        fail=$((fail + 1))
        printf 'FAIL %-34s rc=%d, %d stderr lines, expected "%s"\n' "$what" "$rc" "$lines" "$needle"
        sed 's/^/     stderr: /' "$TMP/err"
        sed 's/^/     stdout: /' "$TMP/out"
    fi
}

# expect_ok "description" "needle in stdout" args...
expect_ok() {
    local what=$1 needle=$2
    shift 2
    "$SDC" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    local rc=$?
    if [[ $rc -eq 0 ]] && grep -q -- "$needle" "$TMP/out" && [[ ! -s $TMP/err ]]; then
        pass=$((pass + 1))
        printf 'ok   %-34s exit 0\n' "$what"
    else
        fail=$((fail + 1))
        printf 'FAIL %-34s rc=%d, expected exit 0 and "%s" on stdout\n' "$what" "$rc" "$needle"
        sed 's/^/     stderr: /' "$TMP/err"
    fi
}

if [[ ! -x $SDC ]]; then
    echo "FAIL: $SDC not built"
    exit 1
fi

expect_ok "--help" "Usage:" --help
expect_ok "-h after other flags" "--diffusion-model" -p cat -h
expect_ok "--version" "^sdc [0-9][0-9.]*" --version

expect_error "no arguments" "no model"
expect_error "unknown flag" "unknown option '--frobnicate'" --frobnicate
expect_error "unknown short flag" "unknown option '-q'" -m "$DIT" -q
expect_error "stray argument" "unexpected argument" -m "$DIT" cat
expect_error "missing value" "needs a value" -m "$DIT" --steps
expect_error "steps not a number" "'ten' is not an integer" -m "$DIT" --steps ten
expect_error "steps zero" "--steps must be at least 1" -m "$DIT" --steps 0
expect_error "width not multiple of 8" "--width must be a positive multiple of 8" -m "$DIT" -W 100
expect_error "height negative" "--height must be" -m "$DIT" -H -64
expect_error "batch zero" "--batch-count must be at least 1" -m "$DIT" -b 0
expect_error "cfg not a number" "is not a number" -m "$DIT" --cfg-scale high
expect_error "seed too large" "out of range" -m "$DIT" -s 123456789012345678901234
expect_error "unknown rng" "unknown RNG 'mt'" -m "$DIT" --rng mt
expect_error "unknown weight type" "unknown weight type 'q7_0'" -m "$DIT" --type q7_0
expect_error "unknown sampler" "unknown sampling method" -m "$DIT" --sampling-method foo
expect_error "unknown scheduler" "unknown scheduler" -m "$DIT" --scheduler foo
expect_error "unknown mode" "unknown mode" -M paint -m "$DIT"
expect_error "jpeg output" "only PNG output" -m "$DIT" -o out.jpg
expect_error "missing model file" "cannot open '$TMP/nope.safetensors'" -m "$TMP/nope.safetensors"
expect_error "missing diffusion model" "--diffusion-model: cannot open" --diffusion-model "$TMP/nope" --t5xxl "$T5"
expect_error "missing t5" "--t5xxl: cannot open" --diffusion-model "$DIT" --t5xxl "$TMP/nope"
expect_error "missing tokenizer" "--t5-tokenizer: cannot open" --diffusion-model "$DIT" --t5-tokenizer "$TMP/nope"
expect_error "model is a directory" "is a directory" -m "$TMP"
touch "$TMP/plainfile"
expect_error "output under a file" "is not a folder" --diffusion-model "$DIT" --t5xxl "$T5" -o "$TMP/plainfile/x.png"
echo "not a model" >"$TMP/bad.safetensors"
expect_error "model file not a model" "$TMP/bad.safetensors: not a safetensors or GGUF file" -m "$TMP/bad.safetensors" -o "$TMP/x.png"

echo "$pass passed, $fail failed"
[[ $fail -eq 0 ]]
