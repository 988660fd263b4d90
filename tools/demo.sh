#!/usr/bin/env bash
# tools/demo.sh — the main job: a hot release against a real, durable slotd.
# Builds slotd, starts it on a free loopback port with its LMDB store in
# ./slotd-demo-data (wiped first; it is the demo's own), runs slot-bench
# hot-release (100,000 units, 256 connections), prints the report, stops slotd.
# Extra arguments go to slot-bench (e.g. --capacity 200000 --pipeline 16).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

slot_need_packages
slot_build

data=${SLOT_DEMO_DATA:-$PWD/slotd-demo-data}
rm -rf "$data"
out=$(mktemp)
"$SLOT_BUILD/slotd" --data "$data" --listen 127.0.0.1:0 --durability sync >"$out" 2>"$data.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -f "$out"' EXIT
port=""
for _ in $(seq 1 100); do
    port=$(sed -n 's/^listening on .*:\([0-9][0-9]*\)$/\1/p' "$out" | head -1)
    [ -n "$port" ] && break
    kill -0 "$pid" 2>/dev/null || { cat "$data.log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$port" ] || { echo "demo: slotd did not start (see $data.log)" >&2; exit 1; }
echo "demo: slotd (pid $pid) on 127.0.0.1:$port, store in $data, durability sync"
"$SLOT_BUILD/bench/slot-bench" hot-release --port "$port" --capacity 100000 --connections 256 "$@"
