# https://github.com/pytorch/pytorch/issues/174963 (#174963)
# torch.compile yields incorrect results when as_strided is used on a channels_last tensor
# (roll, then a storage-relative as_strided over the rolled result). Likely cause (not verified):
# Inductor lays out the roll output differently from eager (channels_last), so as_strided reads other elements.
# Class: layout
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        x = torch.roll(x, shifts=-1, dims=0)  # (2, 5, 2, 5), channels_last in eager
        return torch.as_strided(x, (5, 10), (4, 1), 0)  # (5, 10): depends on x's strides


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, 5, 2, 5, generator=g)
    return (x.to(memory_format=torch.channels_last),)
