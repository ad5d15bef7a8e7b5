"""The judge server (docs/evaluation.md, "The judge server").

`harness.py judge-server --sock PATH --meta PATH --log PATH --running PATH
--backend B --device N --idle S` starts it. The launcher (what gpu/judge_server.c
spawns) forks, the child leaves the caller's session (setsid), binds the
Unix socket, points its stdio at the log, and only then tells the launcher
to exit 0: the caller returns with a socket that accepts, while PyTorch
imports behind it. The server then answers one "evaluate" request per
connection, one connection at a time, with the same reply the one-shot
judge prints, and exits after S idle seconds, when its socket file is
removed or replaced, or on SIGTERM.

Connection protocol: the client writes the JSON request and shuts down its
writing side; the server writes the JSON reply and closes. A connection
from another uid (SO_PEERCRED) is closed unanswered. A request that raises
anything but a HarnessError closes the connection unanswered and ends the
server (its state is no longer known good); the client then runs a
one-shot judge, which reports the crash as today.

The server never imports a problem module: each request's reference
process does (kbh/judge_ref.py), in its own sandbox, and dies with the
request. A client that closes its connection while its request runs
(killed, or past its deadline) cancels it: the reference process and the
workers are killed, nothing is answered, and the server waits for the next
client. Nothing that could change a verdict is kept between requests:
modules a request imported from its problem's directory (none, unless a
future change imports one) are dropped afterwards; PyTorch's global
switches a problem might flip (default dtype, threads, TF32, cuDNN,
determinism, grad mode) are restored; torch.compile's in-memory caches are
reset; inputs and expected outputs are released and the CUDA caching
allocator emptied. The baseline cache stays on disk, as with a one-shot
judge.
"""
import fcntl
import gc
import json
import os
import select
import signal
import socket
import struct
import sys
import threading
import time
import traceback

REQUEST_MAX = 64 << 20
_HARNESS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POLL_S = 5.0		# how often an idle server checks its socket file


def _args(argv):
    opts = {}
    it = iter(argv)
    for a in it:
        if not a.startswith("--"):
            raise SystemExit("judge-server: unexpected argument %r" % a)
        opts[a[2:]] = next(it, None)
    for k in ("sock", "meta", "log", "running", "backend", "device", "idle"):
        if opts.get(k) is None:
            raise SystemExit("judge-server: --%s is required" % k)
    return opts


def _write_meta(path, meta):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(meta, f)
    os.replace(tmp, path)


def _ours(sock_path, ino):
    """Is the socket file still the one this server bound?"""
    try:
        return os.stat(sock_path).st_ino == ino
    except OSError:
        return False


class _TorchState:
    """PyTorch's process-wide switches a problem module can flip."""

    def __init__(self, torch):
        self.torch = torch
        b = torch.backends
        self.v = {
            "dtype": torch.get_default_dtype(),
            "threads": torch.get_num_threads(),
            "grad": torch.is_grad_enabled(),
            "det": torch.are_deterministic_algorithms_enabled(),
            "cudnn": (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic,
                      b.cudnn.allow_tf32),
            "matmul_tf32": b.cuda.matmul.allow_tf32,
        }
        if hasattr(torch, "get_float32_matmul_precision"):
            self.v["precision"] = torch.get_float32_matmul_precision()

    def restore(self):
        t, b, v = self.torch, self.torch.backends, self.v
        t.set_default_dtype(v["dtype"])
        t.set_num_threads(v["threads"])
        t.set_grad_enabled(v["grad"])
        t.use_deterministic_algorithms(v["det"])
        (b.cudnn.enabled, b.cudnn.benchmark, b.cudnn.deterministic,
         b.cudnn.allow_tf32) = v["cudnn"]
        b.cuda.matmul.allow_tf32 = v["matmul_tf32"]
        if "precision" in v:
            t.set_float32_matmul_precision(v["precision"])
        if hasattr(t, "set_default_device"):
            t.set_default_device(None)


def _read_request(conn):
    chunks, n = [], 0
    while True:
        b = conn.recv(1 << 20)
        if not b:
            break
        n += len(b)
        if n > REQUEST_MAX:
            raise ValueError("request larger than %d bytes" % REQUEST_MAX)
        chunks.append(b)
    if not n:
        return None	# a liveness probe: connected and hung up
    return json.loads(b"".join(chunks).decode())


