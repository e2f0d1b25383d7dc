# PyTorch#160730 (https://github.com/pytorch/pytorch/issues/160730), closed as not a bug: torch.tan and torch.sin on float16 gave different
# values compiled; malfet: expected, Inductor fuses the ops and computes the intermediates in float32, so its output is more precise than eager.
# Class: more-accurate
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        s = torch.sin(x * 3.0)  # (64, 64) float16
        return torch.tan(s) * torch.sin(s)  # (64, 64) float16


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(64, 64, generator=g).to(torch.float16),)
