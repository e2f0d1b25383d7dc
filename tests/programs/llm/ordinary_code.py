# Ordinary model code the allowlist accepts: a parameter called `input`, math, a literal range loop,
# a comprehension, a lambda, method calls with varargs, and a multi-output op.
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = math.sqrt(2.0)
        self.act = lambda t: F.gelu(t)

    def forward(self, input):
        h = input
        for _ in range(2):
            h = self.act(h) * self.scale
        parts = [torch.exp(h) for _ in range(2)]
        values, indices = torch.max(parts[0].permute(1, 0), 1)
        return values, indices, parts[1].view(2, 12)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(4, 6, generator=g)]
