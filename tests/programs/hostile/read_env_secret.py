# HOSTILE PROGRAM (tests only): reads the LLM API key from the environment and raises it, so that it would
# land in the result JSON and the reports. Must be reported as a sandbox refusal (tests/test_Sandbox.cpp).
import os

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        stolen = os.environ.get("TCFUZZ_LLM_API_KEY") or os.getenv("AWS_SECRET_ACCESS_KEY")
        raise RuntimeError(f"stolen: {stolen}")


def make_inputs(seed):
    return (torch.zeros(2),)
