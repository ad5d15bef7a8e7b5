"""Hand variants of the graph compiler's kernel for 13_cross_entropy, to
find where its time goes above the memory roofline (68% in optimize run
2, docs/BENCHMARKS.md). Each variant changes one thing in the generated
source; bench/ce13/run.sh times them side by side with bench/abi_time.cu.

  nogather     the target's logit read as 0 (wrong outputs): the cost of
               the dependent load in[row, target] after the target index
  gatherfirst  the target index and its logit loaded before the row (the
               index's latency under the row's instead of after it)
  nok2         no second kernel (wrong output): the cost of the mean over
               rows and its launch
  rowsonly     both of the last two left out: the row kernel's reads and
               reductions alone
  k2unroll     the mean's loops unrolled 16 deep, not 4 (a thread of its
               one block has 16 elements of each: all of its loads in
               flight at once)

usage: python3 variants.py BASE.cu OUTDIR
"""
import os
import re
import sys

GATHER = re.compile(r"^(\t+)float (t\d+) = in0\[4096 \* x0 \+ x1\];$", re.M)
# from the target index's load to its logit's, as the compiler emits them
TARGET = re.compile(r"^\t+int64_t t\d+ = in1\[x0\];\n(?:^\t+.*\n)*?^\t+float t\d+ = in0\[4096 \* x0 \+ x1\];\n",
                    re.M)
ROW = re.compile(r"^\t+float kb_row0\[\d+\];\n", re.M)
K2 = re.compile(r"^\tkb_k2<<<.*\n", re.M)


def k2unroll(src):
    head, sep, rest = src.partition("\nkb_k2(")
    body, sep2, tail = rest.partition("\n}\n")
    body, n = re.subn(r"#pragma unroll 4\b", "#pragma unroll 16", body)
    return head + sep + body + sep2 + tail, n


def gatherfirst(src):
    out, n = [], 0
    for part in re.split(r"(?=__global__ void)", src):
        m, r = TARGET.search(part), ROW.search(part)
        if m and r and r.end() <= m.start():
            part = part[:r.end()] + m.group(0) + part[r.end():m.start()] + part[m.end():]
            n += 1
        out.append(part)
    return "".join(out), n


def main():
    base, outdir = sys.argv[1], sys.argv[2]
    src = open(base).read()
    variants = {
        "nogather": GATHER.subn(r"\1float \2 = 0.0f;", src),
        "gatherfirst": gatherfirst(src),
        "nok2": K2.subn("", src),
    }
    text, n = variants["nogather"]
    text, m = K2.subn("", text)
    variants["rowsonly"] = (text, n and m)
    variants["k2unroll"] = k2unroll(src)
    os.makedirs(outdir, exist_ok=True)
    for name, (text, n) in variants.items():
        if n == 0:
            sys.exit("variants.py: %s: the generated source no longer has what it changes" % name)
        with open(os.path.join(outdir, name + ".cu"), "w") as f:
            f.write(text)
        print("%s: %d change%s" % (name, n, "" if n == 1 else "s"))


if __name__ == "__main__":
    main()
