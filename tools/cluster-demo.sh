#!/usr/bin/env bash
# tools/cluster-demo.sh — a hot release on a three-node replica set whose primary is
# killed with kill -9 halfway through. See --help.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: tools/cluster-demo.sh [SLOT-BENCH OPTIONS]

Builds slotd (tools/setup.sh; installs what is missing, etcd-server too), then on this
machine, all on loopback:
  1. starts a private etcd and three slotd nodes (n1, n2, n3; --durability sync) on free
     loopback ports, with every file under ./slotd-cluster-demo (wiped first: it is the
     demo's own folder) and a shared secret in ./slotd-cluster-demo/secret (mode 600);
  2. waits for a primary and runs `slot-bench hot-release` (100,000 units, 256
     connections) against all three members;
  3. when about half the units are sold, kills the primary with kill -9, and measures the
     failover time: from the kill to the first hold the new primary acknowledges (a probe
     sends a hold with a fresh request key to every member every 5 ms);
  4. lets the bench finish on the new primary, restarts the killed node (it rejoins as a
     replica) and waits until the three members have the same seq and digest;
  5. prints the report: the holds the bench was acknowledged, the holds found on the new
     primary (its event view and the bench's own get_hold check of every hold), each
     probe hold, the members' digests, the failover time, and "verification: passed" or
     "verification: FAILED" (exit status 0 or 1).

Every process it starts is stopped by PID when it exits. Extra arguments go to
slot-bench (e.g. --pipeline 16, --capacity 200000, --connections 64); --event and
--json are the demo's own. The nodes run with --heartbeat-ms 50
--failover-timeout-ms 500 --repl-timeout-ms 300 unless SLOT_DEMO_NODE_FLAGS says
otherwise (e.g. SLOT_DEMO_NODE_FLAGS="" for slotd's defaults: 100, 1000, 1000).
Logs: ./slotd-cluster-demo/n1.log ... and etcd.log.
EOF
}

capacity=100000
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    case "${args[$i]}" in
    -h | --help) usage; exit 0 ;;
    --capacity) capacity=${args[$((i + 1))]:-$capacity} ;;
    --capacity=*) capacity=${args[$i]#--capacity=} ;;
    --event | --event=* | --json | --json=* | --host | --host=* | --cluster-members | --cluster-members=* | --port | --port=* | --target | --target=*)
        echo "cluster-demo: ${args[$i]%%=*} is the demo's own" >&2; exit 64 ;;
    esac
done
case "$capacity" in '' | *[!0-9]*) echo "cluster-demo: --capacity: expected a number, not '$capacity'" >&2; exit 64 ;; esac

. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
slot_need_packages etcd-server
slot_build
[ -x /usr/bin/etcd ] || { echo "cluster-demo: /usr/bin/etcd is missing (Debian package etcd-server)" >&2; exit 1; }
read -r -a CL_NODE_FLAGS <<<"${SLOT_DEMO_NODE_FLAGS---heartbeat-ms 50 --failover-timeout-ms 500 --repl-timeout-ms 300}"
. "$SLOT_ROOT/tools/cluster-lib.sh"

dir=${SLOT_DEMO_DATA:-$PWD/slotd-cluster-demo}
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

echo "cluster-demo: etcd and three slotd nodes on loopback, data in $dir"
cl_set_start
read -r _ paddr < <(cl_probe primary --event probe --capacity 1000000 --wait-s 30)
p=$(cl_index_of "$paddr")
"$SLOT_BUILD/tools/slotctl" --host "$CL_MEMBERS" cluster

echo
echo "cluster-demo: slot-bench hot-release against the three members; kill -9 of n$p (pid ${CL_PID[$p]}) at half"
"$SLOT_BUILD/bench/slot-bench" hot-release --host "$CL_MEMBERS" --event demo --capacity "$capacity" \
    --connections 256 --json "$dir/bench.json" "$@" >"$dir/bench.out" 2>"$dir/bench.err" &
