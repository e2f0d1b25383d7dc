# tcfuzz short repro (fails while the bug reproduces; full driver: repro.py): [inductor] InductorError(AssertionError) in backward: LoweringException: AssertionError: (max_pool2d; backend=inductor backward)
import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, x5):
        v1 = F.max_pool2d(x5, [3, 5], stride=[3, 2], padding=[0, 2], dilation=[1, 1], ceil_mode=False)  # [1, 1, 1] float64
        return v1,
def make_inputs(seed):
    g = torch.Generator().manual_seed(seed)
    x5 = (torch.rand((1, 4, 1), generator=g, dtype=torch.float64) * 4.0 + -2.0).to(torch.float64)  # [1, 4, 1] float64
    return [x5]

torch.set_num_threads(1)
SEED = 3
def run(compiled=False):
    torch.manual_seed(SEED)
    model, inputs = Model().eval(), make_inputs(SEED)
    inputs = [x.requires_grad_() if x.is_floating_point() or x.is_complex() else x for x in inputs]
    wrt = [x for x in inputs if x.requires_grad] + [p for _, p in sorted(model.named_parameters())]
    out = torch.utils._pytree.tree_leaves((torch.compile(model, backend="inductor") if compiled else model)(*inputs))
    diff = [(t, torch.randn(t.shape, generator=torch.Generator().manual_seed(SEED + k), dtype=torch.float32).to(t.dtype))
            for k, t in enumerate(out) if getattr(t, "requires_grad", False)]
    grads = list(torch.autograd.grad([t for t, _ in diff], wrt, [g for _, g in diff], allow_unused=True)) if diff else []
    return out + grads
run()
print("tcfuzz: the reference run passed (eager); now the compiled run:", flush=True)
run(compiled=True)
