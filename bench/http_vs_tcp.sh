#!/usr/bin/env bash
# bench/http_vs_tcp.sh — holds/s over HTTP (keep-alive, POST /v1/hold) against the
# TCP protocol, in the same run of one slotd, with the same concurrency: N
# connections, each with one hold in flight (bench/http_load.c; HTTP/1.1 has
# no multiplexing, so TCP is held to one request in flight too). Rounds
# alternate tcp, http, tcp, http so a warming disk or cache favours neither.
#
#   bench/http_vs_tcp.sh [BUILD_DIR] [--conns N] [--seconds S] [--durability sync|nosync]
#
# Starts its own slotd on free loopback ports with a temporary data folder and
# stops it by PID. Prints one line per round and the best of each protocol.
set -euo pipefail
BUILD=${1:-build}
[ $# -gt 0 ] && shift
CONNS=256 SECONDS_EACH=5 DUR=sync
while [ $# -gt 0 ]; do
    case $1 in
    --conns) CONNS=$2; shift 2 ;;
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --durability) DUR=$2; shift 2 ;;
    *) echo "usage: http_vs_tcp.sh [BUILD_DIR] [--conns N] [--seconds S] [--durability sync|nosync]" >&2; exit 2 ;;
    esac
done
TMP=$(mktemp -d)
PID=""
trap '[ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$PID" ] && wait "$PID" 2>/dev/null; rm -rf "$TMP"' EXIT
"$BUILD/slotd" --data "$TMP/data" --listen 127.0.0.1:0 --http 127.0.0.1:0 --durability "$DUR" \
    --max-connections $((CONNS * 2)) >"$TMP/out" 2>"$TMP/log" &
PID=$!
for _ in $(seq 1 100); do
    [ "$(wc -l <"$TMP/out")" -ge 2 ] && break
    sleep 0.05
done
TCP=$(sed -n 's/^listening on 127.0.0.1://p' "$TMP/out")
HTTP=$(sed -n 's/^http listening on 127.0.0.1://p' "$TMP/out")
[ -n "$TCP" ] && [ -n "$HTTP" ] || { echo "slotd did not start: $(cat "$TMP/log")" >&2; exit 1; }
curl -s -X POST "http://127.0.0.1:$HTTP/v1/create_event" \
    -d '{"event":"bench","capacity":1099511627776,"max_per_request":100,"hold_ttl_ms":3600000}' >/dev/null
echo "slotd --durability $DUR, $CONNS connections, ${SECONDS_EACH} s per round, $(nproc) CPUs (client and server share them)"
declare -a T=() H=()
for round in 1 2; do
    for mode in tcp http; do
        port=$TCP
        [ $mode = http ] && port=$HTTP
        line=$("$BUILD/bench/http_load" --mode $mode --port "$port" --conns "$CONNS" --seconds "$SECONDS_EACH" \
            --tag "r$round$mode")
        echo "round $round: $line"
        v=$(sed 's/.*holds_per_s \([0-9]*\).*/\1/' <<<"$line")
        if [ $mode = tcp ]; then T+=("$v"); else H+=("$v"); fi
    done
done
t=$(printf '%s\n' "${T[@]}" | sort -n | tail -1)
h=$(printf '%s\n' "${H[@]}" | sort -n | tail -1)
echo "best of 2: tcp $t holds/s, http $h holds/s (http/tcp $(awk -v a="$h" -v b="$t" 'BEGIN { printf "%.2f", a / b }'))"
