#!/usr/bin/env bash
# Throughput and latency of sdc-server on a shared Redis queue, for 1, 2 and 3 nodes (and
# one in-memory node as the baseline), on the tiny random model (sdc-genmodel --preset tiny).
# Starts its own redis-server on a free loopback port; clients send synchronous A1111
# txt2img requests round-robin to the nodes, CONC at a time. Prints jobs/s and p50/p99 of
# the request latency. A benchmark, not a test: numbers depend on the machine.
# Usage: tools/bench_server_redis.sh BUILD_DIR   (env: JOBS=120 CONC=6 SIZE=64 STEPS=4 THREADS=1)
set -u
BUILD=${1:?build dir}
JOBS=${JOBS:-120}
CONC=${CONC:-6}
SIZE=${SIZE:-64}
STEPS=${STEPS:-4}
THREADS=${THREADS:-1}
for t in redis-server redis-cli curl; do
    command -v "$t" >/dev/null || { echo "$t is not installed"; exit 1; }
done
TMP=$(mktemp -d)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT
"$BUILD/sdc-genmodel" --preset tiny -o "$TMP/m" >/dev/null || exit 1
RPORT=
for _ in $(seq 1 50); do
    p=$((20000 + RANDOM % 20000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { RPORT=$p; break; }
done
[ -n "$RPORT" ] || { echo "no free port"; exit 1; }
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do [ "$(redis-cli -p "$RPORT" ping 2>/dev/null)" = PONG ] && break; sleep 0.1; done

start_node() { # start_node NAME [server flags...]: sets NODE_PORT, NODE_PID
    local name=$1
    shift
    "$BUILD/sdc-server" --diffusion-model "$TMP/m/minit2i.safetensors" --t5xxl "$TMP/m/t5/model.safetensors" \
        -t "$THREADS" --listen-ip 127.0.0.1 --listen-port 0 --max-queue 256 "$@" \
        >"$TMP/$name.out" 2>"$TMP/$name.err" &
    NODE_PID=$!
    PIDS+=("$NODE_PID")
    for _ in $(seq 1 300); do
        grep -q "listening on" "$TMP/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    NODE_PORT=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$TMP/$name.out")
}
one() { # one I PORTS...: latency of job I in seconds (or "err")
    local i=$1
    shift
    local ports=("$@")
    local port=${ports[$((i % ${#ports[@]}))]}
    local body='{"prompt":"bench '"$i"'","width":'"$SIZE"',"height":'"$SIZE"',"steps":'"$STEPS"',"seed":'"$i"'}'
    local r
    r=$(curl -s -m 120 -o /dev/null -w '%{http_code} %{time_total}' -d "$body" "http://127.0.0.1:$port/sdapi/v1/txt2img")
    case $r in 200\ *) echo "${r#* }" ;; *) echo err ;; esac
}
export -f one
export SIZE STEPS
run() { # run LABEL PORTS...
    local label=$1
    shift
    local t0 t1
    t0=$(date +%s.%N)
    seq 0 $((JOBS - 1)) | xargs -P "$CONC" -I{} bash -c 'one {} "$@"' _ "$@" >"$TMP/lat"
    t1=$(date +%s.%N)
    local errs
    errs=$(grep -c err "$TMP/lat")
    grep -v err "$TMP/lat" | sort -g >"$TMP/lat.sorted"
    local n
    n=$(wc -l <"$TMP/lat.sorted")
    awk -v n="$n" -v t0="$t0" -v t1="$t1" -v label="$label" -v errs="$errs" '
        { a[NR] = $1 }
        END {
            p50 = a[int((n - 1) * 0.50) + 1]; p99 = a[int((n - 1) * 0.99) + 1]
            printf "%-22s jobs %4d  errors %d  %7.2f jobs/s  p50 %7.1f ms  p99 %7.1f ms\n",
                label, n, errs, n / (t1 - t0), p50 * 1000, p99 * 1000
        }' "$TMP/lat.sorted"
}
echo "tiny model, ${SIZE}x${SIZE}, $STEPS steps, $JOBS jobs, $CONC concurrent clients, -t $THREADS, $(nproc) cores"
start_node mem
run "1 node, in memory" "$NODE_PORT"
kill "$NODE_PID"
wait "$NODE_PID" 2>/dev/null
PORTS=()
for n in 1 2 3; do
    start_node "r$n" --queue "redis://127.0.0.1:$RPORT/bench"
    PORTS+=("$NODE_PORT")
    sleep 0.5
    run "$n node(s), Redis" "${PORTS[@]}"
done
# the baseline once more, after the others: the first run also pays for a cold machine
kill "${PIDS[@]:1}" 2>/dev/null
start_node mem2
run "1 node, in memory" "$NODE_PORT"
