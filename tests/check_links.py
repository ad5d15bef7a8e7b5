"""Check the relative links of markdown files: every [text](target) whose
target is not a URL must name a file or folder that exists, and a
#fragment must name a heading of the markdown file it points into (GitHub's
anchors: lowercased, punctuation other than - and _ dropped, spaces as -,
a repeated heading numbered -1, -2, ...).

Usage: check_links.py ROOT FILE_OR_DIR...   (directories: every *.md below)
Prints one line per broken link, `FILE:LINE: target: why`, and exits 1 if
there is any, 0 otherwise.
"""
import os
import re
import sys

LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen, out, fenced = {}, set(), False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                m = None if fenced else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if not m:
                    continue
                a = slug(m.group(1))
                n = seen.get(a, 0)
                seen[a] = n + 1
                out.add(a if n == 0 else "%s-%d" % (a, n))
        cache[path] = out
    return cache[path]


def links(path):
    fenced = False
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if fenced or line.startswith("    "):
                continue
            # inline code is not a link
            for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line)):
                yield no, m.group(1)


def check(root, path):
    bad = []
    for no, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:, ...
        file, _, frag = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        rel = os.path.relpath(dest, root)
        if rel.startswith(".."):
            bad.append((no, target, "points outside the repository"))
        elif not os.path.exists(dest):
            bad.append((no, target, "no such file"))
        elif frag and dest.endswith(".md") and frag not in anchors(dest):
            bad.append((no, target, "no heading with that anchor in " + rel))
    return bad


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    root = os.path.abspath(argv[1])
    files = []
    for a in argv[2:]:
        a = os.path.join(root, a)
        if os.path.isdir(a):
            for d, _, names in os.walk(a):
                files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
        else:
            files.append(a)
    n_bad = 0
    for f in files:
        for no, target, why in check(root, f):
            print("%s:%d: %s: %s" % (os.path.relpath(f, root), no, target, why))
            n_bad += 1
    return 1 if n_bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
