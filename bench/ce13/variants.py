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
  partials     the mean folded into the row kernel: a grid of as many
               blocks as fit at once, each adding up its rows' losses and
               valid targets, the last block to finish (an atomic count,
               zeroed by a memset) adding the blocks' partial sums: the
               best case of fusing a whole-tensor reduction into the
               kernel before it, slower than the two kernels on the H100
               and the H200 (docs/BENCHMARKS.md, optimize run 4)

Two variants of the pdl kernel timed in session 10 are now what the
compiler emits (docs/BENCHMARKS.md): the mean's kernel counting the valid
targets before it waits for the row kernel, and the row losses in a
buffer kept per stream instead of the pool's on each call.

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


def gatherfirst(src):
    out, n = [], 0
    for part in re.split(r"(?=__global__ void)", src):
        m, r = TARGET.search(part), ROW.search(part)
        if m and r and r.end() <= m.start():
            part = part[:r.end()] + m.group(0) + part[r.end():m.start()] + part[m.end():]
            n += 1
        out.append(part)
    return "".join(out), n


K0 = re.compile(r"__global__ void __launch_bounds__\((\d+)\)\nkb_k0\(.*?\n}\n", re.S)
LAUNCH0 = re.compile(r"\tif \(\(uintptr_t\)in0 % 16 == 0.*?\n\telse\n\t\tkb_k1<<<.*?\n", re.S)
TAIL = """\t__shared__ int kb_last;
\tif (kb_lane == 0) {
\t\tpart[2 * blockIdx.x] = kb_pl;
\t\tpart[2 * blockIdx.x + 1] = kb_pc;
\t\t__threadfence();
\t\tkb_last = atomicAdd(cnt, 1u) == gridDim.x - 1;
\t}
\t__syncthreads();
\tif (!kb_last)
\t\treturn;
\t__threadfence();
\tfloat l = 0.0f, c = 0.0f;
\t#pragma unroll 8
\tfor (int b = kb_lane; b < (int)gridDim.x; b += kb_team) {
\t\tl += __ldcg(&part[2 * b]);
\t\tc += __ldcg(&part[2 * b + 1]);
\t}
\tl = kb_team_sum(l);
\tc = kb_team_sum(c);
\tif (kb_lane == 0)
\t\tout0[0] = l / c;
}
"""


def partials(src):
    m, launch = K0.search(src), LAUNCH0.search(src)
    if not m or not launch or not K2.search(src):
        return src, 0
    block = m.group(1)
    k = m.group(0).replace(
        "kb_k0(const float *__restrict__ in0, const int64_t *__restrict__ in1, float *__restrict__ s15)",
        "kb_kp(const float *__restrict__ in0, const int64_t *__restrict__ in1, float *part, unsigned *cnt, "
        "float *out0)")
    k = k.replace("\tfor (int64_t kb_o = blockIdx.x;", "\tfloat kb_pl = 0.0f, kb_pc = 0.0f;\n\tfor (int64_t kb_o = blockIdx.x;")
    k, n = re.subn(r"\t\tif \(kb_lane == 0\) s15\[x0\] = (t\d+);\n", r"\t\tkb_pl += \1;\n", k)
    k, n2 = re.subn(r"(\t\tuint8_t (t\d+) = t\d+ != INT64_C\(-100\);\n)", r"\1\t\tkb_pc += \2 ? 1.0f : 0.0f;\n", k)
    if n != 1 or n2 != 1:
        return src, 0
    k = k[:-2] + TAIL
    host = ("\t{\n\t\tstatic int kb_g;\n\t\tif (!kb_g) {\n\t\t\tint d, nsm, per;\n"
            "\t\t\tcudaGetDevice(&d);\n\t\t\tcudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, d);\n"
            "\t\t\tcudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, kb_kp, %s, 0);\n\t\t\tkb_g = nsm * per;\n\t\t}\n"
            "\t\tunsigned *cnt = (unsigned *)(s15 + 16384 - 1);\n"
            "\t\tif (cudaMemsetAsync(cnt, 0, 4, st) != cudaSuccess) { rc = 4; goto out; }\n"
            "\t\tkb_kp<<<kb_g, %s, 0, st>>>(in0, in1, s15, cnt, out0);\n\t}\n") % (block, block)
    t = K2.sub("", src)
    t = t.replace(launch.group(0), host)
    t = t.replace(m.group(0), m.group(0) + "#undef KB_VEC\n#undef KB_BLOCK_TEAM\n#define KB_VEC 4\n"
                  "#define KB_BLOCK_TEAM 1\n" + k, 1)
    return t, 1


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
    variants["partials"] = partials(src)
    os.makedirs(outdir, exist_ok=True)
    for name, (text, n) in variants.items():
        if n == 0:
            sys.exit("variants.py: %s: the generated source no longer has what it changes" % name)
        with open(os.path.join(outdir, name + ".cu"), "w") as f:
            f.write(text)
        print("%s: %d change%s" % (name, n, "" if n == 1 else "s"))


if __name__ == "__main__":
    main()
