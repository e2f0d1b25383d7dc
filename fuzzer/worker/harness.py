"""tcfuzz worker harness: a zygote that imports torch once and forks one child per job.

Runs inside the worker sandbox (see fuzzer/worker/Sandbox.cpp). Talks JSON lines:
  stdin  <- {"type": "job", ...}            one job per line (see fuzzer/worker/Protocol.h)
  stdout -> {"type": "hello", ...}          once, after torch is imported
  stdout -> {"type": "result", ...}         one per job, in order
The zygote runs no torch op before forking (libgomp's thread pool and CUDA do not survive a fork).
Each child gets its own session (process group), an address-space limit, and a deadline; when it
dies, the zygote turns the death into a result. A child never writes to the protocol pipe.
"""

import json
import os
import resource
import select
import signal
import sys
import time
import traceback

# The protocol channel is a private dup of the original stdout: a stray print() in the zygote
# (or in a torch import side effect) goes to stderr instead of corrupting the protocol.
_PROTOCOL_OUT = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(2, 1)

# One compile thread per worker: no Inductor compile pool is ever started, here or in a child.
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
_t_import = time.monotonic()
import torch  # noqa: E402  (imported once here, inherited by every child)
import torch._dynamo  # noqa: E402,F401
import torch._inductor.config  # noqa: E402,F401

torch._inductor.config.compile_threads = 1
# The modules torch.compile imports lazily on first use: imported here, they cost nothing per job.
# These are module imports only; no torch op runs before the fork.
import torch._inductor.compile_fx  # noqa: E402,F401
import torch._functorch.aot_autograd  # noqa: E402,F401
import torch._dynamo.backends.common  # noqa: E402,F401
import torch.utils._pytree as pytree  # noqa: E402
from torch.overrides import TorchFunctionMode  # noqa: E402

IMPORT_SECONDS = time.monotonic() - _t_import

PHASE_FILE = "phase"
RESULT_FILE = "result.json"
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
SCRIPT_STDOUT_FILE = "script_stdout.txt"
SCRIPT_STDERR_FILE = "script_stderr.txt"
SCRIPT_TAIL_CHARS = 8000
OOM_MARKERS = ("can't allocate memory", "out of memory", "DefaultCPUAllocator", "std::bad_alloc")


def send(msg):
    _PROTOCOL_OUT.write(json.dumps(msg, default=str) + "\n")
    _PROTOCOL_OUT.flush()


# ----------------------------------------------------------------------------------------------
# Child side: everything below runs in the forked child only.
# ----------------------------------------------------------------------------------------------

