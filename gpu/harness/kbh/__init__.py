"""kernelbot harness: the Python adapter between the C binary and PyTorch.

One JSON request on stdin, one JSON reply on stdout (see docs/harness.md).
"""
