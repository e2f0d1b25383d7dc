"""What a compiled job reports about its compilation: Dynamo's and Inductor's counters and metrics, and
what Inductor did (compile_facts, with the hooks of install_compile_hooks), and the compile time split by
phase (compile_phases), and the program line of the FX node a failure was raised at (failing_node_stack_trace).
Imported by child.py before any fork; nothing here runs a torch op or patches
torch at import time. Per-process figures: a persistent child clears them between jobs
(persistent.reset_compiler_state)."""

import collections
import functools
import re

import torch  # noqa: F401  (the torch under test; its submodules are imported lazily)


def compile_facts():
    """Graphs, graph breaks and their reasons, and the Inductor and AOTAutograd counters of this process.
    What this torch does not record is an empty figure, named in "notes" (absent when nothing is missing)."""
    notes = []
    try:
        from torch._dynamo.utils import counters
    except ImportError:
        counters = {}
        notes.append("this torch has no torch._dynamo.utils.counters: no graph, break or counter figures")
    stats = counters.get("stats", {})
    breaks = dict(counters.get("graph_break", {}))
    facts = {
        "graph_count": int(stats.get("unique_graphs", 0)),
        "graph_breaks": int(sum(breaks.values())),
        "break_reasons": {str(k)[:300]: int(v) for k, v in list(breaks.items())[:20]},
        # torch's own Inductor counters; the hooks' "tcfuzz:" keys there are hook_facts' figures
        "inductor_counters": {k: v for k, v in _numeric(counters.get("inductor", {})).items()
                              if not k.startswith(HOOK_KEY)},
        "inductor_metrics": inductor_metrics(),
        "aot_autograd_counters": _numeric(counters.get("aot_autograd", {})),
    }
    facts.update(hook_facts(counters, notes))
    facts["dynamo_counters"] = dynamo_counters(counters)
    if _metrics_module() is None:
        notes.append("this torch has no torch._inductor.metrics: no Inductor metrics")
    if notes:
        facts["notes"] = notes
    return facts


