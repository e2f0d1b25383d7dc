# PyTorch#183082 (https://github.com/pytorch/pytorch/issues/183082), dup #183894, #163929/#174073:
# CPU Inductor's argmax/argmin over a transposed (non-contiguous) view returns the index in
# physical memory order instead of the logical (row-major) index of the view.
# Fixed by PR #184191 ("Adding support of noncontigous view for argmin and argmax in cpu codegen").
# Class: numeric
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        y = torch.sin(x)  # [6, 10] float32
        z = y.t()  # [10, 6] float32, a transposed view
        return z.argmax(), z.argmin()  # two int64 scalars: flat indices into z


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(6, 10, generator=g),)
