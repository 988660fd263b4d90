#!/usr/bin/env python3
"""mail_worker.py: an e-mail worker fed by slotd's feed (docs/protocol.md, "Feed").

It subscribes as consumer `mail`, "sends" a confirmation for every hold.confirmed
(and a note for every hold.expired), deduplicates by seq, acks in batches, and after a
restart (its own or slotd's) resumes after its last ack: delivery is at least once, so
an entry seen again is recognised by its seq and not sent twice.

    python3 examples/mail_worker.py --port 7420 [--token WORKER_TOKEN] [--state mail.state]

With --placement NAME --etcd URL it follows every replica set of the placement at once
(the sets, their primaries and members read from etcd; each set's primary followed through
not_primary and failovers) and takes each event's entries in order and once across its
moves: the source's up to its event.moved, then the target's from its event.arrived
(docs/design.md, "The feed of a placement"). Its state file then holds each set's position
and each event's hand-over.

    python3 examples/mail_worker.py --placement p --etcd http://127.0.0.1:2379 [--state mail.state]

--entries prints every entry it takes ("entry " and the entry as JSON, with "set" in
placement mode); --until-head stops once every set's feed is read up to the head it had at
the first subscribe (a test's run, instead of following forever).

Python 3 standard library only. Sending is simulated: a line on stdout and the seq
written to the state file (in a real worker, mail first, then record the seq).
"""
import argparse
import base64
import json
import os
import select
import socket
import sys
import time
import urllib.request

ACK_EVERY = 50          # entries between acks
ACK_IDLE_S = 1.0        # ... or this long after the last entry, whichever comes first
RETRY_S = 1.0           # wait before reconnecting
HOLD_S_MAX = 30.0       # the longest an entry waits for its hand-over (slotd's SLOT_CTL_FEED_HOLD_MS_MAX)
RESUBSCRIBES_MAX = 20   # subscribes of one set in a row that fail before the worker gives up
TURN_LINES = 256        # lines taken from one set before the next set's turn
CALL_TIMEOUT_S = 10     # one request's answer
STATE_EVERY = 100       # entries between two writes of the placement state


def load_state(path):
    """The last seq we acted on (so a restart never mails twice), 0 when none."""
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except FileNotFoundError:
        return 0


