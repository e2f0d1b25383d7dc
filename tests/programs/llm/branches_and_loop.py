# A model as an LLM writes one with Python control flow: a branch on a value read from a tensor, a loop, a
# branch on a module flag and a branch on a tensor's any(). The lift keeps them as IR constructs.
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    gain = 2.0
    if gain > 1.0:  # a class body's own if runs as written: a lambda there could not see `gain`
        scale = gain

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.use_tanh = True

    def forward(self, x, y):
        h = F.relu(self.fc(x))
        if x.flatten()[0].item() > 0.25:
            h = h * self.scale
        else:
            h = h - 1.0
        for _ in range(2):
            h = torch.sigmoid(h)
        if self.use_tanh:
            z = torch.tanh(y)
        else:
            z = y
        if (y > 0.5).any():
            z = z + 1.0
        return h, y * z


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(4, 8, generator=g), torch.rand(4, 8, generator=g))
