# PyTorch#99879 (https://github.com/pytorch/pytorch/issues/99879), closed as not a bug (for ties): min/argmin differed compiled; ngimel: with
# several minima, torch.compile and eager are not guaranteed to return the same index (known limitation); a separate argmin defect was fixed.
# Class: argmax-tie
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        values, indices = torch.min(x, dim=1)  # (8,) float32, (8,) int64
        return values, indices, torch.argmin(x, dim=1), torch.argmax(x, dim=0)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randint(0, 3, (8, 64), generator=g).float(),)