def _numeric(mapping):
    return {str(k): v for k, v in mapping.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


# The numeric module globals of torch._inductor.metrics (torch 2.11 and 2.15 have all of these; torch 2.4
# lacks the last five, and other releases may lack some: those are skipped). They count this job only: a
# fresh child is a new fork, and a persistent one resets them between jobs.
INDUCTOR_METRICS = (
    "generated_kernel_count", "generated_cpp_vec_kernel_count", "ir_nodes_pre_fusion", "num_bytes_accessed",
    "cpp_to_dtype_count", "num_comprehensive_padding", "num_matches_for_scatter_upon_const_tensor",
    "num_loop_reordering", "parallel_reduction_count", "codegen_mix_order_reduction", "num_auto_chunking",
)


def _metrics_module():
    """torch._inductor.metrics, or None on a torch without it."""
    try:
        import torch._inductor.metrics as metrics
    except ImportError:
        return None
    return metrics


def inductor_metrics():
    """The INDUCTOR_METRICS this torch has, by name ({} when it has no torch._inductor.metrics)."""
    metrics = _metrics_module()
    if metrics is None:
        return {}
    return _numeric({name: getattr(metrics, name, None) for name in INDUCTOR_METRICS})


# Where torch records per-phase compile times (torch._dynamo.utils.compilation_time_metrics, filled by
# dynamo_timed); the names are torch's. Phases nest, so compile_phases turns them into exclusive parts.
# The backend's share is the forward's call_user_compiler plus AOTAutograd's lazy backward compile (a timer
# torch 2.11 and 2.15 have, 2.4 does not), both inside the compile callbacks that make `compile_seconds`.
PHASE_METRICS = {
    "backend": "OutputGraph.call_user_compiler",
    "lazy_backward": "backward._backward_impl",
    "inductor": "compile_fx_inner",
    "lowering": "GraphLowering.run",
    "scheduling": "Scheduler.__init__",
    "cxx_compile": "compile_file",
}


def compile_phases(compile_seconds):
    """This process's compile time split into exclusive phases that sum to `compile_seconds`:
    dynamo (tracing, guards, bytecode), aot_autograd (AOTAutograd and the backend wrapper), lowering,
    scheduling, cxx_compile (the C++ compiler), codegen_load (Inductor's Python codegen and loading the
    module), each in seconds. Backends that are not Inductor report dynamo and aot_autograd only; a torch
    without compilation_time_metrics reports {}, and a phase whose timer this torch lacks counts 0 (its
    time stays in the enclosing phase). Torch 2.4 fires no compile callback (and has no timer) for the lazy
    backward compile: `compile_seconds` leaves it out while compile_fx_inner holds it, so after a backward
    aot_autograd reads 0 there."""
    try:
        from torch._dynamo.utils import compilation_time_metrics as metrics
    except ImportError:
        return {}
    if not hasattr(metrics, "get"):
        return {}

    def total(name):
        try:
            return float(sum(metrics.get(name, ()) or ()))
        except (TypeError, ValueError):  # a torch that records something other than a list of seconds
            return 0.0

    backend = min(total(PHASE_METRICS["backend"]) + total(PHASE_METRICS["lazy_backward"]), compile_seconds)
    inductor = min(total(PHASE_METRICS["inductor"]), backend)
    lowering = min(total(PHASE_METRICS["lowering"]), inductor)
    scheduling = min(total(PHASE_METRICS["scheduling"]), inductor - lowering)
    cxx = min(total(PHASE_METRICS["cxx_compile"]), inductor - lowering - scheduling)
    return {
        "dynamo": max(0.0, compile_seconds - backend),
        "aot_autograd": max(0.0, backend - inductor),
        "lowering": lowering,
        "scheduling": scheduling,
        "cxx_compile": cxx,
        "codegen_load": max(0.0, inductor - lowering - scheduling - cxx),
    }


# -- What Inductor did: hooks installed in the compiled job's process --------------------------------------
# install_compile_hooks wraps a few Inductor and Dynamo functions (each wrapper calls the original and
# changes nothing it returns or raises) and counts what they saw in torch's counters["inductor"] under keys
# "tcfuzz:<figure>:<name>". That table, not one of ours: torch's FX graph cache stores the job's
# counters["inductor"] delta with each entry and adds it back on a hit (torch 2.11 and 2.15), so a cache hit
# reports the figures of the compile that filled the entry; persistent.reset_compiler_state clears it with the
# other counters between jobs. What is counted before Inductor's compile (joint-graph patterns, recompiles)
# is not replayed on a hit. Figures, by the name compile_facts reports them under:
#   post_grad_ops   "aten.mm.default:float32": the nodes of the post-grad FX graph Inductor lowers (GraphLowering.run),
#                   by op and output dtype(s)
#   lowerings       "aten.relu.default": ops Inductor lowered with its own lowering (GraphLowering.call_function)
#   fallbacks       "aten.cumsum.default": ops whose lowering made a FallbackKernel (the eager ATen kernel)
#   patterns        pattern-matcher replacements applied, by pattern (pattern_name, handler or pattern class:op)
#   fusions         "pointwise+reduction": the fused groups the Scheduler made, by the kinds of their members
#   kernel_kinds    "pointwise", "reduction", "template", "extern", "foreach", "nop", ...: the Scheduler's final nodes
#   extern_kernels  "extern_kernels.mm": the kernels of its extern nodes
#   recompile_reasons  Dynamo's first guard failure per recompilation, digits as N (recompiles: their count)
HOOK_KEY = "tcfuzz:"
HOOK_FIGURES = ("post_grad_ops", "lowerings", "fallbacks", "patterns", "fusions", "kernel_kinds", "extern_kernels",
                "recompile_reasons")
FIGURE_CAP = 200     # entries per figure (the most counted are kept)
NAME_CHARS = 100     # characters of a name
_HOOKS = {"installed": False, "missing": []}  # this process's hooks; "missing": why a figure is absent


def _count(figure, name, n=1):
    try:
        from torch._dynamo.utils import counters
        counters["inductor"][f"{HOOK_KEY}{figure}:{str(name)[:NAME_CHARS]}"] += n
    except Exception:  # noqa: BLE001  (a figure is never worth failing the compile)
        pass


def _op_name(target):
    """"aten.mm.default" for an OpOverload, the function's name for anything else."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", None) or type(target).__name__


def _dtypes(value):
    """The dtype(s) of a node's meta["val"]: "float32", "float32,int64" (tuples), "sym" or "-"."""
    if isinstance(value, torch.Tensor):
        return str(value.dtype).replace("torch.", "")
    if isinstance(value, (list, tuple)):
        return ",".join(_dtypes(v) for v in value[:4]) or "-"
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool, int, float, bool)):
        return "sym"
    return "-"


