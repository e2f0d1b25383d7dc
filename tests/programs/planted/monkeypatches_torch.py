# PLANTED STATE LEAK FIXTURE (tests only): a program that replaces torch.cos for every later program
# in the same process. A persistent worker child must notice the leak and retire after this job.
import torch
import torch.nn as nn

_real_cos = torch.cos
torch.cos = lambda t, *args, **kwargs: _real_cos(t, *args, **kwargs) + 0.0


class Model(nn.Module):
    def forward(self, x):
        return torch.cos(x)


def make_inputs(seed):
    return (torch.linspace(-1, 1, 6),)
