# x1 = x0[:] views x0; forward fills x0, so x1 reads zeros. Under dynamic=True call 4 resizes only x2,
# which shares no storage: resizing x0 and x1 one by one would give x1 a base no argument is, and
# AOTAutograd refuses such inputs ("mixed autograd ._base states"), a failure the program never meets.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x0, x1, x2):
        x0.fill_(0.0)
        return x1 + 1.0, x2.sum(0)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.rand((3, 4), generator=g) * 2 - 1
    x2 = torch.rand((5, 4), generator=g) * 2 - 1
    return [x0, x0[:], x2]


WRITTEN_INPUTS = (0, 1)
ALIASED_INPUTS = {1: 0}
