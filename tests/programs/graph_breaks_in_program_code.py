# Test program: graph breaks inside the program's own functions, so that Inductor compiles (and runs its
# C++ compiler) while resume frames of this file are on the Python stack. The program guard must not take
# torch's compiler subprocess for the program's own (tests/test_Sandbox.cpp): the verdict is agree.
import torch
import torch.nn as nn


def scaled(x):
    y = torch.sin(x) * 2
    torch._dynamo.graph_break()
    return torch.cos(y) + y.sum()


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.linear(x))
        torch._dynamo.graph_break()
        return scaled(h) * 3


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(5, 8, generator=g),)
