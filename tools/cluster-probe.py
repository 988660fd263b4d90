#!/usr/bin/env python3
"""tools/cluster-probe.py — talks to the members of a slotd replica set for
tools/cluster-demo.sh and bench/cluster_failover.sh (Python 3, standard library).

  primary    --members M [--event E --capacity N]   wait for the member that is primary
             and takes a write (create_event of E, a replay after the first); prints
             "INDEX ADDR" (INDEX counts from 0 in M)
  members    --members M --want K                   wait until every member answers the
             cluster op as primary or replica with K members in the configuration
  view       --members M --event E                  the event view of every member
  converge   --members M                            wait until every member has the same
             seq and digest; prints "ADDR seq S digest D" per member
  failover   --members M --event E --kill PID --acks FILE
             kill -9 PID, then send a hold with a fresh request key to every member every
             --interval-ms until one is acknowledged; prints the milliseconds from the
             kill to that acknowledgement. Every acknowledged hold is appended to FILE.
  wait-held  --members M --event E --units N         wait until some member's event view
             shows at least N units held or confirmed
  verify     --members M --event E --acks FILE --capacity N [--also EVENT:CAPACITY ...]
             on the primary, get_hold of every acknowledged hold in FILE (it must be there,
             held, with its qty, and no two acks may share a hold id); on every member,
             held + confirmed + available = capacity (of E and of every --also event) and
             check finds no violation.

M is a comma-separated list of HOST:PORT. Every wait is bounded by --wait-s; exit status 0
on success, 1 when a check failed or a wait ran out, 2 on a usage error. Only loopback
addresses are accepted.
"""
import argparse
import json
import os
import selectors
import signal
import socket
import sys
import time

LINE_MAX = 1 << 20


def parse_members(text):
    out = []
    for part in text.split(","):
        host, sep, port = part.strip().rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            sys.exit(f"cluster-probe: bad member '{part}' (expected HOST:PORT)")
        if not (host.startswith("127.") or host in ("localhost", "[::1]", "::1")):
            sys.exit(f"cluster-probe: {part}: only loopback members")
        out.append((host.strip("[]"), int(port)))
    if not out:
        sys.exit("cluster-probe: --members is empty")
    return out


def addr_str(a):
    return f"{a[0]}:{a[1]}"


def call(addr, req, timeout_s=2.0):
    """One request on a new connection; the reply as a dict, or None."""
    try:
        with socket.create_connection(addr, timeout=timeout_s) as s:
            s.sendall((json.dumps(req) + "\n").encode())
            buf = b""
            end = time.monotonic() + timeout_s
            while b"\n" not in buf and len(buf) < LINE_MAX and time.monotonic() < end:
                chunk = s.recv(65536)
                if not chunk:
                    return None
                buf += chunk
            if b"\n" not in buf:
                return None
            return json.loads(buf.split(b"\n", 1)[0])
    except (OSError, ValueError):
        return None


def find_primary(members, wait_s, event=None, capacity=0):
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        for i, a in enumerate(members):
            r = call(a, {"op": "cluster"}, 1.0)
            if not r or r.get("role") != "primary":
                continue
            if event is None:
                return i
            w = call(a, {"op": "create_event", "event": event, "capacity": capacity, "shards": 4,
                         "hold_ttl_ms": 86400000, "max_per_request": 1000}, 2.0)
            if w and w.get("ok"):
                return i
        time.sleep(0.05)
    return -1


def cmd_primary(o, members):
    i = find_primary(members, o.wait_s, o.event, o.capacity)
    if i < 0:
        print(f"cluster-probe: no primary took a write within {o.wait_s} s", file=sys.stderr)
        return 1
    print(i, addr_str(members[i]))
    return 0


def cmd_members(o, members):
    end = time.monotonic() + o.wait_s
    while time.monotonic() < end:
        good = 0
        for a in members:
            r = call(a, {"op": "cluster"}, 1.0)
            if r and r.get("role") in ("primary", "replica") and len(r.get("members", [])) == o.want:
                good += 1
        if good == len(members):
            return 0
        time.sleep(0.1)
    print(f"cluster-probe: the members did not all see {o.want} members within {o.wait_s} s", file=sys.stderr)
    return 1


