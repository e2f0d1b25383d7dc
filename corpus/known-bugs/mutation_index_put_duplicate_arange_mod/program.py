# https://github.com/pytorch/pytorch/issues/197582 (#197582)
# Bug: v[idx] = v[idx] + 1 with duplicate indices from arange % 2 on a view of the input is miscompiled.
# Class: mutation
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        out = x * 2.0
        v = x.view(-1)
        idx = torch.arange(v.numel()) % 2
        v[idx] = v[idx] + 1.0
        return out


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 2, generator=g),)
