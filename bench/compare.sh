#!/usr/bin/env bash
# bench/compare.sh — slotd against its peers and against the loopback ceiling, in
# one go on one machine, every row from the same client (slot-bench) with the
# same connections and pipeline, and every ratio of the performance targets
# (issue 13, section 2) from that one run:
#
#   ceiling    slot-bench ping --target redis://   (PING, the stick every ratio is held to)
#   reference  redis-benchmark -t ping             (its own client; not a ratio's base)
#              slot-bench ping against slotd       (a hello round trip: slotd has no ping op)
#   holds      slotd --durability sync / nosync / pipelined   (slot-bench hot-release;
#              pipelined: the batch log's flush overlaps the next batch, issue 24)
#              Redis + Lua, appendfsync always: the full peer (bench/peers/slot_hold.lua)
#              and the minimal one a user would write (slot_hold_min.lua, --peer min);
#              the full peer with appendfsync everysec
#   sold-out   slotd sync, slot-bench sold-out     (answers to holds of a sold-out event)
#   depth      slotd sync and pipelined hot-release and slot-bench ping at pipeline 16
#   set        a 3-node replica set (etcd and three slotd on loopback, tools/cluster-lib.sh),
#              --durability sync and pipelined, slot-bench hot-release following its primary
#
# Every slotd row also shows the server's CPU (user + system, from /proc) per answer by
# thread: the loop thread, the commit thread (slotd-commit), the pipelined path's flusher
# (slotd-flush); for the set, the primary's threads and each replica's total.
#
# Each server is started here on a free loopback port with its data in a temporary
# folder, and stopped by its PID. The result is markdown on stdout (or in --out
# FILE): a table of every row (requests/s, holds/s or sold_out/s, p50, p99,
# requests in flight, the ratios to PING, the bench's own CPU per answer), then a
# table of the targets with each ratio and whether it is met. requests/s counts
# every answer, including hot-release's tail of 10,000 sold_out answers after the
# sell-out; holds/s only the held ones, until the sell-out. Missing Debian packages
# (redis-server redis-tools libhiredis-dev) are installed with apt-get (sudo when
# not root), and slot-bench is rebuilt with hiredis when it lacks the Redis target.
#
# usage: bench/compare.sh [--connections K] [--pipeline D] [--deep D16] [--capacity N]
#                         [--duration S] [--threads T] [--ping-requests N] [--repeat R]
#                         [--out FILE] [--build DIR]
#   --connections K    connections of every run, 1..10000 (default 256)
#   --pipeline D       requests in flight per connection, 1..1024 (default 1)
#   --deep D16         the pipeline of the depth rows, 1..1024 (default 16)
#   --capacity N       units of each hot release, >= 1 (default 200000; the depth
#                      row sells 5 x N)
#   --duration S       seconds of each ping and sold-out run, 1..600 (default 5)
#   --threads T        slot-bench's event loops, 1..64 (default 1)
#   --ping-requests N  PINGs redis-benchmark sends (default 1000000; 4000000
#                      when D > 1)
#   --repeat R         run everything R times, 1..9 (default 1), in rounds (each
#                      round runs every row once, so drift hits all rows alike);
#                      each row shows its median run by its rate (requests/s for
#                      the pings, sold_out/s for sold-out, holds/s for the rest)
#   --out FILE         write the tables to FILE instead of stdout
#   --build DIR        the meson build folder with slotd and slot-bench (default
#                      build/ at the top, or $SLOT_BUILD); configured and built
#                      there when needed
# Exit status: 0 every run completed and verified; 1 a run failed (the table
# still says which); 64 usage error. A target not met is reported, not an error.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${SLOT_BUILD:-$ROOT/build}
CONNS=256
PIPELINE=1
DEEP=16
CAPACITY=200000
DURATION=5
THREADS=1
PING_N=""
REPEAT=1
OUT=""

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

usage_error() { echo "compare.sh: $* (see --help)" >&2; exit 64; }

