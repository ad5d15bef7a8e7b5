"""The judge's early start (gpu/eval.c starts it before the compiles).

The stub request names a file; the real request appears there once the
caller has compiled the batch, or {"cancel": true} when there is nothing
to evaluate. PyTorch is imported, and the CUDA context created, on a
thread meanwhile, so the seconds they take overlap the compiles; the
waiting itself needs no torch, so a cancel is answered at once (the
harness exits without waiting for the import).
"""
import json
import os
import threading
import time

POLL_S = 0.005
# How often a one-shot judge looks for its caller (watch_caller).
WATCH_S = 0.2


def _warm(stub, box):
    try:
        import torch
        from kbh import judge  # noqa: F401  (the judge's own imports)
        if stub.get("backend") == "cuda" and torch.cuda.is_available():
            try:
                torch.cuda.set_device(int(stub.get("device", 0)))
                torch.empty(1, device="cuda")
            except (RuntimeError, ValueError):
                pass	# the judge's setup() reports it with the real request
    except BaseException as e:  # noqa: B902 -- re-raised on the main thread
        box["error"] = e
    box["ready"] = time.time()


def wait(stub):
    """(request, seconds from the spawn to ready, seconds waited after
    ready), or (None, ...) when cancelled, the caller went away, or its
    compile budget passed."""
    box = {}
    th = threading.Thread(target=_warm, args=(stub, box), daemon=True)
    th.start()
    path = str(stub["request_file"])
    deadline = time.monotonic() + float(stub.get("wait_s", 3600))
    parent = os.getppid()
    req = None
    while True:
        if os.path.exists(path):
            try:
                with open(path) as f:
                    req = json.load(f)
            except (OSError, ValueError):
                req = None
            break
        # The caller gone (we were reparented), its work directory removed,
        # or past its compile budget: nothing will come.
        if (os.getppid() != parent or time.monotonic() > deadline
                or not os.path.isdir(os.path.dirname(path))):
            break
        time.sleep(POLL_S)
    t_req = time.time()
    if not isinstance(req, dict) or req.get("cancel"):
        return None, None, None
    th.join()
    if "error" in box:
        raise box["error"]
    started = stub.get("t_spawn")
    start_s = max(0.0, box["ready"] - started) if isinstance(started, (int, float)) else None
    return req, start_s, max(0.0, t_req - box["ready"])


def watch_caller():
    """A one-shot judge (no judge server) whose caller goes away ends its
    evaluation's processes and itself: started in a process group of its
    own, it was reparented when an outside attack's `kernelbot eval` was
    killed, and its reference process and worker ran on, 13 minutes
    later still. The judge server's _Watch does the same for a client's
    connection."""
    parent = os.getppid()

    def run():
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        from kbh import judge_worker
        judge_worker.cancel_all()
        os._exit(1)
    threading.Thread(target=run, daemon=True).start()
