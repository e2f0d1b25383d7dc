# Test program: the forward pass kills its own process with SIGSEGV.
import os
import signal

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        os.kill(os.getpid(), signal.SIGSEGV)
        return x


def make_inputs(seed):
    return (torch.zeros(2),)