def cmd_view(o, members):
    for a in members:
        r = call(a, {"op": "event", "event": o.event}) or {}
        print(addr_str(a), " ".join(f"{k} {r.get(k)}" for k in ("capacity", "available", "held", "confirmed")))
    return 0


def cmd_wait_held(o, members):
    end = time.monotonic() + o.wait_s
    while time.monotonic() < end:
        for a in members:
            v = call(a, {"op": "event", "event": o.event}, 1.0)
            if v and v.get("ok") and v["held"] + v["confirmed"] >= o.units:
                print(v["held"] + v["confirmed"])
                return 0
        time.sleep(0.02)
    print(f"cluster-probe: {o.event} did not reach {o.units} units held within {o.wait_s} s", file=sys.stderr)
    return 1


def digests(members):
    out = []
    for a in members:
        r = call(a, {"op": "digest"})
        out.append((r.get("seq"), r.get("digest")) if r and r.get("ok") else (None, None))
    return out


def cmd_converge(o, members):
    end = time.monotonic() + o.wait_s
    d = digests(members)
    while time.monotonic() < end:
        if d[0][0] is not None and all(x == d[0] for x in d):
            break
        time.sleep(0.1)
        d = digests(members)
    for a, (seq, dig) in zip(members, d):
        print(f"{addr_str(a)} seq {seq} digest {dig}")
    same = d[0][0] is not None and all(x == d[0] for x in d)
    if not same:
        print(f"cluster-probe: the members did not converge within {o.wait_s} s", file=sys.stderr)
    return 0 if same else 1


class Conn:
    """A pipelined connection to one member: requests by id, replies matched by id."""

    def __init__(self, addr):
        self.addr = addr
        self.sock = None
        self.buf = b""
        self.next_try = 0.0

    def open(self, sel, now):
        if self.sock or now < self.next_try:
            return
        self.next_try = now + 0.05
        try:
            s = socket.create_connection(self.addr, timeout=0.05)
        except OSError:
            return
        s.setblocking(False)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock = s
        self.buf = b""
        sel.register(s, selectors.EVENT_READ, self)

    def close(self, sel):
        if self.sock:
            sel.unregister(self.sock)
            self.sock.close()
        self.sock = None


def cmd_failover(o, members):
    run = f"{os.getpid()}-{time.time_ns()}"
    sel = selectors.DefaultSelector()
    conns = [Conn(a) for a in members]
    sent = 0
    first = [None]
    acks = open(o.acks, "a")

    def read_ready(timeout_s, start):
        for k, _ in sel.select(timeout_s):
            c = k.data
            try:
                chunk = c.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                c.close(sel)
                continue
            c.buf += chunk
            while b"\n" in c.buf:
                line, c.buf = c.buf.split(b"\n", 1)
                try:
                    r = json.loads(line)
                except ValueError:
                    continue
                if r.get("ok") and r.get("status") == "held":
                    if first[0] is None:
                        first[0] = (time.monotonic() - start) * 1000.0
                    n = r["id"].rsplit("-", 1)[1]
                    acks.write(json.dumps({"user": f"u{run}-{n}", "request": r["id"], "hold": r["hold"],
                                           "qty": r.get("qty", 1), "addr": addr_str(c.addr)}) + "\n")

    start = time.monotonic()
    os.kill(o.kill, signal.SIGKILL)
    end = start + o.wait_s
    next_send = start
    try:
        while time.monotonic() < end and first[0] is None:
            now = time.monotonic()
            if now >= next_send:
                next_send = now + o.interval_ms / 1000.0
                for c in conns:
                    c.open(sel, now)
                    if not c.sock:
                        continue
                    sent += 1
                    key = f"p{run}-{sent}"
                    req = {"id": key, "op": "hold", "event": o.event, "user": f"u{run}-{sent}", "request": key, "qty": 1}
                    try:
                        c.sock.send((json.dumps(req) + "\n").encode())
                    except OSError:
                        c.close(sel)
            read_ready(max(0.0, next_send - time.monotonic()), start)
        # The answers still on their way, for a bounded time: each acknowledged hold
        # is one more to check.
        drain_end = time.monotonic() + 0.3
        while time.monotonic() < drain_end and any(c.sock for c in conns):
            read_ready(0.02, start)
    finally:
        acks.close()
        for c in conns:
            c.close(sel)
    if first[0] is None:
        print(f"cluster-probe: no hold acknowledged within {o.wait_s} s of the kill ({sent} sent)", file=sys.stderr)
        return 1
    print(f"{first[0]:.1f}")
    return 0


