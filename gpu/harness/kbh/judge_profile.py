"""A correct candidate's profile: its worker started again under a
profiler (Nsight Compute; the C side, gpu/profile.c, chooses the tool and
its arguments), in the same sandbox as a sanitizer run, for one forward
call on the first timing set, with the L2 flushed before it. Only the
worker's process is profiled: the judge's own kernels (reference, inputs)
never run under the tool, and the worker launches none of its own (its
poison and flush are memsets).

The reply's "profile" object: {"ok", "command", "csv", "error",
"exit_status", "wall_s"}. ok means the tool wrote a report (csv, capped);
parsing it is the caller's. The profiler failing (no permission, a
timeout, no report) is never the candidate's failure: it is said in
"error" and the evaluation's status stands.
"""
import os
import shutil
import subprocess
import time

from kbh import judge_io as jio
from kbh.judge_worker import Worker, WorkerError

CSV_MAX = 4 << 20
LOG_TAIL = 1500
DEFAULT_TIMEOUT_S = 120


def _read(path, limit):
    """The first limit+1 bytes of the profiler's report, None when it
    cannot be read: the profiled candidate could write that directory, so
    jio.open_untrusted's rules (no links followed, a regular file)."""
    try:
        fd = jio.open_untrusted(os.path.dirname(path), os.path.basename(path))
    except (OSError, ValueError):
        return None
    try:
        return os.pread(fd, limit + 1, 0).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def _tool_errors(text):
    """The tool's own complaints (ncu prefixes them with ==ERROR== or
    ==WARNING==), for the reason a report is missing."""
    lines = [l.strip() for l in (text or "").splitlines()
             if l.startswith("==ERROR==") or l.startswith("==WARNING==")]
    return "\n".join(lines)[-LOG_TAIL:]


def run(cr):
    """Profile candidate run cr (a judge_run.CandidateRun). Returns the
    "profile" object."""
    p = cr.ctx.profile
    tool = str(p.get("tool") or "")
    args = [str(a) for a in (p.get("args") or [])]
    timeout = float(p.get("timeout_s") or DEFAULT_TIMEOUT_S)
    out = {"ok": False, "command": [tool] + args, "csv": None, "error": None,
           "exit_status": None, "wall_s": None}
    if not tool:
        out["error"] = "no profiler given"
        return out
    scratch = cr.scratch + "-profile"
    os.makedirs(scratch, exist_ok=True)
    # Workers run as another uid in the sandbox: the report must be writable.
    os.chmod(scratch, 0o777)
    log = os.path.join(scratch, "profile.csv")
    out["command"] = [tool] + args + ["--log-file", log]
    t0 = time.monotonic()
    deadline = t0 + timeout
    w = None
    worker_error = None
    try:
        argv, env, mem = cr.argv(profiler=out["command"], scratch=scratch)
        w = Worker(argv, env, os.path.join(cr.ctx.workdir, "cand%s.profile.stderr" % cr.c.get("id")),
                   deadline, timeout, mem)
        try:
            w.read_reply("start", timeout)
            k = cr.ctx.timing_sets[0] if cr.ctx.timing_sets else 0
            w.request({"cmd": "time", "sets": [k], "reps": 1}, timeout=max(1.0, deadline - time.monotonic()))
            w.proc.stdin.write(b'{"cmd":"quit"}\n')
            w.proc.stdin.flush()
        except (WorkerError, OSError) as e:
            # A tool that never starts its target (or one that fails) ends
            # here; its report or its errors say more below.
            worker_error = getattr(e, "message", str(e))
            if getattr(e, "kind", None) == "timeout":
                out["error"] = "the profiler did not finish within %g s" % timeout
        # The tool writes its report after the target exits: wait for it,
        # within the deadline, before the group is killed.
        try:
            out["exit_status"] = w.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            out["error"] = "the profiler did not finish within %g s" % timeout
    except WorkerError as e:
        worker_error = e.message
    finally:
        if w is not None:
            w.close()
    out["wall_s"] = round(time.monotonic() - t0, 3)
    text = _read(log, CSV_MAX)
    tail = ""
    if w is not None:
        tail = w.stderr_tail()
    if text and '"ID"' in text:
        out["ok"] = out["error"] is None
        out["csv"] = text[:CSV_MAX]
        if len(text) > CSV_MAX:
            out["ok"], out["error"] = False, "the report exceeds %d bytes" % CSV_MAX
    elif out["error"] is None:
        why = _tool_errors(text) or _tool_errors(tail)
        out["error"] = ("the profiler wrote no report" + (": " + why if why else "")
                        + ((" (worker: %s)" % worker_error[:LOG_TAIL]) if worker_error else "")
                        + ("" if why or worker_error else
                           " (exit status %s; %s)" % (out["exit_status"], tail[-LOG_TAIL:] or "no output")))
    if not os.environ.get("KERNELBOT_EVAL_KEEP"):
        shutil.rmtree(scratch, ignore_errors=True)
    return out
