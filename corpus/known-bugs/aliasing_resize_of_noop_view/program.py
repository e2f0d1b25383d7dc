# https://github.com/pytorch/pytorch/issues/191449 (#191449)
# Bug: resize_ on a no-op view of an intermediate; compiled graph returns the base and its view as ONE object, so resize_ hits the base.
# Class: aliasing
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        base = x + 1
        alias = base.view(-1)
        alias.resize_(12)
        return base + 1


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, generator=g),)
