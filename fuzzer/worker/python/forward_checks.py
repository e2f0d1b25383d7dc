"""What a program job checks beyond its first call's outputs: random-op taint, the state a
forward leaves behind (inputs, buffers, parameters), and the calls after the first.

The leaves of one run, in the order every mode saves them (child.py) and repro.py rebuilds them
(oracles/reporter/repro/repro_driver.py):
  role "output"        call 1's flattened outputs
  role "grad"          call 1's gradients (backward jobs)
  role "alias"         one per output of call 1: what its storage is shared with (TextLeaf: "input 0",
                       "buffer bn.running_mean", "output 1" or "nothing"), compared as text
  role "state"         each top-level input tensor, buffer and parameter after call 1, named
                       "input 0 after forward", "buffer bn.running_mean after forward", ... ("after backward"
                       when call 1 ran backward: the state is read after the gradients)
  role "python-state"  the Python state after call 1 (repro_shared.PythonState): "self.calls after forward",
                       "Model.scale after forward", "global OFFSET after forward"; only for a program that keeps some
  role "second-call"   call 2 (fresh copies of the same inputs, state restored): its outputs. It repeats call 1
                       exactly, so Dynamo must run its cached code: a compiled job reports the guard failures of
                       any recompile call 2 made (result "repeat_recompiles"; the oracle's recompile-storm)
  role "fresh-inputs"  call 3 (make_inputs(seed + 1), state restored): its outputs
  role "resized"       jobs under dynamic=True only: call 4, inputs of another size (repro_shared.resized_inputs,
                       state restored). First a TextLeaf named "resized: inputs" saying which dim of which
                       inputs changed ("dim 0 of input 0: 8 -> 7") or why call 4 was skipped, then the outputs,
                       named "resized (dim 0 of input 0: 8 -> 7): output 0", ...
  role "moved"         only when a top-level input has a storage offset: those inputs at offset 0, sizes and
                       strides kept (repro_shared.moved_inputs, state restored); a TextLeaf "moved: inputs"
                       ("input 0 at storage offset 0, not 8"), then the outputs, "moved (...): output 0", ...
  role "training"      the "train" entry's jobs, instead of every role above: each step's outputs and loss, then
                       each parameter, optimizer state tensor and buffer after the last step
                       (reference/training_steps.py), each leaf with the number of steps it carries
  role "schedule"      only when the program declares a SCHEDULE: from the state as built, each step changes
                       Python state, then a call on the same inputs: its outputs and the Python state after it,
                       "schedule 1 (Model.scale = 0.5): output 0", "schedule 1 (Model.scale = 0.5): self.calls"
Every mode picks the inputs of call 4 and of the moved call the same way: the first candidate its own
eager forward accepts (the compiled job asks its uncompiled model), so inputs eager rejects are never
judged, and compiled raising on inputs eager accepts is a crash in phase "resized-call" or "moved-call".
Every call gets fresh copies of the inputs and starts from the model state as built, so a program
that mutates its inputs or buffers is compared, not written off as nondeterministic.

Random-op taint (RandomTaint) runs in the eager job only: a leaf whose value depends on an op that
draws from torch's global generator (an op tagged nondeterministic_seeded, called without an explicit
generator) is marked "random" and the oracle judges its dtype and shape, never its values: Inductor's
decompositions draw different numbers even under fallback_random. It is dynamic taint at the aten
level, so it covers the IR's programs and the LLM's Python alike, and sees through decompositions.

Imported by zygote.py (through child.py) before any fork: nothing here runs a torch op at import time.
"""

import hashlib

import torch
import torch.utils._pytree as pytree
from torch.utils._python_dispatch import TorchDispatchMode

from reference.repro_shared import PythonState, layout_copies, layout_copy, module_buffers, put_back_tensors

FRESH_INPUT_SEED_OFFSET = 1  # call 3 uses make_inputs(seed + this)


