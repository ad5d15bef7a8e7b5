"""The feed-forward block of a small transformer: Linear, GELU (tanh
approximation, as in GPT-2), then a learned per-channel scale and bias."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in, d_hidden):
        super().__init__()
        self.fc = nn.Linear(d_in, d_hidden)
        self.scale = nn.Parameter(torch.rand(d_hidden) + 0.5)
        self.shift = nn.Parameter(torch.randn(d_hidden) * 0.1)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.fc(x), approximate="tanh")
        return h * self.scale + self.shift


tokens, d_in, d_hidden = 64, 128, 256


def get_inputs():
    return [torch.randn(tokens, d_in)]


def get_init_inputs():
    return [d_in, d_hidden]
