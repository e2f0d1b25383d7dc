# Test program: x lies a few ulps above 1 and the output counts them, summed, so that eager's spread on perturbed
# inputs depends on every element's draw (ulps_above_one_sum_after_another_input.py is its twin).
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return ((x - 1.0) * 2.0**23).sum()


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    k = torch.randint(1, 8, (16,), generator=g).float()
    return (1.0 + k * 2.0 ** -23,)
