# Test program: a forward with no tensor op, so Dynamo captures no graph and the "compiled" run is
# eager code: judged nothing-compiled, never agree.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 4, generator=g),)
