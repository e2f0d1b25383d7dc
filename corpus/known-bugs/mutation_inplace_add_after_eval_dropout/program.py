# https://github.com/pytorch/pytorch/issues/195422 (#195422)
# Bug: in-place add on the tensor returned by F.dropout(training=False) (which IS the input) is dropped by compile.
# Class: mutation
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        y = F.dropout(x, 0.5, False)
        y += y
        return y * 1.0


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)
