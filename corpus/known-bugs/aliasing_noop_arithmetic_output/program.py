# https://github.com/pytorch/pytorch/issues/197893 (#197893); see also PR #195357
# Bug: inductor's joint-graph remove_no_ops turns `x + 0` / `h * 1` outputs into the operand itself: outputs alias the input / each other.
# Class: aliasing
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        h = torch.sin(x)
        return h * 1, h, x + 0


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(8, generator=g),)