def _record_post_grad_ops(lowering):
    module = getattr(lowering, "module", None)
    graph = getattr(module, "graph", None)
    if graph is None:
        return
    import operator
    for node in graph.nodes:
        if node.op == "call_function" and node.target is not operator.getitem:
            _count("post_grad_ops", f"{_op_name(node.target)}:{_dtypes(node.meta.get('val'))}")


def _operations(lowering):
    """The list GraphLowering appends each new operation to (torch 2.4: buffers), or None."""
    ops = getattr(lowering, "operations", None)
    if not isinstance(ops, list):
        ops = getattr(lowering, "buffers", None)
    return ops if isinstance(ops, list) else None


def _record_lowering(target, new_operations, fallback_kernel):
    """A fallback when lowering `target` made a FallbackKernel (an eager ATen kernel called from the
    generated code), else a lowering: Inductor's own IR, or an extern kernel its lowering chose (mm)."""
    import operator
    if target is operator.getitem or hasattr(target, "_inductor_lowering_function"):
        return  # plumbing, and the pattern-matcher passthroughs (counted as patterns)
    fell_back = any(isinstance(op, fallback_kernel) for op in new_operations)
    _count("fallbacks" if fell_back else "lowerings", _op_name(target))


# Scheduler node classes whose kind their class says (torch 2.15 names; a torch without one never makes it).
NODE_KINDS = {
    "ExternKernelSchedulerNode": "extern", "NopKernelSchedulerNode": "nop", "ForeachKernelSchedulerNode": "foreach",
    "GroupedSchedulerNode": "grouped", "FusedMixOrderReductions": "mix_order_reduction",
    "FusedStagedReduction": "staged_reduction", "FusedExternTritonKernelSchedulerNode": "extern_fused",
}


def _node_kind(node):
    kind = NODE_KINDS.get(type(node).__name__)
    if kind:
        return kind
    for kind, test in (("template", "is_template"), ("extern", "is_extern"), ("reduction", "is_reduction")):
        fn = getattr(node, test, None)
        if fn is not None and fn():
            return kind
    return "pointwise"


def _record_schedule(scheduler):
    for node in getattr(scheduler, "nodes", None) or ():
        kind = _node_kind(node)
        _count("kernel_kinds", kind)
        if kind == "extern":
            ir_node = getattr(node, "node", None)
            _count("extern_kernels", getattr(ir_node, "python_kernel_name", None) or type(ir_node).__name__)
        members = node.get_nodes() if hasattr(node, "get_nodes") else [node]
        if len(members) > 1:
            _count("fusions", "+".join(sorted({_node_kind(m) for m in members})))


def _pattern_name(entry, node):
    name = getattr(entry, "pattern_name", None)
    if not name:
        handler = getattr(entry, "handler", None)
        handler = getattr(handler, "func", handler)  # a functools.partial: its function
        name = getattr(handler, "__name__", None)
    if not name:
        name = f"{type(getattr(entry, 'pattern', None)).__name__}:{_op_name(getattr(node, 'target', None))}"
    return name


