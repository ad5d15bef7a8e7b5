"""Shared helpers for the harness tests (run: python3 -m pytest tests/harness -q)."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HARNESS = os.path.join(ROOT, "gpu", "harness", "harness.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
sys.path.insert(0, os.path.join(ROOT, "gpu", "harness"))


def pytest_configure(config):
    config.addinivalue_line("markers", "realsize: traces a development problem at its real size "
                                       "(select with -m realsize, skip with -m 'not realsize')")


def problems_dir():
    """The development problems: $KERNELBOT_PROBLEMS or ../shared/problems."""
    d = os.environ.get("KERNELBOT_PROBLEMS") or os.path.join(ROOT, "..", "shared", "problems")
    return os.path.abspath(d)


def run_harness(request, raw=None, timeout=120):
    """Run harness.py as the C binary does; returns (reply dict, completed process)."""
    data = raw if raw is not None else json.dumps(request)
    p = subprocess.run([sys.executable, HARNESS], input=data.encode(), capture_output=True, timeout=timeout)
    assert p.returncode == 0, "harness crashed (rc %d): %s" % (p.returncode, p.stderr.decode()[-3000:])
    lines = p.stdout.decode().splitlines()
    assert len(lines) == 1, "stdout must be exactly one JSON line, got: %r" % p.stdout[:2000]
    return json.loads(lines[0]), p


def trace(path, **kw):
    """In-process trace verb: the reply dict, or raises HarnessError."""
    from kbh import trace as trace_mod
    req = {"verb": "trace", "problem": path}
    req.update(kw)
    return trace_mod.run(req)


def trace_error(path, **kw):
    from kbh.protocol import HarnessError
    with pytest.raises(HarnessError) as ei:
        trace(path, **kw)
    return ei.value


@pytest.fixture
def write_problem(tmp_path):
    """Write a problem file from source text; returns its path."""
    def write(src, name="problem.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(src))
        return str(path)
    return write


def ops_of(reply):
    return [n["op"] for n in reply["ir"]["nodes"]]


def node(reply, name):
    return next(n for n in reply["ir"]["nodes"] if n["name"] == name)
