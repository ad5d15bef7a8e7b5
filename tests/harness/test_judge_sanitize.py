"""What racecheck is pointed at (kbh/judge_sanitize.py): the candidate's
own kernels, named so that compute-sanitizer's substring filter matches
them in mangled or demangled form, and every kernel whenever that list
cannot be trusted or made."""
import os
import stat

from kbh import judge_sanitize as js


def test_source_name():
    assert js.source_name("scale_bias") == "scale_bias"		# extern "C"
    assert js.source_name("_Z9scale_ownPfif") == "scale_own"
    assert js.source_name("_Z2tkILi3EEvPf") == "tk"			# a template
    assert js.source_name("_ZN2ns3fooEPf") == "foo"			# a namespace
    assert js.source_name("_ZN2ns3fooILi2EEEvPf") == "foo"
    assert js.source_name("_ZN12_GLOBAL__N_16kernelEPf") == "kernel"
    for bad in ("_Z", "_Z99x", "_ZN", "a.b", "", "_Z0x"):
        assert js.source_name(bad) is None, bad


def fake_toolkit(tmp_path, listing, rc=0):
    """A compute-sanitizer and a cuobjdump beside it that prints listing."""
    d = tmp_path / "bin"
    d.mkdir(parents=True)
    san = d / "compute-sanitizer"
    san.write_text("#!/bin/sh\nexit 0\n")
    dump = d / "cuobjdump"
    dump.write_text("#!/bin/sh\ncat <<'X'\n%s\nX\nexit %d\n" % (listing, rc))
    for f in (san, dump):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return str(san)


LISTING = """
Fatbin elf code:
================
arch = sm_90

symbols:
STT_SECTION      STB_LOCAL  .text._Z9scale_ownPfif
STT_FUNC         STB_GLOBAL STO_ENTRY      _Z9scale_ownPfif
STT_FUNC         STB_GLOBAL STO_ENTRY      gelu_epilogue
STT_FUNC         STB_GLOBAL                _Z6helperv
"""


def test_own_kernels_filter(tmp_path):
    san = fake_toolkit(tmp_path, LISTING + LISTING)	# two architectures: no repeats
    args, scope = js.racecheck_scope({"kind": "native", "so": "/k.so"}, san)
    assert args == ["--kernel-name", "kns=scale_own", "--kernel-name", "kns=gelu_epilogue"]
    assert "own kernels (scale_own, gelu_epilogue)" in scope


def test_every_kernel_when_unsure(tmp_path):
    san = fake_toolkit(tmp_path, LISTING)
    native = {"kind": "native", "so": "/k.so"}
    # the source may load code the listing cannot see
    assert js.racecheck_scope(dict(native, racecheck="all"), san)[0] == []
    # a KernelBench solution has no shared object of its own
    assert js.racecheck_scope({"kind": "kernelbench", "path": "/s.py"}, san)[0] == []
    # nothing listed, a failing cuobjdump, a symbol not understood
    for listing, rc in (("symbols:\n", 0), (LISTING, 1),
                        ("STT_FUNC STB_GLOBAL STO_ENTRY _Z99x\n", 0)):
        san = fake_toolkit(tmp_path / str(len(os.listdir(tmp_path))), listing, rc)
        args, scope = js.racecheck_scope(native, san)
        assert args == [] and scope.startswith("every kernel"), (listing, rc, scope)


def test_no_cuobjdump(tmp_path, monkeypatch):
    d = tmp_path / "bin"
    d.mkdir()
    san = d / "compute-sanitizer"
    san.write_text("#!/bin/sh\n")
    monkeypatch.setattr(js.shutil, "which", lambda *a, **k: None)
    args, scope = js.racecheck_scope({"kind": "native", "so": "/k.so"}, str(san))
    assert args == [] and "cuobjdump not found" in scope
