"""What compute-sanitizer checks in a winner (docs/design.md,
"The evaluation protocol", point 8).

memcheck runs on every kernel of the candidate's process. racecheck, which
only looks at shared memory, runs on the kernels the candidate built: its
cost grows with every shared-memory access, and on the library kernels a
candidate calls it dominated everything (one cuBLAS SGEMM of 4096^3 took
over 5 minutes; bench/sanitize_cost.sh measures it). A library's shared
memory is not the candidate's to race on, while what the candidate passes
to the library (pointers, sizes, leading dimensions) is still checked by
memcheck.

The candidate's kernels are the entries of the device code in its own
shared object, listed by cuobjdump. Code a candidate could load some other
way at run time (a module from bytes, NVRTC, the driver's entry points) is
not listed; gpu/eval.c asks for racecheck on every kernel when the source
shows any of that (srccheck's runtime_code_loading and timer_tampering).
Whenever the list cannot be made, racecheck runs on every kernel.
"""
import os
import re
import shutil
import subprocess

MAX_FILTERS = 64	# more of the candidate's own kernels than this: check all

_OPTS = {}


def has_padding(tool_path):
    """Whether this compute-sanitizer knows --padding (asked once per path)."""
    if tool_path not in _OPTS:
        try:
            out = subprocess.run([tool_path, "--help"], capture_output=True, text=True,
                                 timeout=30, errors="replace").stdout
        except (OSError, subprocess.SubprocessError):
            out = ""
        _OPTS[tool_path] = "--padding" in out
    return _OPTS[tool_path]


def source_name(mangled):
    """The plain identifier inside a kernel's symbol: the name itself for
    extern "C" kernels, the function's own name (the last of a nested
    name, the first of a plain one) for Itanium-mangled ones, which is a
    substring of both the mangled and the demangled form. None when the
    symbol is not understood."""
    if not mangled.startswith("_Z"):
        return mangled if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", mangled) else None
    s, i = mangled, 2
    nested = s.startswith("N", i)
    if nested:
        i += 1
        while i < len(s) and s[i] in "rVKRO":	# cv- and ref-qualifiers
            i += 1
    names = []
    while True:
        m = re.match(r"[0-9]+", s[i:])
        if not m:
            break
        n = int(m.group(0))
        i += len(m.group(0))
        if n <= 0 or i + n > len(s):
            return None
        names.append(s[i:i + n])
        i += n
        if not nested:
            break
        if s.startswith("I", i) or s.startswith("E", i):
            break
    if not names:
        return None
    name = names[-1]
    return name if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_$]*", name) else None


def run_plain(argv):
    """Run argv as it is (the caller's sandbox, if any, wraps it)."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=90, errors="replace")


def own_kernels(so_path, cuobjdump, run=run_plain):
    """The entry symbols in so_path's device code, in order, without
    repeats; None when cuobjdump fails or lists none. run executes an
    argv and returns its CompletedProcess: the judge's runs cuobjdump in
    the sandbox, since the shared object is the candidate's."""
    try:
        r = run([cuobjdump, "-symbols", so_path])
    except (OSError, subprocess.SubprocessError):
        return None
    if r.returncode != 0:
        return None
    names = list(dict.fromkeys(re.findall(r"\bSTO_ENTRY\s+(\S+)", r.stdout)))
    return names or None


def find_cuobjdump(tool_path):
    """cuobjdump from the sanitizer's toolkit, else the PATH's. The
    sanitizer's real file can sit in <toolkit>/compute-sanitizer/, beside
    <toolkit>/bin/ where cuobjdump is."""
    real = os.path.realpath(tool_path)
    for d in (os.path.dirname(real), os.path.join(os.path.dirname(real), "..", "bin")):
        p = os.path.join(d, "cuobjdump")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("cuobjdump", path="/usr/local/cuda/bin:/usr/bin:/bin")


def racecheck_scope(cand, tool_path, run=run_plain):
    """(extra compute-sanitizer arguments, what they check in words) for
    racecheck of one candidate: its own kernels where they can be named,
    else every kernel. run: as own_kernels'."""
    if cand.get("kind") != "native":
        return [], "every kernel (a KernelBench solution has no shared object to list)"
    if cand.get("racecheck") == "all":
        return [], "every kernel (the source may load or look up code at run time)"
    tool = find_cuobjdump(tool_path)
    kernels = own_kernels(cand["so"], tool, run) if tool else None
    if not kernels:
        return [], "every kernel (%s)" % ("cuobjdump listed no kernels of the candidate's"
                                          if tool else "cuobjdump not found")
    idents = [source_name(k) for k in kernels]
    if None in idents or len(set(idents)) > MAX_FILTERS:
        return [], "every kernel (%d kernels of the candidate's, not all named)" % len(kernels)
    args = []
    for n in dict.fromkeys(idents):
        args += ["--kernel-name", "kns=" + n]
    return args, ("the candidate's own kernels (%s); library kernels have memcheck only"
                  % ", ".join(dict.fromkeys(idents)))
