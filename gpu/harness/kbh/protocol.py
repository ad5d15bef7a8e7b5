"""Request/reply plumbing and the error type every stage raises.

The reply goes to the stdout file descriptor saved at startup; fd 1 and
sys.stdout are pointed at stderr before any user code runs, so a problem
file that prints (from Python or from C) cannot corrupt the reply.
"""
import contextlib
import json
import math
import os
import sys
import traceback

STAGES = ("request", "load", "init", "inputs", "trace", "shape", "verify")

# A request larger than this is not something the C side sends.
MAX_REQUEST_BYTES = 1 << 20


class HarnessError(Exception):
    """A failure to report to the caller as {"ok": false, "error": ...}."""

    def __init__(self, stage, message):
        assert stage in STAGES, stage
        super().__init__(message)
        self.stage = stage
        self.message = message


def isolate_stdout():
    """Point fd 1 and sys.stdout at stderr; return a file for the reply."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(saved, "w", encoding="utf-8", closefd=True)


def read_request(stream):
    data = stream.read(MAX_REQUEST_BYTES + 1)
    if len(data) > MAX_REQUEST_BYTES:
        raise HarnessError("request", "request larger than %d bytes" % MAX_REQUEST_BYTES)
    if not data.strip():
        raise HarnessError("request", "empty request: expected one JSON object on stdin")
    try:
        req = json.loads(data)
    except ValueError as e:
        raise HarnessError("request", "request is not valid JSON: %s" % e)
    if not isinstance(req, dict):
        raise HarnessError("request", "request must be a JSON object, got %s" % type(req).__name__)
    return req


def encode_reply(reply):
    # allow_nan=False: non-finite floats must already be encoded as
    # {"float": "inf"}; a bare NaN token would break the C parser.
    return json.dumps(reply, allow_nan=False, separators=(",", ":")) + "\n"


def error_reply(err):
    return {"ok": False, "error": {"stage": err.stage, "message": err.message}}


def user_location(tb_or_frames, problem_path):
    """The innermost frame of a traceback that lies in the problem file,
    as "path:line: source", or None."""
    if problem_path is None:
        return None
    want = os.path.realpath(problem_path)
    found = None
    for fs in tb_or_frames:
        if fs.filename and os.path.realpath(fs.filename) == want:
            found = fs
    if found is None:
        return None
    line = (found.line or "").strip()
    loc = "%s:%d" % (found.filename, found.lineno)
    return "%s: %s" % (loc, line) if line else loc


def describe_exception(exc, problem_path=None):
    """One clear line for an exception raised by user code."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    msg = "%s: %s" % (type(exc).__name__, first) if first else type(exc).__name__
    if len(text.splitlines()) > 1:
        # torch errors put the useful part on several lines; keep a bounded tail.
        msg = "%s: %s" % (type(exc).__name__, " ".join(l.strip() for l in text.splitlines()[:6]))
    loc = user_location(traceback.extract_tb(exc.__traceback__), problem_path)
    if loc:
        msg += " (at %s)" % loc
    return msg


@contextlib.contextmanager
def stage(name, what, problem_path=None):
    """Turn any exception raised by user code inside the block into a
    HarnessError of the given stage, prefixed with what was being done."""
    try:
        yield
    except HarnessError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # SystemExit from user code is an error too
        raise HarnessError(name, "%s: %s" % (what, describe_exception(e, problem_path)))


def finite_float(x):
    """JSON form of a Python float: the number, or {"float": "inf"|"-inf"|"nan"}."""
    if math.isnan(x):
        return {"float": "nan"}
    if math.isinf(x):
        return {"float": "inf" if x > 0 else "-inf"}
    return x


def check_fields(req, spec):
    """Validate request fields against spec {name: (types, default)}; fill
    defaults; reject unknown fields so typos are caught at the boundary."""
    out = {}
    for key in req:
        if key not in spec:
            raise HarnessError("request", "unknown field %r for verb %r (known: %s)"
                               % (key, req.get("verb"), ", ".join(sorted(spec))))
    for key, (types, default) in spec.items():
        if key not in req:
            if default is REQUIRED:
                raise HarnessError("request", "missing required field %r" % key)
            out[key] = default
            continue
        val = req[key]
        # bool is an int in Python; a seed of true is a caller bug.
        if isinstance(val, bool) and bool not in types:
            raise HarnessError("request", "field %r must be %s, got a boolean"
                               % (key, "/".join(t.__name__ for t in types)))
        if not isinstance(val, types):
            raise HarnessError("request", "field %r must be %s, got %s"
                               % (key, "/".join(t.__name__ for t in types), type(val).__name__))
        out[key] = val
    return out


REQUIRED = object()
