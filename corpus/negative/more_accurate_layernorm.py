# PyTorch#143182 (https://github.com/pytorch/pytorch/issues/143182), closed as not a bug: nn.LayerNorm compiled on CPU differed from eager beyond
# 1e-5; eellison compared both to an fp64 reference and the compiled result was the closer one ("we are more accurately computing this").
# Class: more-accurate
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(512)

    def forward(self, x):
        return self.ln(x)  # (4, 32, 512) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 32, 512, generator=g) * 8.0 + 3.0,)
