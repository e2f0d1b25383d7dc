# https://github.com/pytorch/pytorch/issues/174074 (#174074), fixed by PR #174877 -- buffer variant
# Bug: buf[[0, 0]] += buf[[0, 0]] (duplicate advanced indices) on a registered buffer doubles twice under inductor.
# Class: mutation
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(6, dtype=torch.float64).reshape(1, 6) + 1.0)

    def forward(self, x):
        out = x + self.buf
        self.buf[[0, 0]] += self.buf[[0, 0]]
        return out


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 6, generator=g, dtype=torch.float64),)
