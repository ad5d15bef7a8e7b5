"""kbh/judge_devsnap.py on a host without the driver's calls: the judge
asks for no exported snapshot (after one the worker seals no memfd for
that set, so a mapping the judge cannot make would lose the candidate)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "gpu", "harness"))
from kbh import judge_devsnap as jds  # noqa: E402


def test_without_the_driver_no_export_is_asked_for(monkeypatch, capsys):
    def missing():
        raise jds.ShareError("libcuda.so.1 lacks cuMemMap")
    monkeypatch.setattr(jds, "driver", missing)
    monkeypatch.setattr(jds, "_unusable", None)
    assert jds.usable() is False and jds.usable() is False
    err = capsys.readouterr().err
    assert err.count("no exported snapshots: libcuda.so.1 lacks cuMemMap; sealed memfds") == 1


def test_with_the_driver_exports_are_asked_for(monkeypatch):
    monkeypatch.setattr(jds, "driver", lambda: object())
    monkeypatch.setattr(jds, "_unusable", None)
    assert jds.usable() is True
