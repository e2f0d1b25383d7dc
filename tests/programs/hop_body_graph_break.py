# TEST FIXTURE: a torch.cond whose true branch pulls a Python float out of a tensor (.item()): eager
# runs it, while Dynamo must capture a HOP's body whole and cannot (.item() breaks the graph without
# capture_scalar_outputs). Dynamo documents that graph break (gb0124): "unsupported (documented)", never a finding.
import torch
import torch.nn as nn

cond = torch.cond


class Model(nn.Module):
    def forward(self, x0, x1):
        def scaled(a):
            return a * a.sum().item()

        def cosine(a):
            return a.cos()

        return cond(x1.flatten()[0] > 0.0, scaled, cosine, (x0,)),


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.rand((3, 4), generator=g) * 4 - 2
    x1 = torch.ones((2,))  # the true branch is taken
    return [x0, x1]
