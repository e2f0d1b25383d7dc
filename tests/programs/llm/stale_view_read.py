# A view taken before its base is written in place, then read: the lift refuses it (a proposal that
# read the view from before the write would compute something else).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        h = torch.sigmoid(x)
        t = h.permute(1, 0)
        h.mul_(y)
        return t * 2.0


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g), torch.randn(4, 8, generator=g))
