# PyTorch#143729: frexp's mantissa (float) times its exponent (int32). CPU Inductor once failed
# to compile this with a C++ compile error, while eager ran it.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        x_frac, x_exp = torch.frexp(x)  # (4, 1) float32, (4, 1) int32
        return x_frac * x_exp  # (4, 1) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 1, generator=g),)
