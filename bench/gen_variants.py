#!/usr/bin/env python3
"""Make N variants of a native kernel (bench/kernels/*.cu) that differ in
block size and do not share a compile-cache key, and the same kernels as
KernelBench-format solutions (ModelNew + load_inline) around the same
source, so both paths evaluate identical device code.

usage: gen_variants.py KERNEL.cu N OUTDIR [--inline] [--model gelu|softmax]
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
    base = os.path.splitext(os.path.basename(a.kernel))[0]
    for i in range(a.n):
        head = "/* bench variant %d */\n#define BLOCK %d\n" % (i, BLOCKS[i % len(BLOCKS)])
        if not a.inline:
            with open(os.path.join(a.outdir, "%s_v%02d.cu" % (base, i)), "w") as f:
                f.write(head + src)
            continue
        cuda = head + src.replace("#include <dlpack/dlpack.h>", "#include <ATen/dlpack.h>") + WRAPPER
        py = ("import torch\nimport torch.nn as nn\nfrom torch.utils.cpp_extension import load_inline\n\n"
              "cuda_src = %r\n" % cuda +
              "cpp_src = 'torch::Tensor kb_forward(std::vector<torch::Tensor> ins, "
              "std::vector<int64_t> out_shape);'\n"
              "ext = load_inline(name=%r, cpp_sources=cpp_src, cuda_sources=cuda_src, "
              "functions=['kb_forward'], verbose=False)\n" % ("kb_%s_v%02d" % (base, i)) +
              MODELS[a.model])
        with open(os.path.join(a.outdir, "%s_v%02d.py" % (base, i)), "w") as f:
            f.write(py)


if __name__ == "__main__":
    main()
