# An in-place write through a view of a value, then a read of that value: the lift gives one
# inplace-view node (narrow_mul_) whose output the later read sees.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        h = torch.sigmoid(x)
        h.narrow(1, 2, 3).mul_(y)
        d = torch.diagonal(h, 0, 0, 1)
        return torch.tanh(h), d


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g), torch.randn(4, 3, generator=g))
