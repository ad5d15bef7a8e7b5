"""The `info` verb: what this Python and PyTorch can do, for `kernelbot doctor`.

Reading device properties initializes CUDA in this short-lived process only;
the reply carries what the evaluator needs to know before it plans work.
"""
import platform
import sys


def run(req):
    import torch

    major = int(torch.__version__.split(".")[0])
    compile_ok = major >= 2 and hasattr(torch, "compile")
    info = {
        "python": platform.python_version(),
        "executable": sys.executable,
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": bool(torch.cuda.is_available()),
        "compile_available": compile_ok,
        "devices": [],
    }
    try:
        import numpy
        info["numpy"] = numpy.__version__
    except ImportError:
        info["numpy"] = None
    if info["cuda_available"]:
        for i in range(torch.cuda.device_count()):
            p = torch.cuda.get_device_properties(i)
            info["devices"].append({
                "index": i,
                "name": p.name,
                "compute_capability": "%d.%d" % (p.major, p.minor),
                "memory_bytes": int(p.total_memory),
                "sm_count": int(p.multi_processor_count),
            })
    return {"ok": True, "info": info}
