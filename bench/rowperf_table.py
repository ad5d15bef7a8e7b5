#!/usr/bin/env python3
"""The table of bench/rowperf.sh: for each problem, OUT/NAME/map ("LABEL
SAME" lines: the schedule label and the label whose kernel has the same
code, "-" when it did not compile), OUT/NAME/cands (the labels evaluated,
in argument order) and OUT/NAME/eval.json (`kernelbot eval --json` of
them, an array in that order). Prints one row per problem, one column per
schedule: kernel median ms and % of the memory roofline ("wrong" when not
judged correct, "=LABEL" when the code is that column's), and the best
correct schedule of each problem. Standard library only.

usage: rowperf_table.py OUT NAME...
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpu"))
from compiler_table import floor_ms, med  # noqa: E402


def lines(path):
    try:
        with open(path) as f:
            return [ln.split() for ln in f if ln.strip()]
    except OSError:
        return []


def results(d):
    try:
        with open(os.path.join(d, "eval.json")) as f:
            r = json.load(f)
    except (OSError, ValueError):
        return {}
    if isinstance(r, dict):
        r = [r]
    cands = [c[0] for c in lines(os.path.join(d, "cands"))]
    return {label: x for label, x in zip(cands, r) if isinstance(x, dict)}


def cell(r):
    if r is None:
        return "no result", None
    if r.get("status") != "correct":
        return "wrong", None
    tk = med(r, "candidate")
    fl = floor_ms(r)
    if not isinstance(tk, (int, float)):
        return "-", None
    roof = " (%.0f%%)" % (100.0 * fl / tk) if fl else ""
    return "%.3f%s" % (tk, roof), tk


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    out = sys.argv[1]
    labels = [ln[0] for ln in lines(os.path.join(out, "schedules"))]
    rows, best = [], []
    for name in sys.argv[2:]:
        d = os.path.join(out, name)
        res = results(d)
        same = {ln[0]: ln[1] for ln in lines(os.path.join(d, "map")) if len(ln) == 2}
        row, top, eager = [name], None, None
        for label in labels:
            s = same.get(label)
            if s is None or s == "-":
                row.append("compile failed" if s == "-" else "-")
                continue
            if s != label:
                row.append("=" + s)
                continue
            text, ms = cell(res.get(label))
            row.append(text)
            if ms is not None and (top is None or ms < top[1]):
                top = (label, ms)
            if eager is None and res.get(label):
                eager = med(res[label], "eager")
        rows.append(row)
        best.append("%s: best %s %.3f ms%s" % (name, top[0], top[1],
                    ", eager %.3f ms" % eager if isinstance(eager, (int, float)) else "")
                    if top else "%s: no correct kernel" % name)
    print()
    print("| problem | " + " | ".join(labels) + " |")
    print("| --- " * (len(labels) + 1) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()
    for b in best:
        print(b)
    return 0


if __name__ == "__main__":
    sys.exit(main())
