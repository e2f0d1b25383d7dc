# Linear -> tanh -> sum over the last dim: a small differentiable program for the backward oracle
# (gradients with respect to the input and to linear.weight and linear.bias).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        return torch.tanh(self.linear(x)).sum(dim=-1)  # (3, 8) -> (3, 4) -> (3,)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 8, generator=g),)
