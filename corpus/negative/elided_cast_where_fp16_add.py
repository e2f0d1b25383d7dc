# PyTorch#183761 (https://github.com/pytorch/pytorch/issues/183761), closed as not a bug: where + full_like, both sides cast to float16 and added,
# differed from eager; jansel: intended, Inductor elides fp16 downcast/upcast pairs across fused pointwise ops (use emulate_precision_casts).
# Class: elided-cast
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        m = (torch.arange(x.numel()) % 4 == 0).reshape(x.shape)  # (2, 3, 5) bool
        z = torch.where(m, torch.full_like(x, 0.75), torch.full_like(x, -0.25))  # (2, 3, 5) float32
        y = z.to(torch.float16) + x.to(torch.float16)  # (2, 3, 5) float16
        return y, y.float().sum()


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(2, 3, 5, generator=g) * 30.0 / 7.0,)
