# PyTorch#191499 (https://github.com/pytorch/pytorch/issues/191499): CPU Inductor's vectorized
# min/max reduction over uint8/int8 combines the accumulator with zero-filled inactive vector lanes
# and then reduces all lanes, so amin of all-positive uint8 values returns 0 (max of all-negative
# int8 values returns 0). Open; proposed fix PR #191543 (mask inactive lanes).
# Class: numeric
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        lo = torch.amin(x)  # [] uint8, eager: the smallest value (>= 1)
        neg = -(x.to(torch.int8) % 100) - 1  # [18] int8, all in [-100, -1]
        hi = torch.amax(neg)  # [] int8, eager: <= -1
        return lo, hi


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(1, 128, (18,), generator=g, dtype=torch.uint8),)
