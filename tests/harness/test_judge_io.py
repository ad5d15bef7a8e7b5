"""The judge's reads from a directory a sandboxed process writes
(jio.open_untrusted): every swap a candidate can make between the judge's
calls is refused, never followed."""
import os
import sys
import threading

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))

from kbh import judge_io as jio  # noqa: E402

SECRET = b"host secret bytes!"  # as long as the output: only the link is wrong


def _setup(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    secret = tmp_path / "secret.bin"
    secret.write_bytes(SECRET)
    spec = {"name": "out0", "dtype": "uint8", "shape": [len(SECRET)], "nbytes": len(SECRET)}
    return scratch, secret, spec


def _refused(path, spec, scratch):
    with pytest.raises((ValueError, OSError)):
        jio.read_output(str(path), spec, str(scratch))


def test_honest_file_is_read(tmp_path):
    scratch, _, spec = _setup(tmp_path)
    (scratch / "o.bin").write_bytes(b"x" * spec["nbytes"])
    t = jio.read_output(str(scratch / "o.bin"), spec, str(scratch))
    assert bytes(t.numpy()) == b"x" * spec["nbytes"]


def test_symlink_to_a_host_file_is_refused(tmp_path):
    scratch, secret, spec = _setup(tmp_path)
    os.symlink(str(secret), str(scratch / "o.bin"))
    _refused(scratch / "o.bin", spec, scratch)
    # also through staging (the CUDA path's reader)
    with pytest.raises((ValueError, OSError)):
        jio.read_output(str(scratch / "o.bin"), spec, str(scratch),
                        jio.Staging(torch.device("cpu"), pin=False))


def test_hard_link_is_refused(tmp_path):
    scratch, secret, spec = _setup(tmp_path)
    os.link(str(secret), str(scratch / "o.bin"))
    with pytest.raises(ValueError, match="links"):
        jio.read_output(str(scratch / "o.bin"), spec, str(scratch))


def test_fifo_is_refused_without_blocking(tmp_path):
    scratch, _, spec = _setup(tmp_path)
    os.mkfifo(str(scratch / "o.bin"))
    # No writer ever opens it: a blocking open would hang the test here.
    with pytest.raises(ValueError, match="regular"):
        jio.read_output(str(scratch / "o.bin"), spec, str(scratch))


def test_directory_is_refused(tmp_path):
    scratch, _, spec = _setup(tmp_path)
    (scratch / "o.bin").mkdir()
    _refused(scratch / "o.bin", spec, scratch)


def test_wrong_size_is_refused(tmp_path):
    scratch, _, spec = _setup(tmp_path)
    (scratch / "o.bin").write_bytes(b"x" * (spec["nbytes"] + 1))
    with pytest.raises(ValueError, match="expected"):
        jio.read_output(str(scratch / "o.bin"), spec, str(scratch))


def test_names_outside_or_not_plain_are_refused(tmp_path):
    scratch, secret, spec = _setup(tmp_path)
    _refused(secret, spec, scratch)
    _refused(str(scratch) + "/../secret.bin", spec, scratch)
    (scratch / "sub").mkdir()
    (scratch / "sub" / "o.bin").write_bytes(b"x" * spec["nbytes"])
    _refused(scratch / "sub" / "o.bin", spec, scratch)
    for bad in ("", ".", "..", "a/b", "../secret.bin"):
        with pytest.raises(ValueError):
            jio.open_untrusted(str(scratch), bad)


def test_scratch_that_is_a_symlink_is_refused(tmp_path):
    scratch, secret, spec = _setup(tmp_path)
    os.symlink(str(tmp_path), str(tmp_path / "link"))
    with pytest.raises(OSError):
        jio.open_untrusted(str(tmp_path / "link"), "secret.bin", spec["nbytes"])


def test_tail_never_follows_links(tmp_path):
    scratch, secret, _ = _setup(tmp_path)
    (scratch / "log").write_text("a" * 100 + "the end")
    assert jio.read_tail(str(scratch), "log", 7) == "the end"
    os.symlink(str(secret), str(scratch / "evil"))
    assert jio.read_tail(str(scratch), "evil", 100) == ""
    os.mkfifo(str(scratch / "fifo"))
    assert jio.read_tail(str(scratch), "fifo", 100) == ""


def test_a_racing_swap_never_yields_the_host_file(tmp_path):
    """A thread swaps the output file for a symlink to the secret and back
    as fast as it can while the judge reads: each read gets either the
    honest bytes or a refusal, never the secret."""
    scratch, secret, spec = _setup(tmp_path)
    honest = b"h" * spec["nbytes"]
    path = str(scratch / "o.bin")
    stop = threading.Event()

    def swapper():
        tmp_link, tmp_file = path + ".l", path + ".f"
        while not stop.is_set():
            with open(tmp_file, "wb") as f:
                f.write(honest)
            os.rename(tmp_file, path)
            try:
                os.symlink(str(secret), tmp_link)
            except FileExistsError:
                pass
            os.rename(tmp_link, path)

    th = threading.Thread(target=swapper, daemon=True)
    th.start()
    got = {"honest": 0, "refused": 0}
    try:
        # At least 3000 reads, more (up to 30000) until some met a swap:
        # a busy host may schedule the swapper late.
        for i in range(30000):
            if i >= 3000 and got["refused"] >= 5:
                break
            try:
                data = bytes(jio.read_output(path, spec, str(scratch)).numpy())
            except (ValueError, OSError):
                got["refused"] += 1
                continue
            assert data != SECRET, "read the host file through a swapped symlink"
            assert data == honest
            got["honest"] += 1
    finally:
        stop.set()
        th.join()
    assert got["refused"] > 0  # the swaps did happen while we read


def test_profile_report_never_follows_links(tmp_path):
    from kbh import judge_profile
    scratch, secret, _ = _setup(tmp_path)
    (scratch / "profile.csv").write_text('"ID","Kernel"\n')
    assert judge_profile._read(str(scratch / "profile.csv"), 100).startswith('"ID"')
    os.unlink(str(scratch / "profile.csv"))
    os.symlink(str(secret), str(scratch / "profile.csv"))
    assert judge_profile._read(str(scratch / "profile.csv"), 100) is None
