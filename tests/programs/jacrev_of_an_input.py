# A jacobian of the input alone beside an output that depends on a parameter. torch.func.jacrev's result
# carries no autograd history (nothing it reads requires grad), so a training loss or a backward reaches the
# parameter through output 0 only; the references' Python meaning of jacrev (torch.autograd.functional) must not
# give output 1 a history the real transform's lacks.
import torch
import torch.nn as nn
import torch.nn.functional as F

jacrev = torch.func.jacrev


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.linspace(0.5, 1.5, 6))

    def forward(self, x, y):
        j = jacrev(lambda v: F.softmin(v, dim=0))(y)  # [5, 5]
        return x * self.weight, j.sum(dim=1)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 6, generator=g), torch.randn(5, generator=g))
