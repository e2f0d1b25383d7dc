# logaddexp of complex inputs whose parts hold infinities: eager special-cases them (inf+infj), while
# Inductor 2.15's lowering gives nan+nanj. The perturbed eager runs of the ill-conditioning check cannot
# move an infinity, so they must not excuse this NaN placement.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a, b):
        return (torch.logaddexp(a, b),)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.complex(torch.rand(4, generator=g), torch.rand(4, generator=g))
    b = torch.complex(torch.rand(4, generator=g), torch.rand(4, generator=g))
    inf = float("inf")
    a[0], b[0] = complex(inf, inf), complex(0.3, 0.2)
    a[1], b[1] = complex(0.5, inf), complex(-inf, 0.5)
    return [a, b]
