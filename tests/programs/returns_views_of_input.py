# Test program: returns views of its input (a transpose and a row), a view of a registered buffer, a
# computed tensor and a view of that tensor. In eager, outputs 0, 1 share the input's storage, output 2
# the buffer's, output 4 output 3's: a correct compiler returns the same aliases.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.arange(4.0))

    def forward(self, x):
        y = x * self.scale
        return x.t(), x[0], self.scale[1:], y, y.view(-1)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 4, generator=g),)
