# PLANTED TEST FIXTURE (tests/test_SecretRedactor.cpp): a program whose failure message carries a
# secret, standing in for a program that stole one. The test writes a copy with @PLANTED_KEY@ and
# @PLANTED_TOKEN@ replaced by the fake secrets it puts in tcfuzz's environment; tcfuzz must never
# print or write them.
import torch
import torch.nn as nn

KEY = "@PLANTED_KEY@"
TOKEN = "@PLANTED_TOKEN@"


class Model(nn.Module):
    def forward(self, x):
        raise ValueError(f"planted leak: api key {KEY}, token {TOKEN}")


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(4, 3, generator=g),)
