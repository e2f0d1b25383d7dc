# HOSTILE PROGRAM (tests only): reads the password hashes. Must be a sandbox refusal.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        with open("/etc/shadow") as f:
            raise RuntimeError(f.read())


def make_inputs(seed):
    return (torch.zeros(2),)