_DIGITS = re.compile(r"\d+")
_COMPILE_ID = re.compile(r"^\[?\d+/\d+\]?:?\s*")  # "0/0: " before a guard failure


# This process's latest recompiles, oldest first: each one's first guard failure as Dynamo wrote it.
_RECOMPILES = collections.deque(maxlen=100)
_RECOMPILE_TOTAL = [0]


def _record_recompile(reasons):
    first = str(reasons[0]).strip().splitlines()[0] if reasons else "unknown"
    _count("recompile_reasons", _DIGITS.sub("N", _COMPILE_ID.sub("", first)))
    _RECOMPILES.append(" ".join(_COMPILE_ID.sub("", first).split())[:NAME_CHARS * 5])
    _RECOMPILE_TOTAL[0] += 1


def recompiles_seen():
    """How many recompiles this process's hook has seen: a mark for recompiles_since."""
    return _RECOMPILE_TOTAL[0]


def recompiles_since(mark):
    """The first guard failure of each recompile since `mark` (recompiles_seen), oldest first (the latest 100)."""
    n = min(_RECOMPILE_TOTAL[0] - mark, len(_RECOMPILES))
    return list(_RECOMPILES)[-n:] if n > 0 else []


def _wrap(owner, attr, make):
    """Replaces owner.attr with make(original), marked so that it is never wrapped twice."""
    original = vars(owner).get(attr) or getattr(owner, attr)
    if getattr(original, "_tcfuzz_hook", False):
        return
    wrapper = functools.wraps(original)(make(original))
    wrapper._tcfuzz_hook = True
    setattr(owner, attr, wrapper)


def _quiet(record):
    """`record` that never raises: a figure it misses is not worth failing the compile."""
    def call(*args):
        try:
            record(*args)
        except Exception:  # noqa: BLE001
            pass
    return call


def _hook_graph_lowering():
    from torch._inductor.graph import GraphLowering
    from torch._inductor.ir import FallbackKernel
    record_ops, record_lowering = _quiet(_record_post_grad_ops), _quiet(_record_lowering)

    def make_run(original):
        def run(self, *args, **kwargs):
            record_ops(self)
            return original(self, *args, **kwargs)
        return run

    def make_call_function(original):
        def call_function(self, target, args, kwargs):
            ops = _operations(self)
            before = len(ops) if ops is not None else 0
            out = original(self, target, args, kwargs)
            record_lowering(target, ops[before:] if ops is not None else (), FallbackKernel)
            return out
        return call_function

    _wrap(GraphLowering, "call_function", make_call_function)
    _wrap(GraphLowering, "run", make_run)


def _hook_scheduler():
    from torch._inductor.scheduler import Scheduler
    record = _quiet(_record_schedule)

    def make_init(original):
        def __init__(self, *args, **kwargs):
            original(self, *args, **kwargs)
            record(self)
        return __init__

    _wrap(Scheduler, "__init__", make_init)


def _hook_patterns():
    from torch._inductor.pattern_matcher import PatternEntry
    record = _quiet(lambda entry, node: _count("patterns", _pattern_name(entry, node)))

    def make_apply(original):
        def apply(self, match, graph, node):
            out = original(self, match, graph, node)
            record(self, node)
            return out
        return apply

    hooked, unvisited = [], list(PatternEntry.__subclasses__())  # every subclass, at any depth
    while unvisited:
        cls = unvisited.pop()
        if "apply" in cls.__dict__:
            hooked.append(cls)
        unvisited.extend(cls.__subclasses__())
    if not hooked:
        raise AttributeError("no PatternEntry subclass defines apply")
    for cls in hooked:
        _wrap(cls, "apply", make_apply)


