# Test program: an ill-conditioned forward. x lies a few ulps above 1, so x - 1 is a handful of ulps
# and its reciprocal turns a one-ulp change of x into a change of tens of percent.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.reciprocal(x - 1.0)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(1, 8, (16,), generator=g).float()
    return (1.0 + k * 2.0 ** -23,)