class ChildRun:
    """One job executed in a forked child. Writes result.json into the job directory."""

    def __init__(self, job):
        self.job = job
        self.dir = job["job_dir"]
        self.phase = "start"
        self.backward_note = ""
        self.times = {}
        self.compile_seconds = 0.0
        self._compile_started = None

    def mark(self, phase):
        """Records the phase on disk first, so a death in this phase is attributed to it."""
        self.phase = phase
        with open(os.path.join(self.dir, PHASE_FILE), "w") as f:
            f.write(phase)

    def write_result(self, result):
        tmp = os.path.join(self.dir, RESULT_FILE + ".tmp")
        with open(tmp, "w") as f:
            json.dump(result, f, default=str)
        os.replace(tmp, os.path.join(self.dir, RESULT_FILE))

    # -- program loading --------------------------------------------------------------------
    def load_program(self):
        path = self.job["program"]
        with open(path) as f:
            source = f.read()
        namespace = {"__name__": "tcfuzz_program", "__file__": path}
        code = compile(source, path, "exec")
        exec(code, namespace)  # the child is the sandbox: this is where untrusted code runs
        if "make_inputs" not in namespace:
            raise ContractError("program defines no make_inputs(seed) function")
        if "make_model" not in namespace and "Model" not in namespace:
            raise ContractError("program defines neither a Model class nor make_model()")
        return namespace

    def seed_everything(self):
        import random
        seed = int(self.job["seed"])
        random.seed(seed)
        torch.manual_seed(seed)
        try:
            import numpy
            numpy.random.seed(seed % (2 ** 32))
        except ImportError:
            pass

    # -- compile configuration ----------------------------------------------------------------
    def apply_compile_config(self):
        cfg = self.job.get("compile") or {}
        import torch._inductor.config as inductor_config
        inductor_config.fallback_random = True
        inductor_config.compile_threads = 1
        for key, value in (cfg.get("inductor_config") or {}).items():
            target = inductor_config
            parts = key.split(".")
            for p in parts[:-1]:
                target = getattr(target, p)
            if not hasattr(target, parts[-1]):
                raise CompileConfigError(f"unknown Inductor config option {key!r}")
            setattr(target, parts[-1], value)
        for plugin in self.job.get("plugins") or []:
            # A trusted file named on the command line (for example a planted-bug backend).
            ns = {"__name__": "tcfuzz_plugin", "__file__": plugin}
            with open(plugin) as f:
                exec(compile(f.read(), plugin, "exec"), ns)

        handler = torch._dynamo.callback_handler

        # Dynamo frames fire these, and so does AOTAutograd's lazy compile of the backward graph
        # (CallbackTrigger.LAZY_BACKWARD) at the first backward: that one counts as compile time but
        # keeps the phase "backward", so a failing backward compile is a backward failure.
        def on_start(*_):
            self._compile_started = time.monotonic()
            if self.phase != "backward":
                self.mark("compile")

        def on_end(*_):
            if self._compile_started is not None:
                self.compile_seconds += time.monotonic() - self._compile_started
                self._compile_started = None
            if sys.exc_info()[0] is None and self.phase == "compile":  # a compile that raised keeps it
                self.mark("run")

        handler.register_start_callback(on_start)
        handler.register_end_callback(on_end)

    def compiled(self, model):
        cfg = self.job.get("compile") or {}
        kwargs = {"backend": cfg.get("backend", "inductor"), "fullgraph": bool(cfg.get("fullgraph", False))}
        if cfg.get("mode"):
            kwargs["mode"] = cfg["mode"]
        if cfg.get("dynamic") is not None:
            kwargs["dynamic"] = bool(cfg["dynamic"])
        return torch.compile(model, **kwargs)

    # -- the run -------------------------------------------------------------------------------
    def build(self, ns, mode):
        """The seeded model and inputs for `mode` (fp64: widened to float64), on the job's device."""
        device = self.job.get("device", "cpu")
        self.seed_everything()
        model = ns["make_model"]() if "make_model" in ns else ns["Model"]()
        model.eval()
        inputs = ns["make_inputs"](int(self.job["seed"]))
        if not isinstance(inputs, (list, tuple)):
            inputs = (inputs,)
        if mode == "fp64":
            model = model.to(torch.float64)
            inputs = pytree.tree_map(_widen_tensor, list(inputs))
        if device != "cpu":
            model = model.to(device)
            inputs = pytree.tree_map(lambda t: t.to(device) if isinstance(t, torch.Tensor) else t, list(inputs))
        return model, inputs

    @staticmethod
    def grad_targets(model, inputs):
        """Floating inputs become leaves that require grad; parameters already do.

        Returns (inputs, wrt, wrt_names): wrt is the inputs' grad leaves, then the parameters by name."""
        inputs = pytree.tree_map(_grad_leaf, list(inputs))
        wrt, wrt_names = [], []
        for i, leaf in enumerate(pytree.tree_leaves(inputs)):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad:
                wrt.append(leaf)
                wrt_names.append(f"grad(input {i})")
        named = getattr(model, "named_parameters", None)
        for name, p in sorted(named() if named else [], key=lambda item: item[0]):
            if p.requires_grad:
                wrt.append(p)
                wrt_names.append(f"grad(param {name})")
        return inputs, wrt, wrt_names

    def call(self, fn, inputs, mode, wrt, wrt_names):
        """One seeded forward call (and backward, for backward jobs): (cloned outputs, grads or None)."""
        backward = bool(self.job.get("backward", False))
        self.mark("run")
        self.seed_everything()
        # The program gets a clone of each grad leaf: an in-place op on an input is then legal
        # (as it is without backward), and the gradient still flows back to the leaf.
        args = [_clone_if_grad(t) for t in inputs] if backward else inputs
        if mode == "fp64":
            with Fp64Casts():
                prev = torch.get_default_dtype()
                torch.set_default_dtype(torch.float64)
                try:
                    out = fn(*args)
                finally:
                    torch.set_default_dtype(prev)
        else:
            out = fn(*args)
        # Under CUDA graphs the output buffers are reused by the next replay: clone at once.
        outputs = pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, out)
        grads = None
        if backward:
            # Outside Fp64Casts: the seeded grad_outputs must be the same float32 values in every mode.
            self.mark("backward")
            t_bw = time.monotonic()
            grads = self.gradients(out, wrt, wrt_names)
            self.times["backward_s"] = self.times.get("backward_s", 0.0) + time.monotonic() - t_bw
        return outputs, grads

    def run(self):
        job = self.job
        mode = job["mode"]
        device = job.get("device", "cpu")
        t0 = time.monotonic()
        self.mark("load")
        ns = self.load_program()
        if mode == "compiled":
            self.mark("config")
            self.apply_compile_config()
        self.mark("setup")
        model, inputs = self.build(ns, mode)
        fn = self.compiled(model) if mode == "compiled" else model
        self.times["setup_s"] = time.monotonic() - t0

        repeat = int(job.get("repeat", 1))
        backward = bool(job.get("backward", False))
        wrt, wrt_names = [], []
        if backward:
            inputs, wrt, wrt_names = self.grad_targets(model, inputs)
        outputs, grads = [], []
        self.times["backward_s"] = 0.0
        t_run = time.monotonic()
        torch.set_grad_enabled(backward)
        for _ in range(repeat):
            out, g = self.call(fn, inputs, mode, wrt, wrt_names)
            outputs.append(out)
            if backward:
                grads.append(g)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        self.times["run_s"] = time.monotonic() - t_run
        if mode == "compiled":
            self.times["compile_s"] = self.compile_seconds

        self.mark("save")
        t_save = time.monotonic()
        saved = [self.save_outputs(out, i, grads[i] if grads else None) for i, out in enumerate(outputs)]
        self.times["save_s"] = time.monotonic() - t_save
        result = {"status": "ok", "phase": "done", "outputs": saved[0], "times": self.times}
        if len(saved) > 1:
            result["repeat_outputs"] = saved[1:]
        if backward:
            result["backward"] = self.backward_note
        if mode == "compiled":
            result["compile_facts"] = compile_facts()
        return result

    # -- "script" jobs: a plain Python script (a repro.py) in a fresh interpreter -----------------
    def run_script(self):
        """Runs job["program"] with this Python in the job directory, inside this child's process group
        and under its address-space limit (inherited): the zygote's timeout kills it with the group."""
        import subprocess
        self.mark("run")
        t0 = time.monotonic()
        out_path = os.path.join(self.dir, SCRIPT_STDOUT_FILE)
        err_path = os.path.join(self.dir, SCRIPT_STDERR_FILE)
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            proc = subprocess.run([sys.executable, self.job["program"]], cwd=self.dir, stdin=subprocess.DEVNULL,
                                  stdout=out, stderr=err)
        self.times["run_s"] = time.monotonic() - t0
        tails = {"stdout_tail": tail(out_path, SCRIPT_TAIL_CHARS), "stderr_tail": tail(err_path, SCRIPT_TAIL_CHARS),
                 "times": self.times}
        if proc.returncode < 0:
            sig = -proc.returncode
            name = signal.Signals(sig).name if sig in signal.valid_signals() else f"SIG{sig}"
            return {"status": "signal", "phase": "run", "signal": sig, "signal_name": name, **tails}
        return {"status": "ok", "phase": "done", "exit_code": proc.returncode, **tails}

    # -- "bisect" jobs: torch._inductor.compiler_bisector on the program ------------------------
    def leaves(self, ns, mode):
        """One run in `mode`: the flattened outputs, then the gradients (as the saved outputs are ordered)."""
        model, inputs = self.build(ns, mode)
        fn = self.compiled(model) if mode == "compiled" else model
        wrt, wrt_names = [], []
        backward = bool(self.job.get("backward", False))
        if backward:
            inputs, wrt, wrt_names = self.grad_targets(model, inputs)
        torch.set_grad_enabled(backward)
        out, grads = self.call(fn, inputs, mode, wrt, wrt_names)
        return pytree.tree_leaves(out) + [g for _, g in grads or []]

    def bisect(self):
        """CompilerBisector.do_bisect over Inductor: which backend, subsystem and application first fails
        (check "crash": the compiled run raises; "numeric": it diverges from eager, arbitrated by fp64)."""
        try:
            from torch._inductor.compiler_bisector import CompilerBisector
        except ImportError:
            return {"status": "ok", "phase": "done", "bisect": {"available": False}, "times": self.times}
        spec = self.job.get("bisect") or {}
        check = spec.get("check", "crash")
        self.job["compile"] = dict(self.job.get("compile") or {}, backend="inductor")  # the bisector drives the backend
        self.mark("load")
        ns = self.load_program()
        self.mark("config")
        self.apply_compile_config()
        self.mark("setup")
        eager = fp64 = None
        if check == "numeric":
            eager = self.leaves(ns, "eager")
            try:
                fp64 = self.leaves(ns, "fp64")
            except Exception:  # noqa: BLE001  (no fp64 reference: compared without it)
                traceback.print_exc()

        def compiles_correctly():
            torch._dynamo.reset()
            try:
                compiled = self.leaves(ns, "compiled")
            except Exception:  # noqa: BLE001  (a failing compiled run is the "bad" outcome)
                traceback.print_exc()
                return False
            if check == "crash":
                return True
            return leaves_agree(eager, compiled, fp64, spec.get("leaves") or [], spec.get("tolerances") or {})

        t0 = time.monotonic()
        found = CompilerBisector.do_bisect(compiles_correctly)
        self.times["run_s"] = time.monotonic() - t0
        sys.stdout.flush()
        info = {"available": True, "found": found is not None}
        if found is not None:
            info.update(backend=found.backend, subsystem=found.subsystem, bisect_number=found.bisect_number,
                        debug_info=found.debug_info)
        return {"status": "ok", "phase": "done", "bisect": info, "times": self.times,
                "stdout_tail": tail(os.path.join(self.dir, STDOUT_FILE), SCRIPT_TAIL_CHARS)}

    # -- "lift" jobs: an untrusted program checked, run once in eager and traced into a proposal --------
    def lift(self):
        """Refuses the program unless its AST passes check_program_ast (then nothing of it runs); else
        runs it once like an eager job under LiftRecorder and lifts the trace through the job's table
        (generators/PythonLift.h). A forward that raises propagates: the usual exception result."""
        spec = self.job.get("lift") or {}
        path = self.job["program"]
        t0 = time.monotonic()
        self.mark("load")
        with open(path) as f:
            source = f.read()
        reason = check_program_ast(source)
        if reason is not None:
            return {"status": "ok", "phase": "done", "lift": {"rejected": reason}, "times": self.times}
        table = LiftTable(spec.get("table") or [])
        namespace = {"__name__": "tcfuzz_program", "__file__": path, "__builtins__": lift_builtins()}
        exec(compile(source, path, "exec"), namespace)  # the child is the sandbox; the AST passed the allowlist
        self.mark("setup")
        self.seed_everything()
        model = namespace["Model"]()
        model.eval()
        inputs = namespace["make_inputs"](int(self.job["seed"]))
        refused = lift_inputs_problem(inputs)
        if refused is not None:
            return {"status": "ok", "phase": "done", "lift": {"rejected": refused}, "times": self.times}
        self.times["setup_s"] = time.monotonic() - t0
        self.mark("run")
        self.seed_everything()
        recorder = LiftRecorder()
        t_run = time.monotonic()
        with torch.no_grad(), recorder:
            output = model(*inputs)
        self.times["run_s"] = time.monotonic() - t_run
        self.mark("lift")
        try:
            lifted = Lifter(table, spec).lift(inputs, recorder.calls, output)
        except LiftRefused as exc:
            lifted = {"rejected": str(exc)}
        return {"status": "ok", "phase": "done", "lift": lifted, "times": self.times}

    def gradients(self, out, wrt, wrt_names):
        """d(outputs)/d(inputs, parameters) with seeded grad_outputs: [(name, tensor or None)], or None if skipped.

        torch.autograd.grad, not .backward(): a repeated call accumulates nothing. Output leaf k is
        seeded with seed + k (its position among all output leaves), so the values do not depend on
        which other outputs happen to require grad."""
        seed = int(self.job["seed"])
        diff_outputs, grad_outputs = [], []
        for k, leaf in enumerate(pytree.tree_leaves(out)):
            if isinstance(leaf, torch.Tensor) and leaf.requires_grad and (leaf.is_floating_point() or leaf.is_complex()):
                g = torch.randn(tuple(leaf.shape), generator=torch.Generator().manual_seed(seed + k), dtype=torch.float32)
                diff_outputs.append(leaf)
                grad_outputs.append(g.to(dtype=leaf.dtype, device=leaf.device))
        if not diff_outputs:
            self.backward_note = "skipped: no differentiable output"
            return None
        if not wrt:
            self.backward_note = "skipped: no input or parameter requires grad"
            return None
        computed = torch.autograd.grad(diff_outputs, wrt, grad_outputs, allow_unused=True)
        self.backward_note = "ok"
        # Cloned at once, like the forward outputs (CUDA graphs reuse their buffers).
        return [(name, None if g is None else g.detach().clone()) for name, g in zip(wrt_names, computed)]

    def save_outputs(self, out, index, grads=None):
        """Saves the flattened outputs, then the gradients, as one torch.save list; describes every leaf."""
        leaves, _ = pytree.tree_flatten(out)
        tensors, described = [], []
        for leaf in leaves:
            described.append(dict(self.describe_leaf(leaf, tensors), role="output"))
        for name, grad in grads or []:
            described.append(dict(self.describe_leaf(grad, tensors), role="grad", name=name))
        name = "outputs.pt" if index == 0 else f"outputs_{index}.pt"
        torch.save(tensors, os.path.join(self.dir, name))
        return {"file": name, "leaves": described}

    @staticmethod
    def describe_leaf(leaf, tensors):
        """Appends the leaf's tensor (if it has one) to `tensors` and returns its description."""
        if isinstance(leaf, torch.SymInt):
            leaf = int(leaf)
        if isinstance(leaf, torch.Tensor):
            t = leaf.detach().to("cpu")
            if t.layout != torch.strided:
                t = t.to_dense()
            if t.is_complex():
                t = torch.view_as_real(t.resolve_conj())  # compared as (..., 2) real pairs
            t = t.contiguous().clone()  # its own storage: torch.save writes whole storages
            tensors.append(t)
            return {"kind": "tensor", "index": len(tensors) - 1, "dtype": str(leaf.dtype).replace("torch.", ""),
                    "shape": list(leaf.shape)}
        if isinstance(leaf, (bool, int, float)):
            tensors.append(torch.tensor(leaf))
            return {"kind": "scalar", "index": len(tensors) - 1, "dtype": type(leaf).__name__}
        return {"kind": "other", "repr": repr(leaf)[:200]}