def _hook_recompiles():
    import torch._dynamo.convert_frame as convert_frame
    if not hasattr(convert_frame, "get_and_maybe_log_recompilation_reasons"):
        raise AttributeError("torch._dynamo.convert_frame has no get_and_maybe_log_recompilation_reasons")
    record = _quiet(_record_recompile)

    def make(original):
        def get_and_maybe_log_recompilation_reasons(*args, **kwargs):
            reasons = original(*args, **kwargs)
            if not kwargs.get("skip_logging"):  # the second, silent call (inline_inbuilt_nn_modules=False) is no recompile
                record(reasons)
            return reasons
        return get_and_maybe_log_recompilation_reasons

    _wrap(convert_frame, "get_and_maybe_log_recompilation_reasons", make)


HOOKS = (
    (_hook_graph_lowering, "post_grad_ops, lowerings and fallbacks"),
    (_hook_scheduler, "fusions, kernel_kinds and extern_kernels"),
    (_hook_patterns, "patterns"),
    (_hook_recompiles, "recompiles and recompile_reasons"),
)


def install_compile_hooks():
    """Installs the hooks (once per process; a persistent child keeps them): call it in the compiled job's
    process before its first compile, never in the zygote. A hook this torch cannot take is left out and
    named in compile_facts' notes."""
    if _HOOKS["installed"]:
        return
    _HOOKS["installed"] = True
    for hook, figures in HOOKS:
        try:
            hook()
        except Exception as exc:  # noqa: BLE001  (an older or newer torch: that figure is absent)
            _HOOKS["missing"].append(f"no {figures}: {hook.__name__[1:]} failed: {type(exc).__name__}: {exc}"[:300])


def hook_facts(counters, notes):
    """The HOOK_FIGURES of counters["inductor"] as {figure: {name: count}} (at most FIGURE_CAP names each, the
    most counted), plus "recompiles"; appends to `notes` why figures are absent."""
    figures = {figure: {} for figure in HOOK_FIGURES}
    for key, n in counters.get("inductor", {}).items():
        if isinstance(key, str) and key.startswith(HOOK_KEY):
            figure, _, name = key[len(HOOK_KEY):].partition(":")
            if figure in figures:
                figures[figure][name] = int(n)
    for figure, names in figures.items():
        if len(names) > FIGURE_CAP:
            notes.append(f"{figure}: {len(names)} names, the {FIGURE_CAP} most counted kept")
            kept = sorted(names.items(), key=lambda kv: (-kv[1], kv[0]))[:FIGURE_CAP]
            figures[figure] = dict(sorted(kept))
    figures["recompiles"] = sum(figures["recompile_reasons"].values())
    if not _HOOKS["installed"]:
        notes.append("compile hooks not installed in this process: no post-grad, lowering, pattern, fusion, kernel "
                     "or recompile figures")
    notes.extend(_HOOKS["missing"])
    return figures


def dynamo_counters(counters):
    """Dynamo's frame counters: "frames.total", "frames.ok" (frames it was asked to compile, and compiled),
    "resumes" (resume functions after graph breaks), "calls_captured"; what this torch lacks is absent."""
    out = {f"frames.{k}": v for k, v in _numeric(counters.get("frames", {})).items()}
    resumes = _numeric(counters.get("resumes", {}))
    if resumes:
        out["resumes"] = sum(resumes.values())
    captured = counters.get("stats", {}).get("calls_captured")
    if isinstance(captured, (int, float)):
        out["calls_captured"] = captured
    return out


def failing_node_stack_trace(exc):
    """The user frames of the FX node torch was working on when `exc` was raised (the node's stack_trace): the
    innermost node a frame of its traceback, or of what it wraps, holds in a local (a lowering's, a pattern's, a
    pass's). "" when none does. It names the program line whose op failed inside torch's passes, which the
    traceback does not (a batched compile's failing member)."""
    from torch.fx import Node

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        frames, tb = [], exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame)
            tb = tb.tb_next
        for frame in reversed(frames):
            for value in list(frame.f_locals.values()):
                if isinstance(value, Node) and value.meta.get("stack_trace"):
                    return str(value.meta["stack_trace"])
        exc = exc.__cause__ or exc.__context__
    return ""
