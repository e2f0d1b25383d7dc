# x * weight: autograd saves both the input x and the parameter weight for the backward, so a backward
# that writes into a saved tensor writes into the program's input or parameter (the state leaves
# "input 0 after backward", "param weight after backward").
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, 6))

    def forward(self, x):
        return x * self.weight  # (4, 6)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g),)
