"""The judge's side of a worker (kbh/judge_worker.py): what a process it
starts can do to the judge's host through its stderr."""
import os
import sys
import time

import pytest

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


# A worker that answers each line by the script in argv: "mark" sends its
# mark just before the reply (both in one write when "together", with a
# descriptor riding on the write), "nomark" sends a reply without it.
_MARKER = r'''
import array, os, socket, sys, time
how = sys.argv[1]
out = socket.socket(fileno=os.dup(1))
for line in sys.stdin:
    mark = b'{"ok":true,"calling":true}\n'
    reply = b'{"ok":true,"ev_ms":[1.0]}\n'
    fd = os.memfd_create("kb-test")
    os.write(fd, b"snapshot")
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]
    if how == "together":
        out.sendmsg([mark + reply], anc)
    elif how == "apart":
        out.sendall(mark)
        time.sleep(0.2)
        out.sendmsg([reply], anc)
    else:
        out.sendmsg([reply], anc)
    os.close(fd)
'''


def _marker(tmp_path, how):
    return jw.Worker([sys.executable, "-c", _MARKER, how], dict(os.environ),
                     str(tmp_path / ("w-%s.stderr" % how)), time.monotonic() + 60, 30)


def test_a_marked_request_clocks_from_the_mark(tmp_path):
    # The clock from the mark to the reply is the part after the mark
    # (the 0.2 s the worker took after it), the descriptor is the reply's.
    w = _marker(tmp_path, "apart")
    try:
        r = w.request({"cmd": "time", "mark": True})
        assert r["ev_ms"] == [1.0] and len(w.marks) == 1 and 0.19 < w.marks[0] <= w.walls[-1]
        fds = w.take_fds()
        assert len(fds) == 1 and os.pread(fds[0], 8, 0) == b"snapshot"
        os.close(fds[0])
    finally:
        w.close()


def test_a_mark_and_reply_in_one_read_keep_the_descriptor(tmp_path):
    # Both lines in one read: the descriptor that came with them belongs
    # to the reply, not dropped with the mark.
    w = _marker(tmp_path, "together")
    try:
        for _ in range(3):
            r = w.request({"cmd": "time", "mark": True})
            assert r["ev_ms"] == [1.0] and w.marks[-1] < 0.1
            fds = w.take_fds()
            assert len(fds) == 1 and os.pread(fds[0], 8, 0) == b"snapshot"
            os.close(fds[0])
        assert len(w.marks) == 3
    finally:
        w.close()


def test_a_reply_without_its_mark_breaks_the_protocol(tmp_path):
    w = _marker(tmp_path, "nomark")
    try:
        with pytest.raises(jw.WorkerError, match="without the mark"):
            w.request({"cmd": "time", "mark": True})
        assert w.proc.poll() is not None	# killed: its replies can no longer be paired
    finally:
        w.close()
