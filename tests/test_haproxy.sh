#!/usr/bin/env bash
# tests/test_haproxy.sh — examples/haproxy.cfg in front of a 3-node replica set
# (tools/cluster-lib.sh: one etcd, three slotd nodes with --http on loopback
# ports the kernel picks) sends HTTP writes to the primary, and after kill -9
# of the primary, writes through HAProxy are acknowledged again within a
# bound (30 s here; a failover takes about a second). Also: a replica answers
# a write 307 not_primary with Location on the primary's HTTP address.
#
#   test_haproxy.sh SOURCE_ROOT BUILD_DIR
#
# Exits 77 (skipped) without haproxy or etcd. Everything it starts is stopped
# by PID; its files are in a temporary folder.
set -euo pipefail

if [ $# -ne 2 ]; then
    echo "usage: test_haproxy.sh SOURCE_ROOT BUILD_DIR" >&2
    exit 2
fi
SLOT_ROOT=$(cd "$1" && pwd)
SLOT_BUILD=$(cd "$2" && pwd)
if ! command -v haproxy >/dev/null; then
    echo "skipped: haproxy is not installed (Debian: haproxy)"
    exit 77
fi
if [ ! -x /usr/bin/etcd ]; then
    echo "skipped: /usr/bin/etcd is not installed (Debian: etcd-server)"
    exit 77
fi

CL_NAME=haproxy-test
CL_DURABILITY=nosync
declare -a CL_NODE_FLAGS=(--http 127.0.0.1:0)
# shellcheck source=../tools/cluster-lib.sh
. "$SLOT_ROOT/tools/cluster-lib.sh"

TMP=$(mktemp -d)
HAPROXY_PID=""
cleanup() {
    if [ -n "$HAPROXY_PID" ]; then
        kill "$HAPROXY_PID" 2>/dev/null || true
        { wait "$HAPROXY_PID"; } 2>/dev/null || true
    fi
    cl_stop_all
    rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    for f in "$CL_DIR"/n*.log "$TMP/haproxy.log"; do
        [ -f "$f" ] && { echo "--- $f" >&2; tail -20 "$f" >&2; }
    done
    exit 1
}

# http METHOD URL [BODY [HEADER...]]: prints "STATUS BODY"; STATUS 000 when it did not connect.
http() {
    local method=$1 url=$2 body=${3:-}
    shift 3 || shift $#
    local args=(-s -o "$TMP/body" -D "$TMP/headers" -w '%{http_code}' --max-time 5 -X "$method")
    [ -n "$body" ] && args+=(-H 'Content-Type: application/json' --data-binary "$body")
    local h
    for h in "$@"; do args+=(-H "$h"); done
    local code
    code=$(curl "${args[@]}" "$url" 2>/dev/null) || true
    echo "${code:-000} $(cat "$TMP/body" 2>/dev/null)"
    : >"$TMP/body"
}

cl_init "$TMP/set"
cl_set_start >/dev/null
declare -a HTTP=()
for i in 1 2 3; do
    HTTP[$i]=$(sed -n 's/^http listening on //p' "$CL_DIR/n$i.out")
    [ -n "${HTTP[$i]}" ] || fail "node n$i did not announce its HTTP address"
done
read -r idx _ < <(cl_probe primary --wait-s 30)
P=$((idx + 1))
R=$((P % 3 + 1))
[ "$(http GET "http://${HTTP[$P]}/primary" | cut -d' ' -f1)" = 200 ] || fail "/primary on the primary n$P is not 200"
[ "$(http GET "http://${HTTP[$R]}/primary" | cut -d' ' -f1)" = 503 ] || fail "/primary on the replica n$R is not 503"

# HAProxy from the example, on this set's addresses and a free port
FRONT=127.0.0.1:$(cl_free_port)
sed -e "s/bind 127.0.0.1:8000/bind $FRONT/" -e "s/10.0.0.1:8080/${HTTP[1]}/" -e "s/10.0.0.2:8080/${HTTP[2]}/" \
    -e "s/10.0.0.3:8080/${HTTP[3]}/" "$SLOT_ROOT/examples/haproxy.cfg" >"$TMP/haproxy.cfg"
haproxy -c -q -f "$TMP/haproxy.cfg" || fail "haproxy refuses the example's configuration"
haproxy -db -f "$TMP/haproxy.cfg" >"$TMP/haproxy.log" 2>&1 &
HAPROXY_PID=$!

# HAProxy counts every server up until its checks fail: wait for the two replicas' DOWN
ok=""
for _ in $(seq 1 100); do
    [ "$(grep -c 'is DOWN' "$TMP/haproxy.log" || true)" -ge 2 ] && { ok=1; break; }
    sleep 0.1
done
[ -n "$ok" ] || fail "haproxy did not mark the two replicas down"
ok=""
for _ in $(seq 1 100); do
    out=$(http POST "http://$FRONT/v1/create_event" '{"event":"ha","capacity":1000,"max_per_user":1000}')
    [ "${out%% *}" = 200 ] && { ok=1; break; }
    sleep 0.1
done
[ -n "$ok" ] || fail "create_event through haproxy: $out"
out=$(http POST "http://$FRONT/v1/hold" '{"event":"ha","user":"u1","qty":2}' 'Idempotency-Key: before')
[ "${out%% *}" = 200 ] && [[ "$out" == *'"status":"held"'* ]] || fail "a hold through haproxy: $out"
hold=$(sed 's/.*"hold":"\([0-9a-f]*\)".*/\1/' <<<"$out")

# a replica: 307 not_primary, Location on the primary's HTTP address
out=$(http POST "http://${HTTP[$R]}/v1/hold" '{"event":"ha","user":"u1","qty":1}' 'Idempotency-Key: to-replica')
[ "${out%% *}" = 307 ] && [[ "$out" == *'"error":"not_primary"'* ]] || fail "a write to the replica n$R: $out"
grep -qi "^Location: http://${HTTP[$P]}/v1/hold" "$TMP/headers" || fail "307 without Location on n$P's HTTP address: $(cat "$TMP/headers")"

# kill -9 the primary; the same write, sent again with its key, is acknowledged through haproxy
kill -9 "${CL_PID[$P]}"
cl_reap "$P"
t0=$(date +%s%N)
ok=""
for _ in $(seq 1 300); do
    out=$(http POST "http://$FRONT/v1/hold" '{"event":"ha","user":"u2","qty":1}' 'Idempotency-Key: after')
    [ "${out%% *}" = 200 ] && { ok=1; break; }
    sleep 0.1
done
[ -n "$ok" ] || fail "no write through haproxy was acknowledged within 30 s of the kill (last: $out)"
ms=$((($(date +%s%N) - t0) / 1000000))
[[ "$out" == *'"status":"held"'* ]] || fail "the hold after the failover: $out"
out2=$(http POST "http://$FRONT/v1/hold" '{"event":"ha","user":"u2","qty":1}' 'Idempotency-Key: after')
[[ "$out2" == *'"replay":true'* ]] || fail "the same key again is a replay: $out2"
out=$(http POST "http://$FRONT/v1/get_hold" "{\"event\":\"ha\",\"user\":\"u1\",\"hold\":\"$hold\"}")
[ "${out%% *}" = 200 ] && [[ "$out" == *'"status":"held"'* ]] || fail "the hold acknowledged before the kill: $out"
echo "ok: writes through haproxy acknowledged again ${ms} ms after kill -9 of the primary n$P"
