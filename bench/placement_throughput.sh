#!/usr/bin/env bash
# bench/placement_throughput.sh — holds/s of a multi-event release over two one-node replica
# sets of one placement against one set, in the same sitting on this machine: a private etcd,
# three slotd (sets s1 and s2 of placement p, and set solo alone in placement q; all
# --min-replicas 0, --durability sync) on loopback; then, ROUNDS times, alternating,
#   slot-bench multi-event --placement --host SOLO ...   (one set)
#   slot-bench multi-event --placement --host S1 ...     (two sets, seeded with s1 only)
# with --events 16 --capacity 10000 --connections C --pipeline P --zipf 0. Each run is
# verified (every hold by get_hold on its owner).
#
#   bench/placement_throughput.sh [ROUNDS [CONNECTIONS [PIPELINE]]]   (defaults 3 256 4)
#
# Builds nothing: uses $SLOT_BUILD (default ./build). Work folder: a new mktemp folder,
# removed at the end. Every process it starts is stopped by its PID.
set -euo pipefail
rounds=${1:-3}
conns=${2:-256}
pipe=${3:-4}
for v in "$rounds" "$conns" "$pipe"; do
    case "$v" in '' | *[!0-9]*) echo "usage: bench/placement_throughput.sh [ROUNDS [CONNECTIONS [PIPELINE]]]" >&2; exit 64 ;; esac
done
build=${SLOT_BUILD:-$PWD/build}
etcd=${ETCD:-/usr/bin/etcd}
[ -x "$build/slotd" ] && [ -x "$build/bench/slot-bench" ] || { echo "placement_throughput: no $build/slotd (set SLOT_BUILD)" >&2; exit 64; }
[ -x "$etcd" ] || { echo "placement_throughput: etcd not found (etcd-server)" >&2; exit 64; }

work=$(mktemp -d "${TMPDIR:-/tmp}/slotd-placement-tp.XXXXXX")
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do { wait "$p"; } 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }

cport=$(free_port)
pport=$(free_port)
"$etcd" --name t --data-dir "$work/etcd" --listen-client-urls "http://127.0.0.1:$cport" \
    --advertise-client-urls "http://127.0.0.1:$cport" --listen-peer-urls "http://127.0.0.1:$pport" \
    --initial-advertise-peer-urls "http://127.0.0.1:$pport" --initial-cluster "t=http://127.0.0.1:$pport" \
    >"$work/etcd.log" 2>&1 &
pids+=($!)
wait_port "$cport" || { echo "etcd did not start" >&2; exit 1; }
printf 'placement-throughput-secret-0123456789\n' >"$work/secret"
chmod 600 "$work/secret"

declare -A port
start_set() { # NAME PLACEMENT
    port[$1]=$(free_port)
    "$build/slotd" --listen "127.0.0.1:${port[$1]}" --repl-listen 127.0.0.1:0 --data "$work/$1" --cluster "$1" \
        --node n1 --etcd "http://127.0.0.1:$cport" --cluster-secret-file "$work/secret" --placement "$2" \
        --min-replicas 0 >"$work/$1.log" 2>&1 &
    pids+=($!)
}
start_set s1 p
start_set s2 p
start_set solo q
for s in s1 s2 solo; do wait_port "${port[$s]}" || { echo "slotd $s did not start" >&2; exit 1; }; done
# each primary publishes its addresses in the map: wait for both sets of p
for _ in $(seq 200); do
    n=$("$build/tools/slotctl" --host "127.0.0.1:${port[s1]}" --json placement 2>/dev/null |
        python3 -c 'import json,sys;print(len(json.load(sys.stdin).get("sets",{})))' 2>/dev/null || echo 0)
    [ "$n" = 2 ] && break
    sleep 0.1
done

run() { # LABEL HOST-PORT EVENT-PREFIX
    local json="$work/$3.json"
    if ! "$build/bench/slot-bench" multi-event --placement --host "127.0.0.1:$2" --event "$3" --events 16 \
        --capacity 10000 --connections "$conns" --pipeline "$pipe" --tail 500 --zipf 0 --json "$json" \
        >"$work/$3.out" 2>&1; then
        echo "$1: slot-bench failed:" >&2
        tail -5 "$work/$3.out" >&2
        exit 1
    fi
    python3 -c "import json;d=json.load(open('$json'));r=d['results'];print('%-9s holds/s %7.0f  holds %d  run %.1f s  verification %s' % ('$1', r['holds_per_s'], r['holds'], r['run_s'], d['verification']['status']))"
}
echo "placement_throughput: $rounds rounds, --connections $conns --pipeline $pipe, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq "$rounds"); do
    run "1 set" "${port[solo]}" "one$i"
    run "2 sets" "${port[s1]}" "two$i"
done
