# PyTorch#151198 (fixed in #152993): ReflectionPad3d + view + chunk + PairwiseDistance gave a
# result far from fp64 under Inductor (reported on CUDA; this runs on the chosen device).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad3d(1)
        self.dist = nn.PairwiseDistance(p=2)

    def forward(self, x):
        x = self.pad(x)  # (2, 3, 4, 4, 4) -> (2, 3, 6, 6, 6)
        x = x.view(x.size(0), -1)  # (2, 648)
        a, b = torch.chunk(x, 2, dim=1)  # (2, 324) each
        return self.dist(a, b)  # (2,)


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(2, 3, 4, 4, 4, generator=g),)