def cmd_verify(o, members):
    p = find_primary(members, o.wait_s)
    if p < 0:
        print("cluster-probe: verify: no primary", file=sys.stderr)
        return 1
    prim = members[p]
    problems = []
    acked, ids = 0, set()
    with open(o.acks) as f:
        for line in f:
            a = json.loads(line)
            acked += 1
            if a["hold"] in ids:
                problems.append(f"hold {a['hold']} acknowledged twice")
            ids.add(a["hold"])
            r = call(prim, {"op": "get_hold", "event": o.event, "hold": a["hold"], "user": a["user"]})
            if not r or not r.get("ok") or r.get("status") != "held" or r.get("qty") != a["qty"]:
                problems.append(f"acknowledged hold {a['hold']} (request {a['request']}): primary says {r}")
    found = acked - sum(1 for x in problems if x.startswith("acknowledged hold"))
    sums = []
    events = [(o.event, o.capacity, acked)]
    for x in o.also:
        name, _, cap = x.rpartition(":")
        events.append((name, int(cap), 0))
    for a in members:
        for name, cap, least in events:
            v = call(a, {"op": "event", "event": name})
            if not v or not v.get("ok"):
                problems.append(f"{addr_str(a)}: event view of {name} failed: {v}")
                continue
            total = v["held"] + v["confirmed"] + v["available"]
            sums.append(f"{addr_str(a)} {name}: held {v['held']} confirmed {v['confirmed']} available "
                        f"{v['available']} capacity {v['capacity']}")
            if total != cap or v["capacity"] != cap:
                problems.append(f"{addr_str(a)}: {name}: held+confirmed+available = {total}, capacity {cap}")
            if v["held"] + v["confirmed"] < least:
                problems.append(f"{addr_str(a)}: {name}: {v['held'] + v['confirmed']} units held, {least} acknowledged")
        c = call(a, {"op": "check"}, 30.0)
        if not c or not c.get("ok") or c.get("violations") != []:
            problems.append(f"{addr_str(a)}: check: {c}")
    print(f"probe holds acknowledged {acked}, found on the primary {found}, lost {acked - found}")
    for s in sums:
        print(s)
    for x in problems[:20]:
        print("problem:", x)
    return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["primary", "members", "view", "converge", "failover", "verify", "wait-held"])
    ap.add_argument("--members", required=True)
    ap.add_argument("--event")
    ap.add_argument("--capacity", type=int, default=0)
    ap.add_argument("--want", type=int, default=3)
    ap.add_argument("--units", type=int, default=0)
    ap.add_argument("--also", action="append", default=[])
    ap.add_argument("--kill", type=int)
    ap.add_argument("--acks")
    ap.add_argument("--interval-ms", type=float, default=5.0)
    ap.add_argument("--wait-s", type=float, default=30.0)
    o = ap.parse_args()
    members = parse_members(o.members)
    need = {"failover": ("event", "kill", "acks"), "verify": ("event", "acks"), "view": ("event",), "wait-held": ("event",)}
    for n in need.get(o.command, ()):
        if getattr(o, n) is None:
            ap.error(f"{o.command} needs --{n}")
    if not 0.5 <= o.interval_ms <= 1000 or not 0 < o.wait_s <= 600:
        ap.error("--interval-ms 0.5..1000, --wait-s up to 600")
    return globals()["cmd_" + o.command.replace("-", "_")](o, members)


if __name__ == "__main__":
    sys.exit(main())
