#!/usr/bin/env bash
# tools/placement-demo.sh — many replica sets of one placement: a multi-event hot release
# over two three-node sets, and one hot event moved from set 1 to set 2 while it sells.
# See --help.
set -euo pipefail

usage() {
    cat <<'EOT'
usage: tools/placement-demo.sh [--capacity N] [--connections N] [--bench-capacity N]

Builds slotd (tools/setup.sh; installs what is missing, etcd-server too), then on this
machine, all on loopback, with every file under ./slotd-placement-demo (wiped first):
  1. starts a private etcd and two replica sets of three slotd nodes (s1, s2; --placement
     demo, --durability sync);
  2. runs slot-bench multi-event --placement (19 events spread over both sets, each
     connection on its set's primary) and, beside it, the buyers of one more event, "hot",
     created on s1 (--capacity units, default 20000; --connections buyers, default 32),
     who follow `moving` and `wrong_set` with the same request key;
  3. when half of hot is held, moves it to s2 with `slotctl move hot --to s2`;
  4. checks every hold acknowledged for hot on s2 by id, s1's wrong_set for it, hot's view
     on s2, each set's digest on its three members, check on all six, and slot-bench's own
     verification; prints the report and "verification: passed" (exit 0) or FAILED (1).
Every process it starts is stopped by its PID. Logs: ./slotd-placement-demo/*.log.
EOT
}
for a in "$@"; do
    case "$a" in -h | --help) usage; exit 0 ;; esac
done
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
slot_need_packages etcd-server
slot_build
[ -x /usr/bin/etcd ] || { echo "placement-demo: /usr/bin/etcd is missing (Debian package etcd-server)" >&2; exit 1; }
exec python3 "$SLOT_ROOT/tools/placement-demo.py" "$SLOT_BUILD" "${SLOT_DEMO_DATA:-$PWD/slotd-placement-demo}" "$@"
