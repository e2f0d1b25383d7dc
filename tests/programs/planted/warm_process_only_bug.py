# PLANTED BUG FIXTURE (tests only): a program whose compiled forward is wrong only inside a warm
# persistent worker child (TCFUZZ_PERSISTENT_CHILD is set there), to prove that such a finding is
# confirmed in a fresh process and recorded as a state-leak suspect, never as a torch bug.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.warm_process = bool(os.environ.get("TCFUZZ_PERSISTENT_CHILD"))

    def forward(self, x):
        y = torch.tanh(x) * 2
        if torch.compiler.is_compiling() and self.warm_process:
            y = y + 1  # the planted difference
        return y


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 5, generator=g),)
