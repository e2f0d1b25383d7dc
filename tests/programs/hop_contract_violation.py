# TEST FIXTURE: a program that breaks torch.cond's documented contract (its true branch returns its operand itself,
# an alias). Eager's own cond rejects it, so tcfuzz must call the program invalid, never report the compiled run
# against the if/else the reference runs.
import torch
import torch.nn as nn

cond = torch.cond


class Model(nn.Module):
    def forward(self, x0, x1):
        def same(a):
            return a

        def cosine(a):
            return a.cos()

        return cond(x1.flatten()[0] > 0.0, same, cosine, (x0,)),


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.rand((3, 4), generator=g) * 4 - 2
    x1 = torch.ones((2,))  # the true branch is taken
    return [x0, x1]
