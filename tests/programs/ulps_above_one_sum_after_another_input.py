# Test program: ulps_above_one_sum.py's forward and its x, drawn the same way, after another float input (as a
# batch member's inputs follow the other members'): the ill-conditioning check must move x as it does there.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, w, x):
        return ((x - 1.0) * 2.0**23).sum(), w * 2.0


def make_inputs(seed):
    w = torch.rand((9,), generator=torch.Generator().manual_seed(seed + 100)) + 0.5
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(1, 8, (16,), generator=g).float()
    return (w, 1.0 + k * 2.0 ** -23)
