# log of values of both signs: NaN where the input is negative, in eager and in float64 alike (a test program
# for the NaN/Inf placement check of short repros).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.log(x) * 0.5


def make_inputs(seed):
    return (torch.linspace(-1.0, 1.0, 8),)
