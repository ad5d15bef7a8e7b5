#!/usr/bin/env python3
"""Make N variants of a native kernel (bench/kernels/*.cu, or *.c for the
cpu backend's dry run) that differ in
block size and do not share a compile-cache key, and the same kernels as
KernelBench-format solutions (ModelNew + load_inline) around the same
source, so both paths evaluate identical device code.

usage: gen_variants.py KERNEL.cu|KERNEL.c N OUTDIR [--inline] [--model gelu|softmax]
"""
import argparse
import os

BLOCKS = (64, 128, 256, 512)

WRAPPER = r'''
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <vector>

torch::Tensor kb_forward(std::vector<torch::Tensor> ins, std::vector<int64_t> out_shape) {
    std::vector<DLTensor> in(ins.size());
    std::vector<int64_t> shapes;
    for (auto &t : ins) for (auto d : t.sizes()) shapes.push_back(d);
    size_t off = 0;
    for (size_t i = 0; i < ins.size(); i++) {
        TORCH_CHECK(ins[i].is_contiguous() && ins[i].scalar_type() == at::kFloat);
        in[i] = DLTensor{};
        in[i].data = ins[i].data_ptr();
        in[i].device = DLDevice{kDLCUDA, (int32_t)ins[i].get_device()};
        in[i].ndim = (int32_t)ins[i].dim();
        in[i].dtype = DLDataType{kDLFloat, 32, 1};
        in[i].shape = shapes.data() + off;
        off += ins[i].dim();
    }
    auto out = torch::empty(out_shape, ins[0].options());
    DLTensor o{};
    o.data = out.data_ptr();
    o.device = in[0].device;
    o.ndim = (int32_t)out.dim();
    o.dtype = DLDataType{kDLFloat, 32, 1};
    o.shape = out_shape.data();
    int rc = kernelbot_forward(in.data(), (int)in.size(), &o, 1,
                               at::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(rc == 0, "kernelbot_forward returned ", rc);
    return out;
}
'''

# The same wrapper for a CPU kernel (bench/kernels/*.c), built by
# load_inline as C++ only: a dry run of the bench on the cpu backend.
WRAPPER_CPU = WRAPPER.replace("#include <ATen/cuda/CUDAContext.h>\n", "").replace(
    "DLDevice{kDLCUDA, (int32_t)ins[i].get_device()}", "DLDevice{kDLCPU, 0}").replace(
    "at::cuda::getCurrentCUDAStream().stream()", "nullptr")

MODELS = {
    "gelu": '''
class ModelNew(nn.Module):
    def __init__(self, features, scale):
        super().__init__()
        self.scale = scale
        self.bias = nn.Parameter(torch.randn(features) * 0.1)

    def forward(self, x):
        return ext.kb_forward([x.contiguous(), self.bias.contiguous()], list(x.shape))
''',
    "softmax": '''
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return ext.kb_forward([x.contiguous()], list(x.shape))
''',
}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kernel")
    p.add_argument("n", type=int)
    p.add_argument("outdir")
    p.add_argument("--inline", action="store_true")
    p.add_argument("--model", choices=sorted(MODELS), default="gelu")
    a = p.parse_args()
    src = open(a.kernel).read()
    os.makedirs(a.outdir, exist_ok=True)
    base, ext = os.path.splitext(os.path.basename(a.kernel))
    cpu = ext == ".c"
    for i in range(a.n):
        head = "/* bench variant %d */\n#define BLOCK %d\n" % (i, BLOCKS[i % len(BLOCKS)])
        if not a.inline:
            with open(os.path.join(a.outdir, "%s_v%02d%s" % (base, i, ext)), "w") as f:
                f.write(head + src)
            continue
        body = head + src.replace("#include <dlpack/dlpack.h>", "#include <ATen/dlpack.h>")
        decl = ("'torch::Tensor kb_forward(std::vector<torch::Tensor> ins, "
                "std::vector<int64_t> out_shape);'")
        name = "kb_%s_v%02d" % (base, i)
        if cpu:
            build = ("cpp_src = %r\n" % ("#include <torch/extension.h>\n" + body + WRAPPER_CPU) +
                     "ext = load_inline(name=%r, cpp_sources=cpp_src, functions=['kb_forward'], "
                     "extra_cflags=['-O3'], verbose=False)\n" % name)
        else:
            build = ("cuda_src = %r\n" % (body + WRAPPER) + "cpp_src = %s\n" % decl +
                     "ext = load_inline(name=%r, cpp_sources=cpp_src, cuda_sources=cuda_src, "
                     "functions=['kb_forward'], verbose=False)\n" % name)
        py = ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
              + build + MODELS[a.model])
        with open(os.path.join(a.outdir, "%s_v%02d.py" % (base, i)), "w") as f:
            f.write(py)


if __name__ == "__main__":
    main()
