# PyTorch#101009 (https://github.com/pytorch/pytorch/issues/101009), closed as not a bug: dividing by relu(x) gave inf in eager and -inf compiled
# where relu(x) is zero; lezcano: x / 0 is mathematically undefined, returning either inf or -inf is reasonable.
# Class: nan-handling
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.convtranspose = nn.ConvTranspose2d(1, 2, kernel_size=1)

    def forward(self, x):
        v1 = self.convtranspose(x) * (64 * x)  # (1, 2, 8, 8) float32
        v2 = F.relu(x)  # (1, 1, 8, 8) float32, zero where x < 0
        return v1 / v2  # (1, 2, 8, 8) float32, +-inf where x < 0


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 1, 8, 8, generator=g),)
