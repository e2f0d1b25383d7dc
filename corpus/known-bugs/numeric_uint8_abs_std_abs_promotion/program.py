# PyTorch#187018 (https://github.com/pytorch/pytorch/issues/187018): "abs on uint8 silently
# miscompiled via std::abs integer promotion". CPU Inductor's scalar C++ codegen emitted std::abs(x)
# for a uint8 x, which promotes it to a signed int, so the negation that follows no longer wraps
# modulo 256 and the int64 sum gets negative garbage. Fix PR #187024 (CppOverrides.abs: identity
# for unsigned types).
# Class: numeric
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = -x.abs()  # [6] uint8, wraps: 256 - x
        z = torch.cat([y, y])  # [12] uint8
        return z.sum()  # [] int64


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(1, 256, (6,), generator=g, dtype=torch.uint8),)
