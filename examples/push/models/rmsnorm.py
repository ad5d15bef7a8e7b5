"""Pre-norm residual step of a LLaMA-style block: h = x + residual, then
RMSNorm(h) with a learned weight, and the residual stream scaled down for
deeper models (as in DeepNet)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden, eps=1e-6, residual_scale=0.5):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(hidden) + 0.5)
        self.eps = eps
        self.residual_scale = residual_scale

    def forward(self, x, residual):
        h = x + residual * self.residual_scale
        return h * torch.rsqrt(h.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight


tokens, hidden = 128, 512


def get_inputs():
    return [torch.randn(tokens, hidden), torch.randn(tokens, hidden)]


def get_init_inputs():
    return [hidden]
