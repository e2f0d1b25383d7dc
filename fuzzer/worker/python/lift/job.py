"""The lift job: an untrusted program checked, run once in eager and traced into an IR proposal.

The program (an LLM's) is checked against the AST allowlist (allowlist.py), run once in eager under
LiftRecorder, and its torch calls are mapped onto catalog ops through the lift table that tcfuzz builds
from the op catalog (generators/llm/PythonLift.h). Runs in a forked worker child (child.py).
"""

import contextlib
import re
import time

import torch
import torch.utils._pytree as pytree
from torch.overrides import TorchFunctionMode

from .allowlist import LiftRefused, check_program_ast, lift_builtins
from .constructs import BRANCH, HOP, LOOP, ConstructRecorder, mark_constructs, place_constructs
from program_guard import GUARD

LIFT_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool", "complex64", "complex128")


def run_lift_job(run):
    """The lift job of `run` (a child.ChildRun): refuses the program unless its AST passes check_program_ast
    (then nothing of it runs); else runs it once like an eager job under LiftRecorder and lifts the trace
    through the job's table. A forward that raises propagates: the usual exception result."""
    spec = run.job.get("lift") or {}
    path = run.job["program"]
    t0 = time.monotonic()
    run.mark("load")
    with open(path) as f:
        source = f.read()
    reason = check_program_ast(source)
    if reason is not None:
        return {"status": "ok", "phase": "done", "lift": {"rejected": reason}, "times": run.times}
    table = LiftTable(spec.get("table") or [])
    recorder = LiftRecorder()
    builtins = lift_builtins()
    builtins["print"] = recorder.record_graph_break  # Dynamo breaks the graph at a print; the lift prints nothing
    constructs = ConstructRecorder(recorder.calls)
    namespace = {"__name__": "tcfuzz_program", "__file__": path, "__builtins__": builtins, **constructs.helpers()}
    GUARD.watch(path, run.dir)  # a third line behind the allowlist and the OS sandbox
    exec(mark_constructs(source, path), namespace)  # the child is the sandbox; the AST passed the allowlist
    run.mark("setup")
    run.seed_everything()
    model = namespace["Model"]()
    model.eval()
    inputs = namespace["make_inputs"](int(run.job["seed"]))
    refused = lift_inputs_problem(inputs)
    if refused is not None:
        return {"status": "ok", "phase": "done", "lift": {"rejected": refused}, "times": run.times}
    run.times["setup_s"] = time.monotonic() - t0
    run.mark("run")
    run.seed_everything()
    t_run = time.monotonic()
    with torch.no_grad(), recorder, recorder.graph_breaks():
        constructs.active = True
        try:
            output = model(*inputs)
        finally:
            constructs.active = False
    run.times["run_s"] = time.monotonic() - t_run
    run.mark("lift")
    try:
        lifted = Lifter(table, spec).lift(inputs, recorder.calls, output)
    except LiftRefused as exc:
        lifted = {"rejected": str(exc)}
    return {"status": "ok", "phase": "done", "lift": lifted, "times": run.times}


def lift_inputs_problem(inputs):
    """Why make_inputs' result cannot be lifted (it must be a tuple or list of tensors), or None."""
    if not isinstance(inputs, (list, tuple)):
        return f"make_inputs returned {type(inputs).__name__}"
    for value in inputs:
        if not isinstance(value, torch.Tensor):
            return f"make_inputs returned {type(inputs).__name__} holding {type(value).__name__}"
    return None


