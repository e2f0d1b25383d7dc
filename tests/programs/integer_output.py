# Test program: its only output is an integer tensor, so a backward job has nothing to differentiate
# and records "backward": "skipped: no differentiable output".
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return (x > 0).sum(dim=1)  # (4, 5) float32 -> (4,) int64


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)
