#!/usr/bin/env python3
"""tools/placement-demo.py — the placement demo's driver (tools/placement-demo.sh runs it after
building slotd; Python 3, standard library). On loopback only:

  1. a private etcd and two replica sets of three slotd nodes each (s1, s2; --placement demo,
     --durability sync, one shared secret), every file under DIR;
  2. a multi-event hot release by slot-bench over both sets (--placement: 19 events created
     round-robin over the sets, each connection on its set's primary), and beside it the
     buyers of one more hot event, "hot", created on s1: CONNS connections holding one to
     four units each with fresh request keys, following `moving` (retry_after_ms) and
     `wrong_set` (the owner's primary) with the same request;
  3. when half of hot's units are held, `slotctl move hot --to s2` on s1's primary, while
     both loads go on;
  4. when everything is sold: every hold acknowledged for hot is looked up by id on s2 (it
     must be there, with its qty); s1 answers wrong_set for hot; hot's view on s2 equals the
     units acknowledged; each set's three members reach one seq and digest; check is clean
     on every member; slot-bench's own verification passed;
  5. prints the report and "verification: passed" (exit 0) or "verification: FAILED" (1).

Every process it starts is stopped by its PID. Usage: placement-demo.py BUILD DIR
[--capacity N (hot's units, default 20000)] [--connections N (hot's buyers, default 32)]
[--bench-capacity N (each of the 19 events, default 5000)].
"""
import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

LOOP = "127.0.0.1"
STARTED = []