class LiftRecorder(TorchFunctionMode):
    """Records each torch-level call the forward makes: (function, args, kwargs, result). While a
    handler runs the mode is off, so calls made inside a recorded call are not seen (nn.Linear shows
    up as one F.linear). Holding every argument and result keeps their id()s unique."""

    def __init__(self):
        super().__init__()
        self.calls = []
        self.breaking = False  # inside graph_breaks(): graph_break() and print() record GRAPH_BREAK

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.calls.append((func, args, kwargs, result))
        return result

    @contextlib.contextmanager
    def graph_breaks(self):
        """While it is entered, torch._dynamo.graph_break() and the program's print() record GRAPH_BREAK among
        the calls (eager runs nothing for them). The child's torch is restored on leaving: a persistent child
        serves other jobs."""
        import torch._dynamo
        original = torch._dynamo.graph_break
        torch._dynamo.graph_break = self.record_graph_break
        self.breaking = True
        try:
            yield
        finally:
            self.breaking = False
            torch._dynamo.graph_break = original

    def record_graph_break(self, *_args, **_kwargs):
        """The lifted program's graph_break() and print(): a GRAPH_BREAK in the forward, nothing elsewhere."""
        if self.breaking:
            self.calls.append((GRAPH_BREAK, (), {}, None))


def GRAPH_BREAK():
    """The marker LiftRecorder.graph_breaks records for torch._dynamo.graph_break()."""


# x * y reaches a TorchFunctionMode as Tensor.mul, not Tensor.__mul__: the table's operator callees
# also match these methods.
LIFT_OPERATOR_METHODS = {"__add__": "add", "__radd__": "add", "__sub__": "sub", "__mul__": "mul", "__rmul__": "mul",
                         "__truediv__": "div", "__pow__": "pow"}
# Tensor methods that take an int list as varargs: x.view(4, 8) is x.view([4, 8]).
LIFT_VARARG_METHODS = frozenset({"view", "reshape", "permute", "expand", "repeat", "tile", "flip"})


class LiftTable:
    """The job's lift table (trusted, from tcfuzz) indexed by the function object a traced call names."""

    def __init__(self, entries):
        import torch.nn.functional as F
        roots = {"torch": torch, "F": F}
        self.candidates = {}
        for entry in entries:
            for func in self.functions(entry["callee"], roots):
                bucket = self.candidates.setdefault(func, [])
                if not any(e is entry for e in bucket):
                    bucket.append(entry)

    @staticmethod
    def functions(callee, roots):
        """The function objects a callee spelling stands for: torch.X also as the method x.X(...)."""
        parts = callee.split(".")
        obj = roots.get(parts[0])
        for part in parts[1:]:
            obj = getattr(obj, part, None)
        if obj is None:
            return []
        found = [obj]
        if len(parts) == 2 and parts[0] == "torch" and hasattr(torch.Tensor, parts[1]):
            found.append(getattr(torch.Tensor, parts[1]))
        if parts[:2] == ["torch", "Tensor"] and parts[-1] in LIFT_OPERATOR_METHODS:
            found.append(getattr(torch.Tensor, LIFT_OPERATOR_METHODS[parts[-1]]))
        unique = []
        for f in found:
            if not any(f is u for u in unique):
                unique.append(f)
        return unique

    def lookup(self, func):
        try:
            return self.candidates.get(func, ())
        except TypeError:  # an unhashable callable
            return ()


_NO_DEFAULT = object()
_NO_MATCH = object()
_SIGNATURES = {}


