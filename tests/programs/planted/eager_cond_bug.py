# TEST FIXTURE: a planted bug in eager's own torch.cond. `cond` stands for torch.cond (its __module__ says torch, so
# tcfuzz's references run its Python meaning, an if/else, in its place). Under torch.compile it calls the real
# torch.cond; called in eager it scales the branch taken by 1.5, a wrong result that only the no-compile run of
# eager's own higher-order ops can see.
import torch
import torch.nn as nn


def cond(pred, true_fn, false_fn, operands):
    if torch.compiler.is_compiling():
        return torch.cond(pred, true_fn, false_fn, operands)
    return tuple(t * 1.5 for t in (true_fn if bool(pred) else false_fn)(*operands))


cond.__module__ = "torch._higher_order_ops.cond"


class Model(nn.Module):
    def forward(self, x0, x1):
        def sine(a):
            return (a.sin(),)

        def cosine(a):
            return (a.cos(),)

        return cond(x1.flatten()[0] > 0.0, sine, cosine, (x0,))


def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.rand((3, 4), generator=g) * 4 - 2
    x1 = torch.ones((2,))  # the true branch is taken
    return [x0, x1]
