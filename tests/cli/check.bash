# Sourced by the shell tests: check "what" command... runs the command, counts it as
# passed or failed and prints one line; the test ends with check_summary.
pass=0
fail=0
check() {
    local what=$1
    shift
    if "$@"; then
        pass=$((pass + 1))
        echo "ok   $what"
    else
        fail=$((fail + 1))
        echo "FAIL $what"
    fi
}