def free_port():
    s = socket.socket()
    s.bind((LOOP, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def call(addr, req, timeout=10.0):
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall((json.dumps(req) + "\n").encode())
        buf = b""
        while not buf.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                raise ConnectionError("closed")
            buf += chunk
        return json.loads(buf)


def try_call(addr, req, timeout=5.0):
    try:
        return call(addr, req, timeout)
    except (OSError, ValueError, ConnectionError):
        return None


def wait(cond, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise SystemExit(f"placement-demo: {what} did not happen within {seconds} s")


def start_etcd(d):
    c, p = free_port(), free_port()
    url = f"http://{LOOP}:{c}"
    log = open(os.path.join(d, "etcd.log"), "w")
    proc = subprocess.Popen(["/usr/bin/etcd", "--name", "demo", "--data-dir", os.path.join(d, "etcd"),
                             "--listen-client-urls", url, "--advertise-client-urls", url,
                             "--listen-peer-urls", f"http://{LOOP}:{p}",
                             "--initial-advertise-peer-urls", f"http://{LOOP}:{p}",
                             "--initial-cluster", f"demo=http://{LOOP}:{p}"], stdout=log, stderr=log)
    STARTED.append(proc)
    wait(lambda: try_connect(c), 30, "etcd listening")
    return url


def try_connect(port):
    try:
        socket.create_connection((LOOP, port), timeout=1).close()
        return True
    except OSError:
        return False


def start_node(build, d, sset, node, port, etcd, secret):
    data = os.path.join(d, f"{sset}-{node}")
    out = open(os.path.join(d, f"{sset}-{node}.out"), "w")
    err = open(os.path.join(d, f"{sset}-{node}.log"), "w")
    proc = subprocess.Popen([os.path.join(build, "slotd"), "--data", data, "--listen", f"{LOOP}:{port}",
                             "--cluster", sset, "--node", node, "--etcd", etcd, "--cluster-secret-file", secret,
                             "--placement", "demo", "--durability", "sync", "--heartbeat-ms", "50",
                             "--failover-timeout-ms", "500", "--repl-timeout-ms", "300"], stdout=out, stderr=err)
    STARTED.append(proc)
    wait(lambda: try_connect(port), 30, f"{sset}/{node} listening")
    return proc


def primary_of(members):
    for m in members:
        r = try_call(m, {"op": "cluster"})
        if r and r.get("role") == "primary":
            return m
    return None


class Buyers:
    """The hot event's buyers: each connection holds 1..4 units with fresh keys until sold out."""

    def __init__(self, event, start, conns, seed):
        self.event, self.target, self.conns = event, start, conns
        self.rng = random.Random(seed)
        self.acks = []  # (hold, user, qty)
        self.moving = self.redirects = self.sold_out = 0
        self.done = False
        self.max_gap_ms = 0
        self.last_ack = time.time()

    async def one(self, k):
        n = 0
        target = self.target
        reader = writer = None
        while not self.done:
            user, n = f"u{k}", n + 1
            req = {"op": "hold", "event": self.event, "user": user, "request": f"k{k}-{n}",
                   "qty": self.rng.randint(1, 4)}
            for _ in range(2000):  # bounded: a request is sent again at most this often
                if writer is None:
                    host, port = target.rsplit(":", 1)
                    reader, writer = await asyncio.open_connection(host, int(port))
                writer.write((json.dumps(req) + "\n").encode())
                await writer.drain()
                line = await reader.readline()
                if not line:
                    writer.close()
                    reader = writer = None
                    await asyncio.sleep(0.05)
                    continue
                r = json.loads(line)
                err = r.get("error")
                if err == "moving":
                    self.moving += 1
                    await asyncio.sleep(r.get("retry_after_ms", 100) / 1000.0)
                    continue
                if err in ("wrong_set", "not_primary") and r.get("primary"):
                    self.redirects += 1
                    target = self.target = r["primary"]
                    writer.close()
                    reader = writer = None
                    continue
                break
            if r.get("ok") and r.get("status") == "held":
                now = time.time()
                self.max_gap_ms = max(self.max_gap_ms, (now - self.last_ack) * 1000)
                self.last_ack = now
                self.acks.append((r["hold"], user, req["qty"]))
            elif r.get("ok") and r.get("status") == "sold_out":
                if r.get("available", 0) == 0:
                    self.done = True
                self.sold_out += 1
            else:
                raise SystemExit(f"placement-demo: hot hold answered {r}")
        if writer:
            writer.close()

    async def run(self):
        await asyncio.gather(*(self.one(k) for k in range(self.conns)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("dir")
    ap.add_argument("--capacity", type=int, default=20000)
    ap.add_argument("--connections", type=int, default=32)
    ap.add_argument("--bench-capacity", type=int, default=5000)
    a = ap.parse_args()
    d = a.dir
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    secret = os.path.join(d, "secret")
    with open(secret, "w") as f:
        f.write(os.urandom(24).hex())
    os.chmod(secret, 0o600)
    ok = True
    try:
        etcd = start_etcd(d)
        members = {}
        for sset in ("s1", "s2"):
            members[sset] = []
            for i, node in enumerate(("n1", "n2", "n3")):
                port = free_port()
                start_node(a.build, d, sset, node, port, etcd, secret)
                members[sset].append(f"{LOOP}:{port}")
                if i == 0:
                    wait(lambda: primary_of(members[sset]), 30, f"{sset}'s primary")
        prim = {s: wait(lambda s=s: primary_of(members[s]), 30, f"{s}'s primary") for s in members}
        wait(lambda: len((try_call(prim["s1"], {"op": "placement"}) or {}).get("sets", {})) == 2, 30,
             "both sets in the map")
        print(f"placement-demo: etcd and two replica sets of three nodes on loopback, data in {d}")
        for s in ("s1", "s2"):
            print(f"  {s}: primary {prim[s]}, members {', '.join(members[s])}")
        r = call(prim["s1"], {"op": "create_event", "event": "hot", "capacity": a.capacity, "shards": 8})
        if not r.get("ok"):
            raise SystemExit(f"placement-demo: create hot: {r}")
        allm = ",".join(members["s1"] + members["s2"])
        bench_out = open(os.path.join(d, "bench.out"), "w")
        bench = subprocess.Popen([os.path.join(a.build, "bench", "slot-bench"), "multi-event", "--placement",
                                  "--host", allm, "--events", "19", "--capacity", str(a.bench_capacity),
                                  "--connections", "38", "--zipf", "0", "--event", "demo",
                                  "--json", os.path.join(d, "bench.json")],
                                 stdout=bench_out, stderr=subprocess.STDOUT)
        STARTED.append(bench)
        buyers = Buyers("hot", prim["s1"], a.connections, 7)
        move = {}

        async def mover():
            while sum(q for _, _, q in buyers.acks) < a.capacity // 2 and not buyers.done:
                await asyncio.sleep(0.05)
            t0 = time.time()
            p = await asyncio.create_subprocess_exec(os.path.join(a.build, "tools", "slotctl"), "--host", prim["s1"],
                                                     "--json", "move", "hot", "--to", "s2",
                                                     stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await p.communicate()
            move.update(rc=p.returncode, out=out.decode().strip(), err=err.decode().strip(),
                        at_units=sum(q for _, _, q in buyers.acks), wall_ms=(time.time() - t0) * 1000)

        async def both():
            await asyncio.gather(buyers.run(), mover())

        t0 = time.time()
        asyncio.run(both())
        hot_s = time.time() - t0
        bench_rc = bench.wait(timeout=600)
        bench_out.close()
        try:
            mv = json.loads(move.get("out", "") or "{}")
        except ValueError:
            mv = {}
        # verification
        units = sum(q for _, _, q in buyers.acks)
        p2 = wait(lambda: primary_of(members["s2"]), 30, "s2's primary")
        found = bad = 0
        ids = set()
        for hold, user, qty in buyers.acks:
            g = try_call(p2, {"op": "get_hold", "event": "hot", "hold": hold, "user": user})
            if g and g.get("ok") and g.get("qty") == qty and hold not in ids:
                found += 1
            else:
                bad += 1
            ids.add(hold)
        v2 = call(p2, {"op": "event", "event": "hot"})
        w1 = call(prim["s1"], {"op": "hold", "event": "hot", "user": "late", "request": "late-1", "qty": 1})
        digests, checks = {}, []
        for s in ("s1", "s2"):
            def same(s=s):
                seen = [try_call(m, {"op": "digest"}) for m in members[s]]
                if all(x and x.get("ok") for x in seen) and len({(x["seq"], x["digest"]) for x in seen}) == 1:
                    return seen
                return None
            seen = wait(same, 60, f"{s}'s members on one digest")
            digests[s] = (seen[0]["seq"], seen[0]["digest"])
            for m in members[s]:
                c = try_call(m, {"op": "check"}, timeout=60)
                checks.append((m, c is not None and c.get("ok") and c.get("violations") == []))
        bench_json = {}
        try:
            bench_json = json.load(open(os.path.join(d, "bench.json")))
        except (OSError, ValueError):
            pass
        bstatus = bench_json.get("verification", {}).get("status", "missing")
        ok = (move.get("rc") == 0 and mv.get("ok") and bad == 0 and found == len(buyers.acks) and
              v2.get("held", 0) + v2.get("confirmed", 0) == units and w1.get("error") == "wrong_set" and
              w1.get("set") == "s2" and all(c for _, c in checks) and bench_rc == 0 and bstatus == "passed")
        print("\nplacement-demo report")
        print(f"  {'hot, on s1 then s2':34} {len(buyers.acks)} holds, {units} of {a.capacity} units acknowledged "
              f"in {hot_s:.1f} s by {a.connections} buyers")
        print(f"  {'move hot from s1 to s2':34} at {move.get('at_units')} units held; "
              f"write pause {mv.get('pause_ms', '?')} ms, total {mv.get('total_ms', '?')} ms, "
              f"{mv.get('records', '?')} records; gen {mv.get('gen', '?')}")
        print(f"  {'buyers saw':34} {buyers.moving} moving answers (retried), {buyers.redirects} redirects, "
              f"longest without an acknowledged hold {buyers.max_gap_ms:.0f} ms")
        print(f"  {'found on s2 (get_hold each)':34} {found} of {len(buyers.acks)}, {bad} missing or different")
        print(f"  {'hot on s2 (event view)':34} held {v2.get('held')} + confirmed {v2.get('confirmed')}, "
              f"available {v2.get('available')}")
        print(f"  {'s1 for hot':34} {w1.get('error')} naming {w1.get('set')} (gen {w1.get('gen')})")
        res = bench_json.get("results", {})
        print(f"  {'slot-bench, 19 events over both':34} {res.get('holds', '?')} holds sold out in "
              f"{res.get('sellout_s', 0):.1f} s, {res.get('requests_per_s', 0):.0f} requests/s; "
              f"verification {bstatus} (exit {bench_rc})")
        for s in ("s1", "s2"):
            print(f"  {'digest ' + s + ' (3 members agree)':34} seq {digests[s][0]} {digests[s][1][:16]}...")
        print(f"  {'check on all six members':34} {'clean' if all(c for _, c in checks) else 'VIOLATIONS'}")
        if not ok:
            print(f"  move: rc {move.get('rc')} {move.get('err', '')}")
        print("verification: passed" if ok else "verification: FAILED (see " + d + "/*.log, bench.out)")
    finally:
        for p in reversed(STARTED):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(STARTED):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
