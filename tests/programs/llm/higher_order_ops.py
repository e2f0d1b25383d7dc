# A model as an LLM writes one with higher-order ops: torch.cond on a tensor's sum, torch.func.vmap over the
# batch and a non-reentrant checkpoint. The lift runs their Python meaning and keeps each as an IR region.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y, z):
        a = torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))
        b = torch.func.vmap(lambda row: row * 2.0 + 1.0)(y)
        c = torch.utils.checkpoint.checkpoint(lambda t: torch.tanh(t) * 3.0, z, use_reentrant=False)
        return a, b, c


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(4, 8, generator=g), torch.rand(3, 5, generator=g), torch.rand(6, generator=g))
