# HOSTILE PROGRAM (tests only): a fork bomb that ignores every error. Must be a sandbox refusal, not a
# timeout or a dead worker, and must leave no process behind.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        while True:
            try:
                os.fork()
            except Exception:  # noqa: BLE001
                pass


def make_inputs(seed):
    return (torch.zeros(2),)
