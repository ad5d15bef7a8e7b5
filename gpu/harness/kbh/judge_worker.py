"""The judge's side of a worker: start it (through `kernelbot sandbox-exec`),
send JSON-line requests, read replies under a deadline, kill its process
group when done. The worker is untrusted: replies are size-capped and
parsed defensively, and its death or silence ends only its candidate.

Its stdout is one end of a socket pair, not a pipe: a native worker sends
the sealed snapshots of timed runs' outputs as file descriptors with its
replies (SCM_RIGHTS; docs/evaluation.md, *What a check guarantees*).
"""
import array
import json
import os
import select
import signal
import socket
import subprocess
import threading
import time

REPLY_MAX = 1 << 20
STDERR_TAIL = 4000
STDERR_MAX = 1 << 20	# bytes of a process's stderr kept in its file
FDS_MAX = 16		# the worker's WORKER_MAX_FDS


# The processes of the evaluation in progress (workers and the reference
# process), for cancel_all(): a judge server whose client went away stops
# them from its watchdog thread.
_live = set()
_cancelled = threading.Event()


class Cancelled(BaseException):
    """The evaluation was cancelled (its client went away): not a
    verdict, nothing to report; a BaseException so that no handler of the
    judge's turns it into one."""


def cancel_all():
    """From another thread: end every live process tree now; every later
    start or request of this evaluation raises Cancelled."""
    _cancelled.set()
    for w in list(_live):
        try:
            os.killpg(w.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def reset_cancel():
    """Before the next evaluation."""
    _cancelled.clear()


def check_cancel():
    if _cancelled.is_set():
        raise Cancelled()


class WorkerError(Exception):
    """The worker died, hung or broke the protocol. kind: runtime_error,
    timeout or rejected."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind
        self.message = message


def _limits(mem_bytes):
    def apply():
        import ctypes
        import resource
        # The launcher dies with the judge (and the sandbox's tree with
        # the launcher): a judge killed from outside leaves no worker or
        # reference process behind, hung in a problem's code or not.
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)	# PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if mem_bytes:
            resource.setrlimit(resource.RLIMIT_AS, (mem_bytes, mem_bytes))
    return apply


class Worker:
    def __init__(self, argv, env, errpath, deadline, per_request, mem_bytes=0, paused=None):
        """deadline: time.monotonic() after which every request fails;
        per_request: seconds one request may take (the kernel's deadline).
        mem_bytes: RLIMIT_AS for unsandboxed CPU runs (the sandbox sets
        its own limits; CUDA reserves too much address space for AS).
        paused: a function giving the seconds the deadline moves by (the
        time its user spent waiting on others since the start)."""
        check_cancel()
        self.deadline = deadline
        self.paused = paused or (lambda: 0.0)
        self.per_request = per_request
        self.errpath = errpath
        self.buf = b""
        self.err = open(errpath, "wb")
        self.err_tail = b""
        self.sock, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # stderr through a pipe the judge drains, never a host file the
        # process writes: what it prints past STDERR_MAX is dropped (its
        # last STDERR_TAIL bytes kept), so it cannot fill the judge's disk
        # outside its scratch's quota.
        rd, wr = os.pipe()
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=child.fileno(),
                                         stderr=wr, env=env, close_fds=True,
                                         start_new_session=True,
                                         preexec_fn=_limits(mem_bytes))
        finally:
            child.close()
            os.close(wr)
        self.err_thread = threading.Thread(target=self._drain_stderr, args=(rd,), daemon=True)
        self.err_thread.start()
        self.walls = []
        self.marks = []
        self.fds = []		# received with the reply being read
        self.last_fds = []	# received with the last reply, not yet taken
        _live.add(self)
        if _cancelled.is_set():	# cancelled while it started
            self.kill()
            check_cancel()

    def _drain_stderr(self, rd):
        kept = 0
        try:
            while True:
                b = os.read(rd, 65536)
                if not b:
                    break
                self.err_tail = (self.err_tail + b)[-STDERR_TAIL:]
                if kept < STDERR_MAX:
                    b = b[:STDERR_MAX - kept]
                    kept += len(b)
                    try:
                        self.err.write(b)
                        self.err.flush()
                    except (OSError, ValueError):
                        kept = STDERR_MAX
        except OSError:
            pass
        finally:
            os.close(rd)

    def stderr_tail(self):
        # The pipe may hold what the process printed last: a moment for the
        # drain to take it (the process is usually gone by now).
        self.err_thread.join(0.2)
        return self.err_tail.decode("utf-8", "replace").strip()

    def _died(self, what):
        check_cancel()
        try:
            st = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            st = None
        tail = self.stderr_tail()
        if st is None:
            desc = "stopped answering"
        elif st < 0:
            desc = "was killed by signal %d (%s)" % (-st, signal.Signals(-st).name
                                                     if -st in signal.valid_signals() else "?")
        elif st == 125:
            desc = "could not be started: the sandbox could not be set up (exit 125)"
        elif st >= 128:
            desc = "exited with status %d (signal %d)" % (st, st - 128)
        else:
            desc = "exited with status %d" % st
        self.kill()
        return WorkerError("runtime_error", "worker %s during %s%s" % (
            desc, what, (": " + tail[-1500:]) if tail else ""))

    def read_reply(self, what, timeout=None, survive=False, keep_fds=False):
        """The next reply; WorkerError (and the process killed) on a
        deadline, a broken protocol or an error reply, except that with
        survive an error reply leaves the process running (the reference
        process's answer that the problem's own forward raised).
        keep_fds: descriptors already received belong to this reply."""
        if timeout is None:
            timeout = self.per_request
        end = min(self.deadline + self.paused(), time.monotonic() + timeout)
        fd = self.sock.fileno()
        if not keep_fds:
            self.drop_fds()
        while b"\n" not in self.buf:
            check_cancel()
            left = end - time.monotonic()
            if left <= 0:
                self.kill()
                raise WorkerError("timeout", "no answer to %s before the deadline" % what)
            r, _, _ = select.select([fd], [], [], left)
            if not r:
                continue
            chunk, anc, flags, _ = self.sock.recvmsg(65536, socket.CMSG_SPACE(4 * FDS_MAX))
            for level, kind, data in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
                    self.fds.extend(fds)
            if flags & socket.MSG_CTRUNC or len(self.fds) > FDS_MAX:
                self.kill()
                raise WorkerError("runtime_error", "worker sent more descriptors than a reply "
                                  "may carry during %s" % what)
            if not chunk:
                raise self._died(what)
            self.buf += chunk
            if len(self.buf) > REPLY_MAX:
                self.kill()
                raise WorkerError("runtime_error", "worker reply to %s exceeds %d bytes" % (what, REPLY_MAX))
        line, self.buf = self.buf.split(b"\n", 1)
        # Replies answer requests one at a time: what came with this line
        # belongs to it.
        self.last_fds, self.fds = self.fds, []
        try:
            reply = json.loads(line)
        except ValueError:
            self.kill()
            raise WorkerError("runtime_error", "worker broke the protocol during %s: %r"
                              % (what, line[:200]))
        if not isinstance(reply, dict):
            self.kill()
            raise WorkerError("runtime_error", "worker reply to %s is not an object" % what)
        if not reply.get("ok"):
            msg = str(reply.get("error", "unknown error"))[:2000]
            kind = "rejected" if reply.get("stage") == "load" else "runtime_error"
            if not survive:
                self.kill()
            raise WorkerError(kind, "%s: %s" % (what, msg))
        return reply

    def take_fds(self):
        """The descriptors that came with the last reply; the caller closes them."""
        fds, self.last_fds = self.last_fds, []
        return fds

    def drop_fds(self):
        for f in self.fds + self.last_fds:
            try:
                os.close(f)
            except OSError:
                pass
        self.fds, self.last_fds = [], []

    def request(self, cmd, timeout=None, survive=False):
        """Send one command; the reply, with the judge-observed wall time
        in seconds appended to self.walls (from the first byte sent: the
        judge's encoding of a request's thousands of changes is not the
        worker's time). A command with "mark" (a prepared timed run) is
        answered by the worker's mark just before its call, then the
        reply: the seconds from the mark's arrival to the reply's go to
        self.marks."""
        what = cmd.get("cmd", "?")
        if timeout is None:
            timeout = self.per_request
        line = (json.dumps(cmd) + "\n").encode()
        t0 = time.perf_counter()
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise self._died(what)
        reply = self.read_reply(what, timeout, survive)
        if cmd.get("mark"):
            t1 = time.perf_counter()
            if reply.get("calling") is not True:
                self.kill()
                raise WorkerError("runtime_error", "worker broke the protocol: its %s reply came "
                                  "without the mark before the call" % what)
            # What came in the same read as the mark belongs to the reply.
            self.fds, self.last_fds = self.last_fds + self.fds, []
            reply = self.read_reply(what, max(0.001, timeout - (t1 - t0)), survive, keep_fds=True)
            self.marks.append(time.perf_counter() - t1)
        self.walls.append(time.perf_counter() - t0)
        return reply

    def kill(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        else:
            # The leader exited: whatever it left in its group goes too.
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def close(self):
        # Once: a second close must not signal a process group whose
        # number another may have taken since.
        if getattr(self, "_closed", False):
            return
        self._closed = True
        _live.discard(self)
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"cmd":"quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self.drop_fds()
        for f in (self.proc.stdin, self.sock, self.err):
            try:
                f.close()
            except OSError:
                pass
        return self.proc.returncode
