# PyTorch#181693 (https://github.com/pytorch/pytorch/issues/181693), closed as not a bug: InstanceNorm -> pool -> F.normalize -> hardswish diverged
# by ~1 compiled; thread analysis (contributor, duplicate #183601 also closed): F.normalize divides by a ~1e-8 norm, amplifying reduction order.
# Class: ill-conditioning
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.inst_norm = nn.InstanceNorm2d(3)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))

    def forward(self, x):
        t = self.pool(self.inst_norm(x))  # (4, 3, 1, 1) float32, ~1e-8
        t = F.normalize(t, dim=0)  # (4, 3, 1, 1) float32
        t = F.hardswish(t * x)  # (4, 3, 10, 12) float32
        return F.normalize(t, dim=0)  # (4, 3, 10, 12) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 3, 10, 12, generator=g),)
