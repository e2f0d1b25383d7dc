# Test program: eager raises (a shape error), so under cheap checks first it is never compiled.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x @ x  # (2, 3) @ (2, 3): a shape error in eager


def make_inputs(seed):
    return (torch.ones(2, 3),)
