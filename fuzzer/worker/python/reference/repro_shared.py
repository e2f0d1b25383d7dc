"""The worker child's half of the shared block: seeding, fp64 widening, layout-keeping input copies,
the resized call's inputs and the tensor file. repro.py must stand alone, so oracles/reporter/repro/repro_driver.py keeps
a textually identical copy of the block below (tests/test_ReproWriter.cpp compares them).

Imported by child.py before the zygote forks: nothing here runs a torch op at import time.
"""

import json
import random

import torch
import torch.utils._pytree as pytree


# >>> tcfuzz shared block begin: seeding, fp64 widening, tensor file (twin: oracles/reporter/repro/repro_driver.py)
# repro.py stands alone, so it keeps its own copy of what the worker child does here; the two copies
# stay textually identical (tests/test_ReproWriter.cpp compares them). Edit both or neither.
def seed_everything(seed):
    """Seeds Python's, torch's and (when installed) numpy's global generators with `seed`."""
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass


def widen_dtype(dtype):
    """float64 for a floating dtype, complex128 for a complex one; anything else unchanged."""
    if isinstance(dtype, torch.dtype) and dtype.is_complex:
        return torch.complex128
    if isinstance(dtype, torch.dtype) and dtype.is_floating_point:
        return torch.float64
    return dtype


def restrided(t, like, view):
    """t's storage with like's sizes, strides and storage offset: a view of t when `view`, else a tensor that
    is no view (Dynamo guards on whether an input is a view: a call must not recompile for that alone)."""
    if view:
        return t.as_strided(like.size(), like.stride(), like.storage_offset())
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), like.storage_offset(), like.size(),
                                                               like.stride())


def layout_copy(t, dtype=None):
    """A copy of tensor t, in `dtype` when given, with t's sizes, strides and storage offset, and a view exactly
    when t is one: its whole storage is copied, so a slice, a transposed or expanded view or an input with a
    storage offset reaches the model as make_inputs made it (clone() and to() would make it dense, at offset
    0). A tensor that requires grad keeps a plain copy (its copy must stay in its graph); so do non-strided
    tensors. layout_copies copies several, aliasing kept."""
    return layout_copies([t], (lambda _: dtype) if dtype else None)[0]