while [ $# -gt 0 ]; do
    case "$1" in
    --connections | --pipeline | --deep | --capacity | --duration | --threads | --ping-requests | --repeat | --out | --build)
        [ $# -ge 2 ] || usage_error "$1 needs a value" ;;&
    --connections) CONNS=$2; shift 2 ;;
    --pipeline) PIPELINE=$2; shift 2 ;;
    --deep) DEEP=$2; shift 2 ;;
    --capacity) CAPACITY=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --ping-requests) PING_N=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
    esac
done
for v in "$CONNS" "$PIPELINE" "$DEEP" "$CAPACITY" "$DURATION" "$THREADS" "$REPEAT" ${PING_N:+"$PING_N"}; do
    [[ $v =~ ^[0-9]+$ ]] || usage_error "not a number: '$v'"
done
# the bounds of slot-bench (--connections, --pipeline) and redis-benchmark
in_range() { [ "${#2}" -le 10 ] && [ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || usage_error "$1 $2: not in $3..$4"; }
in_range --connections "$CONNS" 1 10000
in_range --pipeline "$PIPELINE" 1 1024
in_range --deep "$DEEP" 1 1024
in_range --capacity "$CAPACITY" 1 200000000
in_range --duration "$DURATION" 1 600
in_range --threads "$THREADS" 1 64
[ "$THREADS" -le "$CONNS" ] || usage_error "--threads $THREADS is above --connections $CONNS"
in_range --repeat "$REPEAT" 1 9
[ -z "$PING_N" ] || in_range --ping-requests "$PING_N" 1 1000000000
PING_GIVEN=$PING_N
PING_N=${PING_N:-$((PIPELINE > 1 ? 4000000 : 1000000))}

log() { echo "compare: $*" >&2; }

# ---------------------------------------------------------------- what we need

need_packages() {
    local missing=()
    for p in redis-server redis-tools libhiredis-dev etcd-server; do
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
    cl_stop_all
    for pid in "${PIDS[@]}"; do
        kill "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
# the 3-node set's row: tools/cluster-lib.sh's etcd and nodes, stopped by PID in cleanup
SLOT_ROOT=$ROOT SLOT_BUILD=$BUILD
declare -a CL_NODE_FLAGS=()
# shellcheck source=../tools/cluster-lib.sh
. "$ROOT/tools/cluster-lib.sh"
SRV_PIDS=() # the slotd processes of the rows being run (their CPU per answer), with SRV_NAMES
SRV_NAMES=()

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
    SRV_PIDS=("$PID") SRV_NAMES=("")
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
declare -A RATE     # the row's rate (see --repeat) by run name, for the ratios
declare -A P99      # p99 ms by run name
FAILED=0

# rb_run ROUND — one redis-benchmark PING (multibulk) with the same connections
# and pipeline; its --csv line goes to $TMP/rb.ROUND.csv. A reference row only.
rb_run() {
    redis_start rb
    log "redis-benchmark (round $1): redis-benchmark -t ping -c $CONNS -P $PIPELINE -n $PING_N --csv"
    local out
    out=$(redis-benchmark -h 127.0.0.1 -p "$PORT" -t ping -c "$CONNS" -P "$PIPELINE" -n "$PING_N" --csv 2>/dev/null | tr '\r' '\n')
    stop_pid "$PID"
    # "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    echo "$out" | grep '^"PING_MBULK"' | tail -1 | tr -d '"' >"$TMP/rb.$1.csv"
    [ -s "$TMP/rb.$1.csv" ] || { log "redis-benchmark gave no PING_MBULK line: $out"; exit 1; }
}

# rb_row — the redis-benchmark row from the run with the median requests/s.
rb_row() {
    local line rps mean p50 p99
    line=$(cat "$TMP"/rb.*.csv | sort -t, -k2,2g | sed -n "$(( (REPEAT + 1) / 2 ))p")
    IFS=, read -r _ rps mean _ p50 _ p99 _ <<<"$line"
    RATE["redis-benchmark PING"]=$rps
    ROWS+=("| redis-benchmark -t ping (its own client; reference) | $(printf '%.0f' "$rps") | - | $p50 | $p99 | $(inflight "$rps" "$mean") | $(ratio "$rps" "$PING_RPS") | - | $(ratio "$p99" "$PING_P99") | - | - | - |")
}

# inflight RPS MEAN_MS — requests in flight on average by Little's law (L = λW):
# with every connection busy this is connections x pipeline; less means the
# latency figure leaves out time the client kept requests unsent.
inflight() { python3 -c 'import sys; print(f"{float(sys.argv[1]) * float(sys.argv[2]) / 1000:.0f}")' "$1" "$2"; }

ratio() { python3 -c 'import sys; a, b = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print(f"{a / b:.2f}" if a and b else "-")' "$1" "$2"; }
# ratio3 A B — the same with three decimals: the targets table compares what it shows
ratio3() { python3 -c 'import sys; a, b = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print(f"{a / b:.3f}" if a and b else "-")' "$1" "$2"; }

# thread_ticks — "LABEL TICKS" for every thread of SRV_PIDS: the main thread is
# "loop", the others by their name (slotd-commit, slotd-flush); a replica
# (SRV_NAMES other than the first) is one line, all its threads together.
thread_ticks() {
    local k pid name t comm
    for k in "${!SRV_PIDS[@]}"; do
        pid=${SRV_PIDS[$k]} name=${SRV_NAMES[$k]}
        for t in /proc/"$pid"/task/*; do
            [ -r "$t/stat" ] || continue
            comm=$(cat "$t/comm" 2>/dev/null || echo "?")
            [ "${t##*/}" = "$pid" ] && comm=loop
            [ "$comm" = slotd ] && comm=other
            if [ "$k" -gt 0 ]; then comm="$name"; elif [ -n "$name" ]; then comm="$name $comm"; fi
            # utime + stime are fields 14 and 15; the name (field 2) has no blanks here
            awk -v l="$comm" '{ print l "\t" ($14 + $15) }' "$t/stat"
        done
    done
}

# bench_run NAME ROUND SCENARIO ARGS... — one slot-bench run (the common options
# first, ARGS after them, so ARGS may override --pipeline), its JSON report in
# $TMP/NAME.ROUND.json; a failed run makes the script's exit status 1.
bench_run() {
    local name=$1 round=$2 scenario=$3; shift 3
    local args=(--connections "$CONNS" --pipeline "$PIPELINE" --threads "$THREADS" "$@")
    log "$name (round $round): slot-bench $scenario ${args[*]}"
    local rc=0 before=""
    [ ${#SRV_PIDS[@]} -gt 0 ] && before=$(thread_ticks)
    "$BUILD/bench/slot-bench" "$scenario" "${args[@]}" --json "$TMP/$name.$round.json" >"$TMP/$name.$round.txt" 2>&1 || rc=$?
    if [ -n "$before" ]; then
        { echo "$before" | sed 's/^/before\t/'; thread_ticks | sed 's/^/after\t/'; } >"$TMP/$name.$round.ticks"
    fi
    cat "$TMP/$name.$round.txt" >&2
    echo "$rc" >"$TMP/$name.$round.rc"
    [ "$rc" -eq 0 ] || FAILED=1
}

# bench_row NAME METRIC — the row of NAME's median run by METRIC (requests_per_s,
# holds_per_s or sold_out_per_s; a failed run, if any, instead: the table must
# not hide it); sets RATE[NAME] and P99[NAME]. Without PING_RPS yet (the
# ceiling's own row) its ratios are 1.
bench_row() {
    local name=$1 metric=$2 out
    out=$(python3 - "$TMP" "$name" "$REPEAT" "$metric" "${PING_RPS:-0}" "${PING_P99:-0}" <<'EOF'
import json, os, sys
tmp, name, repeat, metric = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ping, ping_p99 = float(sys.argv[5]), float(sys.argv[6])
runs = []
for i in range(1, repeat + 1):
    rc = open(f"{tmp}/{name}.{i}.rc").read().strip()
    path = f"{tmp}/{name}.{i}.json"
    d = json.load(open(path)) if os.path.exists(path) else None
    runs.append((rc, d, i))
bad = [(rc, d, i) for rc, d, i in runs if rc != "0" or d is None]
if bad:
    rc, d, i = bad[0]
else:
    runs.sort(key=lambda x: x[1]["results"][metric])
    rc, d, i = runs[(repeat - 1) // 2]
if d is None:
    print(f"| {name} | - | - | - | - | - | - | - | - | - | - | exit {rc} |\t0\t0")
    sys.exit(0)
r = d["results"]; lat = r["latency_ms"]; v = d["verification"]["status"]
rate = r[metric]
if ping == 0:
    ping, ping_p99 = r["requests_per_s"], lat["p99"]
def q(a, b):
    return f"{a / b:.2f}" if a and b else "-"
second = "-" if metric == "requests_per_s" else f"{rate:.0f}"
cpu = r.get("bench_cpu", {}).get("us_per_answer", 0)
# the server's CPU per answer by thread, from the ticks before and after the run
server = "-"
try:
    hz = os.sysconf("SC_CLK_TCK")
    before, after = {}, {}
    for line in open(f"{tmp}/{name}.{i}.ticks"):
        when, label, ticks = line.rstrip("\n").split("\t")
        side = before if when == "before" else after
        side[label] = side.get(label, 0) + int(ticks)
    answers = r["answered"]
    order = sorted(after, key=lambda k: (" " in k, k))
    parts = [f"{k} {(after[k] - before.get(k, 0)) / hz * 1e6 / answers:.1f}" for k in order
             if answers and after[k] - before.get(k, 0) > 0]
    server = ", ".join(parts) or "-"
except (OSError, KeyError, ValueError, ZeroDivisionError):
    pass
print(f"| {name} | {r['requests_per_s']:.0f} | {second} | {lat['p50']:.3f} | {lat['p99']:.3f} "
      f"| {r['requests_per_s'] * lat['mean'] / 1000:.0f} "
      f"| {q(r['requests_per_s'], ping)} | {q(rate, ping) if second != '-' else '-'} | {q(lat['p99'], ping_p99)} "
      f"| {cpu:.2f} | {server} | {v if rc == '0' else v + ', exit ' + rc} |\t{rate}\t{lat['p99']}")
EOF
)
    ROWS+=("${out%%$'\t'*}")
    out=${out#*$'\t'}
    RATE[$name]=${out%%$'\t'*}
    P99[$name]=${out#*$'\t'}
}

N_PING="slot-bench ping, Redis (the ceiling)"
N_HELLO="slot-bench ping, slotd (hello)"
N_SYNC="slotd sync"
N_NOSYNC="slotd nosync"
N_FULL="Redis+Lua full peer, appendfsync always"
N_MIN="Redis+Lua minimal peer, appendfsync always"
N_EVERYSEC="Redis+Lua full peer, appendfsync everysec"
N_SOLD="slotd sync, sold-out answers"
N_PING16="slot-bench ping, Redis, pipeline $DEEP"
N_SYNC16="slotd sync, pipeline $DEEP"
N_PIPE="slotd pipelined"
N_PIPE16="slotd pipelined, pipeline $DEEP"
N_SET="3-node set sync (etcd + 3 slotd)"
N_SETP="3-node set pipelined (etcd + 3 slotd)"

# set_start DURABILITY — etcd and a 3-node set (sync or pipelined) under $TMP/set-DURABILITY;
# the primary's threads and the replicas' totals are what thread_ticks reads.
set_start() {
    cl_init "$TMP/set-$1"
    CL_DURABILITY=$1 cl_set_start >&2
    local primary i k=1
    primary=$(cl_probe primary --wait-s 30)
    SRV_PIDS=() SRV_NAMES=()
    for i in 1 2 3; do
        if [ "${primary##*:}" = "${CL_PORT[$i]}" ]; then
            SRV_PIDS=("${CL_PID[$i]}" "${SRV_PIDS[@]+"${SRV_PIDS[@]}"}")
            SRV_NAMES=("n$i primary" "${SRV_NAMES[@]+"${SRV_NAMES[@]}"}")
        else
            SRV_PIDS+=("${CL_PID[$i]}") SRV_NAMES+=("n$i replica")
            k=$((k + 1))
        fi
    done
}

run_all() {
    local round
    for round in $(seq 1 "$REPEAT"); do
        rb_run "$round"
        SRV_PIDS=() SRV_NAMES=()
        redis_start ping
        bench_run "$N_PING" "$round" ping --target "redis://127.0.0.1:$PORT" --duration "$DURATION"
        bench_run "$N_PING16" "$round" ping --target "redis://127.0.0.1:$PORT" --duration "$DURATION" --pipeline "$DEEP"
        stop_pid "$PID"
        slotd_start slotd-sync --durability sync
        bench_run "$N_HELLO" "$round" ping --port "$PORT" --duration "$DURATION"
        bench_run "$N_SYNC" "$round" hot-release --port "$PORT" --capacity "$CAPACITY"
        bench_run "$N_SOLD" "$round" sold-out --port "$PORT" --duration "$DURATION"
        bench_run "$N_SYNC16" "$round" hot-release --port "$PORT" --capacity "$((CAPACITY * 5))" --pipeline "$DEEP"
        stop_pid "$PID"
        slotd_start slotd-nosync --durability nosync
        bench_run "$N_NOSYNC" "$round" hot-release --port "$PORT" --capacity "$CAPACITY"
        stop_pid "$PID"
        slotd_start slotd-pipelined --durability pipelined
        bench_run "$N_PIPE" "$round" hot-release --port "$PORT" --capacity "$CAPACITY"
        bench_run "$N_PIPE16" "$round" hot-release --port "$PORT" --capacity "$((CAPACITY * 5))" --pipeline "$DEEP"
        stop_pid "$PID"
        set_start sync
        bench_run "$N_SET" "$round" hot-release --host "$CL_MEMBERS" --capacity "$CAPACITY"
        cl_stop_all
        set_start pipelined
        bench_run "$N_SETP" "$round" hot-release --host "$CL_MEMBERS" --capacity "$CAPACITY"
        cl_stop_all
        SRV_PIDS=() SRV_NAMES=()
        redis_start redis-always --appendonly yes --appendfsync always
        bench_run "$N_FULL" "$round" hot-release --target "redis://127.0.0.1:$PORT" --capacity "$CAPACITY" --peer full
        bench_run "$N_MIN" "$round" hot-release --target "redis://127.0.0.1:$PORT" --capacity "$CAPACITY" --peer min
        stop_pid "$PID"
        redis_start redis-everysec --appendonly yes --appendfsync everysec
        bench_run "$N_EVERYSEC" "$round" hot-release --target "redis://127.0.0.1:$PORT" --capacity "$CAPACITY"
        stop_pid "$PID"
    done
    PING_RPS="" PING_P99=""
    bench_row "$N_PING" requests_per_s
    PING_RPS=${RATE[$N_PING]} PING_P99=${P99[$N_PING]}
    rb_row
    bench_row "$N_HELLO" requests_per_s
    local name
    for name in "$N_SYNC" "$N_NOSYNC" "$N_PIPE" "$N_SET" "$N_SETP" "$N_FULL" "$N_MIN" "$N_EVERYSEC"; do
        bench_row "$name" holds_per_s
    done
    bench_row "$N_SOLD" sold_out_per_s
    # the depth rows' ratios are to PING at the same depth
    local ping_rps=$PING_RPS ping_p99=$PING_P99
    PING_RPS="" PING_P99=""
    bench_row "$N_PING16" requests_per_s
    PING_RPS=${RATE[$N_PING16]} PING_P99=${P99[$N_PING16]}
    bench_row "$N_SYNC16" holds_per_s
    bench_row "$N_PIPE16" holds_per_s
    PING_RPS=$ping_rps PING_P99=$ping_p99
}

# round_ratio A_NAME A_METRIC B_NAME B_METRIC — the ratio A ÷ B in each round (both
# rows of one round ran minutes apart, so drift of the machine's load hits them
# alike), as "median (r1, r2, ...)"; B_NAME "redis-benchmark PING" reads its CSV,
# B_NAME "" divides by 1 (an absolute rate). METRIC: a key of the JSON results,
# or "p99" for the p99 latency.
round_ratio() {
    python3 - "$TMP" "$REPEAT" "$@" <<'EOF'
import json, statistics, sys
tmp, repeat, an, am, bn, bm = sys.argv[1], int(sys.argv[2]), *sys.argv[3:7]
def value(name, metric, i):
    if name == "":
        return 1.0
    if name == "redis-benchmark PING":
        return float(open(f"{tmp}/rb.{i}.csv").read().split(",")[1])
    try:
        r = json.load(open(f"{tmp}/{name}.{i}.json"))["results"]
    except (OSError, ValueError, KeyError):
        return None
    return r["latency_ms"]["p99"] if metric == "p99" else r[metric]
out = []
for i in range(1, repeat + 1):
    a, b = value(an, am, i), value(bn, bm, i)
    out.append(a / b if a and b else None)
ok = [x for x in out if x is not None]
fmt = (lambda x: f"{x:.0f}") if bn == "" else (lambda x: f"{x:.3f}")
if not ok:
    print("-")
else:
    print(f"{fmt(statistics.median(ok))} ({', '.join(fmt(x) if x is not None else '-' for x in out)})")
EOF
}

# target_row WHAT VALUE GOAL CMP ROUNDS — one row of the targets table (CMP: ge or le);
# met is judged on VALUE (the ratio of the rows' medians) and, apart, on the median of
# the rounds' own ratios (ROUNDS: "median (each round)").
target_row() {
    local met="-" met_r="-"
    judge() { python3 -c 'import sys; v, g, c = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]; print("yes" if (v >= g if c == "ge" else v <= g) else "no")' "$1" "$2" "$3"; }
    [ "$2" != "-" ] && met=$(judge "$2" "$3" "$4")
    [ "$5" != "-" ] && met_r=$(judge "${5%% *}" "$3" "$4")
    echo "| $1 | $2 | $5 | $([ "$4" = ge ] && echo "at least" || echo "at most") $3 | $met | $met_r |"
}

report() {
    local cpu kernel
    cpu=$(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)
    kernel=$(uname -sr)
    echo "### slotd vs Redis+Lua vs the PING ceiling: $CONNS connections, pipeline $PIPELINE (depth rows $DEEP), slot-bench --threads $THREADS"
    [ "$REPEAT" -eq 1 ] || { echo; echo "Each row is the median of $REPEAT runs (by requests/s for the pings, sold_out answers/s for sold-out, holds/s for the rest), run in $REPEAT rounds of all rows."; }
    echo
    echo "$(nproc) CPUs ($cpu), $(free -g | awk '/^Mem:/ {print $2}') GiB, $kernel; $(redis-server --version | awk '{print $1, $2, $3}');"
    echo "slot-bench, slotd and redis-server on the same machine over loopback. Every row but redis-benchmark's is"
    echo "slot-bench, the same engine; its PING against Redis is the ceiling every ratio is held to. requests/s"
    echo "counts every answer; the second rate is holds/s until the sell-out (hot releases, capacity $CAPACITY, depth"
    echo "row $((CAPACITY * 5))) or sold_out answers/s (sold-out). Durable: slotd sync, appendfsync always. Latency in ms."
    echo "\"in flight\" is requests/s x mean latency (Little's law): $((CONNS * PIPELINE)) when a tool's latency covers the whole"
    echo "round trip; redis-benchmark starts its clock when it writes, so its latency leaves out the time a request"
    echo "waits in the client. \"bench µs\" is slot-bench's own CPU (user + system) per answer; \"server µs by thread\""
    echo "the server's, by thread (loop, slotd-commit, slotd-flush; for the set the primary's threads and each"
    echo "replica's total). The ratios of the"
    echo "pipeline $DEEP rows are to PING at pipeline $DEEP."
    echo "Load average before: $LOAD_BEFORE; after: $LOAD_AFTER (anything else running on the machine shows up in these numbers)."
    echo
    echo "| run | requests/s | holds/s or sold_out/s | p50 ms | p99 ms | in flight | requests/s ÷ PING | rate ÷ PING | p99 ÷ PING p99 | bench µs | server µs by thread | verification |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    local sync=${RATE[$N_SYNC]:-0}
    echo "The targets: \"medians\" is the ratio of the rows' medians above; \"rounds\" the median of each round's"
    echo "own ratio (the two rows of a round ran minutes apart, so drift of the machine's load hits both), with"
    echo "every round's in brackets."
    echo
    echo "| target (issue 13, section 2) | medians | rounds | goal | met (medians) | met (rounds) |"
    echo "|---|---:|---:|---:|---|---|"
    target_row "slotd sync holds/s ÷ PING, pipeline $PIPELINE" "$(ratio3 "$sync" "$PING_RPS")" 0.7 ge \
        "$(round_ratio "$N_SYNC" holds_per_s "$N_PING" requests_per_s)"
    target_row "slotd sync holds/s ÷ Redis+Lua minimal peer (always)" "$(ratio3 "$sync" "${RATE[$N_MIN]:-0}")" 3 ge \
        "$(round_ratio "$N_SYNC" holds_per_s "$N_MIN" holds_per_s)"
    target_row "slotd sync holds/s ÷ Redis+Lua full peer (always)" "$(ratio3 "$sync" "${RATE[$N_FULL]:-0}")" 3 ge \
        "$(round_ratio "$N_SYNC" holds_per_s "$N_FULL" holds_per_s)"
    target_row "slotd sync p99 ÷ PING p99" "$(ratio3 "${P99[$N_SYNC]:-0}" "$PING_P99")" 1.5 le \
        "$(round_ratio "$N_SYNC" p99 "$N_PING" p99)"
    target_row "slotd sync holds/s, pipeline $DEEP" "$(printf '%.0f' "${RATE[$N_SYNC16]:-0}")" 300000 ge \
        "$(round_ratio "$N_SYNC16" holds_per_s "" -)"
    local pipe=${RATE[$N_PIPE]:-0}
    target_row "slotd pipelined holds/s ÷ PING, pipeline $PIPELINE (issue 24: 0.7)" "$(ratio3 "$pipe" "$PING_RPS")" 0.7 ge \
        "$(round_ratio "$N_PIPE" holds_per_s "$N_PING" requests_per_s)"
    target_row "slotd pipelined holds/s ÷ Redis+Lua minimal peer (issue 24: 2.5)" "$(ratio3 "$pipe" "${RATE[$N_MIN]:-0}")" 2.5 ge \
        "$(round_ratio "$N_PIPE" holds_per_s "$N_MIN" holds_per_s)"
    target_row "slotd pipelined p99 ÷ PING p99" "$(ratio3 "${P99[$N_PIPE]:-0}" "$PING_P99")" 1.5 le \
        "$(round_ratio "$N_PIPE" p99 "$N_PING" p99)"
    target_row "slotd pipelined holds/s, pipeline $DEEP" "$(printf '%.0f' "${RATE[$N_PIPE16]:-0}")" 300000 ge \
        "$(round_ratio "$N_PIPE16" holds_per_s "" -)"
    target_row "3-node set holds/s ÷ standalone sync, pipeline $PIPELINE (issue 24: 0.8)" \
        "$(ratio3 "${RATE[$N_SET]:-0}" "$sync")" 0.8 ge "$(round_ratio "$N_SET" holds_per_s "$N_SYNC" holds_per_s)"
    target_row "3-node set pipelined holds/s ÷ standalone pipelined, pipeline $PIPELINE (issue 24: 0.8)" \
        "$(ratio3 "${RATE[$N_SETP]:-0}" "$pipe")" 0.8 ge "$(round_ratio "$N_SETP" holds_per_s "$N_PIPE" holds_per_s)"
    target_row "sold-out answers/s ÷ PING" "$(ratio3 "${RATE[$N_SOLD]:-0}" "$PING_RPS")" 0.9 ge \
        "$(round_ratio "$N_SOLD" sold_out_per_s "$N_PING" requests_per_s)"
    target_row "slot-bench PING ÷ redis-benchmark PING (the stick reaches the reference)" \
        "$(ratio3 "$PING_RPS" "${RATE["redis-benchmark PING"]:-0}")" 1 ge \
        "$(round_ratio "$N_PING" requests_per_s "redis-benchmark PING" -)"
    echo
    echo "Reproduce: \`bench/compare.sh --connections $CONNS --pipeline $PIPELINE --deep $DEEP --capacity $CAPACITY --duration $DURATION --threads $THREADS${PING_GIVEN:+ --ping-requests $PING_N}$([ "$REPEAT" -eq 1 ] || echo " --repeat $REPEAT")\`"
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
