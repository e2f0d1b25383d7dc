# A program that keeps Python state (a test program, written as tcfuzz's generator writes them): a class
# attribute scales output 0, a module global offsets output 1, a flag picks how output 2 reduces, a loop
# over dim 0 rebuilds output 0, forward counts its calls in an attribute, a list and a global, and a
# forward pre-hook records the input shapes. The schedule changes the class attribute, the global and the
# flag between calls, then removes the hook.
import torch
import torch.nn as nn


OFFSET = 0.0
CALLS = 0


def record_input_shapes(module, args):  # a forward pre-hook that writes Python state
    module.seen.append(tuple(tuple(a.shape) for a in args if isinstance(a, torch.Tensor)))


class Model(nn.Module):
    scale = 1.0

    def __init__(self):
        super().__init__()
        self.calls = 0
        self.trace = []
        self.flag = True
        self.seen = []
        self._hook = self.register_forward_pre_hook(record_input_shapes)

    def forward(self, x0, x1):
        global CALLS
        CALLS += 1
        self.calls += 1
        self.trace.append(self.calls)
        v2 = torch.tanh(x0)  # [4, 3] float32
        parts = []
        for i, part in enumerate(v2.unbind(0)):  # a loop over dim 0 that fills a list
            parts.append(part * (i % 3 + 1))
        v2 = torch.stack(parts)
        v2 = v2 * self.scale
        v3 = torch.sin(x1)  # [5] float32
        v3 = v3 + OFFSET
        if self.flag:
            v4 = torch.sum(x0, [1])  # [4] float32
        else:  # the other arm: the output rolled by one
            v4 = (torch.sum(x0, [1])).roll(1)  # [4] float32
        return v2, v3, v4


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = (torch.rand((4, 3), generator=g, dtype=torch.float64) * 4.0 + -2.0).to(torch.float32)  # [4, 3] float32
    x1 = (torch.rand((5,), generator=g, dtype=torch.float64) * 4.0 + -2.0).to(torch.float32)  # [5] float32
    return [x0, x1]


def change_1(model):
    """Model.scale = 0.5 (a class attribute)"""
    Model.scale = 0.5


def change_2(model):
    """OFFSET = 2.0 (a module global)"""
    global OFFSET
    OFFSET = 2.0


def change_3(model):
    """model.flag = not model.flag"""
    model.flag = not model.flag


def change_4(model):
    """the forward-pre hook removed"""
    model._hook.remove()


SCHEDULE = [change_1, change_2, change_3, change_4]
STATE_GLOBALS = ("OFFSET", "CALLS")