def call_signature(func):
    """(positional parameter names, None where overloads disagree; defaults by name) of a traced function:
    from inspect.signature for Python functions, else from the aten schemas of its name (a default
    counts only where every overload that has the parameter agrees on it)."""
    try:
        return _SIGNATURES[func]
    except (KeyError, TypeError):
        pass
    import inspect
    try:
        sig = inspect.signature(func)
    except (TypeError, ValueError):
        sig = None
    if sig is not None:
        names = [p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        defaults = {p.name: p.default for p in sig.parameters.values() if p.default is not p.empty}
        info = (names, defaults)
    else:
        name = getattr(func, "__name__", "") or ""
        try:
            # Named-tensor (Dimname) overloads, gone in torch 2.15, would give older torches other
            # positional names and defaults: skipped, so a lift reads the same on every release.
            schemas = [s for s in torch._C._jit_get_schemas_for_operator("aten::" + name)
                       if not re.search(r"(?i)dimname|named?s?(_|$)", s.overload_name)] if name.isidentifier() else []
        except RuntimeError:
            schemas = []
        positional, seen = {}, {}
        for schema in schemas:
            index = 0
            for arg in schema.arguments:
                if arg.is_out:
                    continue
                if not arg.kwarg_only:
                    positional.setdefault(index, set()).add(arg.name)
                    index += 1
                seen.setdefault(arg.name, []).append(arg.default_value if arg.has_default_value() else _NO_DEFAULT)
        names = [next(iter(s)) if len(s) == 1 else None for _, s in sorted(positional.items())]
        defaults = {n: vs[0] for n, vs in seen.items()
                    if vs[0] is not _NO_DEFAULT and all(v is not _NO_DEFAULT and _lift_same(v, vs[0]) for v in vs)}
        info = (names, defaults)
    try:
        _SIGNATURES[func] = info
    except TypeError:
        pass
    return info


def _is_int(value):
    return isinstance(value, int) and not isinstance(value, bool)


def _lift_same(a, b):
    """Equal as call arguments: bools only equal bools, sequences compare as lists, tensors never."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return False
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_lift_same(x, y) for x, y in zip(a, b))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001  (an object with an odd __eq__)
        return False


def _lift_ignorable(name, value, defaults):
    """A call argument the entry does not name may be left unmatched when it changes nothing."""
    if value is None:
        return True
    return name is not None and name in defaults and _lift_same(value, defaults[name])


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def lift_attr_value(value, slot):
    """A call's argument as the JSON attribute value of an attr slot, or _NO_MATCH when it does not fit."""
    import math
    if "choices_index" in slot:
        choices = slot["choices_index"]
        return choices.index(value) if isinstance(value, str) and value in choices else _NO_MATCH
    kind = slot.get("kind")
    if kind == "int":
        return int(value) if _is_int(value) else _NO_MATCH
    if kind == "int_list":
        if _is_int(value):
            return [int(value)]
        if isinstance(value, (list, tuple)) and all(_is_int(v) for v in value):
            return [int(v) for v in value]
        return _NO_MATCH
    if kind == "float":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return value if ok else _NO_MATCH
    if kind == "bool":
        return value if isinstance(value, bool) else _NO_MATCH
    if kind == "dtype":
        if not isinstance(value, torch.dtype):
            return _NO_MATCH
        value = _dtype_name(value)
    elif kind == "choice":
        if not isinstance(value, str):
            return _NO_MATCH
    else:
        return _NO_MATCH
    choices = slot.get("choices")
    return value if not choices or value in choices else _NO_MATCH


def lift_bind(entry, func, args, kwargs):
    """Matches one traced call against one lift entry: (tensors by input index or "*", attrs, complete),
    or None. Positional arguments fill the entry's args in order (further ones, and keywords, go by
    parameter name); an argument the entry does not name must be None or the parameter's default;
    literals must be equal. An attribute the call leaves out takes the parameter's known default, or
    stays out of attrs, and then the binding is not complete."""
    positional, keyword = entry["args"], entry["kwargs"]
    names, defaults = call_signature(func)
    args = list(args)
    n = len(positional)
    if (n and len(args) > n and getattr(func, "__name__", "") in LIFT_VARARG_METHODS
            and positional[-1].get("kind") == "int_list" and all(_is_int(a) for a in args[n - 1:])):
        args = args[:n - 1] + [list(args[n - 1:])]
    values, params = {}, {}
    for i, value in enumerate(args):
        param = names[i] if names and i < len(names) else None
        if i < n:
            key = ("arg", i)
        elif param in keyword:
            key = ("kw", param)
        elif _lift_ignorable(param, value, defaults):
            continue
        else:
            return None
        if key in values:
            return None
        values[key] = value
        if param:
            params[key] = param
    attr_positions = {slot["attr"]: i for i, slot in enumerate(positional) if "attr" in slot}
    for name, value in kwargs.items():
        if name in keyword:
            key = ("kw", name)
        elif name in attr_positions:
            key = ("arg", attr_positions[name])
        elif _lift_ignorable(name, value, defaults):
            continue
        else:
            return None
        if key in values:
            return None
        values[key] = value
        params[key] = name
    tensors, attrs, complete = {}, {}, True
    slots = [(("arg", i), slot) for i, slot in enumerate(positional)] + [(("kw", k), s) for k, s in keyword.items()]
    for key, slot in slots:
        value = values.get(key)
        param = params.get(key) or (key[1] if key[0] == "kw" else (names[key[1]] if names and key[1] < len(names)
                                                                    else None))
        if "input" in slot:
            if not isinstance(value, torch.Tensor):
                return None
            tensors[slot["input"]] = value
        elif "inputs" in slot:
            if not isinstance(value, (list, tuple)) or not value or not all(isinstance(t, torch.Tensor) for t in value):
                return None
            tensors["*"] = list(value)
        elif "literal" in slot:
            if key not in values:
                value = defaults.get(param, _NO_DEFAULT) if param else _NO_DEFAULT
            if not _lift_same(value, slot["literal"]):
                return None
        else:
            if value is None:
                value = defaults.get(param or slot["attr"])
            if value is None:
                complete = complete and bool(slot.get("optional"))
                continue
            converted = lift_attr_value(value, slot)
            if converted is _NO_MATCH:
                return None
            attrs[slot["attr"]] = converted
    first = tensors.get(0) if 0 in tensors else (tensors.get("*") or [None])[0]
    rank = entry.get("rank")
    if first is None or (rank and not rank[0] <= first.dim() <= rank[1]):
        return None
    return tensors, attrs, complete


def function_name(func):
    """A readable name of a traced function: torch.Tensor.__getitem__, torch.einsum, F.conv2d, ..."""
    import torch.nn.functional as F
    name = getattr(func, "__name__", None)
    owner = getattr(func, "__self__", None)
    if name == "__get__" and getattr(owner, "__name__", None):  # a Tensor property (x.T, x.shape)
        return f"torch.Tensor.{owner.__name__}.__get__"
    if name:
        for prefix, space in (("torch.Tensor.", torch.Tensor), ("torch.", torch), ("F.", F),
                              ("torch.linalg.", torch.linalg), ("torch.special.", torch.special)):
            if space.__dict__.get(name) is func or (space is torch.Tensor and getattr(space, name, None) is func):
                return prefix + name
    module = getattr(func, "__module__", None)
    qualified = getattr(func, "__qualname__", None) or name or type(func).__name__
    return f"{module}.{qualified}" if module else qualified


def _result_tensors(result):
    """The tensors a call returned, output 0 first: a tensor, or a tuple or list of tensors (split, a
    namedtuple such as torch.max's); [] for anything else."""
    if isinstance(result, torch.Tensor):
        return [result]
    if isinstance(result, (list, tuple)) and result and all(isinstance(t, torch.Tensor) for t in result):
        return list(result)
    return []


# Writes through a view become the catalog's inplace-view ops (generators/ops/InplaceViews.cpp): the view
# kinds the lift maps (a method call, not a subscript), with their attributes in the composite's form,
# and the write methods that take a tensor operand.
VIEW_WRITE_KINDS = ("narrow", "select", "diagonal")
VIEW_WRITE_METHODS = ("add_", "mul_", "copy_", "fill_")


def _view_write_attrs(kind, attrs, rank):
    """A view node's attributes as its inplace-view composite takes them (dims non-negative), or None
    where the composite cannot say it (a diagonal off the main one)."""
    wrap = lambda d: d + rank if d < 0 else d
    if kind == "narrow":
        start, length = attrs["start"], attrs["length"]
        return {"dim": wrap(attrs["dim"]), "start": start, "end": start + length, "length": length}
    if kind == "select":
        dim = wrap(attrs["dim"])
        return {"dim": dim, "index": attrs["index"]}
    if attrs.get("offset", 0) != 0:
        return None
    a, b = sorted((wrap(attrs["dim1"]), wrap(attrs["dim2"])))
    return {"dim1": a, "dim2": b}


class Lifter:
    """Turns a recorded forward into a proposal: forward inputs are x0, x1, ...; mapped calls become
    nodes v0, v1, ... (further outputs vK.1, vK.2, ...); any other tensor a node reads (a parameter,
    a buffer, an unmapped call's result) becomes an input p0, p1, ..., tracked by id()."""

    def __init__(self, table, spec):
        self.table = table
        self.dtypes = set(spec.get("dtypes") or LIFT_DTYPES)
        self.max_rank = int(spec.get("max_rank", 6))
        self.max_elements = int(spec.get("max_elements", 1 << 20))
        self.names = {}
        self.views = {}  # id(view) -> (base tensor, kind, composite attrs), for writes through it
        self.stale = set()  # ids of views written through: reading one again is refused
        self.views_of = {}  # id(base) -> ids of the views of it the lift named, stale once the base is written
        self.inputs = []
        self.nodes = []
        self.fresh = 0
        self.break_pending = False  # a graph_break() came since the last node: the next one breaks before it
        self.branches = []  # the BRANCH markers' (kind, threshold, tensors the test read), in order
        self.loops = 0  # LOOP markers: loops forward entered
        self.hops = []  # the HOP markers' kinds, in order

    def check(self, t):
        dtype = _dtype_name(t.dtype)
        if dtype not in self.dtypes:
            raise LiftRefused(f"unsupported dtype {dtype}")
        if t.dim() > self.max_rank or t.numel() > self.max_elements:
            raise LiftRefused(f"unsupported shape {list(t.shape)}")

    def add_input(self, t, name, parameter):
        self.check(t)
        self.names[id(t)] = name
        self.inputs.append({"name": name, "shape": list(t.shape), "dtype": _dtype_name(t.dtype),
                            "parameter": parameter})
        return name

    def name(self, t):
        if id(t) in self.stale:
            raise LiftRefused("a view is read after a write through it (the IR writes through a view in one node)")
        if id(t) in self.names:
            return self.names[id(t)]
        self.fresh += 1
        return self.add_input(t, f"p{self.fresh - 1}", isinstance(t, torch.nn.Parameter))

    def write_through_view(self, func, args, kwargs, outs):
        """`view.add_(y)` (add_, mul_, copy_, fill_) on a view the lift mapped: one inplace-view node that
        reads the view's base and y and stands for the base after the write. True when it took the call."""
        method = getattr(func, "__name__", "")
        if method not in VIEW_WRITE_METHODS or kwargs or len(args) != 2 or not outs:
            return False
        view, operand = args
        if not isinstance(view, torch.Tensor) or id(view) not in self.views or not isinstance(operand, torch.Tensor):
            return False
        base, kind, attrs = self.views[id(view)]
        if id(base) not in self.names or (method == "fill_" and operand.dim() != 0):
            return False
        reads = [self.name(base), self.name(operand)]
        out = f"v{len(self.nodes)}"
        self.nodes.append({"out": out, "op": f"{kind}_{method}", "args": reads, "attrs": dict(attrs)})
        self.names[id(base)] = out  # later reads of the base see the write
        self.stale.add(id(view))
        del self.views[id(view)]
        return True

    def write_in_place(self, func, args, kwargs, outs):
        """`x.add_(y)` and the other in-place methods on a tensor that is no view: the out-of-place op's
        node, which later reads of x see; views of x taken before the write are stale from then on.
        A write into any other view (its base changes too) or one without an out-of-place catalog op
        refuses the lift, since a program that ignored the write would compute something else."""
        method = getattr(func, "__name__", "")
        if not method.endswith("_") or method.startswith("_") or not args or outs[0] is not args[0]:
            return False
        target = args[0]
        if target._base is not None:
            raise LiftRefused(f"{method} writes into a view, which the lift maps only through "
                              f"{', '.join(VIEW_WRITE_KINDS)} with {', '.join(VIEW_WRITE_METHODS)}")
        found = None
        for namespace in (torch.Tensor, torch, torch.nn.functional):  # x.relu_() is torch.relu(x)
            functional = getattr(namespace, method[:-1], None)
            found = self.match(functional, args, kwargs) if functional is not None else None
            if found is not None:
                break
        if found is None:
            raise LiftRefused(f"in-place {method} has no out-of-place catalog op to stand for it")
        self.add_node(*found, outs)
        self.stale.update(self.views_of.pop(id(target), set()))
        return True

    def add_node(self, entry, tensors, attrs, outs):
        """The node of a mapped call: its reads named, its outputs named vK, vK.1, ..."""
        reads = tensors["*"] if "*" in tensors else [tensors[k] for k in sorted(tensors)]
        arg_names = [self.name(t) for t in reads]
        out = f"v{len(self.nodes)}"
        for k, t in enumerate(outs):
            self.check(t)
            self.names[id(t)] = out if k == 0 else f"{out}.{k}"
        self.nodes.append({"out": out, "op": entry["op"], "args": arg_names, "attrs": attrs})
        if self.break_pending:
            self.nodes[-1]["python"] = {"graph_break_before": True}
            self.break_pending = False
        if outs[0]._base is not None:
            self.views_of.setdefault(id(outs[0]._base), set()).add(id(outs[0]))
        if entry["op"] in VIEW_WRITE_KINDS and len(reads) == 1 and outs[0]._base is not None:
            composite = _view_write_attrs(entry["op"], attrs, reads[0].dim())
            if composite is not None:
                self.views[id(outs[0])] = (reads[0], entry["op"], composite)

    def match(self, func, args, kwargs):
        """The first candidate that binds completely, else the first that binds at all: (entry, tensors, attrs)."""
        fallback = None
        for entry in self.table.lookup(func):
            bound = lift_bind(entry, func, args, kwargs)
            if bound is None:
                continue
            tensors, attrs, complete = bound
            if complete:
                return entry, tensors, attrs
            if fallback is None:
                fallback = (entry, tensors, attrs)
        return fallback

    def lift(self, inputs, calls, output):
        for i, t in enumerate(inputs):
            self.add_input(t, f"x{i}", False)
        counted, mapped, unmapped = 0, 0, {}
        for func, args, kwargs, result in calls:
            if func is GRAPH_BREAK:
                self.break_pending = bool(self.nodes)  # a break before any node breaks nothing
                continue
            if func is BRANCH:
                self.branches.append(args)
                continue
            if func is LOOP:
                self.loops += 1
                continue
            if func is HOP:
                self.hops.append(args[0])
                continue
            outs = _result_tensors(result)
            if getattr(func, "__name__", "") == "__setitem__":
                # x[...] = v writes x (and its base): a proposal that ignored it would compute something else.
                raise LiftRefused("assignment through a subscript (x[...] = v) is not lifted")
            if not outs:
                continue  # x.shape, x.size(0): nothing a node could stand for
            counted += 1
            if self.write_through_view(func, args, kwargs, outs) or self.write_in_place(func, args, kwargs, outs):
                mapped += 1
                continue
            found = self.match(func, args, kwargs)
            if found is None:
                name = function_name(func)
                unmapped[name] = unmapped.get(name, 0) + 1
                continue
            mapped += 1
            self.add_node(*found, outs)
        outputs = []
        for leaf in pytree.tree_leaves(output):
            if isinstance(leaf, torch.Tensor):
                name = self.name(leaf)
                if name.startswith("v") and name not in outputs:
                    outputs.append(name)
        if not outputs and self.nodes:
            outputs = [self.nodes[-1]["out"]]
        dropped = place_constructs(self.nodes, outputs, self.names, self.branches, self.loops, self.hops)
        return {"proposal": {"inputs": self.inputs, "nodes": self.nodes, "outputs": outputs},
                "calls": counted, "mapped": mapped, "unmapped": unmapped,
                "constructs": {"branches": len(self.branches), "loops": self.loops, "hops": self.hops,
                               "not_placed": dropped}}
