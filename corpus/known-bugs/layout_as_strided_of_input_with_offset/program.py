# https://github.com/pytorch/pytorch/issues/139628 (#139628; fixed by PR #184232 "Fix as_strided offsets for graph input views")
# Inductor resolves an explicit as_strided storage_offset against the input view's data pointer
# instead of its storage, so an input view with a non-zero storage_offset reads the wrong elements.
# Class: layout
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = x + 1  # (6, 7)
        # storage-relative: element [i, j] is storage[4 * i + j], not x's own data
        return torch.as_strided(x, (3, 4), (4, 1), 0) + y[:3, :4]  # (3, 4)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    # int64 values: the result is exact, so any wrong element shows
    base = torch.randint(-100, 100, (8, 8), generator=g)
    return (base[2:, 1:],)  # (6, 7), strides (8, 1), storage_offset 17
