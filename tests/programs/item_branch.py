# A Python branch on a value read from a tensor (`.item()`): under fullgraph=True Dynamo refuses it by
# design (torch.cond is the documented way), so the verdict is "unsupported (documented)", never a finding.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x0):
        if x0.flatten()[0].item() > 0.25:
            v1 = torch.tanh(x0)
        else:
            v1 = torch.tanh(x0).roll(1)
        return v1,


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.rand((4, 3), generator=g) * 2 - 1]
