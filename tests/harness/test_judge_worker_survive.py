"""kbh/judge_worker.py: an error reply ends the process, except where the
caller says it survives (the reference process's answer that the
problem's own forward raised on the judge's changed inputs)."""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))
from kbh.judge_worker import Worker, WorkerError  # noqa: E402

# Answers each line: an error for "bad", ok otherwise.
ECHO = ("import json, sys\n"
        "for line in sys.stdin:\n"
        "    r = json.loads(line)\n"
        "    out = {'ok': False, 'stage': 'load', 'error': 'it raised'} if r['cmd'] == 'bad' "
        "else {'ok': True, 'n': r.get('n')}\n"
        "    sys.stdout.write(json.dumps(out) + '\\n'); sys.stdout.flush()\n")


def start(tmp_path):
    return Worker([sys.executable, "-c", ECHO], dict(os.environ), str(tmp_path / "err"),
                  time.monotonic() + 60, 10)


def test_an_error_reply_survives_only_where_asked(tmp_path):
    w = start(tmp_path)
    try:
        with pytest.raises(WorkerError) as e:
            w.request({"cmd": "bad"}, survive=True)
        assert e.value.kind == "rejected" and "it raised" in e.value.message
        assert w.request({"cmd": "ok", "n": 2})["n"] == 2
        with pytest.raises(WorkerError):
            w.request({"cmd": "bad"})
        with pytest.raises(WorkerError):
            w.request({"cmd": "ok", "n": 3})	# ended with the error
    finally:
        w.close()
