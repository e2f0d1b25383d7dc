# PyTorch#118176 (https://github.com/pytorch/pytorch/issues/118176), closed as not a bug: torch.special.sinc on large float16 inputs gave nan in
# eager and a tiny finite value compiled; Chillee showed the compiled kernel is far closer to fp64 and closed it as "not a real issue".
# Class: more-accurate
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.special.sinc(x)  # (4096,) float16


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return ((torch.rand(4096, generator=g) * 10000.0).to(torch.float16),)
