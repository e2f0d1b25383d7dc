# PyTorch#141561 (https://github.com/pytorch/pytorch/issues/141561), closed as not a bug: a Conv2d(4, 1, 3) on CPU differed from eager by 3.6e-7;
# jiayisunx: Inductor runs the conv channels-last and eager channels-first, whose kernels accumulate differently; this difference is acceptable.
# Class: summation-order
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 1, kernel_size=3, stride=1, padding=1)

    def forward(self, x):
        return self.conv(x)  # (1, 1, 64, 64) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 4, 64, 64, generator=g),)
