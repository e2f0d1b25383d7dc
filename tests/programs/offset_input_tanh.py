# Test program: its input is a slice of a larger tensor (storage offset 6, contiguous), and forward never
# looks at the layout: compiled code must give eager's values at any storage offset, without recompiling.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2 + x.sum(dim=0)  # (4, 6) -> (4, 6)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(30, generator=g)
    return (base[6:].view(4, 6),)
