# PLANTED BUG FIXTURE (tests only): a program whose compiled forward is wrong only when the shared
# Inductor cache holds the marker file planted-cache-bug (a test writes it there); a job with a cold
# cache of its own does not see it. Proves that a cache-only failure is reported as a cache bug.
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        marker = os.path.join(os.environ.get("TORCHINDUCTOR_CACHE_DIR", "/nonexistent"), "planted-cache-bug")
        self.warm_cache = os.path.exists(marker)

    def forward(self, x):
        y = torch.sin(x) + 3
        if torch.compiler.is_compiling() and self.warm_cache:
            y = y * 1.5  # the planted difference
        return y


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(3, 7, generator=g),)
