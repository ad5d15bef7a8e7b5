#!/usr/bin/env python3
"""kernelbot harness entry point: one JSON request on stdin, one JSON reply
on stdout, exit 0 whenever a reply was written (docs/harness.md).

A nonzero exit means the harness itself crashed; the traceback is on stderr.

Worker mode is the exception: `harness.py pyworker ARGS...` turns this
process into the untrusted worker for a KernelBench-format solution, which
speaks JSON lines on stdin/stdout (docs/evaluation.md), and so does
`harness.py refproc ARGS...`, the sandboxed reference process that alone
imports the problem (kbh/refproc.py); `harness.py judge-server ARGS...` is
the persistent judge (kbh/judge_server.py).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from kbh import protocol  # noqa: E402


def _trace(req):
    from kbh import trace
    return trace.run(req)


def _equivalent(req):
    from kbh import equivalent
    return equivalent.run(req)


def _info(req):
    from kbh import info
    return info.run(req)


def _evaluate(req):
    from kbh import judge_early
    judge_early.watch_caller()
    start_s = waited = None
    if "request_file" in req:
        # Started before the caller's compiles: torch imports on a thread
        # while this one waits for the request (or a cancel).
        req, start_s, waited = judge_early.wait(req)
        if req is None:
            raise protocol.HarnessError("request", "cancelled: the caller sent no request")
    from kbh import judge
    return judge.run(req, start_s, waited)


# verb -> handler(request dict) -> reply dict; handlers raise HarnessError.
# Imports are lazy so that a verb's dependencies load only when it runs.
VERBS = {
    "trace": _trace,
    "equivalent": _equivalent,
    "info": _info,
    "evaluate": _evaluate,
}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "pyworker":
        from kbh import pyworker
        return pyworker.main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "refproc":
        from kbh import refproc
        return refproc.main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "judge-server":
        from kbh import judge_server
        return judge_server.main(sys.argv[2:])
    out = protocol.isolate_stdout()
    verb = None
    try:
        req = protocol.read_request(sys.stdin)
        verb = req.get("verb")
        if not isinstance(verb, str):
            raise protocol.HarnessError("request", "missing or non-string field 'verb' (known verbs: %s)"
                                        % ", ".join(sorted(VERBS)))
        if verb not in VERBS:
            raise protocol.HarnessError("request", "unknown verb %r (known verbs: %s)"
                                        % (verb, ", ".join(sorted(VERBS))))
        reply = VERBS[verb](req)
    except protocol.HarnessError as e:
        reply = protocol.error_reply(e)
    out.write(protocol.encode_reply(reply))
    out.flush()
    if verb == "evaluate":
        # The reply is out and the workers are gone: skip the interpreter's
        # teardown (CUDA state, torch.compile's worker pools, gigabytes of
        # tensors), which cost seconds after an evaluation.
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
