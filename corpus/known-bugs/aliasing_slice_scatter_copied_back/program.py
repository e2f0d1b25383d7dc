# https://github.com/pytorch/pytorch/issues/195451 (#195451)
# Bug: slice_scatter result copied back into the input is returned; compiled output aliases the input, eager's does not.
# Class: aliasing
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, src):
        updated = torch.slice_scatter(x, src, 0, 0, 1)
        x.copy_(updated)
        return updated


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 3, generator=g), torch.randn(1, 3, generator=g))
