# HOSTILE PROGRAM (tests only): writes a file until the disk is full. Must be a sandbox refusal.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        chunk = b"\0" * (1 << 20)
        with open("filler.bin", "wb") as f:
            while True:
                f.write(chunk)


def make_inputs(seed):
    return (torch.zeros(2),)