def write_file(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def save_state(path, seq):
    write_file(path, "%d\n" % seq)


def send_mail(entry):
    """Simulated: a real worker would talk to its mail service here."""
    if entry["type"] == "hold.confirmed":
        print("mail to %s: your %d ticket(s) for %s are confirmed (hold %s)"
              % (entry["user"], entry["qty"], entry["event"], entry["hold"]), flush=True)
    elif entry["type"] == "hold.expired":
        print("mail to %s: your hold on %s expired" % (entry["user"], entry["event"]), flush=True)


class Feed:
    def __init__(self, host, port, token):
        self.sock = socket.create_connection((host, port), timeout=10)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        if token:
            r = self.call({"op": "hello", "token": token})
            if not r.get("ok"):
                raise SystemExit("hello refused: %s" % r)

    def send(self, req):
        self.sock.sendall(json.dumps(req).encode() + b"\n")

    def line(self, timeout):
        self.sock.settimeout(timeout)
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("slotd closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def has_line(self):
        return b"\n" in self.buf

    def call(self, req):
        self.send(req)
        return self.line(CALL_TIMEOUT_S)

    def close(self):
        self.sock.close()


def run(args):
    done = load_state(args.state)          # the highest seq already mailed
    feed = Feed(args.host, args.port, args.token)
    r = feed.call({"op": "subscribe", "consumer": "mail", "from": "acked", "window": 1000})
    if not r.get("ok"):
        raise SystemExit("subscribe refused: %s" % r)
    print("subscribed: from %d, head %d, already mailed up to %d" % (r["from"], r["head"], done), flush=True)
    head0 = r["head"]
    unacked, last_ack = 0, time.monotonic()
    while not (args.until_head and done >= head0 and not unacked):
        try:
            m = feed.line(ACK_IDLE_S)
        except socket.timeout:
            m = None
        if m is not None and "feed" in m:
            seq = m["feed"]
            if seq > done:                 # dedupe: at least once means we may see it again
                if args.entries:
                    print("entry " + json.dumps(m), flush=True)
                send_mail(m)
                done = seq
                save_state(args.state, done)
            unacked += 1
        elif m is not None and not m.get("ok"):
            raise SystemExit("slotd: %s" % m)
        if unacked and (unacked >= ACK_EVERY or time.monotonic() - last_ack >= ACK_IDLE_S or
                        (args.until_head and done >= head0)):
            feed.send({"op": "ack", "consumer": "mail", "seq": done})  # the reply comes between pushes
            unacked, last_ack = 0, time.monotonic()


# ---- --placement: every set of a placement (docs/design.md, "The feed of a placement")

def etcd_prefix(url, prefix, limit):
    """[(key, value as JSON or None)] of the keys under prefix, via etcd's v3 JSON gateway."""
    end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    body = json.dumps({"key": base64.b64encode(prefix.encode()).decode(),
                       "range_end": base64.b64encode(end.encode()).decode(), "limit": limit}).encode()
    last = None
    for base in url.split(","):
        try:
            req = urllib.request.Request(base.rstrip("/") + "/v3/kv/range", data=body,
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=CALL_TIMEOUT_S) as f:
                kvs = json.loads(f.read()).get("kvs", [])
            out = []
            for kv in kvs:
                try:
                    val = json.loads(base64.b64decode(kv.get("value", "")))
                except ValueError:
                    val = None
                out.append((base64.b64decode(kv["key"]).decode(), val))
            return out
        except (OSError, ValueError) as e:
            last = e
    raise ConnectionError("etcd %s: %s" % (url, last))


class PlacedSet:
    """One set of the placement: its addresses, the subscription, its position and a held entry."""

    def __init__(self, name, args):
        self.name, self.args = name, args
        self.addrs = []
        self.feed = None
        self.next = 0          # the first seq not judged yet (0: from the oldest kept)
        self.head0 = None      # the head at the first subscribe
        self.acked = 0
        self.held = None       # (entry, since) of an entry that waits for its hand-over
        self.probe = None      # (source set, its head) an event.arrived waits on
        self.fails = 0

    def refresh(self, prefix):
        """The published primary first, then every member, from etcd."""
        addrs = []
        for key, val in etcd_prefix(self.args.etcd, "%sset/%s" % (prefix, self.name), 4):
            if key == "%sset/%s" % (prefix, self.name) and isinstance(val, dict) and val.get("primary"):
                addrs.append(val["primary"])
        for _, val in etcd_prefix(self.args.etcd, "/slotd/%s/node/" % self.name, 16):
            if isinstance(val, dict) and val.get("addr") and val["addr"] not in addrs:
                addrs.append(val["addr"])
        if addrs:
            self.addrs = addrs

    def call_primary(self, req):
        """(Feed, answer): req sent to the set's primary, following not_primary (bounded)."""
        last = None
        todo = list(self.addrs)
        for _ in range(4 * max(1, len(self.addrs))):
            if not todo:
                todo = list(self.addrs)
                time.sleep(0.1)
            host, port = todo.pop(0).rsplit(":", 1)
            try:
                f = Feed(host, int(port), self.args.token)
                r = f.call(req)
            except (OSError, ValueError, ConnectionError) as e:
                last = e
                continue
            if r.get("error") in ("not_primary", "unavailable", "shutting_down", "moving", "overloaded"):
                f.close()
                last = r
                if r.get("primary"):
                    todo.insert(0, r["primary"])
                continue
            return f, r
        raise ConnectionError("set %s: no primary answered (%s)" % (self.name, last))

    def subscribe(self):
        if self.feed:
            self.feed.close()
            self.feed = None
        req = {"op": "subscribe", "consumer": "mail", "from": self.next or "start", "window": 1000}
        self.feed, r = self.call_primary(req)
        if not r.get("ok"):
            raise SystemExit("set %s: subscribe refused: %s" % (self.name, r))
        if not self.next:
            self.next = r["from"]
        if self.head0 is None:
            self.head0 = r["head"]
        self.acked, self.fails = 0, 0

    def head_now(self):
        """The set's feed head now (feed_consumers, admin), for the probe."""
        f, r = self.call_primary({"op": "feed_consumers"})
        f.close()
        if not r.get("ok"):
            raise ConnectionError("set %s: feed_consumers: %s" % (self.name, r.get("error")))
        return r["head"]

    def ack(self, now=False):
        done = self.next - 1
        if self.feed and done > self.acked and (now or done - self.acked >= ACK_EVERY):
            self.feed.send({"op": "ack", "consumer": "mail", "seq": done})
            self.acked = done


class Placement:
    def __init__(self, args):
        self.args = args
        self.prefix = "/slotd/placement/%s/" % args.placement
        self.sets = {}
        for key, _ in etcd_prefix(args.etcd, self.prefix + "set/", 64):
            name = key[len(self.prefix) + 4:]
            if name:
                self.sets[name] = PlacedSet(name, args)
        if not self.sets:
            raise SystemExit("placement %s: no set is published in etcd" % args.placement)
        for s in self.sets.values():
            s.refresh(self.prefix)
        self.events = {}       # event -> {"owner", "gen", "open", "to", "to_gen"}
        self.since_state = 0
        self.load()

    def load(self):
        try:
            with open(self.args.state) as f:
                st = json.load(f)
        except FileNotFoundError:
            return
        if not isinstance(st, dict) or st.get("placement") != self.args.placement:
            raise SystemExit("%s: not the state of placement %s" % (self.args.state, self.args.placement))
        for name, v in st.get("sets", {}).items():
            if name in self.sets:
                self.sets[name].next = v["next"]
        self.events = st.get("events", {})

    def save(self):
        self.since_state = 0
        write_file(self.args.state, json.dumps({"placement": self.args.placement, "events": self.events,
                                                "sets": {n: {"next": s.next} for n, s in self.sets.items()}},
                                               sort_keys=True) + "\n")

    def judge(self, x, m):
        """'take', 'drop' or 'hold' for entry m of set x (the rule of docs/design.md)."""
        t = m["type"]
        e = self.events.setdefault(m["event"], {"owner": "", "gen": 0, "open": False, "to": "", "to_gen": 0})
        if t == "event.moved":
            if e["owner"] and e["owner"] != x.name:
                return "drop"
            e.update(owner=x.name, open=False, to=m.get("to", ""), to_gen=m.get("gen", 0))
            return "take"
        if t == "event.arrived":
            g = m.get("gen", 0)
            if e["gen"] and g <= e["gen"]:
                return "drop"
            handed = e["owner"] and not e["open"] and e["to"] == x.name and e["to_gen"] == g
            src = self.sets.get(m.get("from", ""))
            if not handed and src is not None and src is not x:
                if x.probe is None or x.probe[0] is not src:
                    try:
                        x.probe = (src, src.head_now())
                    except ConnectionError as e:  # asked again next turn, bounded by HOLD_S_MAX
                        print("probe of set %s: %s" % (src.name, e), file=sys.stderr, flush=True)
                        return "hold"
                if src.next <= x.probe[1]:
                    return "hold"
            x.probe = None
            e.update(owner=x.name, gen=g, open=True, to="", to_gen=0)
            return "take"
        if t == "event.created" and not e["owner"]:
            e["gen"] = 1
        if not e["owner"]:
            e.update(owner=x.name, open=True)
            return "take"
        if e["owner"] != x.name:
            return "drop"
        if not e["open"]:
            e.update(open=True, to="", to_gen=0)   # written after its event.moved: the move was undone
        return "take"

    def act(self, x, m, verdict):
        if verdict == "take":
            m2 = dict(set=x.name, **m)
            if self.args.entries:
                print("entry " + json.dumps(m2), flush=True)
            send_mail(m2)
        x.next = m["feed"] + 1
        x.ack()
        self.since_state += 1
        if self.since_state >= STATE_EVERY or (verdict == "take" and m["type"] in ("hold.confirmed", "hold.expired")):
            self.save()                      # after a mail at once: a restart never mails twice

    def turn(self, x):
        """The held entry of x again, then up to TURN_LINES of its lines. True when something moved."""
        moved = False
        if x.held:
            m, since = x.held
            v = self.judge(x, m)
            if v == "hold":
                if time.monotonic() - since > HOLD_S_MAX:
                    raise SystemExit("set %s: entry %d (%s of %s) waited %.0f s for its hand-over from %s"
                                     % (x.name, m["feed"], m["type"], m["event"], HOLD_S_MAX, m.get("from")))
                return False
            x.held = None
            self.act(x, m, v)
            moved = True
        if x.feed is None:
            self.resubscribe(x)
        for _ in range(TURN_LINES):
            if x.held or not x.feed:
                break
            try:
                if not x.feed.has_line() and not select.select([x.feed.sock], [], [], 0)[0]:
                    break
                m = x.feed.line(CALL_TIMEOUT_S)
            except (OSError, ConnectionError, ValueError) as e:
                print("set %s: %s; subscribing again from %d" % (x.name, e, x.next), file=sys.stderr, flush=True)
                x.feed.close()
                x.feed = None
                break
            moved = True
            if "feed" not in m:
                if not m.get("ok"):
                    raise SystemExit("set %s: slotd: %s" % (x.name, m))
                continue
            if m["feed"] < x.next:
                continue                     # pushed again
            v = self.judge(x, m)
            if v == "hold":
                x.held = (m, time.monotonic())
            else:
                self.act(x, m, v)
        return moved

    def resubscribe(self, x):
        while True:
            try:
                x.refresh(self.prefix)
            except ConnectionError:
                pass                          # the addresses known so far
            try:
                x.subscribe()
                return
            except ConnectionError as e:
                x.fails += 1
                if x.fails >= RESUBSCRIBES_MAX:
                    raise SystemExit("set %s: %d subscribes in a row failed: %s" % (x.name, RESUBSCRIBES_MAX, e))
                time.sleep(RETRY_S / 5)

    def done(self):
        return all(not s.held and s.head0 is not None and s.next > s.head0 for s in self.sets.values())

    def run(self):
        for s in self.sets.values():
            self.resubscribe(s)
        print("subscribed: %s" % ", ".join("%s from %d, head %d" % (n, s.next, s.head0)
                                           for n, s in sorted(self.sets.items())), flush=True)
        try:
            self.follow()
        finally:
            for s in self.sets.values():
                try:
                    s.ack(now=True)
                except OSError:
                    pass
            self.save()

    def follow(self):
        last_ack = time.monotonic()
        while not (self.args.until_head and self.done()):
            moved = False
            for s in self.sets.values():
                moved = self.turn(s) or moved
            if time.monotonic() - last_ack >= ACK_IDLE_S:
                for s in self.sets.values():
                    s.ack(now=True)
                last_ack = time.monotonic()
            if not moved:
                socks = [s.feed.sock for s in self.sets.values() if s.feed and not s.held]
                if socks:
                    select.select(socks, [], [], ACK_IDLE_S / 10)
                else:
                    time.sleep(ACK_IDLE_S / 10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7420)
    ap.add_argument("--token", default=os.environ.get("SLOT_WORKER_TOKEN"))
    ap.add_argument("--state", default="mail_worker.state", help="file of the last seq mailed (placement: positions)")
    ap.add_argument("--once", action="store_true", help="exit on the first disconnect instead of retrying")
    ap.add_argument("--placement", help="follow every replica set of this placement (needs --etcd)")
    ap.add_argument("--etcd", help="the placement's etcd: http://HOST:PORT[,...]")
    ap.add_argument("--entries", action="store_true", help="print every entry taken")
    ap.add_argument("--until-head", action="store_true", help="stop at the head(s) seen at the first subscribe")
    args = ap.parse_args()
    if args.placement and not args.etcd:
        ap.error("--placement needs --etcd URL")
    if args.placement:
        try:
            Placement(args).run()
            return 0
        except ConnectionError as e:
            print(str(e), file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            return 0
    while True:
        try:
            run(args)
            return 0
        except (ConnectionError, OSError) as e:
            if args.once:
                return 1
            print("disconnected (%s); resuming after the last ack in %.0f s" % (e, RETRY_S), file=sys.stderr, flush=True)
            time.sleep(RETRY_S)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
