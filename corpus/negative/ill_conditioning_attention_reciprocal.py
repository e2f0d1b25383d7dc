# PyTorch#188430 (https://github.com/pytorch/pytorch/issues/188430), closed as not a bug (won't fix): LSTM + MultiheadAttention + reciprocal gave
# large absolute errors compiled; malfet: an amplification artifact, reciprocal of near-zero attention outputs blows up ordinary fp32 rounding.
# Class: ill-conditioning
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 16, batch_first=True)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        h, _ = self.lstm(x)  # (4, 32, 16) float32
        a, _ = self.attn(h, h, h)  # (4, 32, 16) float32
        r = torch.reciprocal(a)  # (4, 32, 16) float32, huge where a is near zero
        r = torch.reciprocal(r)  # (4, 32, 16) float32
        return torch.reciprocal(r)  # (4, 32, 16) float32


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 32, 16, generator=g),)
