# HOSTILE PROGRAM (tests only): spawns a shell that writes a file on the host. Must be a sandbox refusal, and
# the file must not exist afterwards.
import subprocess

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        subprocess.run("echo pwned > /tmp/tcfuzz-hostile-shell.txt", shell=True, check=True)
        return x


def make_inputs(seed):
    return (torch.zeros(2),)
