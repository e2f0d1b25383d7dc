# https://github.com/pytorch/pytorch/issues/174074 (#174074)
# Bug: x[[0, 0]] += x[[0, 0]] on an input (duplicate advanced indices) doubles twice under inductor.
# Class: mutation
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        out = x * 2.0
        x[[0, 0]] += x[[0, 0]]
        return out


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 2, generator=g, dtype=torch.float64),)
