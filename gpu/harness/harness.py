#!/usr/bin/env python3
"""kernelbot harness entry point: one JSON request on stdin, one JSON reply
on stdout, exit 0 whenever a reply was written (docs/harness.md).

Worker mode is the exception: `harness.py pyworker ARGS...` turns this
process into the untrusted worker for a KernelBench-format solution, which
speaks JSON lines on stdin/stdout (docs/evaluation.md).

MINIMAL VERSION written on the eval branch; the harness branch owns this
file and the lead reconciles the verb tables at merge.
"""
import json
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

MAX_REQUEST_BYTES = 1 << 20


def _evaluate(req):
    from kbh import judge
    return judge.run(req)


# verb -> handler(request dict) -> reply dict. Lazy imports: a verb's
# dependencies load only when it runs.
VERBS = {
    "evaluate": _evaluate,
}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "pyworker":
        from kbh import pyworker
        return pyworker.main(sys.argv[2:])
    # User code may print (from Python or C): fd 1 becomes stderr, and the
    # reply goes to a private duplicate of the original stdout.
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        data = sys.stdin.read(MAX_REQUEST_BYTES + 1)
        req = json.loads(data) if len(data) <= MAX_REQUEST_BYTES else None
        if not isinstance(req, dict) or not isinstance(req.get("verb"), str):
            reply = {"ok": False, "error": {"stage": "request",
                     "message": "expected one JSON object with a 'verb'"}}
        elif req["verb"] not in VERBS:
            reply = {"ok": False, "error": {"stage": "request", "message":
                     "unknown verb %r (known verbs: %s)" % (req["verb"], ", ".join(sorted(VERBS)))}}
        else:
            reply = VERBS[req["verb"]](req)
    except ValueError as e:
        reply = {"ok": False, "error": {"stage": "request", "message": "bad JSON: %s" % e}}
    except Exception as e:  # a harness bug: report it rather than die silently
        traceback.print_exc()
        reply = {"ok": False, "error": {"stage": "internal", "message": "%s: %s" % (type(e).__name__, e)}}
    out.write(json.dumps(reply, allow_nan=False, separators=(",", ":")) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
