# HOSTILE PROGRAM (tests only): connects to a loopback port on which tests/test_Sandbox.cpp listens and sends
# a message. Must be a sandbox refusal, and the listener must receive nothing.
import socket

import torch
import torch.nn as nn

PORT = 47613


class Model(nn.Module):
    def forward(self, x):
        with socket.create_connection(("127.0.0.1", PORT), timeout=2) as s:
            s.sendall(b"exfiltrated")
        return x


def make_inputs(seed):
    return (torch.zeros(2),)
