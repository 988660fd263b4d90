#!/usr/bin/env bash
# bench/cluster_failover.sh — failover time and what a kill -9 of the primary loses, measured
# on this machine: a private etcd and three slotd nodes (--durability sync) on loopback, under
# continuous load from slot-bench hot-release (following the primary), ROUNDS times:
#   kill -9 the primary, time from the kill to the first hold the new primary acknowledges
#   (tools/cluster-probe.py failover: a hold with a fresh key to every member every 5 ms),
#   restart the killed node, wait until it is a member again.
# Then: every probe hold that was acknowledged is looked up with get_hold on the final
# primary; every bench run checked each of its holds with get_hold on the primary at its
# end; on every member held + confirmed + available = capacity for every event and check is
# clean; the members converge to one seq and digest.
#
#   bench/cluster_failover.sh [ROUNDS]        (default 20, 1..200)
#
# Node flags: SLOT_BENCH_NODE_FLAGS (default: none, slotd's defaults); load:
# SLOT_BENCH_LOAD (default "--connections 32 --capacity 150000").
# Work folder ./slotd-cluster-failover (wiped first). Exit 0 when nothing was lost.
set -euo pipefail
rounds=${1:-20}
case "$rounds" in '' | *[!0-9]*) echo "usage: bench/cluster_failover.sh [ROUNDS]" >&2; exit 64 ;; esac
[ "$rounds" -ge 1 ] && [ "$rounds" -le 200 ] || { echo "cluster_failover: ROUNDS 1..200" >&2; exit 64; }

. "$(dirname "${BASH_SOURCE[0]}")/../tools/setup.sh"
slot_need_packages etcd-server
slot_build
read -r -a CL_NODE_FLAGS <<<"${SLOT_BENCH_NODE_FLAGS:-}"
read -r -a load <<<"${SLOT_BENCH_LOAD:---connections 32 --capacity 150000}"
. "$SLOT_ROOT/tools/cluster-lib.sh"

dir=${SLOT_BENCH_DATA:-$PWD/slotd-cluster-failover}
bench_pid=""
cleanup() {
    if [ -n "$bench_pid" ]; then
        kill "$bench_pid" 2>/dev/null || true
        { wait "$bench_pid"; } 2>/dev/null || true
    fi
    cl_stop_all
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cl_init "$dir"
cl_set_start
cl_probe primary --event probe --capacity 1000000 --wait-s 30 >/dev/null
echo "cluster_failover: $rounds rounds; node flags: ${CL_NODE_FLAGS[*]:-(defaults)}; load: ${load[*]}"

runs=0
bench_fail=0
start_bench() {
    runs=$((runs + 1))
    "$SLOT_BUILD/bench/slot-bench" hot-release --host "$CL_MEMBERS" --json "$dir/bench-$runs.json" "${load[@]}" \
        >"$dir/bench-$runs.out" 2>&1 &
    bench_pid=$!
}
reap_bench() {
    local rc=0
    wait "$bench_pid" || rc=$?
    bench_pid=""
    [ "$rc" -eq 0 ] || { bench_fail=$((bench_fail + 1)); echo "  bench run $runs exited $rc (see $dir/bench-$runs.out)"; }
}

start_bench
sleep 1
: >"$dir/failover_ms"
for r in $(seq 1 "$rounds"); do
    if ! kill -0 "$bench_pid" 2>/dev/null; then
        reap_bench
        start_bench
        sleep 1
    fi
    read -r _ paddr < <(cl_probe primary --wait-s 30)
    p=$(cl_index_of "$paddr")
    {
        ms=$(cl_probe failover --event probe --kill "${CL_PID[$p]}" --acks "$dir/probe-acks.jsonl" --wait-s 30 \
            2>>"$dir/probe.err") || ms=none
        cl_reap "$p"
    } 2>/dev/null
    echo "$ms" >>"$dir/failover_ms"
    cl_node_start "$p"
    t0=$(date +%s%N)
    cl_probe members --want 3 --wait-s 60
    printf '  round %2d: killed n%d, failover %s ms, n%d a member again after %d ms\n' "$r" "$p" "$ms" "$p" \
        $((($(date +%s%N) - t0) / 1000000))
done
reap_bench

also=()
holds=0
mism=0
status_bad=0
for f in "$dir"/bench-*.json; do
    read -r ev cap h m st < <(python3 -c 'import json, sys
j = json.load(open(sys.argv[1])); v = j["verification"]
print(j["events"][0]["event"], j["events"][0]["capacity"], j["results"]["holds"], v["ledger"]["mismatches"], v["status"])' "$f")
    also+=(--also "$ev:$cap")
    holds=$((holds + h))
    mism=$((mism + m))
    [ "$st" = passed ] || status_bad=$((status_bad + 1))
done
verify_rc=0
cl_probe verify --event probe --capacity 1000000 --acks "$dir/probe-acks.jsonl" "${also[@]}" || verify_rc=$?
conv_rc=0
cl_probe converge --wait-s 60 || conv_rc=$?
python3 - "$dir/failover_ms" <<'EOF'
import statistics, sys
v = [x.strip() for x in open(sys.argv[1])]
ok = sorted(float(x) for x in v if x != "none")
print(f"failover ms over {len(v)} kills: median {statistics.median(ok):.1f}, max {max(ok):.1f}, min {min(ok):.1f}, "
      f"none within 30 s: {len(v) - len(ok)}")
print("all:", " ".join(v))
EOF
echo "bench runs $runs: $holds holds acknowledged, ledger mismatches $mism, runs not passed $status_bad, exits != 0 $bench_fail"
if [ "$verify_rc" -eq 0 ] && [ "$conv_rc" -eq 0 ] && [ "$mism" -eq 0 ] && [ "$status_bad" -eq 0 ] && [ "$bench_fail" -eq 0 ]; then
    echo "lost acknowledged holds: 0; units sold twice: 0 (verification passed)"
else
    echo "verification FAILED"
    exit 1
fi