def _whole_storage_copy(t, dtype, device):
    """t's whole storage as a 1-D tensor of t's dtype, copied into `dtype` on `device`; None where a storage
    copy cannot stand for t (a tensor that requires grad, a non-strided one, a dtype view of another
    dtype's storage)."""
    if t.requires_grad or t.layout != torch.strided:
        return None
    storage, width = t.untyped_storage(), t.element_size()
    if storage.nbytes() % width:
        return None
    with torch.no_grad():
        whole = torch.empty(0, dtype=t.dtype, device=t.device).set_(storage, 0, (storage.nbytes() // width,), (1,))
        return whole.to(dtype=dtype, device=device, copy=True)


def layout_copies(inputs, dtype_of=None, device=None):
    """layout_copy of every tensor in `inputs` (a list, nested or not), on `device` when given, aliasing kept as it is: tensors that
    share a storage get views of one copy of it (x and x[1:], x and x.t() stay aliased), a view of another
    input is a view of that input's copy (its ._base, which torch.compile reads, is kept), and a tensor passed
    twice is one copy passed twice. dtype_of(t): the copy's dtype (default t's)."""
    storages, copies = {}, {}
    leaves = [t for t in pytree.tree_leaves(list(inputs)) if isinstance(t, torch.Tensor)]
    listed = {id(t) for t in leaves}

    def copy(t):
        if id(t) in copies:
            return copies[id(t)][1]
        dtype = dtype_of(t) if dtype_of else t.dtype
        base = t._base if t._is_view() else None
        if base is not None and id(base) in listed and not t.requires_grad and base.dtype == t.dtype:
            out = copy(base).as_strided(t.size(), t.stride(), t.storage_offset())
        else:
            key = (t.untyped_storage().data_ptr(), t.dtype, dtype) if t.layout == torch.strided else None
            whole = storages.get(key) if key and not t.requires_grad else None
            if whole is None:
                whole = _whole_storage_copy(t, dtype, device or t.device)
                if whole is not None:
                    storages[key] = whole
            out = (restrided(whole, t, t._is_view()) if whole is not None
                   else t.to(device=device or t.device, dtype=dtype, copy=True))
        copies[id(t)] = (t, out)  # t is kept alive so that its id stays its own
        return out

    return pytree.tree_map(lambda t: copy(t) if isinstance(t, torch.Tensor) else t, list(inputs))


def fresh_copies(inputs):
    """Copies of every tensor in `inputs` with their layout and aliasing kept (layout_copies): each call gets
    its own, so a program that mutates its inputs is compared as it is; a grad leaf's copy stays in its graph."""
    return layout_copies(inputs)


def detached_copies(inputs):
    """fresh_copies of `inputs`, grad leaves detached first (a tensor passed twice stays one tensor): the inputs
    of a later call, which runs no backward."""
    detached = {}
    return fresh_copies([detached.setdefault(id(t), t.detach()) if isinstance(t, torch.Tensor) and t.requires_grad
                         else t for t in inputs])


def marking_dynamic(fn):
    """fn called with every dimension of size >= 2 of each top-level tensor argument marked maybe-dynamic
    first (torch._dynamo.maybe_mark_dynamic: a dimension the program specializes stays static, no error).
    The compile configuration mark_dynamic; the marks are on the arguments, outside the compiled code."""
    def call(*args):
        for x in args:
            if isinstance(x, torch.Tensor):
                for dim, size in enumerate(x.shape):
                    if size >= 2:
                        torch._dynamo.maybe_mark_dynamic(x, dim)
        return fn(*args)
    return call


def aliased_positions(inputs):
    """The positions of the top-level strided tensor inputs that share their storage with another input."""
    owners = [t.untyped_storage().data_ptr() if isinstance(t, torch.Tensor) and t.layout == torch.strided else None
              for t in inputs]
    return {i for i, key in enumerate(owners) if key is not None and owners.count(key) > 1}


def resized_inputs(inputs):
    """Call 4's candidate inputs under dynamic shapes: [(what, inputs)], to be tried in order.
    A candidate resizes one dim (dim 0, then the last dim) of every top-level tensor input whose size there
    is the most common one of 2 or more (the larger on a tie). A size n >= 3 becomes n - 1 by dropping the
    first slice, so the storage offset moves too; n == 2 becomes 3 by repeating the first slice (Dynamo
    specializes sizes 0 and 1). Shrunk tensors keep their strides; every tensor is a fresh copy. An input
    that shares its storage with another keeps its size: resizing the members of an aliased pair one by one
    would part them, or leave a view of a base no argument is (torch.compile then fails on inputs the
    program never gets, a harness-made finding)."""
    candidates, seen = [], set()
    aliased = aliased_positions(inputs)
    for where in ("dim 0", "the last dim"):
        dims = {i: 0 if where == "dim 0" else t.dim() - 1 for i, t in enumerate(inputs)
                if isinstance(t, torch.Tensor) and t.dim() > 0 and i not in aliased}
        counts = {}
        for i, d in dims.items():
            if inputs[i].shape[d] >= 2:
                counts[inputs[i].shape[d]] = counts.get(inputs[i].shape[d], 0) + 1
        if not counts:
            continue
        n = max(counts, key=lambda size: (counts[size], size))
        chosen = tuple((i, d) for i, d in dims.items() if inputs[i].shape[d] == n)
        if chosen in seen:
            continue
        seen.add(chosen)
        new = n - 1 if n >= 3 else 3
        args = detached_copies(inputs)
        with torch.no_grad():
            for i, d in chosen:
                if new < n:  # a view exactly when the input is one, as in calls 1 to 3
                    args[i] = restrided(args[i], args[i].narrow(d, 1, new), inputs[i]._is_view())
                else:
                    args[i] = torch.cat([args[i], args[i].narrow(d, 0, new - n)], d)
        names = ", ".join(str(i) for i, _ in chosen)
        candidates.append((f"{where} of input{'s' if len(chosen) > 1 else ''} {names}: {n} -> {new}", args))
    return candidates


def first_accepted(candidates, probe, rejected):
    """(what, args) for the first of candidates ([(what, args)], resized_inputs' or moved_inputs') on which
    probe (eager mode's own forward, given fresh copies) raises nothing; else (rejected, None)."""
    for what, args in candidates:
        try:
            probe(fresh_copies(args))
        except Exception:  # noqa: BLE001  (eager rejects these inputs: the next candidate)
            continue
        return what, args
    return rejected, None


def moved_inputs(inputs):
    """The inputs of the moved call (forward_checks.py): (what, inputs) with every top-level tensor input
    that has a storage offset copied to offset 0 with the same sizes and strides (a view exactly when it
    is one; what its strides skip is zero), or None when no input has an offset. An overlapping input (an expanded
    one) keeps its offset, and so does an input that shares its storage with another (moving one of an aliased
    pair would part it)."""
    args, moved = detached_copies(inputs), []
    aliased = aliased_positions(inputs)
    for i, t in enumerate(inputs):
        if not isinstance(t, torch.Tensor) or t.layout != torch.strided or t.storage_offset() == 0:
            continue
        if i in aliased:
            continue
        if t.numel() and any(s == 0 and n > 1 for n, s in zip(t.shape, t.stride())):
            continue
        extent = 1 + sum((n - 1) * s for n, s in zip(t.shape, t.stride())) if t.numel() else 0
        with torch.no_grad():  # a zeroed storage: the gaps a strided layout skips must not be garbage
            at_zero = torch.zeros(extent, dtype=t.dtype, device=t.device).as_strided(t.size(), t.stride(), 0)
            at_zero.copy_(t)
        args[i] = restrided(at_zero, at_zero, t._is_view())
        moved.append((i, t.storage_offset()))
    if not moved:
        return None
    names = ", ".join(str(i) for i, _ in moved)
    offsets = ", ".join(str(offset) for _, offset in moved)
    return f"input{'s' if len(moved) > 1 else ''} {names} at storage offset 0, not {offsets}", args


def later_call_leaves(role, inputs, probe, restore, call):
    """The leaves of call 4 ("resized", dynamic=True jobs only) or of the moved call ("moved"), as
    [(leaf, name)]: first a note saying what its inputs are ("dim 0 of input 0: 8 -> 7") or why the call
    is skipped, then call(args)'s flat outputs after restore(). [] when the moved call does not apply (no
    input has a storage offset). probe(args) is eager's own forward: inputs it rejects are never judged."""
    if role == "resized":
        candidates = resized_inputs(inputs)
        what, args = (first_accepted(candidates, probe, "skipped: eager rejects every other size") if candidates
                      else ("skipped: no input that shares no storage has a dim of size 2 or more", None))
    else:
        found = moved_inputs(inputs)
        if found is None:
            return []
        what, args = first_accepted([found], probe, "skipped: eager rejects its inputs at storage offset 0")
    leaves = [(what, f"{role}: inputs")]
    if args is not None:
        restore()
        leaves += [(leaf, f"{role} ({what}): output {i}") for i, leaf in enumerate(call(args))]
    return leaves


def widen_inputs(inputs):
    """`inputs` (a list) with floating and complex tensors converted to their widened dtype, layout and
    aliasing kept (layout_copies); other values copied unchanged."""
    return layout_copies(inputs, lambda t: widen_dtype(t.dtype))


def widen_model_and_inputs(model, inputs):
    """The float64 reference's model and inputs: the model in float64, floating inputs widened (a list)."""
    return model.to(torch.float64), widen_inputs(inputs)


class Fp64Casts(torch.overrides.TorchFunctionMode):
    """Turns explicit floating casts inside forward into float64 ones, as cast_to_fp64 does."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in (torch.Tensor.half, torch.Tensor.float, torch.Tensor.bfloat16):
            return args[0].double(**kwargs)
        if "dtype" in kwargs:
            kwargs["dtype"] = widen_dtype(kwargs["dtype"])
        if func in (torch.Tensor.to, torch.Tensor.type):
            args = tuple(widen_dtype(a) for a in args)
        return func(*args, **kwargs)


def call_in_fp64(fn, args):
    """fn(*args) as the float64 reference runs it: under Fp64Casts, with float64 the default dtype."""
    with Fp64Casts():
        default_dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float64)
        try:
            return fn(*args)
        finally:
            torch.set_default_dtype(default_dtype)
# The tensor file: how outputs cross from any worker torch to the LibTorch tcfuzz links (read by
# oracles/judge/OutputLoader.cpp). The safetensors layout: an 8-byte little-endian header length N, N bytes
# of JSON {"__metadata__": {...}, "0": {"dtype", "shape", "data_offsets"}, "1": ...}, then the raw
# C-contiguous little-endian bytes. No torch.save and no numpy, so every torch from 2.4 on writes it.
TENSOR_FILE_DTYPES = {name: code for name, code in [
    ("bool", "BOOL"), ("uint8", "U8"), ("int8", "I8"), ("int16", "I16"), ("int32", "I32"), ("int64", "I64"),
    ("uint16", "U16"), ("uint32", "U32"), ("uint64", "U64"), ("float16", "F16"), ("bfloat16", "BF16"),
    ("float32", "F32"), ("float64", "F64"), ("float8_e4m3fn", "F8_E4M3"), ("float8_e5m2", "F8_E5M2"),
] if hasattr(torch, name)}


def write_tensor_file(path, tensors):
    """Writes `tensors` (any device, layout-free dtypes only) to `path` as a tensor file, indexed 0..n-1."""
    import ctypes
    import struct

    header, chunks, offset = {"__metadata__": {"format": "tcfuzz-tensors", "version": "1"}}, [], 0
    for i, t in enumerate(tensors):
        t = t.detach().to("cpu").contiguous()
        dtype = str(t.dtype).replace("torch.", "")
        if dtype not in TENSOR_FILE_DTYPES:
            raise TypeError(f"the tensor file has no dtype {dtype}")
        size = t.numel() * t.element_size()
        chunks.append(ctypes.string_at(t.data_ptr(), size) if size else b"")
        header[str(i)] = {"dtype": TENSOR_FILE_DTYPES[dtype], "shape": list(t.shape),
                          "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for chunk in chunks:
            f.write(chunk)


def module_buffers(model):
    """{(submodule name, key): buffer} as the model holds them now: where each buffer sits."""
    return {(prefix, key): buf for prefix, module in model.named_modules()
            for key, buf in module._buffers.items() if buf is not None}


def put_back_tensors(model, named, snapshot, buffers):
    """Puts the model's tensors back as built: the buffer objects `buffers` (module_buffers as built) where a
    schedule step's model.double() put converted ones, each parameter's dtype, then the built values from
    `snapshot` ({name: tensor}) copied in place into `named` ([(name, tensor)]): the same tensors, so no guard
    sees a new one."""
    for prefix, module in model.named_modules():
        for key in list(module._buffers):
            built = buffers.get((prefix, key))
            if built is not None and module._buffers[key] is not built:
                module._buffers[key] = built
    with torch.no_grad():
        for name, t in named:
            saved = snapshot[name]
            if t.shape != saved.shape:
                continue
            if t.dtype != saved.dtype:
                t.data = saved.clone()
            else:
                t.copy_(saved)


def global_hook_tables():
    """torch.nn.Module's process-wide hook tables (register_module_forward_hook and kin), in a fixed order:
    every dict of torch.nn.modules.module whose name starts with _global_."""
    return [table for name, table in sorted(vars(torch.nn.modules.module).items())
            if name.startswith("_global_") and isinstance(table, dict)]


class PythonState:
    """The Python state a program keeps beside its tensors (docs/programs.md, "Python state"): the model's
    public instance attributes, its class's public data attributes, and the module globals the program
    names in STATE_GLOBALS (for a function among them, the contents of its closure cells). In a batch
    (BATCH_STATE: each member's submodule name and its globals), each member's own state, named after its
    submodule ("m2.self.calls"), as the member alone keeps it. restore() puts back the state as built, hooks and train/eval flags included (every call starts from it, as from the
    buffers and parameters as built; a schedule's calls then change it step by step). leaves() reads it as
    the oracle compares it: tensors and Python floats as values (floats may come from tensors, so they are
    judged like tensors), the rest of each value as its repr, compared exactly."""

    def __init__(self, model, namespace):
        import copy

        self.namespace = namespace
        members = namespace.get("BATCH_STATE") if isinstance(model, torch.nn.Module) else None
        # [(prefix, module, its global names)]: the model itself, or each batch member's submodule
        self.parts = ([(f"{name}.", model.get_submodule(name), [g for g in names if g in namespace]) for name, names in members]
                      if members else
                      [("", model, [name for name in namespace.get("STATE_GLOBALS", ()) if name in namespace])])
        self.built = [(part, where, key, copy.deepcopy(value)) for part, where, key, value in self._read()]
        # Each module's hooks and torch's global module hooks as built: a schedule step may remove one
        # (RemovableHandle.remove()).
        hook_dicts = [getattr(module, kind, None) for _, module, _ in self.parts
                      for kind in ("_forward_hooks", "_forward_pre_hooks")] + global_hook_tables()
        self.hooks = [(d, dict(d)) for d in hook_dicts if isinstance(d, dict)]
        # Each submodule's train/eval flag as built: a schedule step may call model.train().
        self.modes = [(m, m.training) for m in model.modules()] if isinstance(model, torch.nn.Module) else []

    def _read(self):
        """[(part, where, key, value)]: part indexes self.parts; where is "self", the class's name, "global", or
        "cell" (key "TALLY.count")."""
        found = []
        for part, (_, model, global_names) in enumerate(self.parts):
            cls = type(model)
            found += [(part, "self", k, v) for k, v in sorted(vars(model).items()) if not k.startswith("_") and k != "training"]
            found += [(part, cls.__name__, k, v) for k, v in sorted(vars(cls).items())
                      if not k.startswith("_") and not callable(v) and not isinstance(v, (property, staticmethod, classmethod))]
            for k in global_names:
                value = self.namespace[k]
                if callable(value) and getattr(value, "__closure__", None):
                    found += [(part, "cell", name, cell.cell_contents) for name, cell in self._cells(k)]
                else:
                    found.append((part, "global", k, value))
        return found

    def _cells(self, k):
        """[(name, cell)] of global function k's closure: "TALLY.count" for the cell of its variable count."""
        f = self.namespace[k]
        return [(f"{k}.{var}", cell) for var, cell in zip(f.__code__.co_freevars, f.__closure__)]

    def restore(self):
        import copy

        for part, (_, model, _) in enumerate(self.parts):
            for k in [k for k in vars(model) if not k.startswith("_") and k != "training"]:
                if not any(p == part and where == "self" and key == k for p, where, key, _ in self.built):
                    delattr(model, k)  # an attribute a call or a schedule step added
        for part, where, key, value in self.built:
            model = self.parts[part][1]
            if where == "self":
                object.__setattr__(model, key, copy.deepcopy(value))
            elif where == "global":
                self.namespace[key] = copy.deepcopy(value)
            elif where == "cell":
                dict(self._cells(key.split(".")[0]))[key].cell_contents = copy.deepcopy(value)
            else:
                setattr(type(model), key, copy.deepcopy(value))
        for hooks, built in self.hooks:  # in place: the module keeps the same dict
            hooks.clear()
            hooks.update(built)
        for module, training in self.modes:
            module.training = training

    def leaves(self):
        """[(name, leaf)] of the state now: "self.calls" with its repr, "Model.scale" with its float,
        "self.trace" with "[1, <value 0>]" then "self.trace value 0" with the tensor or float it holds; a batch
        member's after its submodule's name ("m2.self.calls")."""
        out = []
        for part, where, key, value in self._read():
            name = f"global {key}" if where == "global" else f"closure cell {key}" if where == "cell" else f"{where}.{key}"
            name = self.parts[part][0] + name
            if isinstance(value, (torch.Tensor, float)):
                out.append((name, value.detach().clone() if isinstance(value, torch.Tensor) else value))
                continue
            flat, spec = pytree.tree_flatten(value)
            values = [x for x in flat if isinstance(x, (torch.Tensor, float))]
            marks = iter(range(len(values)))
            shown = [ValueMark(next(marks)) if isinstance(x, (torch.Tensor, float)) else x for x in flat]
            out.append((name, repr(pytree.tree_unflatten(shown, spec))))
            out += [(f"{name} value {i}", x.detach().clone() if isinstance(x, torch.Tensor) else x)
                    for i, x in enumerate(values)]
        return out


class ValueMark:
    """Where a container held a tensor or a float: its repr is "<value i>", and value i is a leaf of its own."""

    def __init__(self, index):
        self.index = index

    def __repr__(self):
        return f"<value {self.index}>"


def _applying(changes):
    """The function of the inputs that applies each of `changes` in turn."""
    def transform(inputs):
        for change in changes:
            inputs = change(inputs)
        return inputs
    return transform


def schedule_leaves(namespace, model, restore, call, python_state):
    """The leaves of the program's SCHEDULE (docs/programs.md), as [(leaf, name)]: from the state as built
    (restore()), each step (a function of the model; its docstring says what it changes) changes the
    model's, its class's or the module's state, then call() runs forward on fresh copies of the inputs,
    and its outputs and the Python state after it are read. A step may return a function of the inputs (a
    list: inputs with requires_grad flipped, or as float64) that call(transform) applies to those copies; like
    a state change, it holds for every call after it, so transform applies each one so far in turn. [] when
    the program declares no schedule."""
    steps = list(namespace.get("SCHEDULE", ()))
    if not steps:
        return []
    restore()
    leaves, changes = [], []
    for k, step in enumerate(steps, 1):
        what = (step.__doc__ or step.__name__).strip().splitlines()[0]
        change = step(model)
        if callable(change):
            changes.append(change)
        label = f"schedule {k} ({what})"
        leaves += [(leaf, f"{label}: output {i}") for i, leaf in enumerate(call(_applying(list(changes)) if changes else None))]
        leaves += [(leaf, f"{label}: {name}") for name, leaf in python_state.leaves()]
    return leaves
# <<< tcfuzz shared block end: seeding, fp64 widening, tensor file (twin: oracles/reporter/repro/repro_driver.py)
