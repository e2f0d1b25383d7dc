# Test program: the forward pass kills the worker zygote that forked it (a dead worker).
import os
import signal

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        os.kill(os.getppid(), signal.SIGKILL)
        return x


def make_inputs(seed):
    return (torch.zeros(2),)
