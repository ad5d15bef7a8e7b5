"""The judge's side of a worker (kbh/judge_worker.py): what a process it
starts can do to the judge's host through its stderr."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_worker as jw  # noqa: E402


def test_stderr_is_capped_and_its_tail_kept(tmp_path):
    # 8 MiB of stderr, then a last line: the file keeps STDERR_MAX bytes,
    # the tail is the last line's, and the process never blocks on it.
    err = tmp_path / "w.stderr"
    prog = ("import sys; sys.stderr.buffer.write(b'x' * (8 << 20)); "
            "sys.stderr.write('the last line\\n'); sys.stderr.flush()")
    w = jw.Worker([sys.executable, "-c", prog], dict(os.environ), str(err),
                  time.monotonic() + 60, 30)
    assert w.proc.wait(timeout=30) == 0
    assert w.stderr_tail().endswith("the last line")
    w.close()
    assert os.path.getsize(err) == jw.STDERR_MAX
