import math

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = x @ weight, 128 x 256 x 256: a compute-bound product small enough
    for the CPU, where one element of x reaches one row of y (the
    incremental-recomputation attack, bench/incr_attack_cpu.sh)."""

    def __init__(self, k, n):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(k, n) / math.sqrt(k))

    def forward(self, x):
        return x @ self.weight


rows = 128
k = 256
n = 256


def get_inputs():
    return [torch.randn(rows, k)]


def get_init_inputs():
    return [k, n]
