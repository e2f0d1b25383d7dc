# PyTorch#88184 (https://github.com/pytorch/pytorch/issues/88184), closed as not a bug: topk on equal values returned an unexpected index; jgong5:
# indices of equal elements are unspecified, not "unjustifiable". An eager report: no closed torch.compile topk-tie report was found (closest).
# Class: argmax-tie
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        top = torch.topk(x, 3, dim=1)  # (6, 3) float32, (6, 3) int64
        return top.values, top.indices


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(-2, 2, (6, 16), generator=g).float(),)
