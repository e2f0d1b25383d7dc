# PyTorch#159239 (https://github.com/pytorch/pytorch/issues/159239), closed as not a bug: Qwen-style rotary embedding in bfloat16 differed
# compiled; eellison: compiled has the smaller error against fp32 (intermediates kept in fp32), and bitwise equality is not guaranteed.
# Class: elided-cast
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)  # (1, 1, 16, 32) bfloat16
        sin = sin.unsqueeze(1)  # (1, 1, 16, 32) bfloat16
        q_rot = torch.cat((-q[..., 16:], q[..., :16]), dim=-1)  # (1, 4, 16, 32) bfloat16
        k_rot = torch.cat((-k[..., 16:], k[..., :16]), dim=-1)  # (1, 4, 16, 32) bfloat16
        return q * cos + q_rot * sin, k * cos + k_rot * sin


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(1, 4, 16, 32, generator=g).to(torch.bfloat16)
    k = torch.randn(1, 4, 16, 32, generator=g).to(torch.bfloat16)
    angle = torch.rand(1, 16, 32, generator=g) * 6.28
    return (q, k, angle.cos().to(torch.bfloat16), angle.sin().to(torch.bfloat16))
