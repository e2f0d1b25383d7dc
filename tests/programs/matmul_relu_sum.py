# A matmul with a bias, relu, a sum over a row and a pointwise epilogue, and a cumsum: a small program whose
# Inductor compile is known (tests/test_PersistentWorker.cpp): an extern mm kernel, an addmm pattern, relu
# and sum lowered by Inductor into a reduction kernel fused with its epilogue, and cumsum's fallback kernel.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(32, 64))
        self.b = nn.Parameter(torch.randn(64))

    def forward(self, x):
        s = torch.relu(x @ self.w + self.b).sum(dim=1)
        return s / (s.abs() + 1), torch.cumsum(x, 0)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(16, 32, generator=g),)