class _Watch:
    """While a request runs: a client that closes its connection (killed,
    or given up) cancels the request's work (kbh/judge_worker.py's
    cancel_all kills the reference process and the workers), so that a
    gone client's evaluation stops and the server is free for the next.
    The client shut its writing side after the request, so the socket reads
    EOF throughout; only a full close raises POLLHUP."""

    def __init__(self, conn):
        self.conn = conn
        self.done = threading.Event()
        self.gone = False
        self.th = threading.Thread(target=self._run, daemon=True)
        self.th.start()

    def _run(self):
        from kbh import judge_worker
        p = select.poll()
        p.register(self.conn.fileno(), 0)	# POLLHUP and POLLERR are always reported
        while not self.done.is_set():
            try:
                ev = p.poll(200)
            except (OSError, ValueError):
                return
            if any(e & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, e in ev):
                if not self.done.is_set():
                    self.gone = True
                    judge_worker.cancel_all()
                return

    def stop(self):
        self.done.set()
        self.th.join()


def _forget_problem_modules(before, problem):
    """Drop modules a request imported from its problem's directory, so the
    next request imports them afresh."""
    pdir = os.path.dirname(os.path.abspath(str(problem or ""))) + os.sep
    # Never the interpreter's, the installed packages' or the harness's own
    # (a problem at / would otherwise take torch's lazily imported parts).
    keep = tuple({os.path.join(p, "") for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
                 | {os.path.join(_HARNESS_DIR, "")})
    for name in set(sys.modules) - before:
        f = getattr(sys.modules.get(name), "__file__", None) or ""
        if name.startswith("kbh_eval_") or name.startswith("kbh_problem_") or (
                f.startswith(pdir) and not f.startswith(keep)
                and "site-packages" not in f and "dist-packages" not in f):
            sys.modules.pop(name, None)


class _Stop:
    """SIGTERM, seen by a thread of its own instead of raised into whatever
    the main thread runs (a finalizer that gc.collect() runs would print a
    raised SystemExit and swallow it, leaving the server up): the signal's
    number arrives on a wakeup pipe; the thread cancels the evaluation
    running, if any, and shuts the listener, and the serve loop ends."""

    def __init__(self, listener):
        self.signum = None
        self.rfd, wfd = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wfd)
        signal.signal(signal.SIGTERM, lambda signum, frame: None)
        threading.Thread(target=self._run, args=(listener,), daemon=True).start()

    def _run(self, listener):
        while True:
            select.select([self.rfd], [], [])
            try:
                got = os.read(self.rfd, 64)
            except BlockingIOError:
                continue
            if signal.SIGTERM in got:
                break
        self.signum = signal.SIGTERM
        if "kbh.judge_worker" in sys.modules:
            sys.modules["kbh.judge_worker"].cancel_all()
        try:
            listener.shutdown(socket.SHUT_RDWR)	# wakes accept()
        except OSError:
            pass

    def why(self):
        return "signal %d" % self.signum if self.signum else None


