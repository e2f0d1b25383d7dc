# Test program: a private counter (outside tcfuzz's Python state) changes every call and the outputs with it,
# so call 2 differs from call 1 in eager too: the program drifts on its own, and a recompile on call 2 is
# expected, never a recompile storm.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self._calls = 0

    def forward(self, x):
        self._calls += 1
        return torch.tanh(x) * self._calls


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)