class ContractError(Exception):
    """The program file does not follow the tcfuzz program contract (see README)."""


class CompileConfigError(Exception):
    """The job's compile configuration names something torch does not have."""


def _widen_dtype(d):
    if isinstance(d, torch.dtype):
        if d.is_complex:
            return torch.complex128
        if d.is_floating_point:
            return torch.float64
    return d


def _clone_if_grad(t):
    """Top-level tensor arguments that require grad are passed as clones (see ChildRun.run)."""
    if isinstance(t, torch.Tensor) and t.requires_grad:
        return t.clone()
    return t


def _grad_leaf(t):
    """A floating or complex input tensor as a fresh leaf that requires grad; anything else unchanged."""
    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
        return t.detach().requires_grad_(True)
    return t


def _widen_tensor(t):
    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
        return t.to(_widen_dtype(t.dtype))
    return t


_NARROWING_METHODS = {torch.Tensor.half, torch.Tensor.float, torch.Tensor.bfloat16}


class Fp64Casts(TorchFunctionMode):
    """Turns explicit floating casts inside forward into float64 ones, as cast_to_fp64 does."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if func in _NARROWING_METHODS:
            return args[0].double(**kwargs)
        if "dtype" in kwargs:
            kwargs["dtype"] = _widen_dtype(kwargs["dtype"])
        if func in (torch.Tensor.to, torch.Tensor.type):
            args = tuple(_widen_dtype(a) for a in args)
        return func(*args, **kwargs)


DEFAULT_TOLERANCES = {"float32": 1e-4, "float64": 1e-4, "float16": 1e-3, "bfloat16": 1e-2}


def leaves_agree(eager, compiled, fp64, leaves, tolerances):
    """The numeric check of a bisect job, as the oracle makes it (oracles/Comparator.cpp): per leaf
    (all floating ones when `leaves` is empty), torch._dynamo.utils.same(eager, compiled, fp64) on
    the elements where eager is finite, after NaN/Inf placement, dtype and shape checks."""
    from torch._dynamo.utils import same
    if len(eager) != len(compiled):
        return False
    if fp64 is not None and len(fp64) != len(eager):
        fp64 = None
    tolerances = dict(DEFAULT_TOLERANCES, **tolerances)
    indices = leaves or [i for i, t in enumerate(eager) if isinstance(t, torch.Tensor) and t.is_floating_point()]
    for i in indices:
        if i >= len(eager):
            continue
        e, c, r = eager[i], compiled[i], fp64[i] if fp64 is not None else None
        if not isinstance(e, torch.Tensor) or not isinstance(c, torch.Tensor):
            if repr(e) != repr(c):
                return False
            continue
        e, c = e.detach().cpu(), c.detach().cpu()
        if e.dtype != c.dtype or e.shape != c.shape:
            return False
        if not e.is_floating_point():
            if not torch.equal(e, c):
                return False
            continue
        r = r.detach().cpu().double() if isinstance(r, torch.Tensor) and r.shape == e.shape else None
        if not all(torch.equal(f(e), f(c)) for f in (torch.isnan, torch.isposinf, torch.isneginf)):
            return False
        finite = torch.isfinite(e)
        tol = tolerances.get(str(e.dtype).replace("torch.", ""), tolerances["float32"])
        if r is None:
            if not torch.allclose(e[finite].double(), c[finite].double(), atol=tol * 100, rtol=tol * 100):
                return False
        elif not same(e[finite], c[finite], fp64_ref=r[finite], tol=tol, equal_nan=True):
            print(f"bisect: leaf {i} diverges")
            return False
    return True


# ----------------------------------------------------------------------------------------------
# "lift" jobs: an untrusted program (an LLM's) is checked against an AST allowlist, run once in eager
# under LiftRecorder, and its torch calls are mapped onto catalog ops through the lift table that
# tcfuzz builds from the op catalog (generators/PythonLift.h).
# ----------------------------------------------------------------------------------------------

LIFT_IMPORTABLE = ("torch", "torch.nn", "torch.nn.functional", "math")
# Modules an attribute chain may pass through (torch.linalg.vector_norm); any other module is refused.
LIFT_REACHABLE = LIFT_IMPORTABLE + ("torch.linalg", "torch.special", "torch.fft", "torch.nn.init")
# Attribute paths refused with everything below them.
LIFT_DENIED_PATHS = (
    "torch.load", "torch.save", "torch.hub", "torch.utils", "torch.ops", "torch.classes", "torch._C", "torch.cuda",
    "torch.backends", "torch.distributed", "torch.multiprocessing", "torch.compile", "torch._dynamo",
    "torch._inductor", "torch.jit", "torch.library", "torch.from_file",
)
# Attribute names refused on any object: file and pickle access, raw memory, frames, str.format's
# attribute traversal.
LIFT_DENIED_ATTRIBUTES = frozenset({
    "load", "save", "hub", "from_file", "format", "format_map", "numpy", "ctypes", "data_ptr", "storage",
    "untyped_storage", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "f_globals", "f_locals",
    "f_builtins", "f_back", "tb_frame", "tb_next", "mro",
})
# The builtins a lifted program may name; the run gets only these (plus class creation and an import
# of LIFT_IMPORTABLE).
LIFT_SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "callable", "classmethod", "dict", "divmod", "enumerate", "filter", "float",
    "frozenset", "int", "isinstance", "issubclass", "len", "list", "map", "max", "min", "pow", "print", "property",
    "range", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "zip",
})
LIFT_MAX_LOOP = 16
LIFT_REFUSED_NODES = {
    "While": "while loop", "With": "with statement", "AsyncWith": "async", "AsyncFunctionDef": "async",
    "AsyncFor": "async", "Await": "async", "Try": "try statement", "TryStar": "try statement",
    "Raise": "raise statement", "Global": "global statement", "Nonlocal": "nonlocal statement",
    "Delete": "del statement", "Yield": "yield", "YieldFrom": "yield", "JoinedStr": "f-string",
    "Match": "match statement",
}
LIFT_DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")


class LiftRefused(Exception):
    """Why a program is not lifted; the message is the stable reason string."""


def _is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_program_ast(source):
    """Why the untrusted program `source` must not run, or None when its AST passes the allowlist.

    Pure: it parses the text and reads attributes of the allowed modules statically
    (inspect.getattr_static); none of the program runs and nothing is imported beyond LIFT_IMPORTABLE.
    Reasons are short stable strings: "import of os", "call of eval", "dunder attribute __class__",
    "attribute torch.load", "while loop", "syntax error: <msg> (line N)", "no Model class", ..."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # a null byte in the source
        return f"syntax error: {exc}"
    checker = _ProgramChecker(ast)
    try:
        checker.visit(tree)
        checker.check_contract(tree)
    except LiftRefused as exc:
        return str(exc)
    except RecursionError:
        return "program nested too deeply"
    return None


