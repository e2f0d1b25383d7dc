# Four forward arguments over one storage: x1 = x0.narrow(0, 1, 3), x2 = x0.transpose(0, 1) and x3 = x0
# itself. forward reads x1, writes into x0 in place, then reads x2 and x3, which see the write.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x0, x1, x2, x3):
        before = torch.tanh(x1)  # read before the write
        x0.mul_(2.0)
        return before, torch.sin(x2), x3 * 1.5


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.rand((4, 4), generator=g) * 2 - 1
    return [x0, x0.narrow(0, 1, 3), x0.transpose(0, 1), x0]


# forward writes into x0, and so into every input that shares its storage.
WRITTEN_INPUTS = (0, 1, 2, 3)
# x1 and x2 view x0 (x3 is x0 itself): copies of the inputs keep them views of their copy of x0.
ALIASED_INPUTS = {1: 0, 2: 0, 3: 0}
