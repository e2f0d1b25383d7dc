# https://github.com/pytorch/pytorch/issues/119152 (#119152, "Dynamo fails on scalar bit shifts when
# dynamic=True"). A Python int argument that changes between calls (call 3: make_inputs(seed + 1))
# is made automatically dynamic on recompilation; `1 << n` on that SymInt then fails to trace
# ("failed to eval lshift(1, s..)" -> TorchRuntimeError), while calls 1 and 2 (static n) work.
# Class: second-call
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, n):
        return x.int() * (1 << n)  # (4, 8) int32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g) * 3, 2 + seed % 3)  # n: 2 for seed 0, 3 for seed 1
