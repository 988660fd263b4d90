#!/usr/bin/env bash
# bench/compare.sh — slotd against its peers, in one go on one machine, with the
# same connections and pipeline for every run:
#
#   1. the loopback ceiling: redis-benchmark PING against a redis-server;
#   2. slotd --durability sync       (slot-bench hot-release);
#   3. slotd --durability nosync     (slot-bench hot-release);
#   4. Redis + Lua, appendfsync always   (slot-bench hot-release --target redis://);
#   5. Redis + Lua, appendfsync everysec (the same).
#
# Each server is started here on a free loopback port with its data in a temporary
# folder, and stopped by its PID. The result is a markdown table (requests/s,
# holds/s, p50, p99, requests in flight, and each run's ratios to the PING
# ceiling: requests/s, holds/s and p99) on stdout, or in
# --out FILE. requests/s counts every answer, including slot-bench's tail of
# 10,000 sold_out answers after the sell-out; holds/s only the held ones. Missing
# Debian packages (redis-server redis-tools libhiredis-dev) are installed with
# apt-get (sudo when not root), and slot-bench is rebuilt with hiredis when it
# lacks the Redis target.
#
# usage: bench/compare.sh [--connections K] [--pipeline D] [--capacity N]
#                         [--ping-requests N] [--repeat R] [--out FILE] [--build DIR]
#   --connections K    connections of every run, 1..10000 (default 256)
#   --pipeline D       requests in flight per connection, 1..1024 (default 1)
#   --capacity N       units of each hot release, >= 1 (default 200000)
#   --ping-requests N  PINGs redis-benchmark sends (default 1000000; 4000000
#                      when D > 1)
#   --repeat R         run everything R times, 1..9 (default 1), in rounds (each
#                      round runs every row once, so drift hits all rows alike);
#                      each row shows its median run by throughput
#   --out FILE         write the table to FILE instead of stdout
#   --build DIR        the meson build folder with slotd and slot-bench (default
#                      build/ at the top, or $SLOT_BUILD); configured and built
#                      there when needed
# Exit status: 0 every run completed and verified; 1 a run failed (the table
# still says which); 64 usage error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${SLOT_BUILD:-$ROOT/build}
CONNS=256
PIPELINE=1
CAPACITY=200000
PING_N=""
REPEAT=1
OUT=""

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

usage_error() { echo "compare.sh: $* (see --help)" >&2; exit 64; }

while [ $# -gt 0 ]; do
    case "$1" in
    --connections | --pipeline | --capacity | --ping-requests | --repeat | --out | --build)
        [ $# -ge 2 ] || usage_error "$1 needs a value" ;;&
    --connections) CONNS=$2; shift 2 ;;
    --pipeline) PIPELINE=$2; shift 2 ;;
    --capacity) CAPACITY=$2; shift 2 ;;
    --ping-requests) PING_N=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
    esac
done
for v in "$CONNS" "$PIPELINE" "$CAPACITY" "$REPEAT" ${PING_N:+"$PING_N"}; do
    [[ $v =~ ^[0-9]+$ ]] || usage_error "not a number: '$v'"
