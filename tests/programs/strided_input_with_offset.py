# Test program: its input is a transposed slice of a larger tensor (a storage offset and non-contiguous
# strides), and it returns that layout along with a value. Every mode must hand the forward the input
# as make_inputs made it, not a dense copy.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * 2, x.storage_offset(), x.stride(0), x.stride(1), x.is_contiguous()


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    base = torch.randn(5, 6, generator=g)
    return (base[1:, 2:5].t(),)  # shape (3, 4), strides (1, 6), storage offset 8
