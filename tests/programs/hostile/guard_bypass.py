# HOSTILE PROGRAM (tests only): gets around the Python program guard (its code runs under a torch file name,
# and it reads the environment snapshot posix.environ), so only the OS sandbox stands in the way: /root is not
# mounted and the environment holds no credential. Must not leak the planted secrets (it is an invalid
# program: its own exception, with nothing in it).
import torch
import torch.nn as nn

_STEAL = """
import posix
found = [v.decode() for k, v in posix.environ.items() if b"KEY" in k or b"SECRET" in k]
try:
    found.append(open("/root/tcfuzz-hostile-secret.txt").read())
except OSError as exc:
    found.append(type(exc).__name__)
"""


class Model(nn.Module):
    def forward(self, x):
        ns = {}
        exec(compile(_STEAL, torch.__file__, "exec"), ns)
        raise RuntimeError(f"found: {ns['found']}")


def make_inputs(seed):
    return (torch.zeros(2),)
