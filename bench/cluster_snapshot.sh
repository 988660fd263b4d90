#!/usr/bin/env bash
# bench/cluster_snapshot.sh [HOLDS] — joining by snapshot, measured (docs/design.md, "Joining
# by snapshot"): a three-node set on loopback sells HOLDS units (default 100000, one unit per
# hold), then replica n3 is killed, its data folder wiped, and it is started again while a
# second sale runs; it rejoins by a snapshot from the primary. Prints the snapshot's seq and
# size, the time to make it, to send it, and from its first byte to installed, from the nodes'
# logs, and the members' digests afterwards. Everything is stopped by PID; data under
# ${SLOT_BENCH_DATA:-./slotd-cluster-snapshot}.
set -euo pipefail
holds=${1:-100000}
case "$holds" in '' | *[!0-9]*) echo "usage: bench/cluster_snapshot.sh [HOLDS]" >&2; exit 64 ;; esac
[ "$holds" -ge 1000 ] && [ "$holds" -le 10000000 ] || { echo "cluster_snapshot: HOLDS 1000..10000000" >&2; exit 64; }

. "$(dirname "${BASH_SOURCE[0]}")/../tools/setup.sh"
slot_need_packages etcd-server
slot_build
read -r -a CL_NODE_FLAGS <<<"${SLOT_BENCH_NODE_FLAGS:-}"
. "$SLOT_ROOT/tools/cluster-lib.sh"

dir=${SLOT_BENCH_DATA:-$PWD/slotd-cluster-snapshot}
trap cl_stop_all EXIT
trap 'exit 130' INT TERM
cl_init "$dir"
cl_set_start
primary=$(cl_probe primary --wait-s 30)
echo "cluster_snapshot: $(nproc) CPUs; set $CL_MEMBERS; primary $primary; selling $holds units"
"$SLOT_BUILD/bench/slot-bench" hot-release --host "$CL_MEMBERS" --connections 64 --pipeline 16 --capacity "$holds" \
    --json "$dir/sale1.json" >"$dir/sale1.out" 2>&1
p=$(cl_index_of "$(cl_probe primary --wait-s 30)")
victim=3
[ "$p" != 3 ] || victim=2
kill -9 "${CL_PID[$victim]}"
cl_reap "$victim"
rm -rf "$dir/n$victim"
sleep 2 # dropped from the configuration after --repl-timeout-ms
cl_node_start "$victim"
"$SLOT_BUILD/bench/slot-bench" hot-release --host "$CL_MEMBERS" --connections 64 --pipeline 4 --capacity 20000 \
    --json "$dir/sale2.json" >"$dir/sale2.out" 2>&1
cl_probe members --want 3 --wait-s 60 >/dev/null
grep -h 'snapshot' "$dir/n$p.log" | grep "n$victim" | tail -3
grep -h 'snapshot' "$dir/n$victim.log" | tail -2
echo "  primary data.mdb: $(stat -c %s "$dir/n$p/data.mdb") bytes (uncompacted)"
for i in 1 2 3; do
    python3 - "127.0.0.1:${CL_PORT[$i]}" "n$i" <<'PY'
import json, socket, sys
h, p = sys.argv[1].rsplit(":", 1)
for _ in range(100):
    s = socket.create_connection((h, int(p)), timeout=5)
    s.sendall(b'{"op":"digest"}\n')
    r = json.loads(s.makefile().readline())
    s.close()
    if r.get("ok"):
        break
print(f"  {sys.argv[2]}: seq {r.get('seq')} digest {r.get('digest', r)}")
PY
done
