# HOSTILE PROGRAM (tests only): writes files outside its job directory. Must be a sandbox refusal, and neither
# file may exist on the host afterwards.
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        for path in ("/tmp/tcfuzz-hostile-write-outside.txt", "/var/tmp/tcfuzz-hostile-write-outside.txt"):
            with open(path, "w") as f:
                f.write("pwned")
        return x


def make_inputs(seed):
    return (torch.zeros(2),)
