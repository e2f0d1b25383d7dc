# ---- Desugared higher-order ops. One file, two users: the worker child imports it
# (fuzzer/worker/python/reference/desugared_hops.py) and repro.py carries it at TCFUZZ_HOPS_BLOCK.
import torch  # noqa: E402  (repro.py has imported it already; the worker has not)


# The Python meaning of each higher-order op a program calls through a module global (generators/python/
# HigherOrderOps.h): the eager and float64 references rebind those globals to these, so compiled's op is judged
# against an if, a loop, a plain call, torch.autograd.grad or torch.autograd.functional, never against the op's
# own eager path.
def _desugared_cond(pred, true_fn, false_fn, operands=()):
    return true_fn(*operands) if bool(pred) else false_fn(*operands)


def _desugared_map(f, xs, *args):
    return torch.stack([f(x, *args) for x in xs.unbind(0)])


def _desugared_while_loop(cond_fn, body_fn, carried_inputs):
    carried = tuple(carried_inputs)
    while bool(cond_fn(*carried)):
        carried = tuple(body_fn(*carried))
    return carried


def _desugared_scan(combine_fn, init, xs, dim=0, reverse=False):
    carry, ys = init, []
    slices = list(xs.unbind(dim))
    for x in reversed(slices) if reverse else slices:
        carry, y = combine_fn(carry, x)
        ys.append(y)
    return carry, torch.stack(ys[::-1] if reverse else ys, dim)


def _desugared_checkpoint(fn, *args, use_reentrant=None, **kwargs):
    return fn(*args, **kwargs)


def _desugared_nested_compile_region(fn):
    return fn


def _desugared_vmap(f, in_dims=0, out_dims=0):
    def batched(*args):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not None)
        rows = [f(*[a if d is None else a.select(d, i) for a, d in zip(args, dims)]) for i in range(size)]
        return torch.stack(rows, out_dims)
    return batched


def _history_needed(f, args):
    """Whether a transform's result carries autograd history, as torch.func's does: grad mode is on and an argument,
    or a tensor `f` captures (a parameter), requires grad. The second is probed by running `f` once on detached
    arguments. Without it, torch.autograd's create_graph would give the result a history the real transform's lacks,
    and a training loss or a backward would then differ from compiled's for no bug."""
    if not torch.is_grad_enabled():
        return False
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in args):
        return True
    with torch.enable_grad():
        out = f(*[a.detach() if isinstance(a, torch.Tensor) else a for a in args])
    leaves = out if isinstance(out, (tuple, list)) else (out,)
    return any(isinstance(t, torch.Tensor) and t.requires_grad for t in leaves)


def _desugared_grad(f, argnums=0):
    def gradient(*args):
        history = _history_needed(f, args)
        with torch.enable_grad():
            x = args[argnums]
            leaf = x if x.requires_grad else x.detach().requires_grad_()
            inner = list(args)
            inner[argnums] = leaf
            (g,) = torch.autograd.grad(f(*inner), leaf, create_graph=history)
        return g
    return gradient


def _desugared_associative_scan(combine_fn, xs, dim, reverse=False, combine_mode="pointwise"):
    slices = list(xs.unbind(dim))
    if reverse:
        slices.reverse()
    out = [slices[0]]
    for x in slices[1:]:
        out.append(combine_fn(out[-1], x))
    if reverse:
        out.reverse()
    return torch.stack(out, dim)


def _desugared_jvp(f, primals, tangents):
    return torch.autograd.functional.jvp(f, tuple(primals), tuple(tangents),
                                         create_graph=_history_needed(f, tuple(primals)))


def _desugared_vjp(f, *primals):
    history = _history_needed(f, primals)
    with torch.enable_grad():
        leaves = [p if p.requires_grad else p.detach().requires_grad_() for p in primals]
        out = f(*leaves)

    def pullback(v):
        return torch.autograd.grad(out, leaves, v, create_graph=history, retain_graph=True)
    if history:
        return out, pullback
    return (tuple(t.detach() for t in out) if isinstance(out, tuple) else out.detach()), pullback


def _desugared_jacobian(f, argnums=0):
    def jacobian(x):
        return torch.autograd.functional.jacobian(f, x, create_graph=_history_needed(f, (x,)))
    return jacobian


def _desugared_flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None, **kwargs):
    """Explicit masked softmax attention: every score through score_mod, the block mask's mask_mod as -inf."""
    def index(size, dim):
        shape = [1, 1, 1, 1]
        shape[dim] = size
        return torch.arange(size, device=query.device).view(shape)
    b, h = index(query.shape[0], 0), index(query.shape[1], 1)
    q_idx, kv_idx = index(query.shape[2], 2), index(key.shape[2], 3)
    scores = query @ key.transpose(-2, -1) * (scale if scale is not None else query.shape[-1] ** -0.5)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q_idx, kv_idx)
    if block_mask is not None:
        scores = scores.masked_fill(~block_mask.mask_mod(b, h, q_idx, kv_idx), float("-inf"))
    return torch.softmax(scores, -1) @ value


def _desugared_functional_call(module, parameter_and_buffer_dicts, args=(), kwargs=None, **_):
    """The module called with the given tensors set in place of its own, which are put back after."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (list, tuple)) else [parameter_and_buffer_dicts]
    given = {name: t for d in dicts for name, t in d.items()}
    kept = {name: getattr(module, name) for name in given}
    try:
        for name, t in given.items():
            setattr(module, name, t)
        return module(*(args if isinstance(args, tuple) else (args,)), **(kwargs or {}))
    finally:
        for name, t in kept.items():
            setattr(module, name, t)


DESUGARED_HOPS = {"cond": _desugared_cond, "hop_map": _desugared_map, "while_loop": _desugared_while_loop,
                  "scan": _desugared_scan, "checkpoint": _desugared_checkpoint,
                  "nested_compile_region": _desugared_nested_compile_region, "vmap": _desugared_vmap,
                  "grad": _desugared_grad, "associative_scan": _desugared_associative_scan, "jvp": _desugared_jvp,
                  "vjp": _desugared_vjp, "jacrev": _desugared_jacobian, "jacfwd": _desugared_jacobian,
                  "flex_attention": _desugared_flex_attention, "functional_call": _desugared_functional_call}


def desugar_hops(namespace):
    """Rebinds the program's higher-order-op globals (those it binds to a torch op) to their Python meaning;
    returns {name: the op it was bound to}, which namespace.update() puts back."""
    bound = {name: namespace[name] for name in DESUGARED_HOPS
             if name in namespace and getattr(namespace[name], "__module__", "").startswith("torch")}
    namespace.update({name: DESUGARED_HOPS[name] for name in bound})
    return bound
