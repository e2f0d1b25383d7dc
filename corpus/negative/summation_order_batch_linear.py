# PyTorch#143469 (https://github.com/pytorch/pytorch/issues/143469), closed as not a bug: a batch-linear model (addmm 50x250 @ 250x50) diverged
# more after compile; jansel: the matmul variants accumulate differently and both are as far from fp64, "I don't see anything to fix".
# Class: summation-order
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(250, 50)

    def forward(self, x):
        return self.fc(x) * 10.0  # (50, 50) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(50, 250, generator=g) * 4.0,)
