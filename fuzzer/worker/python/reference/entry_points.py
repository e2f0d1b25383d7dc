# ---- The compiled run's entry points through torch.export (CompileConfig::entry; docs/oracle.md, "Entry
# points"). One file, two users: the worker child imports it (fuzzer/worker/python/reference/entry_points.py) and
# repro.py carries it at TCFUZZ_ENTRY_POINTS_BLOCK. Each entry gives a callable with forward's signature that runs
# on the model's own parameters and buffers; what it writes while it builds (a saved program, an AOTInductor
# package) lives in the given directory and is removed once loaded.
import os  # noqa: E402  (repro.py has imported these already; the worker has not)

import torch  # noqa: E402

EXPORT_ENTRIES = ("export", "export+decompose", "export+saveload", "aoti")
SAVED_PROGRAM = "exported_program.pt2"  # export+saveload's round trip, in the given directory
AOTI_PACKAGE = "aoti_package.pt2"  # aoti's package, in the given directory


def exports(cfg):
    """Whether the job's compile configuration `cfg` goes through torch.export (CompileConfig::exports)."""
    return cfg.get("entry", "compile") in EXPORT_ENTRIES


def model_tensors(model):
    """The model's parameters and buffers by their qualified names (shared ones under every name)."""
    named = dict(model.named_parameters(remove_duplicate=False))
    named.update(model.named_buffers(remove_duplicate=False))
    return named


class SharedState:
    """An exported module run on the model's parameters and buffers. A module that holds other tensors under
    the same names (a loaded program's copies) gets the model's values before each call, and the model gets
    the module's after it: forward's writes into a buffer land in the model, as in eager."""

    def __init__(self, model, module):
        self.module = module
        own = model_tensors(model)
        self.pairs = [(own[name], t) for name, t in model_tensors(module).items() if name in own and t is not own[name]]

    def __call__(self, *args):
        with torch.no_grad():
            for original, held in self.pairs:
                held.copy_(original)
        out = self.module(*args)
        with torch.no_grad():
            for original, held in self.pairs:
                original.copy_(held)
        return out


class AotiModel:
    """A loaded AOTInductor package run on the model's parameters and buffers: before each call the package's
    constants point at the model's own tensors (load_constants with user_managed=True), so its writes into a
    buffer land in the model and a restored model is what the next call reads. An argument traced contiguous
    (`contiguous[i]`) that comes strided (call 4 narrows its inputs) is passed as a contiguous copy, and what the
    package writes into it is copied back: the package is built for its example's layout."""

    def __init__(self, model, runner, contiguous):
        self.model, self.runner, self.contiguous = model, runner, contiguous
        self.fqns = runner.get_constant_fqns()

    def __call__(self, *args):
        copied = [(a, a.contiguous()) if traced and isinstance(a, torch.Tensor) and not a.is_contiguous() else (a, a)
                  for a, traced in zip(args, self.contiguous)]
        out = self.run(*[c for _, c in copied])
        with torch.no_grad():
            for original, passed in copied:
                if passed is not original:
                    original.copy_(passed)
        return out

    def run(self, *args):
        own = model_tensors(self.model)
        constants = {name: own[name] for name in self.fqns if name in own}
        if constants:
            self.runner.load_constants(constants, check_full_update=False, user_managed=True)
        return self.runner(*args)


def removing(path):
    """Removes `path` if it is there (a package once loaded, or one a failed build left)."""
    if os.path.exists(path):
        os.remove(path)


def export_ranges(args):
    """torch.export's dynamic_shapes for `args` under dynamic=True: every dim of size n >= 2 of a tensor argument as
    Dim.AUTO within [2, n + 1] (call 4's sizes, n - 1 or 3 from 2, lie inside or on an edge); None for the rest."""
    return tuple({d: torch.export.Dim.AUTO(min=2, max=n + 1) for d, n in enumerate(a.shape) if n >= 2}
                 if isinstance(a, torch.Tensor) else None for a in args)


def graph_ops(program):
    """{ATen op name: count} of an ExportedProgram's graph: what the entry captured (the campaign's features)."""
    ops = {}
    for node in program.graph.nodes:
        if node.op == "call_function":
            name = str(getattr(node.target, "__name__", node.target))
            ops[name] = ops.get(name, 0) + 1
    return ops


def exported_model(model, example_args, cfg, work_dir):
    """The callable `cfg["entry"]` makes of `model`, traced on `example_args` (fresh copies: a trace never
    writes them), with `graph_ops` set to the ops of the program it runs (graph_ops). What torch.export or
    AOTInductor raises is raised here."""
    fn, program = _exported_model(model, example_args, cfg, work_dir)
    fn.graph_ops = graph_ops(program)
    return fn


def _exported_model(model, example_args, cfg, work_dir):
    """exported_model's callable and the ExportedProgram it runs (for "aoti": the one it packaged)."""
    entry = cfg.get("entry")
    if entry not in EXPORT_ENTRIES:
        raise ValueError(f"unknown entry point {entry!r}; the export entries are {', '.join(EXPORT_ENTRIES)}")
    ranges = export_ranges(example_args) if cfg.get("dynamic") is True else None
    program = torch.export.export(model, tuple(example_args), strict=bool(cfg.get("export_strict", False)),
                                  dynamic_shapes=ranges)
    if entry == "export":
        return SharedState(model, program.module()), program
    if entry == "export+decompose":
        decomposed = program.run_decompositions()
        return SharedState(model, decomposed.module()), decomposed
    if entry == "export+saveload":
        path = os.path.join(work_dir, SAVED_PROGRAM)
        try:
            torch.export.save(program, path)
            loaded = torch.export.load(path)
        finally:
            removing(path)
        return SharedState(model, loaded.module()), loaded
    # AOTInductor checks its inputs' sizes and strides against what it was built for only under this variable;
    # without it a size or layout outside them is read wrong silently, which its contract leaves undefined.
    os.environ["AOTI_RUNTIME_CHECK_INPUTS"] = "1"
    path = os.path.join(work_dir, AOTI_PACKAGE)
    try:
        torch._inductor.aoti_compile_and_package(program, package_path=path)
        runner = torch._inductor.aoti_load_package(path)
    finally:
        removing(path)
    return AotiModel(model, runner, [isinstance(a, torch.Tensor) and a.is_contiguous() for a in example_args]), program
