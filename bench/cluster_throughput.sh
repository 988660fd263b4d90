#!/usr/bin/env bash
# bench/cluster_throughput.sh — durable holds/s of a three-node replica set against a
# standalone slotd, in the same sitting on this machine: a private etcd and three slotd nodes
# (--durability sync) and one standalone slotd (--durability sync), all on loopback; then
# slot-bench hot-release --connections 256 --pipeline P --capacity 200000, alternating
# standalone and replica set, ROUNDS times each, for P = 1 and 16.
#
#   bench/cluster_throughput.sh [ROUNDS]      (default 2, 1..20)
#
# Prints every run and, per pipeline depth, the mean holds/s of each and the ratio
# set / standalone; each run also gives the CPU seconds every server process used
# in it (the nodes and etcd share the CPUs with the bench). Node flags:
# SLOT_BENCH_NODE_FLAGS (default none). Work folder ./slotd-cluster-throughput (wiped first).
set -euo pipefail
rounds=${1:-2}
case "$rounds" in '' | *[!0-9]*) echo "usage: bench/cluster_throughput.sh [ROUNDS]" >&2; exit 64 ;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 20 ] || { echo "cluster_throughput: ROUNDS 1..20" >&2; exit 64; }

. "$(dirname "${BASH_SOURCE[0]}")/../tools/setup.sh"
slot_need_packages etcd-server
slot_build
read -r -a CL_NODE_FLAGS <<<"${SLOT_BENCH_NODE_FLAGS:-}"
. "$SLOT_ROOT/tools/cluster-lib.sh"

dir=${SLOT_BENCH_DATA:-$PWD/slotd-cluster-throughput}
solo_pid=""
cleanup() {
    if [ -n "$solo_pid" ]; then
        kill "$solo_pid" 2>/dev/null || true
        { wait "$solo_pid"; } 2>/dev/null || true
    fi
    cl_stop_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cl_init "$dir"
cl_set_start
cl_probe primary --wait-s 30 >/dev/null

"$SLOT_BUILD/slotd" --data "$dir/solo" --listen 127.0.0.1:0 --durability sync >"$dir/solo.out" 2>"$dir/solo.log" &
solo_pid=$!
solo_port=""
for _ in $(seq 1 200); do
    solo_port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$dir/solo.out" | head -1)
    [ -n "$solo_port" ] && break
    kill -0 "$solo_pid" 2>/dev/null || break
    sleep 0.05
done
[ -n "$solo_port" ] || { echo "cluster_throughput: the standalone slotd did not start (see $dir/solo.log)" >&2; exit 1; }

echo "cluster_throughput: $(nproc) CPUs; set $CL_MEMBERS (node flags: ${CL_NODE_FLAGS[*]:-defaults}); standalone 127.0.0.1:$solo_port"
fail=0
# CPU seconds (user + system) each process of the run used, from /proc/PID/stat:
# where the two CPUs went (the set's three nodes and etcd share them with the bench).
cpu_s() { # PID...
    local p
    for p in "$@"; do
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f ", ($14 + $15) / hz }' "/proc/$p/stat" 2>/dev/null || printf "0 "
    done
}
run() { # KIND PIPELINE ROUND HOSTS
    local f="$dir/$1-p$2-r$3.json" rc=0 pids before after
    if [ "$1" = standalone ]; then pids="$solo_pid"; else pids="${CL_PID[*]} $CL_ETCD_PID"; fi
    before=$(cpu_s $pids)
    "$SLOT_BUILD/bench/slot-bench" hot-release --host "$4" --connections 256 --pipeline "$2" --capacity 200000 \
        --json "$f" >"${f%.json}.out" 2>&1 || rc=$?
    after=$(cpu_s $pids)
    [ "$rc" -eq 0 ] || fail=1
    python3 - "$f" "$1" "$2" "$3" "$before" "$after" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
r, lat, st = j["results"], j["results"]["latency_ms"], j["verification"]["status"]
cpu = [b - a for a, b in zip(map(float, sys.argv[5].split()), map(float, sys.argv[6].split()))]
names = ["slotd"] if sys.argv[2] == "standalone" else [f"n{i + 1}" for i in range(len(cpu) - 1)] + ["etcd"]
per = ", ".join(f"{n} {c:.2f}" for n, c in zip(names, cpu))
print(f"  {sys.argv[2]:10} pipeline {sys.argv[3]:>2} round {sys.argv[4]}: {r['holds_per_s']:9.0f} holds/s, "
      f"sell-out {r['sellout_s']:.3f} s, p99 {lat['p99']:.2f} ms, verification {st}; CPU s: {per}")
EOF
}
for p in 1 16; do
    for r in $(seq 1 "$rounds"); do
        run standalone "$p" "$r" "127.0.0.1:$solo_port"
        run set "$p" "$r" "$CL_MEMBERS"
    done
done
python3 - "$dir" <<'EOF'
import glob, json, statistics, sys
d = sys.argv[1]
for p in (1, 16):
    m = {}
    for kind in ("standalone", "set"):
        v = [json.load(open(f))["results"]["holds_per_s"] for f in sorted(glob.glob(f"{d}/{kind}-p{p}-r*.json"))]
        m[kind] = statistics.mean(v)
    print(f"pipeline {p:>2}: standalone {m['standalone']:.0f} holds/s, set {m['set']:.0f} holds/s, "
          f"ratio {m['set'] / m['standalone']:.2f}")
EOF
exit "$fail"