class _ProgramChecker:
    """The AST walk behind check_program_ast. Names resolve through Python's scopes (a function does
    not see its class's names), so a parameter called `input` is the program's, not the builtin."""

    def __init__(self, ast_module):
        self.ast = ast_module
        self.scopes = []    # [(kind, names bound there)], kind: module, class, function, comprehension
        self.imported = {}  # module-scope name -> (dotted path, object) bound by an import

    # -- scopes ----------------------------------------------------------------------------------------
    def bound_names(self, nodes):
        """The names a scope body binds (nested functions and classes bind only their own name here)."""
        ast = self.ast
        names, stack = set(), list(nodes)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                continue
            if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            stack.extend(ast.iter_child_nodes(node))
        return names

    def resolve(self, name):
        """The kind of scope `name` resolves to here ("builtin" when the program binds it nowhere visible)."""
        for i in range(len(self.scopes) - 1, -1, -1):
            kind, names = self.scopes[i]
            if kind == "class" and i != len(self.scopes) - 1:
                continue
            if name in names:
                return kind
        return "builtin"

    def in_scope(self, kind, names, nodes):
        self.scopes.append((kind, names))
        try:
            for node in nodes:
                self.visit(node)
        finally:
            self.scopes.pop()

    # -- the walk ----------------------------------------------------------------------------------------
    def visit(self, node):
        kind = type(node).__name__
        if kind in LIFT_REFUSED_NODES:
            raise LiftRefused(LIFT_REFUSED_NODES[kind])
        method = getattr(self, "visit_" + kind, None)
        if method is not None:
            method(node)
        else:
            for child in self.ast.iter_child_nodes(node):
                self.visit(child)

    def visit_Module(self, node):
        # Imports first: a function body may use a name that a later import binds.
        ast = self.ast
        stack = list(node.body)
        while stack:
            statement = stack.pop(0)
            if isinstance(statement, ast.Import):
                self.bind_import(statement)
            elif isinstance(statement, ast.ImportFrom):
                self.bind_import_from(statement)
            elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.extend(c for c in ast.iter_child_nodes(statement) if isinstance(c, ast.stmt))
        self.in_scope("module", self.bound_names(node.body), node.body)

    def import_binding(self, name, path, obj):
        if _is_dunder(name):
            raise LiftRefused(f"dunder name {name}")
        self.imported[name] = (path, obj)

    def visit_Import(self, node):
        if self.scopes[-1][0] != "module":
            raise LiftRefused("import inside a function or class")

    visit_ImportFrom = visit_Import

    def bind_import(self, node):
        import importlib
        for alias in node.names:
            if alias.name not in LIFT_IMPORTABLE:
                raise LiftRefused(f"import of {alias.name}")
            if alias.asname:
                self.import_binding(alias.asname, alias.name, importlib.import_module(alias.name))
            else:
                root = alias.name.split(".")[0]
                self.import_binding(root, root, importlib.import_module(root))

    def bind_import_from(self, node):
        import importlib
        import inspect
        if node.level:
            raise LiftRefused("relative import")
        if node.module not in LIFT_IMPORTABLE:
            raise LiftRefused(f"import of {node.module}")
        module = importlib.import_module(node.module)
        for alias in node.names:
            path = f"{node.module}.{alias.name}"
            if alias.name == "*" or alias.name.startswith("_") or _denied_path(path):
                raise LiftRefused(f"import of {path}")
            obj = inspect.getattr_static(module, alias.name, _MISSING)
            if obj is _MISSING or (_is_module(obj) and obj.__name__ not in LIFT_REACHABLE):
                raise LiftRefused(f"import of {path}")
            self.import_binding(alias.asname or alias.name, getattr(obj, "__name__", path) if _is_module(obj) else path,
                                obj)

    def check_name(self, name):
        if _is_dunder(name):
            raise LiftRefused(f"dunder name {name}")

    def visit_Name(self, node):
        ast = self.ast
        self.check_name(node.id)
        where = self.resolve(node.id)
        if not isinstance(node.ctx, ast.Load):
            if where == "module" and node.id in self.imported:
                raise LiftRefused(f"rebinding of {node.id}")
            return
        if where == "builtin" and node.id not in LIFT_SAFE_BUILTINS:
            raise LiftRefused(f"name {node.id}")
        if where == "module" and node.id in self.imported and _is_module(self.imported[node.id][1]):
            raise LiftRefused(f"module {self.imported[node.id][0]} used as a value")

    def check_attribute(self, name):
        if _is_dunder(name) and name != "__init__":
            raise LiftRefused(f"dunder attribute {name}")
        if name.startswith("_") and name != "__init__" or name in LIFT_DENIED_ATTRIBUTES:
            raise LiftRefused(f"attribute {name}")

    def attribute_chain(self, node):
        """(base, [names]) of a.b.c: the innermost non-attribute node and the names outwards from it."""
        chain, base = [], node
        while isinstance(base, self.ast.Attribute):
            chain.append(base.attr)
            base = base.value
        chain.reverse()
        return base, chain

    def visit_Attribute(self, node):
        """A whole chain a.b.c at once: from its base outwards, so the first refused step is reported."""
        import inspect
        ast = self.ast
        base, chain = self.attribute_chain(node)
        rooted = isinstance(base, ast.Name) and self.resolve(base.id) == "module" and base.id in self.imported
        if not rooted:
            self.visit(base)
            for name in chain:
                self.check_attribute(name)
            return
        path, obj = self.imported[base.id]
        for name in chain:
            if not _is_module(obj):  # past the modules: a function or class, checked by name only
                self.check_attribute(name)
                continue
            if _is_dunder(name) and name != "__init__":
                raise LiftRefused(f"dunder attribute {name}")
            path = f"{path}.{name}"
            if name.startswith("_") or name in LIFT_DENIED_ATTRIBUTES or _denied_path(path):
                raise LiftRefused(f"attribute {path}")
            obj = inspect.getattr_static(obj, name, _MISSING)
            if obj is _MISSING or (_is_module(obj) and obj.__name__ not in LIFT_REACHABLE):
                raise LiftRefused(f"attribute {path}")
        if _is_module(obj):
            raise LiftRefused(f"module {path} used as a value")

    def static_value(self, node):
        """The object a Name or attribute chain rooted at an import names, or None."""
        import inspect
        base, chain = self.attribute_chain(node)
        if not isinstance(base, self.ast.Name) or base.id not in self.imported:
            return None
        obj = self.imported[base.id][1]
        for name in chain:
            obj = inspect.getattr_static(obj, name, None)
        return obj

    def visit_Call(self, node):
        ast = self.ast
        func = node.func
        if isinstance(func, ast.Name) and self.resolve(func.id) == "builtin" and func.id not in LIFT_SAFE_BUILTINS:
            raise LiftRefused(f"call of {func.id}")
        self.visit(func)
        for arg in node.args:
            self.visit(arg)
        for keyword in node.keywords:
            if keyword.arg is not None:
                self.check_name(keyword.arg)
            self.visit(keyword.value)

    def check_range(self, iterable, what):
        """Loops run only over range(...) of int literals, at most LIFT_MAX_LOOP iterations."""
        ast = self.ast

        def literal(e):
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
                value = literal(e.operand)
                return None if value is None else -value
            if isinstance(e, ast.Constant) and type(e.value) is int:
                return e.value
            return None

        if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
                and self.resolve("range") == "builtin" and not iterable.keywords and 1 <= len(iterable.args) <= 3):
            bounds = [literal(a) for a in iterable.args]
            if None not in bounds and (len(bounds) < 3 or bounds[2] != 0):
                count = len(range(*bounds))
                if count > LIFT_MAX_LOOP:
                    raise LiftRefused(f"{what} of {count} iterations")
                return
        raise LiftRefused(f"{what} over a non-literal range")

    def visit_For(self, node):
        self.check_range(node.iter, "for loop")
        for child in [node.target, node.iter] + node.body + node.orelse:
            self.visit(child)

    def visit_comprehension_node(self, node, parts):
        ast = self.ast
        for generator in node.generators:
            if generator.is_async:
                raise LiftRefused("async")
            self.check_range(generator.iter, "comprehension")
        names = set()
        for generator in node.generators:
            names |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        nodes = [g.target for g in node.generators] + [c for g in node.generators for c in g.ifs] + parts
        self.in_scope("comprehension", names, nodes)

    def visit_ListComp(self, node):
        self.visit_comprehension_node(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self.visit_comprehension_node(node, [node.key, node.value])

    def arguments(self, args):
        """Checks parameter names and visits defaults and annotations (they run in the enclosing scope)."""
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        for a in every:
            self.check_name(a.arg)
            if a.annotation is not None:
                self.visit(a.annotation)
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        return {a.arg for a in every}

    def visit_FunctionDef(self, node):
        if _is_dunder(node.name) and node.name != "__init__":
            raise LiftRefused(f"dunder name {node.name}")
        for decorator in node.decorator_list:
            self.visit(decorator)
        params = self.arguments(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self.in_scope("function", params | self.bound_names(node.body), node.body)

    def visit_Lambda(self, node):
        self.in_scope("function", self.arguments(node.args), [node.body])

    def visit_ClassDef(self, node):
        self.check_name(node.name)
        for child in node.decorator_list + node.bases:
            self.visit(child)
        for keyword in node.keywords:
            raise LiftRefused(f"class keyword {keyword.arg}")
        self.in_scope("class", self.bound_names(node.body), node.body)

    def check_contract(self, tree):
        """The program contract of a lifted program: class Model(nn.Module) and def make_inputs(seed)."""
        ast = self.ast
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        model = classes.get("Model")
        if model is None:
            raise LiftRefused("no Model class")
        if not any(isinstance(n, ast.FunctionDef) and n.name == "make_inputs" for n in tree.body):
            raise LiftRefused("no make_inputs")

        def is_module_class(cls, seen):
            for base in cls.bases:
                value = self.static_value(base)
                if isinstance(value, type) and issubclass(value, torch.nn.Module):
                    return True
                if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                    if is_module_class(classes[base.id], seen | {base.id}):
                        return True
            return False

        if not is_module_class(model, {"Model"}):
            raise LiftRefused("Model is not an nn.Module")


_MISSING = object()


def _is_module(obj):
    import types
    return isinstance(obj, types.ModuleType)


def _denied_path(path):
    return any(path == denied or path.startswith(denied + ".") for denied in LIFT_DENIED_PATHS)


def lift_builtins():
    """The __builtins__ of a lifted program: LIFT_SAFE_BUILTINS, class creation, and an import that
    admits LIFT_IMPORTABLE only (a second line behind check_program_ast)."""
    import builtins

    def restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in LIFT_IMPORTABLE:
            raise ImportError(f"import of {name} is not allowed in a lifted program")
        return builtins.__import__(name, globals, locals, fromlist, level)

    allowed = {name: getattr(builtins, name) for name in LIFT_SAFE_BUILTINS if hasattr(builtins, name)}
    allowed["__build_class__"] = builtins.__build_class__
    allowed["__import__"] = restricted_import
    return allowed


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

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.calls.append((func, args, kwargs, result))
        return result


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
            schemas = torch._C._jit_get_schemas_for_operator("aten::" + name) if name.isidentifier() else []
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
        self.inputs = []
        self.nodes = []
        self.fresh = 0

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
        if id(t) in self.names:
            return self.names[id(t)]
        self.fresh += 1
        return self.add_input(t, f"p{self.fresh - 1}", isinstance(t, torch.nn.Parameter))

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
            outs = _result_tensors(result)
            if not outs:
                continue  # x.shape, x.size(0): nothing a node could stand for
            counted += 1
            found = self.match(func, args, kwargs)
            if found is None:
                name = function_name(func)
                unmapped[name] = unmapped.get(name, 0) + 1
                continue
            entry, tensors, attrs = found
            mapped += 1
            reads = tensors["*"] if "*" in tensors else [tensors[k] for k in sorted(tensors)]
            arg_names = [self.name(t) for t in reads]
            out = f"v{len(self.nodes)}"
            for k, t in enumerate(outs):
                self.check(t)
                self.names[id(t)] = out if k == 0 else f"{out}.{k}"
            self.nodes.append({"out": out, "op": entry["op"], "args": arg_names, "attrs": attrs})
        outputs = []
        for leaf in pytree.tree_leaves(output):
            if isinstance(leaf, torch.Tensor):
                name = self.name(leaf)
                if name.startswith("v") and name not in outputs:
                    outputs.append(name)
        if not outputs and self.nodes:
            outputs = [self.nodes[-1]["out"]]
        return {"proposal": {"inputs": self.inputs, "nodes": self.nodes, "outputs": outputs},
                "calls": counted, "mapped": mapped, "unmapped": unmapped}


def compile_facts():
    from torch._dynamo.utils import counters
    stats = counters.get("stats", {})
    breaks = dict(counters.get("graph_break", {}))
    return {
        "graph_count": int(stats.get("unique_graphs", 0)),
        "graph_breaks": int(sum(breaks.values())),
        "break_reasons": {str(k)[:300]: int(v) for k, v in list(breaks.items())[:20]},
        "inductor_counters": _numeric(counters.get("inductor", {})),
        "inductor_metrics": inductor_metrics(),
        "aot_autograd_counters": _numeric(counters.get("aot_autograd", {})),
    }


def _numeric(mapping):
    return {str(k): v for k, v in mapping.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


# The numeric module globals of torch._inductor.metrics (torch 2.11 has all of these; older or newer
# torch may lack some: those are skipped). Each child is a fresh fork, so they count this job only.
INDUCTOR_METRICS = (
    "generated_kernel_count", "generated_cpp_vec_kernel_count", "ir_nodes_pre_fusion", "num_bytes_accessed",
    "cpp_to_dtype_count", "num_comprehensive_padding", "num_matches_for_scatter_upon_const_tensor",
    "num_loop_reordering", "parallel_reduction_count", "codegen_mix_order_reduction", "num_auto_chunking",
)


def inductor_metrics():
    import torch._inductor.metrics as metrics
    return _numeric({name: getattr(metrics, name, None) for name in INDUCTOR_METRICS})


def exception_record(exc):
    t = type(exc)
    tb = "".join(traceback.format_exception(t, exc, exc.__traceback__))
    return {
        "type": t.__name__,
        "qualified_type": f"{t.__module__}.{t.__qualname__}",
        "message": str(exc)[:4000],
        "traceback": tb[-16000:],
    }


def is_oom(exc):
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc)
    return any(m in text for m in OOM_MARKERS)


def child_main(job, done_fd):
    """Runs in the forked child. Never returns: writes result.json, then one byte to done_fd, then exits."""
    os.setsid()  # own process group: the zygote kills the whole group, compile workers included
    job_dir = job["job_dir"]
    out = os.open(os.path.join(job_dir, STDOUT_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(os.path.join(job_dir, STDERR_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = os.fdopen(2, "w", buffering=1)
    import faulthandler
    faulthandler.enable(file=sys.stderr)  # a segfault leaves the Python stack in stderr.txt
    memory_mb = int((job.get("limits") or {}).get("memory_mb", 0))
    if memory_mb and job.get("device", "cpu") == "cpu":
        # RLIMIT_AS counts address space; CUDA reserves huge ranges, so there the RSS watchdog rules.
        limit = vm_size_bytes() + memory_mb * 2 ** 20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    threads = int(job.get("threads", 0))
    if threads > 0:
        torch.set_num_threads(threads)
    run = ChildRun(job)
    code = 0
    kind = job.get("kind", "program")
    try:
        if kind == "script":
            result = run.run_script()
        elif kind == "bisect":
            result = run.bisect()
        elif kind == "lift":
            result = run.lift()
        elif kind == "program":
            result = run.run()
        else:
            raise ValueError(f"unknown job kind {kind!r}")
    except BaseException as exc:  # noqa: BLE001  (everything the program raises is a result)
        status = "oom" if is_oom(exc) else "exception"
        result = {"status": status, "phase": run.phase, "exception": exception_record(exc), "times": run.times}
        if run.job.get("mode") == "compiled":
            try:
                result["compile_facts"] = compile_facts()
            except Exception:  # noqa: BLE001
                pass
    try:
        run.write_result(result)
        os.write(done_fd, b"1")
    except BaseException:  # noqa: BLE001
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# ----------------------------------------------------------------------------------------------
# Zygote side.
# ----------------------------------------------------------------------------------------------

def vm_size_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def rss_bytes(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()
    except OSError:
        return 0


def tail(path, limit=4000):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def read_phase(job_dir):
    try:
        with open(os.path.join(job_dir, PHASE_FILE)) as f:
            return f.read().strip() or "start"
    except OSError:
        return "start"


def set_parent_death_signal():
    """Dies with SIGKILL when the parent dies (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)


class SpareChild:
    """A child forked ahead of time that blocks until it is handed a job: the fork is off the hot path."""

    def __init__(self):
        job_r, job_w = os.pipe()
        done_r, done_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                set_parent_death_signal()
                os.close(job_w)
                os.close(done_r)
                _PROTOCOL_OUT.close()  # only the zygote speaks the protocol
                devnull = os.open(os.devnull, os.O_RDONLY)
                os.dup2(devnull, 0)
                data = b""
                while chunk := os.read(job_r, 1 << 16):
                    data += chunk
                if not data:
                    os._exit(0)  # the zygote is shutting down
                child_main(json.loads(data), done_w)
            finally:
                os._exit(4)
        os.close(job_r)
        os.close(done_w)
        self.pid, self.job_w, self.done_r = pid, job_w, done_r

    def dispatch(self, job):
        os.write(self.job_w, json.dumps(job).encode())
        os.close(self.job_w)

    def discard(self):
        os.close(self.job_w)  # EOF: the spare exits
        os.close(self.done_r)
        os.waitpid(self.pid, 0)


class Zygote:
    """Runs jobs one at a time in forked children, keeping one spare child forked in advance."""

    def __init__(self):
        self.spare = None
        self.finished = []  # children that reported their result and may still be exiting

    def take_spare(self):
        spare, self.spare = self.spare, None
        return spare or SpareChild()

    def refill(self):
        if self.spare is None:
            self.spare = SpareChild()

    def reap_finished(self, block=False):
        still = []
        for pid in self.finished:
            done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
            if done == 0:
                still.append(pid)
                continue
            try:
                os.killpg(pid, signal.SIGKILL)  # stragglers left in its process group
            except (ProcessLookupError, PermissionError):
                pass
        self.finished = still

    def shutdown(self):
        if self.spare:
            self.spare.discard()
            self.spare = None
        self.reap_finished(block=True)

    def run_job(self, job):
        """Hands the job to a child, enforces its limits, and returns the result message."""
        job_dir = job["job_dir"]
        os.makedirs(job_dir, exist_ok=True)
        for stale in (RESULT_FILE, PHASE_FILE):
            try:
                os.unlink(os.path.join(job_dir, stale))
            except FileNotFoundError:
                pass
        limits = job.get("limits") or {}
        timeout_s = float(limits.get("timeout_s", 60))
        memory_mb = int(limits.get("memory_mb", 0))
        rss_limit = memory_mb * 2 ** 20 if memory_mb else 0

        t_start = time.monotonic()
        child = self.take_spare()
        fork_s = time.monotonic() - t_start  # zero when the spare was ready
        pid = child.pid
        child.dispatch(job)
        self.refill()  # fork the next spare while this job runs

        deadline = t_start + timeout_s
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(child.done_r, select.POLLIN)
        killed_for = None
        reported = False
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                killed_for = "timeout"
                break
            events = dict(poller.poll(min(remaining, 0.05) * 1000))
            if child.done_r in events:
                reported = os.read(child.done_r, 1) == b"1"
                break
            if pidfd in events:
                break
            if rss_limit and rss_bytes(pid) > rss_limit:
                killed_for = "oom"
                break
        os.close(pidfd)
        os.close(child.done_r)
        wall_s = time.monotonic() - t_start

        result = None
        if reported:
            self.finished.append(pid)  # reaped later: its exit is off the hot path
            try:
                with open(os.path.join(job_dir, RESULT_FILE)) as f:
                    result = json.load(f)
            except (OSError, ValueError) as exc:
                result = {"status": "exception", "phase": read_phase(job_dir),
                          "exception": {"type": "HarnessError", "qualified_type": "tcfuzz.HarnessError",
                                        "message": f"child left no readable result: {exc}", "traceback": ""}}
        else:
            if killed_for:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, wait_status = os.waitpid(pid, 0)
            try:
                os.killpg(pid, signal.SIGKILL)  # stragglers in the group (compile workers)
            except (ProcessLookupError, PermissionError):
                pass
            phase = read_phase(job_dir)
            if killed_for == "timeout":
                result = {"status": "timeout", "phase": phase}
            elif killed_for == "oom":
                result = {"status": "oom", "phase": phase}
            elif os.WIFSIGNALED(wait_status):
                sig = os.WTERMSIG(wait_status)
                result = {"status": "signal", "phase": phase, "signal": sig, "signal_name": signal.Signals(sig).name}
            else:
                result = {"status": "signal", "phase": phase, "exit_code": os.WEXITSTATUS(wait_status),
                          "signal": 0, "signal_name": "EXIT"}
            result["stderr_tail"] = tail(os.path.join(job_dir, STDERR_FILE))
        self.reap_finished()
        result.setdefault("times", {})
        result["times"]["fork_s"] = fork_s
        result["times"]["child_wall_s"] = wall_s
        result["type"] = "result"
        result["id"] = job["id"]
        return result


def probe_cuda():
    """Asks a throwaway child whether CUDA works, so the zygote itself never initializes it."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            ok = torch.cuda.is_available()
            n = torch.cuda.device_count() if ok else 0
        except Exception:  # noqa: BLE001
            ok, n = False, 0
        os.write(w, json.dumps({"available": ok, "count": n}).encode())
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    try:
        return json.loads(data)
    except ValueError:
        return {"available": False, "count": 0}


def main():
    set_parent_death_signal()  # without the sandbox's --die-with-parent, still die with tcfuzz
    device = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cpu"
    hello = {
        "type": "hello",
        "torch": torch.__version__,
        "torch_git": torch.version.git_version,
        "torch_dir": os.path.dirname(torch.__file__),
        "python": sys.version.split()[0],
        "pid": os.getpid(),
        "device": device,
        "import_s": IMPORT_SECONDS,
    }
    if device.startswith("cuda"):
        hello["cuda"] = probe_cuda()
    # Move every object the imports made out of the collector's reach: a child's GC pass would
    # otherwise touch (and copy-on-write) the pages of all of them.
    import gc
    gc.collect()
    gc.freeze()
    zygote = Zygote()
    zygote.refill()
    send(hello)
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            job = json.loads(line)
        except ValueError as exc:
            send({"type": "error", "message": f"malformed job line: {exc}"})
            continue
        if job.get("type") == "quit":
            break
        try:
            send(zygote.run_job(job))
        except Exception as exc:  # noqa: BLE001  (a harness bug is reported, the zygote lives on)
            send({"type": "result", "id": job.get("id"), "status": "exception", "phase": "harness",
                  "exception": exception_record(exc)})
    zygote.shutdown()


if __name__ == "__main__":
    main()
