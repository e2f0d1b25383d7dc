# The forward multiplies a (4, 8) input by a (5, 3) weight: eager raises, and the error goes back to the LLM.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(5, 3))

    def forward(self, x):
        return torch.matmul(x, self.w)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 8, generator=g),)
