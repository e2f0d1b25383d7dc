# Test program: a random op in training-style use. With fallback_random and reseeding, eager and
# compiled draw the same numbers, so it must agree.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.nn.functional.dropout(x, p=0.5, training=True) * 2 + torch.rand_like(x)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(8, 8, generator=g),)
