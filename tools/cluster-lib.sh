# shellcheck shell=bash
# tools/cluster-lib.sh — a private replica set on loopback, for tools/cluster-demo.sh and
# bench/cluster_*.sh (sourced, after tools/setup.sh). One etcd and three slotd nodes on
# free loopback ports, all data under one folder; everything is stopped by PID.
#
#   cl_init DIR           wipe DIR, make it, write the shared secret (mode 600)
#   cl_etcd_start         start /usr/bin/etcd on free ports; waits for /health
#   cl_node_start I       start node nI (I = 1..3) on its port (the same on a restart)
#   cl_set_start          etcd, then n1 (it founds the set), n2, n3; waits for 3 members
#   cl_reap I             wait for node nI after it was killed (quietly)
#   cl_stop_all           kill what is still running (the EXIT trap calls it)
#   cl_probe CMD ARGS     tools/cluster-probe.py CMD --members "$CL_MEMBERS" ARGS
#
# CL_NODE_FLAGS (array) adds flags to every node; CL_DURABILITY is sync unless set.

CL_PROBE="$SLOT_ROOT/tools/cluster-probe.py"
CL_DURABILITY=${CL_DURABILITY:-sync}
CL_NAME=${CL_NAME:-demo}
declare -a CL_PID=() CL_PORT=()
[ -n "${CL_NODE_FLAGS+x}" ] || declare -a CL_NODE_FLAGS=()
CL_ETCD_PID=""

# A port nothing listens on now (the kernel's pick; a clash at bind is retried by the caller).
cl_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cl_init() {
    CL_DIR=$1
    rm -rf "$CL_DIR"
    mkdir -p "$CL_DIR"
    CL_SECRET="$CL_DIR/secret"
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$CL_SECRET")
    chmod 600 "$CL_SECRET"
    local i
    for i in 1 2 3; do CL_PORT[$i]=$(cl_free_port); done
    CL_MEMBERS="127.0.0.1:${CL_PORT[1]},127.0.0.1:${CL_PORT[2]},127.0.0.1:${CL_PORT[3]}"
}

cl_etcd_start() {
    local c p
    for _ in 1 2 3; do
        c=$(cl_free_port); p=$(cl_free_port)
        CL_ETCD="http://127.0.0.1:$c"
        /usr/bin/etcd --name demo --data-dir "$CL_DIR/etcd" --listen-client-urls "$CL_ETCD" \
            --advertise-client-urls "$CL_ETCD" --listen-peer-urls "http://127.0.0.1:$p" \
            --initial-advertise-peer-urls "http://127.0.0.1:$p" --initial-cluster "demo=http://127.0.0.1:$p" \
            >>"$CL_DIR/etcd.log" 2>&1 &
        CL_ETCD_PID=$!
        for _ in $(seq 1 200); do
            kill -0 "$CL_ETCD_PID" 2>/dev/null || break
            if python3 -c 'import sys, urllib.request
sys.exit(0 if b"\"health\":\"true\"" in urllib.request.urlopen(sys.argv[1] + "/health", timeout=1).read() else 1)' \
                "$CL_ETCD" 2>/dev/null; then
                return 0
            fi
            sleep 0.1
        done
        kill -9 "$CL_ETCD_PID" 2>/dev/null; wait "$CL_ETCD_PID" 2>/dev/null
        CL_ETCD_PID=""
        rm -rf "$CL_DIR/etcd"
    done
    echo "cluster: etcd did not start (see $CL_DIR/etcd.log)" >&2
    return 1
}

cl_node_start() {
    local i=$1
    : >"$CL_DIR/n$i.out"
    "$SLOT_BUILD/slotd" --data "$CL_DIR/n$i" --listen "127.0.0.1:${CL_PORT[$i]}" --durability "$CL_DURABILITY" \
        --cluster "$CL_NAME" --node "n$i" --etcd "$CL_ETCD" --cluster-secret-file "$CL_SECRET" \
        "${CL_NODE_FLAGS[@]}" >"$CL_DIR/n$i.out" 2>>"$CL_DIR/n$i.log" &
    CL_PID[$i]=$!
    for _ in $(seq 1 200); do
        grep -q '^listening on' "$CL_DIR/n$i.out" && return 0
        kill -0 "${CL_PID[$i]}" 2>/dev/null || break
        sleep 0.05
    done
    echo "cluster: node n$i did not start (see $CL_DIR/n$i.log)" >&2
    tail -5 "$CL_DIR/n$i.log" >&2
    return 1
}

cl_probe() {
    local cmd=$1
    shift
    python3 "$CL_PROBE" "$cmd" --members "$CL_MEMBERS" "$@"
}

cl_set_start() {
    cl_etcd_start
    cl_node_start 1
    cl_probe primary --wait-s 30 >/dev/null # n1 founds the set
    cl_node_start 2
    cl_node_start 3
    cl_probe members --want 3 --wait-s 60
}

# The node index (1..3) whose port is in "ADDR" as printed by `cl_probe primary`.
cl_index_of() {
    local i
    for i in 1 2 3; do
        [ "${1##*:}" = "${CL_PORT[$i]}" ] && { echo "$i"; return 0; }
    done
    return 1
}

cl_reap() {
    { wait "${CL_PID[$1]}"; } 2>/dev/null || true
    CL_PID[$1]=""
}

cl_stop_all() {
    local i
    for i in 1 2 3; do
        if [ -n "${CL_PID[$i]:-}" ]; then
            kill "${CL_PID[$i]}" 2>/dev/null || true
        fi
    done
    for i in 1 2 3; do
        [ -n "${CL_PID[$i]:-}" ] && cl_reap "$i"
    done
    if [ -n "$CL_ETCD_PID" ]; then
        kill "$CL_ETCD_PID" 2>/dev/null || true
        { wait "$CL_ETCD_PID"; } 2>/dev/null || true
        CL_ETCD_PID=""
    fi
}
