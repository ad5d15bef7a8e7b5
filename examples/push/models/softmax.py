"""Attention-score normalization: softmax(scores * scale + bias) over the
keys, with a learned per-head bias (ALiBi-like, simplified)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, heads, head_dim):
        super().__init__()
        self.scale = head_dim ** -0.5
        self.head_bias = nn.Parameter(torch.randn(heads, 1, 1) * 0.1)

    def forward(self, scores):
        return torch.softmax(scores * self.scale + self.head_bias, dim=-1)


heads, queries, keys, head_dim = 8, 64, 256, 64


def get_inputs():
    return [torch.randn(heads, queries, keys) * 4.0]


def get_init_inputs():
    return [heads, head_dim]
