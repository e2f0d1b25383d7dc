# In-place writes into a value that is no view (h.mul_(y), h.relu_()): the lift gives the out-of-place
# ops' nodes, and the later read of h sees the last of them.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y):
        h = torch.sigmoid(x)
        h.mul_(y)
        h.relu_()
        return torch.tanh(h)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g), torch.randn(4, 8, generator=g))
