#!/usr/bin/python3
"""Trace many problems in one process (torch imports once) into IR
fixtures: trace_batch.py HARNESS_PY OUTDIR PROBLEM.py... -> OUTDIR/NAME.json.
The same trace verb as `kernelbot trace --json --verify none`."""
import json
import os
import sys

harness = os.path.dirname(os.path.abspath(sys.argv[1]))
sys.path.insert(0, harness)
from kbh import trace  # noqa: E402

out = sys.argv[2]
os.makedirs(out, exist_ok=True)
rc = 0
for p in sys.argv[3:]:
    name = os.path.splitext(os.path.basename(p))[0]
    try:
        r = trace.run({"verb": "trace", "problem": os.path.abspath(p), "verify": "none"})
    except Exception as e:
        print("FAIL %s: %s" % (name, e))
        rc = 1
        continue
    ir = r["ir"]
    ir["problem"] = os.path.relpath(ir["problem"])  # fixtures do not name this machine's paths
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(ir, f, indent=1)
        f.write("\n")
    print("ok %s" % name)
sys.exit(rc)
