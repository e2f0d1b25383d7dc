# The introductory model of the fuzzer author's guide: unsqueeze, Conv1d, mean, Linear.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(in_channels=1, out_channels=3, kernel_size=1)
        self.linear = nn.Linear(3, 1)

    def forward(self, x):
        x = x.unsqueeze(1)  # (1, 3) -> (1, 1, 3)
        x = self.conv(x)  # (1, 1, 3) -> (1, 3, 3)
        x = x.mean(dim=-1)  # (1, 3, 3) -> (1, 3)
        return self.linear(x)  # (1, 3) -> (1, 1)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(1, 3, generator=g),)
