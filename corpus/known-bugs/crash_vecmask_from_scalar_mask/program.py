# https://github.com/pytorch/pytorch/issues/178136 (PyTorch#178136)
# CPU Inductor: a vectorized indirect-index bounds check with a scalar load mask emits
# `VecMask<int64_t,2>(scalar)`, which has no such constructor -> CppCompileError (eager runs).
# Fix: https://github.com/pytorch/pytorch/pull/178148 ("Use VecMask::from for scalar masks"), in 2.12.
# Class: crash
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, positions, cache):
        x = cache[positions]  # (3, 17, 40) gather with runtime indices
        y = x[0].clone()
        y[..., 1::3] = x[1, ..., 1::3]  # strided slice-assign: masked indirect loads
        y[..., 2::3] = x[2, ..., 2::3]
        return y


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    cache = torch.randn(64, 40, generator=g)
    positions = torch.randint(0, 64, (3, 17), generator=g)
    return (positions, cache)