def _own_generator(seed, t):
    """A generator for tensor `t`'s draw, seeded by `seed` and `t`'s own dtype, shape and bytes: an input moves
    the same way whatever inputs come before it (a program alone and as a member of a batch, where its inputs
    follow the other members')."""
    digest = hashlib.blake2b(f"{int(seed)}|{t.dtype}|{tuple(t.shape)}|".encode(), digest_size=8)
    digest.update(t.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    return torch.Generator().manual_seed(int.from_bytes(digest.digest(), "little") >> 1)


def perturbed_inputs(inputs, perturb):
    """`inputs` with each floating tensor element moved by a uniform draw of up to perturb["ulps"] ulps
    (of its own magnitude), seeded by perturb["seed"] and the tensor itself (_own_generator): the
    ill-conditioning check's eager runs. Zeros, NaN and Inf stay as they are; other tensors and values are
    unchanged."""
    ulps = float(perturb["ulps"])

    def move(t):
        if not isinstance(t, torch.Tensor) or not t.is_floating_point() or t.numel() == 0:
            return t
        with torch.no_grad():
            generator = _own_generator(perturb["seed"], t)
            ulp = torch.nextafter(t.abs(), torch.full_like(t, float("inf"))) - t.abs()
            draw = (torch.rand(t.shape, generator=generator, dtype=torch.float64) * 2 - 1) * ulps
            moved = (t.double() + draw.to(t.device) * ulp.double()).to(t.dtype)
            keep = (t == 0) | ~torch.isfinite(t) | ~torch.isfinite(moved)
            return torch.where(keep, t, moved).requires_grad_(t.requires_grad)

    return pytree.tree_map(move, list(inputs))


class TextLeaf(str):
    """A leaf that is a note, not a value: what one output shares storage with ("input 0", "param weight",
    "output 1", "nothing"), or how call 4 resized the inputs. It is saved as a leaf of kind "other" and
    compared by its text, never arbitrated by fp64 (whose casts alias differently). Its repr is the text
    itself, so reports quote it without quotes."""

    def __repr__(self):
        return str(self)


def _storage_key(t):
    """The address of a tensor's storage, or None (no storage, or an empty one shared by nothing)."""
    if not isinstance(t, torch.Tensor):
        return None
    try:
        storage = t.untyped_storage()
        return storage.data_ptr() if storage.nbytes() > 0 else None
    except (RuntimeError, NotImplementedError, AttributeError):  # sparse, meta or storage-less tensors
        return None


def alias_notes(out_leaves, sources):
    """One TextLeaf per output leaf of call 1: the first of `sources` ([(name, tensor)]: the top-level
    inputs, then buffers and parameters) whose storage it shares, else the first earlier output whose
    storage it shares, else "nothing". Eager and compiled must agree on every note (a view stays a view)."""
    owners = {}
    for name, t in sources:
        owners.setdefault(_storage_key(t), name)
    notes, seen = [], {}
    for i, leaf in enumerate(out_leaves):
        key = _storage_key(leaf)
        note = owners.get(key) or seen.get(key) if key is not None else None
        notes.append(TextLeaf(note or "nothing"))
        if key is not None:
            seen.setdefault(key, f"output {i}")
    return notes


class ModuleState:
    """The buffers and parameters of a model as built, and the Python state the program keeps
    (repro_shared.PythonState), restored before each call after the first."""

    def __init__(self, model, namespace=None):
        self.model = model
        self.named = self._named(model)
        with torch.no_grad():
            self.snapshot = {name: t.detach().clone() for name, t in self.named}
        self.buffers = module_buffers(model) if isinstance(model, torch.nn.Module) else {}
        self.python = PythonState(model, namespace or {})

    @staticmethod
    def _named(model):
        """[(name, tensor)]: "buffer X" and "param X" entries, sorted by name (a module without them: [])."""
        found = []
        for kind, getter in (("buffer", "named_buffers"), ("param", "named_parameters")):
            method = getattr(model, getter, None)
            for name, t in sorted(method() if method else [], key=lambda item: item[0]):
                if isinstance(t, torch.Tensor):
                    found.append((f"{kind} {name}", t))
        return found

    def restore(self):
        """Puts the built tensors back (repro_shared.put_back_tensors: identity kept, so no compiled guard sees
        a new tensor; dtypes too, after a schedule step's model.double()) and the built Python state."""
        if isinstance(self.model, torch.nn.Module):
            put_back_tensors(self.model, self.named, self.snapshot, self.buffers)
        self.python.restore()

    def alias_sources(self, args):
        """[(name, tensor)]: each top-level input tensor ("input 0"), then each buffer and parameter."""
        return [(f"input {i}", t) for i, t in enumerate(args) if isinstance(t, torch.Tensor)] + self.named

    def after_call(self, args, backward):
        """[(name, tensor)]: each top-level input tensor, then each buffer and parameter, as the call left
        them: "input 0 after forward", or "input 0 after backward" when the call ran backward too (the
        compiled backward may be what writes)."""
        when = "after backward" if backward else "after forward"
        found = [(f"input {i} {when}", t) for i, t in enumerate(args) if isinstance(t, torch.Tensor)]
        return found + [(f"{name} {when}", t) for name, t in self.named]

    def python_after_call(self, backward):
        """[(name, leaf)]: the Python state as the call left it (PythonState.leaves), "self.calls after
        forward" (or "after backward")."""
        when = "after backward" if backward else "after forward"
        return [(f"{name} {when}", leaf) for name, leaf in self.python.leaves()]


def _is_random(func, kwargs):
    tags = getattr(func, "tags", ()) or ()
    return torch.Tag.nondeterministic_seeded in tags and kwargs.get("generator") is None


class RandomTaint(TorchDispatchMode):
    """Marks every tensor storage whose values depend on a draw from torch's global generator.

    A storage is tainted when a random op writes it or when any op writes it from a tainted input
    (views share their base's storage; an in-place op taints what it writes). Strong references keep
    the tainted storages alive for the mode's lifetime, so a storage key is never reused."""

    def __init__(self):
        super().__init__()
        self._tainted = {}
        self.random_ops = set()

    @staticmethod
    def _key(t):
        try:
            return t.untyped_storage()._cdata
        except (RuntimeError, NotImplementedError, AttributeError):  # sparse, meta or storage-less tensors
            return None

    def is_tainted(self, t):
        return isinstance(t, torch.Tensor) and self._key(t) in self._tainted

    def _taint(self, t):
        key = self._key(t)
        if key is not None:
            self._tainted[key] = t

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        random = _is_random(func, kwargs)
        if random:
            self.random_ops.add(str(func.overloadpacket))
        if random or any(self.is_tainted(t) for t in pytree.tree_leaves((args, kwargs))):
            for t in pytree.tree_leaves(out):
                if isinstance(t, torch.Tensor):
                    self._taint(t)
            schema = getattr(func, "_schema", None)
            for i, arg in enumerate(schema.arguments if schema else []):  # in-place and out= writes
                if arg.alias_info is not None and arg.alias_info.is_write:
                    target = args[i] if i < len(args) else kwargs.get(arg.name)
                    for t in pytree.tree_leaves(target):
                        if isinstance(t, torch.Tensor):
                            self._taint(t)
        return out

    def leaf_flags(self, leaves):
        """One bool per leaf: its value depends on a random op. A Python scalar cannot be traced, so it
        counts as random whenever any random op ran."""
        return [self.is_tainted(leaf) if isinstance(leaf, torch.Tensor)
                else bool(self.random_ops) and not isinstance(leaf, str) for leaf in leaves]


# Ops whose output (or output 1 of a (values, indices) pair) indexes into their input along a dim:
# name -> (position of the indices among the outputs, whether they keep the reduced dim's rank).
_INDEX_OPS = {
    "argmax": (0, False), "argmin": (0, False), "max": (1, False), "min": (1, False),
    "kthvalue": (1, False), "mode": (1, False), "median": (1, False), "nanmedian": (1, False),
    "sort": (1, True), "topk": (1, True), "cummax": (1, True), "cummin": (1, True),
}


class IndexSources(TorchDispatchMode):
    """Remembers, for each index tensor an op above returns (argmax, max.dim, sort, topk, ...), the values
    it indexes: a clone of the op's input and the dim. Runs in call 1 of the eager job only. The oracle
    then counts compiled's indices as agreeing where the values at them are ties: an index is never judged by value."""

    def __init__(self):
        super().__init__()
        self._by_storage = {}  # storage address -> (indices tensor, kept alive; source clone, dim, same rank)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        spec = _INDEX_OPS.get(func.overloadpacket.__name__)
        if spec is None or not args or not isinstance(args[0], torch.Tensor):
            return out
        position, same_rank = spec
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if position >= len(outs) or not isinstance(outs[position], torch.Tensor) or outs[position].dtype != torch.int64:
            return out  # max(x) or min(x) without dim: a value, not an index
        schema = func._schema
        named = {arg.name: args[i] if i < len(args) else kwargs.get(arg.name, arg.default_value)
                 for i, arg in enumerate(schema.arguments)}
        dim = named.get("dim")
        indices = outs[position]
        key = _storage_key(indices)
        if key is not None:
            self._by_storage[key] = (indices, args[0].detach().clone(), dim, same_rank or bool(named.get("keepdim")))
        return out

    def sources_of(self, leaves):
        """Per leaf: (source values, dim or None for a flat index, same rank) when it is an index tensor
        an op above returned, as it returned it (not a view or a copy of it); else None."""
        found = []
        for leaf in leaves:
            entry = self._by_storage.get(_storage_key(leaf))
            found.append(entry[1:] if entry is not None and entry[0] is leaf else None)
        return found


class NoTaint:
    """The stand-in for RandomTaint and IndexSources where they do not run (compiled and fp64 jobs, calls
    after the first): marks nothing, knows no source."""

    random_ops = frozenset()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def leaf_flags(self, leaves):
        return [False] * len(leaves)

    def sources_of(self, leaves):
        """The stand-in for IndexSources.sources_of: no leaf has a known source."""
        return [None] * len(leaves)


class ConditioningRefused(Exception):
    """The ill-conditioning check's perturbed run cannot stand for the program's conditioning."""


def conditioning_inputs(inputs, perturb):
    """The ill-conditioning check's inputs (perturbed_inputs), each in its original's layout (_with_layout_of).
    Raises ConditioningRefused when an input holds NaN or an infinity: those stay where they are, so eager's
    spread would measure only the finite rest (complex logaddexp of infinite parts looked ill-conditioned).
    Inputs that share a storage (an aliased pair) stay aliased: the largest of them carries the moved values
    into one copy of the storage, and the others view it."""
    for t in pytree.tree_leaves(inputs):
        if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) and not torch.isfinite(t).all():
            raise ConditioningRefused("the inputs hold non-finite values, which a few ulps cannot move: eager's "
                                      "spread on them says nothing of conditioning")
    moved = perturbed_inputs(inputs, perturb)
    groups = {}
    for i, t in enumerate(inputs):
        if isinstance(t, torch.Tensor) and t.layout == torch.strided and not t.requires_grad:
            groups.setdefault(t.untyped_storage().data_ptr(), []).append(i)
    if all(len(members) == 1 for members in groups.values()):
        return pytree.tree_map(_with_layout_of, inputs, moved)
    out = layout_copies(inputs)
    for i, t in enumerate(inputs):
        members = groups.get(t.untyped_storage().data_ptr(), [i]) if isinstance(t, torch.Tensor) else [i]
        if len(members) == 1:
            out[i] = pytree.tree_map(_with_layout_of, t, moved[i])
        elif i == max(members, key=lambda k: inputs[k].numel()):
            with torch.no_grad():
                try:
                    out[i].copy_(moved[i])
                except RuntimeError:  # overlapping memory cannot hold distinct values
                    pass
    return out


def _with_layout_of(original, values):
    """`values` (a dense tensor of original's shape) in original's layout (layout_copy), so a perturbed
    input keeps make_inputs' strides and storage offset; `values` itself where that cannot hold them
    (an expanded input) or original is no tensor."""
    if not isinstance(original, torch.Tensor) or original.requires_grad:
        return values
    out = layout_copy(original)
    try:
        with torch.no_grad():
            out.copy_(values)
    except RuntimeError:  # overlapping memory cannot hold distinct values
        return values
    return out
