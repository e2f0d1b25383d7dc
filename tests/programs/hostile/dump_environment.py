# HOSTILE PROGRAM (tests only): prints the whole environment into an exception. Must be a sandbox refusal.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError(str(dict(os.environ)))


def make_inputs(seed):
    return (torch.zeros(2),)
