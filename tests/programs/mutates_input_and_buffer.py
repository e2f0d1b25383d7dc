# Test program: a forward that writes to its input (mul_) and to a registered buffer (+=), and returns
# a value computed from both. A correct compiler leaves the same input and buffer values as eager.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("total", torch.zeros(4))

    def forward(self, x):
        self.total += x.sum(0)
        x.mul_(2)
        return x + self.total


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)
