# HOSTILE PROGRAM (tests only): reads ssh private keys from the home directory. Must be a sandbox refusal.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        keys = []
        for home in (os.path.expanduser("~"), "/root"):
            with open(os.path.join(home, ".ssh", "id_rsa")) as f:
                keys.append(f.read())
        raise RuntimeError(str(keys))


def make_inputs(seed):
    return (torch.zeros(2),)
