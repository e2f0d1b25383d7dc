# HOSTILE PROGRAM (tests only): lists /root and reads a file there at load time. Must be a sandbox refusal.
import os

import torch
import torch.nn as nn

LISTING = os.listdir("/root")
SECRET = open("/root/tcfuzz-hostile-secret.txt").read()


class Model(nn.Module):
    def forward(self, x):
        raise RuntimeError(f"{LISTING} {SECRET}")


def make_inputs(seed):
    return (torch.zeros(2),)
