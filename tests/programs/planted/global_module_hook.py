# PLANTED STATE LEAK FIXTURE (tests only): a program that registers a process-wide module forward hook and
# never removes it. Left in place, the hook would double every later program's module outputs in the same
# process; a persistent worker child must put torch's global hook tables back before its next job.
import torch
import torch.nn as nn


def double_every_output(module, args, output):
    return output * 2


torch.nn.modules.module.register_module_forward_hook(double_every_output)


class Model(nn.Module):
    def forward(self, x):
        return torch.sin(x)


def make_inputs(seed):
    return (torch.linspace(-1, 1, 6),)