def _serve(opts, listener, ino, t_spawn, stop):
    from kbh import protocol
    import torch
    from kbh import judge
    from kbh import judge_worker
    from kbh import judge_ref as jref
    # Prestart directories beside the socket, in the server's private
    # directory: never in the TMPDIR of the caller that spawned it.
    jref.BASE = os.path.dirname(os.path.abspath(opts["sock"]))
    backend, device = opts["backend"], int(opts["device"])
    if backend == "cuda" and torch.cuda.is_available():
        try:
            torch.cuda.set_device(device)
            torch.empty(1, device="cuda")
        except (RuntimeError, ValueError):
            pass	# the judge's setup() reports it with the real request
    baseline = _TorchState(torch)
    t_ready = time.time()
    idle_s = float(opts["idle"])
    meta = {"pid": os.getpid(), "backend": backend, "device": device,
            "socket": opts["sock"], "started": t_spawn, "ready": t_ready,
            "last_used": t_ready, "requests": 0, "idle_s": idle_s,
            "torch": torch.__version__}
    _write_meta(opts["meta"], meta)
    # Held while a request runs: a caller finds a server still busy with an
    # abandoned request (its client gone) and runs a one-shot judge.
    running = os.open(opts["running"], os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    first = True
    listener.settimeout(min(POLL_S, idle_s))
    while not stop.why():
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            if time.time() - meta["last_used"] >= idle_s or not _ours(opts["sock"], ino):
                return "idle" if _ours(opts["sock"], ino) else "socket replaced"
            continue
        except OSError:
            if stop.why():
                break
            raise
        req_next = None
        with conn:
            conn.settimeout(None)
            pid, uid, _gid = struct.unpack("3i", conn.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
            if uid != os.getuid():
                print("judge-server: refused a connection from uid %d (pid %d)" % (uid, pid),
                      file=sys.stderr)
                continue
            t_req = time.time()
            fcntl.flock(running, fcntl.LOCK_EX)
            try:
                req = _read_request(conn)
            except (OSError, ValueError) as e:
                print("judge-server: bad request from pid %d: %s" % (pid, e), file=sys.stderr)
                fcntl.flock(running, fcntl.LOCK_UN)
                continue
            if req is None:
                fcntl.flock(running, fcntl.LOCK_UN)
                continue
            if not isinstance(req, dict) or req.get("verb") != "evaluate":
                reply = protocol.error_reply(protocol.HarnessError(
                    "request", "the judge server answers only the verb 'evaluate'"))
            else:
                # The first request reports the server's start, as an early
                # start does; later ones start nothing.
                start_s = max(0.0, t_ready - t_spawn) if first else 0.0
                waited = max(0.0, t_req - t_ready) if first else 0.0
                before = set(sys.modules)
                judge_worker.reset_cancel()
                watch = _Watch(conn)
                try:
                    reply = judge.run(req, start_s, waited)
                except protocol.HarnessError as e:
                    reply = protocol.error_reply(e)
                except judge_worker.Cancelled:
                    # Its processes are gone; the server is as before.
                    reply = None
                except BaseException:  # noqa: B902 -- state unknown: answer nothing, end
                    traceback.print_exc()
                    return "crashed on a request from pid %d" % pid
                finally:
                    watch.stop()
                    _forget_problem_modules(before, req.get("problem"))
                    baseline.restore()
                if watch.gone:
                    print("judge-server: the client (pid %d) went away: its evaluation was "
                          "stopped" % pid, file=sys.stderr)
                    reply = None
                elif isinstance(reply, dict) and reply.get("ok"):
                    req_next = req
                first = False
                bd = reply.get("timing_breakdown_s") if isinstance(reply, dict) else None
                if isinstance(bd, dict):
                    bd["judge_server_requests"] = meta["requests"] + 1
            try:
                if reply is not None:
                    conn.sendall(protocol.encode_reply(reply).encode())
            except OSError as e:
                print("judge-server: the client (pid %d) went away: %s" % (pid, e), file=sys.stderr)
            del req, reply
        fcntl.flock(running, fcntl.LOCK_UN)
        # Inputs, expected outputs and compiled graphs go with the request.
        try:
            torch._dynamo.reset()
        except (AttributeError, RuntimeError):
            pass
        gc.collect()
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        meta["requests"] += 1
        meta["last_used"] = time.time()
        _write_meta(opts["meta"], meta)
        if req_next is not None and not stop.why():
            # The next request's reference process, started now: its
            # sandbox and PyTorch import overlap the caller's compiles
            # (kbh/judge_ref.py; a request that does not match closes it).
            try:
                judge_worker.reset_cancel()
                nctx = judge.Context(req_next)
                nctx.problem_path = os.path.abspath(str(req_next["problem"]))
                jref.prestart(nctx)
            except Exception as e:  # noqa: B902 -- an optimization only
                print("judge-server: no prestarted reference process: %s: %s"
                      % (type(e).__name__, e), file=sys.stderr)
    return stop.why()


def main(argv):
    opts = _args(argv)
    t_spawn = time.time()
    rfd, wfd = os.pipe()
    if os.fork() > 0:
        # The launcher: exit 0 once the server is bound and detached.
        os.close(wfd)
        ok = os.read(rfd, 1) == b"1"
        return 0 if ok else 1
    os.close(rfd)
    os.setsid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        listener.bind(opts["sock"])
    except OSError as e:
        print("judge-server: cannot bind %s: %s" % (opts["sock"], e), file=sys.stderr)
        os._exit(1)
    finally:
        os.umask(old)
    listener.listen(16)
    ino = os.stat(opts["sock"]).st_ino
    logfd = os.open(opts["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    nullfd = os.open(os.devnull, os.O_RDONLY)
    os.dup2(nullfd, 0)
    os.dup2(logfd, 1)
    os.dup2(logfd, 2)
    os.close(nullfd)
    os.close(logfd)
    os.write(wfd, b"1")
    os.close(wfd)

    stop = _Stop(listener)
    print("judge-server %d: listening on %s (%s device %s, idle %s s)" % (
        os.getpid(), opts["sock"], opts["backend"], opts["device"], opts["idle"]), file=sys.stderr)
    why = "?"
    try:
        why = _serve(opts, listener, ino, t_spawn, stop)
    except BaseException:  # noqa: B902 -- logged; the client falls back
        traceback.print_exc()
        why = "crashed"
    finally:
        if "kbh.judge_ref" in sys.modules:
            sys.modules["kbh.judge_ref"].drop_spare()
        if _ours(opts["sock"], ino):
            os.unlink(opts["sock"])
            try:
                os.unlink(opts["meta"])
            except OSError:
                pass
        print("judge-server %d: exiting: %s" % (os.getpid(), why), file=sys.stderr)
        sys.stderr.flush()
    os._exit(0)
