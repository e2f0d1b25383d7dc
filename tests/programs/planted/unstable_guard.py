# TEST FIXTURE (a planted recompile storm): a private counter, which tcfuzz's Python state neither compares
# nor restores, changes at every call without changing any value. Dynamo specializes the int attribute, so
# its guard fails on every later call, as an unstable guard on unchanged state would: call 2, a repeat of
# call 1, recompiles while eager returns the same values.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self._calls = 0

    def forward(self, x):
        self._calls += 1
        scale = 2.0 if self._calls > 0 else 3.0
        return torch.tanh(x) * scale


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)
