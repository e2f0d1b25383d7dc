# ---- The "train" entry's training steps (CompileConfig's TrainingLoop; docs/oracle.md, "Training steps"). One
# file, two users: the worker child imports it (fuzzer/worker/python/reference/training_steps.py) and repro.py
# carries it at TCFUZZ_TRAINING_BLOCK. Every mode runs the same steps from the same seeded values: eager and the
# float64 reference uncompiled, the compiled run with torch.compile of the model, of the optimizer's step, or both.
import torch  # noqa: E402  (repro.py has imported these already; the worker has not)
import torch.utils._pytree as pytree  # noqa: E402

TRAIN_ENTRY = "train"


def trains(cfg):
    """Whether the compile configuration `cfg` (a job's "compile" field) runs training steps."""
    return (cfg or {}).get("entry") == TRAIN_ENTRY


def compiles_model(spec):
    """Whether the compiled run compiles the model (TrainingLoop::compiled "model" or "both")."""
    return spec.get("compiled", "both") in ("model", "both")


def compiles_step(spec):
    """Whether the compiled run compiles the step: gradient clipping and optimizer.step ("step" or "both")."""
    return spec.get("compiled", "both") in ("step", "both")


def step_compiler(cfg):
    """How the compiled run compiles the step function: torch.compile with the configuration's backend and mode only
    (fullgraph and dynamic are the model's; a step may break its graph at clipping or a scheduler's lr)."""
    kwargs = {"backend": cfg.get("backend", "inductor")}
    if cfg.get("mode"):
        kwargs["mode"] = cfg["mode"]
    return lambda step: torch.compile(step, **kwargs)


def make_optimizer(spec, params):
    name, lr, foreach = spec["optimizer"], float(spec["lr"]), bool(spec.get("foreach", False))
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, foreach=foreach)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, foreach=foreach)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01, foreach=foreach)
    raise ValueError(f"training: unknown optimizer {name!r}")


def make_scheduler(spec, optimizer):
    name = spec.get("scheduler") or "none"
    if name == "step":
        return torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    if name == "exponential":
        return torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.9)
    return None


def training_loss(out, seed):
    """The sum over the floating output leaves that require grad of their mean squared difference from a target:
    standard normal float32 values drawn from seed + k (k: the leaf's place among all output leaves), in the leaf's
    dtype. The same targets in every mode (the fp64 run widens the float32 values). None when no leaf requires grad."""
    terms = []
    for k, leaf in enumerate(pytree.tree_leaves(out)):
        if isinstance(leaf, torch.Tensor) and leaf.requires_grad and leaf.is_floating_point():
            target = torch.randn(tuple(leaf.shape), generator=torch.Generator().manual_seed(seed + k), dtype=torch.float32)
            terms.append((leaf - target.to(dtype=leaf.dtype, device=leaf.device)).pow(2).mean())
    return sum(terms[1:], terms[0]) if terms else None


def training_leaves(model, args_of_step, spec, forward, seed, compile_step=None, mark=lambda phase: None):
    """Runs spec["steps"] training steps on `model` and returns what is judged, [(name, leaf)]: each step's outputs and
    loss, then after the last step every trainable parameter, every tensor of the optimizer's state (per parameter,
    by key) and every buffer, by name.

    A step: the optimizer's zero_grad; forward(args_of_step()) (the model, compiled or not, on fresh copies of the
    inputs); training_loss; backward; then the step function (clip_grad_norm_ when spec["clip_norm"] > 0, then
    optimizer.step, passed through compile_step when given: torch.compile of it) and the scheduler's step. The
    optimizer holds the model's floating parameters that require grad, sorted by name. `mark(phase)` names what runs
    ("train-forward", "backward", "optimizer-step") so a failure is attributed to it."""
    params = [(name, p) for name, p in sorted(model.named_parameters(), key=lambda item: item[0])
              if p.requires_grad and p.is_floating_point()]
    tensors = [p for _, p in params]
    optimizer = make_optimizer(spec, tensors) if tensors else None
    scheduler = make_scheduler(spec, optimizer) if optimizer is not None else None
    clip = float(spec.get("clip_norm") or 0.0)

    def step():
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(tensors, clip)
        optimizer.step()

    step_fn = compile_step(step) if compile_step is not None and optimizer is not None else step
    steps = int(spec["steps"])
    leaves = []
    for k in range(1, steps + 1):
        if optimizer is not None:
            optimizer.zero_grad(set_to_none=True)
        mark("train-forward")
        with torch.enable_grad():
            out = forward(args_of_step())
            loss = training_loss(out, seed)
        leaves += [(f"step {k}: output {i}", t.detach().clone() if isinstance(t, torch.Tensor) else t)
                   for i, t in enumerate(pytree.tree_leaves(out))]
        if loss is None or optimizer is None:
            continue  # nothing to train: the outputs are still judged, step by step
        leaves.append((f"step {k}: loss", loss.detach().clone()))
        mark("backward")
        loss.backward()
        mark("optimizer-step")
        step_fn()
        if scheduler is not None:
            scheduler.step()
    after = f"after {steps} steps"
    for name, p in params:
        leaves.append((f"param {name} {after}", p.detach().clone()))
        state = optimizer.state.get(p, {}) if optimizer is not None else {}
        leaves += [(f"optimizer state {key} of {name} {after}", value.detach().clone())
                   for key, value in sorted(state.items()) if isinstance(value, torch.Tensor)]
    leaves += [(f"buffer {name} {after}", b.detach().clone())
               for name, b in sorted(model.named_buffers(), key=lambda item: item[0])]
    return leaves