done
# the bounds of slot-bench (--connections, --pipeline) and redis-benchmark
in_range() { [ "${#2}" -le 10 ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || usage_error "$1 $2: not in $3..$4"; }
in_range --connections "$CONNS" 1 10000
in_range --pipeline "$PIPELINE" 1 1024
in_range --capacity "$CAPACITY" 1 1000000000
in_range --repeat "$REPEAT" 1 9
[ -z "$PING_N" ] || in_range --ping-requests "$PING_N" 1 1000000000
PING_GIVEN=$PING_N
PING_N=${PING_N:-$((PIPELINE > 1 ? 4000000 : 1000000))}

log() { echo "compare: $*" >&2; }

# ---------------------------------------------------------------- what we need

need_packages() {
    local missing=()
    for p in redis-server redis-tools libhiredis-dev; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    log "installing ${missing[*]}"
    $sudo apt-get update -qq >&2 || true
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

need_build() {
    if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" "$ROOT" >&2
    elif ! "$BUILD/bench/slot-bench" --version 2>/dev/null | grep -q redis; then
        meson setup --reconfigure "$BUILD" "$ROOT" >&2 # hiredis may have just been installed
    fi
    ninja -C "$BUILD" slotd bench/slot-bench >&2
    "$BUILD/bench/slot-bench" --version | grep -q redis || {
        log "slot-bench was built without hiredis; cannot run the Redis target"
        exit 1
    }
}

# ---------------------------------------------------------------- servers

TMP=$(mktemp -d "${TMPDIR:-/tmp}/slot-compare-XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

stop_pid() {
    kill "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
    local keep=()
    for p in "${PIDS[@]}"; do [ "$p" != "$1" ] && keep+=("$p"); done
    PIDS=("${keep[@]+"${keep[@]}"}")
}

# redis_start NAME ARGS... — sets PORT and PID; waits for PING.
redis_start() {
    local name=$1; shift
    PORT=$(free_port)
    rm -rf "${TMP:?}/$name" && mkdir -p "$TMP/$name" # a fresh store every round
    redis-server --port "$PORT" --bind 127.0.0.1 --save '' --dir "$TMP/$name" "$@" >"$TMP/$name.log" 2>&1 &
    PID=$!
    PIDS+=("$PID")
    for _ in $(seq 1 100); do
        redis-cli -p "$PORT" ping 2>/dev/null | grep -q PONG && return 0
        sleep 0.05
    done
    log "redis-server ($name) did not start:"; cat "$TMP/$name.log" >&2
    exit 1
}

# slotd_start NAME ARGS... — sets PORT and PID from its "listening on" line.
slotd_start() {
    local name=$1; shift
    rm -rf "${TMP:?}/$name" && mkdir -p "$TMP/$name" # a fresh store every round
    "$BUILD/slotd" --data "$TMP/$name" --listen 127.0.0.1:0 "$@" >"$TMP/$name.out" 2>"$TMP/$name.log" &
    PID=$!
    PIDS+=("$PID")
    PORT=""
    for _ in $(seq 1 100); do
        PORT=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$TMP/$name.out" | head -1)
        [ -n "$PORT" ] && return 0
        sleep 0.05
    done
    log "slotd ($name) did not start:"; cat "$TMP/$name.log" >&2
    exit 1
}

# ---------------------------------------------------------------- runs

ROWS=()
declare -A HOLDS    # holds/s by run name, for the ratios
declare -A P99      # p99 ms by run name
FAILED=0

# ping_run ROUND — one redis-benchmark PING (multibulk) with the same connections
# and pipeline; its --csv line goes to $TMP/ping.ROUND.csv.
ping_run() {
    redis_start ping
    log "PING ceiling (round $1): redis-benchmark -t ping -c $CONNS -P $PIPELINE -n $PING_N --csv"
    local out
    out=$(redis-benchmark -h 127.0.0.1 -p "$PORT" -t ping -c "$CONNS" -P "$PIPELINE" -n "$PING_N" --csv 2>/dev/null | tr '\r' '\n')
    stop_pid "$PID"
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    echo "$out" | grep '^"PING_MBULK"' | tail -1 | tr -d '"' >"$TMP/ping.$1.csv"
    [ -s "$TMP/ping.$1.csv" ] || { log "redis-benchmark gave no PING_MBULK line: $out"; exit 1; }
}

# ping_row — the PING row from the run with the median requests/s.
ping_row() {
    local line
    line=$(cat "$TMP"/ping.*.csv | sort -t, -k2,2g | sed -n "$(( (REPEAT + 1) / 2 ))p")
    IFS=, read -r _ PING_RPS PING_MEAN _ PING_P50 _ PING_P99 _ <<<"$line"
    ROWS+=("| loopback PING ceiling (redis-benchmark) | $(printf '%.0f' "$PING_RPS") | - | $PING_P50 | $PING_P99 | $(inflight "$PING_RPS" "$PING_MEAN") | 1.00 | - | 1.00 | - |")
}

# inflight RPS MEAN_MS — requests in flight on average by Little's law (L = λW):
# with every connection busy this is connections x pipeline; less means the
# latency figure leaves out time the client kept requests unsent.
inflight() { python3 -c 'import sys; print(f"{float(sys.argv[1]) * float(sys.argv[2]) / 1000:.0f}")' "$1" "$2"; }

# bench_run NAME ROUND TARGET_ARGS... — one slot-bench hot-release, its JSON report
# in $TMP/NAME.ROUND.json; a failed run makes the script's exit status 1.
bench_run() {
    local name=$1 round=$2; shift 2
    log "$name (round $round): slot-bench hot-release --connections $CONNS --pipeline $PIPELINE --capacity $CAPACITY $*"
    local rc=0
    "$BUILD/bench/slot-bench" hot-release "$@" --connections "$CONNS" --pipeline "$PIPELINE" \
        --capacity "$CAPACITY" --json "$TMP/$name.$round.json" >"$TMP/$name.$round.txt" 2>&1 || rc=$?
    cat "$TMP/$name.$round.txt" >&2
    echo "$rc" >"$TMP/$name.$round.rc"
    [ "$rc" -eq 0 ] || FAILED=1
}

# bench_row NAME — the row of NAME's median run by holds/s (a failed run, if
# any, instead: the table must not hide it); sets HOLDS[NAME] and P99[NAME].
bench_row() {
    local name=$1 out
    out=$(python3 - "$TMP" "$name" "$REPEAT" "$PING_RPS" "$PING_P99" <<'EOF'
import json, os, sys
tmp, name, repeat, ping, ping_p99 = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
runs = []
for i in range(1, repeat + 1):
    rc = open(f"{tmp}/{name}.{i}.rc").read().strip()
    path = f"{tmp}/{name}.{i}.json"
    d = json.load(open(path)) if os.path.exists(path) else None
    runs.append((rc, d))
bad = [(rc, d) for rc, d in runs if rc != "0" or d is None]
if bad:
    rc, d = bad[0]
else:
    runs.sort(key=lambda x: x[1]["results"]["holds_per_s"])
    rc, d = runs[(repeat - 1) // 2]
if d is None:
    print(f"| {name} | - | - | - | - | - | - | - | - | exit {rc} |\t0\t0")
    sys.exit(0)
r = d["results"]; lat = r["latency_ms"]; v = d["verification"]["status"]
print(f"| {name} | {r['requests_per_s']:.0f} | {r['holds_per_s']:.0f} | {lat['p50']:.3f} | {lat['p99']:.3f} "
      f"| {r['requests_per_s'] * lat['mean'] / 1000:.0f} "
      f"| {r['requests_per_s'] / ping:.2f} | {r['holds_per_s'] / ping:.2f} | {lat['p99'] / ping_p99:.2f} "
      f"| {v if rc == '0' else v + ', exit ' + rc} |\t{r['holds_per_s']}\t{lat['p99']}")
EOF
)
    ROWS+=("${out%%$'\t'*}")
    out=${out#*$'\t'}
    HOLDS[$name]=${out%%$'\t'*}
    P99[$name]=${out#*$'\t'}
}

run_all() {
    local round
    for round in $(seq 1 "$REPEAT"); do
        ping_run "$round"
        slotd_start slotd-sync --durability sync
        bench_run "slotd sync" "$round" --port "$PORT"
        stop_pid "$PID"
        slotd_start slotd-nosync --durability nosync
        bench_run "slotd nosync" "$round" --port "$PORT"
        stop_pid "$PID"
        redis_start redis-always --appendonly yes --appendfsync always
        bench_run "Redis+Lua appendfsync always" "$round" --target "redis://127.0.0.1:$PORT"
        stop_pid "$PID"
        redis_start redis-everysec --appendonly yes --appendfsync everysec
        bench_run "Redis+Lua appendfsync everysec" "$round" --target "redis://127.0.0.1:$PORT"
        stop_pid "$PID"
    done
    ping_row
    local name
    for name in "slotd sync" "slotd nosync" "Redis+Lua appendfsync always" "Redis+Lua appendfsync everysec"; do
        bench_row "$name"
    done
}

ratio() { python3 -c 'import sys; a, b = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print(f"{a / b:.2f}" if a and b else "-")' "$1" "$2"; }

report() {
    local cpu kernel
    cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
    kernel=$(uname -sr)
    echo "### slotd vs Redis+Lua, hot release: $CONNS connections, pipeline $PIPELINE, capacity $CAPACITY"
    [ "$REPEAT" -eq 1 ] || { echo; echo "Each row is the median of $REPEAT runs (by requests/s for PING, holds/s for the others), run in $REPEAT rounds of all rows."; }
    echo
    echo "$(nproc) CPUs ($cpu), $(free -g | awk '/^Mem:/ {print $2}') GiB, $kernel; $(redis-server --version | awk '{print $1, $2, $3}');"
    echo "slot-bench, slotd and redis-server on the same machine over loopback. requests/s counts every"
    echo "answer (held and sold_out); holds/s is held answers until the sell-out (durable in the sync rows"
    echo "and with appendfsync always). Latency in ms. Load average before: $LOAD_BEFORE; after: $LOAD_AFTER"
    echo "(anything else running on the machine shows up in these numbers). \"in flight\" is requests/s x mean"
    echo "latency (Little's law): $((CONNS * PIPELINE)) when a tool's latency covers the whole round trip; redis-benchmark"
    echo "starts its clock when it writes, so its latency leaves out the time a request waits in the client."
    echo
    echo "| run | requests/s | holds/s | p50 ms | p99 ms | in flight | requests/s ÷ PING | holds/s ÷ PING | p99 ÷ PING p99 | verification |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    local sync=${HOLDS["slotd sync"]:-0} always=${HOLDS["Redis+Lua appendfsync always"]:-0}
    echo "slotd sync ÷ Redis+Lua (always), holds/s: **$(ratio "$sync" "$always")x**;" \
         "slotd sync holds/s ÷ PING ceiling: **$(ratio "$sync" "$PING_RPS")x**;" \
         "slotd sync p99 ÷ PING p99: **$(ratio "${P99["slotd sync"]:-0}" "$PING_P99")x**."
    echo
    echo "Reproduce: \`bench/compare.sh --connections $CONNS --pipeline $PIPELINE --capacity $CAPACITY${PING_GIVEN:+ --ping-requests $PING_N}$([ "$REPEAT" -eq 1 ] || echo " --repeat $REPEAT")\`"
}

need_packages
need_build
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
run_all
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
if [ -n "$OUT" ]; then
    report >"$OUT"
    log "wrote $OUT"
else
    report
fi
exit "$FAILED"