bench_pid=$!
half=$((capacity / 2))
sold=$(cl_probe wait-held --event demo --units "$half" --wait-s 120 2>/dev/null || echo "?")
killed_pid=${CL_PID[$p]}
{   # the shell's own "Killed" notice for the node is not news here
    failover_ms=$(cl_probe failover --event probe --kill "$killed_pid" --acks "$dir/probe-acks.jsonl" \
        --wait-s 30 2>>"$dir/probe.err") || failover_ms="none within 30 s"
    cl_reap "$p"
} 2>/dev/null
echo "cluster-demo: killed n$p with $sold units sold; first acknowledged write after ${failover_ms} ms"

bench_rc=0
wait "$bench_pid" || bench_rc=$?
bench_pid=""
cat "$dir/bench.out"

echo "cluster-demo: restarting n$p; it rejoins as a replica"
cl_node_start "$p"
members_rc=0
cl_probe members --want 3 --wait-s 60 || members_rc=$?
read -r _ naddr < <(cl_probe primary --wait-s 30)
np=$(cl_index_of "$naddr")
conv_rc=0
digests=$(cl_probe converge --wait-s 60) || conv_rc=$?
verify_rc=0
verify=$(cl_probe verify --event probe --capacity 1000000 --acks "$dir/probe-acks.jsonl" \
    --also "demo:$capacity") || verify_rc=$?
"$SLOT_BUILD/tools/slotctl" --host "$CL_MEMBERS" cluster

# The bench's own numbers, from its --json.
read -r b_holds b_units b_failovers b_retries b_gap b_status b_checked b_mism s_held s_conf s_avail < <(
    python3 - "$dir/bench.json" <<'EOF' || echo "? ? ? ? ? missing ? ? ? ? ?"
import json, sys
j = json.load(open(sys.argv[1]))
r, v = j["results"], j["verification"]
srv = j["events"][0].get("server", {}) if j["events"] else {}
print(r["holds"], r["held_units"], r["failovers"], r["retries"], f"{r['ack_gap_max_ms']:.0f}", v["status"],
      v["ledger"]["checked"], v["ledger"]["mismatches"], srv.get("held", "?"), srv.get("confirmed", "?"),
      srv.get("available", "?"))
EOF
)

ok=1
[ "$bench_rc" -eq 0 ] && [ "$b_status" = passed ] || ok=0
[ "$members_rc" -eq 0 ] && [ "$conv_rc" -eq 0 ] && [ "$verify_rc" -eq 0 ] || ok=0
case "$failover_ms" in none*) ok=0 ;; esac
[ "$b_units" = "$((s_held + s_conf))" ] 2>/dev/null || ok=0

echo
echo "cluster-demo report"
printf '  %-34s %s\n' "killed (kill -9)" "n$p, the primary, with $sold of $capacity units sold"
printf '  %-34s %s\n' "new primary" "n$np ($naddr)"
printf '  %-34s %s\n' "acknowledged holds (slot-bench)" "$b_holds holds, $b_units units"
printf '  %-34s %s\n' "held on the new primary" "held $s_held + confirmed $s_conf, available $s_avail (event view)"
printf '  %-34s %s\n' "bench ledger (get_hold each hold)" "$b_checked checked, $b_mism mismatches"
printf '  %-34s %s\n' "bench saw" "$b_failovers failovers, $b_retries requests sent again, longest without an acknowledged write $b_gap ms"
printf '  %-34s %s\n' "failover time" "$failover_ms ms (kill -9 to the first hold acknowledged by the new primary)"
echo "$verify" | sed -n 's/^probe holds /  probe holds: /p'
echo "  every member (held + confirmed + available = capacity; check clean):"
echo "$verify" | grep -v '^probe holds' | sed 's/^/    /'
echo "  digests (after n$p rejoined):"
echo "$digests" | sed 's/^/    /'
if [ "$ok" -eq 1 ]; then
    echo "verification: passed"
else
    echo "verification: FAILED (bench exit $bench_rc, bench verification $b_status; see $dir/*.log, $dir/bench.err)"
    exit 1
fi
