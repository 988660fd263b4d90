#!/usr/bin/env python3
"""mail_worker.py: an e-mail worker fed by slotd's feed (docs/protocol.md, "Feed").

It subscribes as consumer `mail`, "sends" a confirmation for every hold.confirmed
(and a note for every hold.expired), deduplicates by seq, acks in batches, and after a
restart (its own or slotd's) resumes after its last ack: delivery is at least once, so
an entry seen again is recognised by its seq and not sent twice.

    python3 examples/mail_worker.py --port 7420 [--token WORKER_TOKEN] [--state mail.state]

Python 3 standard library only. Sending is simulated: a line on stdout and the seq
written to the state file (in a real worker, mail first, then record the seq).
"""
import argparse
import json
import os
import socket
import sys
import time

ACK_EVERY = 50          # entries between acks
ACK_IDLE_S = 1.0        # ... or this long after the last entry, whichever comes first
RETRY_S = 1.0           # wait before reconnecting


def load_state(path):
    """The last seq we acted on (so a restart never mails twice), 0 when none."""
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except FileNotFoundError:
        return 0


def save_state(path, seq):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % seq)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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

    def call(self, req):
        self.send(req)
        return self.line(10)


def run(args):
    done = load_state(args.state)          # the highest seq already mailed
    feed = Feed(args.host, args.port, args.token)
    r = feed.call({"op": "subscribe", "consumer": "mail", "from": "acked", "window": 1000})
    if not r.get("ok"):
        raise SystemExit("subscribe refused: %s" % r)
    print("subscribed: from %d, head %d, already mailed up to %d" % (r["from"], r["head"], done), flush=True)
    unacked, last_ack = 0, time.monotonic()
    while True:
        try:
            m = feed.line(ACK_IDLE_S)
        except socket.timeout:
            m = None
        if m is not None and "feed" in m:
            seq = m["feed"]
            if seq > done:                 # dedupe: at least once means we may see it again
                send_mail(m)
                done = seq
                save_state(args.state, done)
            unacked += 1
        elif m is not None and not m.get("ok"):
            raise SystemExit("slotd: %s" % m)
        if unacked and (unacked >= ACK_EVERY or time.monotonic() - last_ack >= ACK_IDLE_S):
            feed.send({"op": "ack", "consumer": "mail", "seq": done})  # the reply comes between pushes
            unacked, last_ack = 0, time.monotonic()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=7420)
    ap.add_argument("--token", default=os.environ.get("SLOT_WORKER_TOKEN"))
    ap.add_argument("--state", default="mail_worker.state", help="file of the last seq mailed")
    ap.add_argument("--once", action="store_true", help="exit on the first disconnect instead of retrying")
    args = ap.parse_args()
    while True:
        try:
            run(args)
        except (ConnectionError, OSError) as e:
            if args.once:
                return 1
            print("disconnected (%s); resuming after the last ack in %.0f s" % (e, RETRY_S), file=sys.stderr, flush=True)
            time.sleep(RETRY_S)
        except KeyboardInterrupt:
            return 0


if __name__ == "__main__":
    sys.exit(main())
