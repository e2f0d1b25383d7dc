"""One worker job, run in a child that the zygote (zygote.py) forked: ChildRun and child_main.

The child runs the job's program (eager, compiled or float64), a repro.py script, a compiler bisection
or a lift (lift/), writes result.json into the job directory, then reports to the zygote through a
pipe; it never writes to the protocol pipe. The zygote imports this module before it forks: nothing
here may run a torch op at import time.
"""

import json
import os
import resource
import sys
import time
import traceback

import torch
import torch._dynamo
import torch._inductor.config
import torch.utils._pytree as pytree

from bisect_check import JobError, run_bisect  # noqa: F401  (JobError: raised by the bisect job)
from compile_stats import (compile_facts, compile_phases, failing_node_stack_trace, install_compile_hooks, recompiles_seen,
                           recompiles_since)
from reference.desugared_hops import desugar_hops
from forward_checks import (FRESH_INPUT_SEED_OFFSET, IndexSources, ModuleState, NoTaint, RandomTaint, TextLeaf,
                            alias_notes, conditioning_inputs)
from lift import run_lift_job
from script_job import SCRIPT_TAIL_CHARS, run_script_job, tail
from program_guard import GUARD
from reference.entry_points import exported_model, exports
from reference.training_steps import compiles_model, compiles_step, step_compiler, training_leaves
from reference.repro_shared import (call_in_fp64, fresh_copies, later_call_leaves, layout_copy,
                                    layout_copies, marking_dynamic, schedule_leaves, seed_everything, widen_inputs,
                                    widen_model_and_inputs, write_tensor_file)

PHASE_FILE = "phase"
NO_COMPILE_BACKEND = "none"  # oracles::kNoCompileBackend: the compiled job calls the model without torch.compile
RESULT_FILE = "result.json"
STDOUT_FILE = "stdout.txt"
STDERR_FILE = "stderr.txt"
OOM_MARKERS = ("can't allocate memory", "out of memory", "DefaultCPUAllocator", "std::bad_alloc")
# CUDA errors that poison the process's context: every later CUDA call fails too, so the process must go.
# The same list is oracles::stickyCudaError's (RunResult.cpp), which names the finding's kind.
STICKY_CUDA_MARKERS = ("device-side assert triggered", "an illegal memory access was encountered",
                       "unspecified launch failure", "misaligned address", "an illegal instruction was encountered",
                       "uncorrectable ECC error")


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
        self.random_ops = []
        self.tie_sources = {}  # id(an output leaf of call 1) -> IndexSources' (source, dim, same rank)
        self.written_inputs = frozenset()  # the program's WRITTEN_INPUTS: positions forward writes into
        self.repeat_recompiles = []  # compiled jobs: the guard failures of recompiles in call 2 (a repeat of call 1)
        self.export_seconds = 0.0  # an export entry's trace and build, before the calls
        self.export_ops = None  # an export entry's {ATen op: count} of the program it runs

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
    def exec_program(self):
        """The program's module namespace, executed afresh (the guard already watches it)."""
        path = self.job["program"]
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        namespace = {"__name__": "tcfuzz_program", "__file__": path}
        exec(code, namespace)  # the child is the sandbox: this is where untrusted code runs
        return namespace

    def load_program(self):
        GUARD.watch(self.job["program"], self.dir)  # from here on, what the program's frames try past the job is refused
        namespace = self.exec_program()
        if "make_inputs" not in namespace:
            raise ContractError("program defines no make_inputs(seed) function")
        if "make_model" not in namespace and "Model" not in namespace:
            raise ContractError("program defines neither a Model class nor make_model()")
        written = namespace.get("WRITTEN_INPUTS", ())
        if not isinstance(written, (tuple, list)) or not all(isinstance(i, int) for i in written):
            raise ContractError("WRITTEN_INPUTS must be a tuple of input positions")
        self.written_inputs = frozenset(written)
        return namespace

    def seed_everything(self):
        """Seeds every generator with the job's seed (the shared block's seed_everything)."""
        seed_everything(int(self.job["seed"]))

    # -- compile configuration ----------------------------------------------------------------
    def apply_compile_config(self):
        cfg = self.job.get("compile") or {}
        install_compile_hooks()  # in this process, before its first compile: never in the zygote
        import torch._inductor.config as inductor_config
        inductor_config.fallback_random = True
        inductor_config.compile_threads = 1
        for key, value in (cfg.get("inductor_config") or {}).items():
            # A name under "dynamo." is a Dynamo option (capture_scalar_outputs), every other one Inductor's.
            dynamo = key.startswith("dynamo.")
            target = torch._dynamo.config if dynamo else inductor_config
            parts = key[len("dynamo."):].split(".") if dynamo else key.split(".")
            for p in parts[:-1]:
                target = getattr(target, p, None)
            if target is None or not hasattr(target, parts[-1]):
                raise CompileConfigError(f"unknown config option {key!r}")
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
            if self.phase not in ("backward", "export"):  # an export entry's trace stays in its phase
                self.mark("compile")

        def on_end(*_):
            if self._compile_started is not None:
                self.compile_seconds += time.monotonic() - self._compile_started
                self._compile_started = None
            if sys.exc_info()[0] is None and self.phase == "compile":  # a compile that raised keeps it
                self.mark("run")

        handler.register_start_callback(on_start)
        handler.register_end_callback(on_end)
        self._callbacks = (on_start, on_end)

    def release(self):
        """Removes what this job registered with torch (its compile callbacks): a persistent child runs
        further jobs in this process."""
        if getattr(self, "_callbacks", None):
            handler = torch._dynamo.callback_handler
            for remove, callback in ((handler.remove_start_callback, self._callbacks[0]),
                                     (handler.remove_end_callback, self._callbacks[1])):
                try:
                    remove(callback)
                except ValueError:  # torch._dynamo.reset() (a bisect job calls it) already cleared them
                    pass
            self._callbacks = None

    def compiled(self, model, inputs):
        """The compiled run's callable: torch.compile of `model`, or what an export entry makes of it (traced on
        `inputs`, in phase "export", its time compile time)."""
        cfg = self.job.get("compile") or {}
        if cfg.get("backend") == NO_COMPILE_BACKEND or (self.job.get("training") and not compiles_model(self.job["training"])):
            return model  # the program's own HOPs in eager (judged against their Python meaning), or only the step compiled
        if exports(cfg):
            self.mark("export")
            started = time.monotonic()
            with torch.set_grad_enabled(bool(self.job.get("backward", False))):  # the grad mode the calls run in
                fn = exported_model(model, fresh_copies(inputs), cfg, self.dir)
            self.export_seconds = time.monotonic() - started
            self.export_ops = fn.graph_ops
            self.compile_seconds, self._compile_started = 0.0, None  # a strict trace's Dynamo frames are export time
            return fn
        kwargs = {"backend": cfg.get("backend", "inductor"), "fullgraph": bool(cfg.get("fullgraph", False))}
        if cfg.get("mode"):
            kwargs["mode"] = cfg["mode"]
        if cfg.get("dynamic") is not None:
            kwargs["dynamic"] = bool(cfg["dynamic"])
        compiled = torch.compile(model, **kwargs)
        return marking_dynamic(compiled) if cfg.get("mark_dynamic") else compiled

    # -- the run -------------------------------------------------------------------------------
    def build(self, ns, mode):
        """The seeded model and inputs for `mode` (fp64: widened to float64), on the job's device."""
        device = self.job.get("device", "cpu")
        self.seed_everything()
        model = ns["make_model"]() if "make_model" in ns else ns["Model"]()
        model.eval()
        inputs = self.make_inputs(ns, int(self.job["seed"]), widen=False)
        if mode == "fp64":
            model, inputs = widen_model_and_inputs(model, inputs)
        if device != "cpu":
            model = model.to(device)
        return model, inputs

    def make_inputs(self, ns, seed, widen):
        """The program's inputs for `seed` as a list (perturbed for the ill-conditioning check), on the
        job's device, floating ones widened to float64 when `widen`."""
        device = self.job.get("device", "cpu")
        inputs = ns["make_inputs"](seed)
        if not isinstance(inputs, (list, tuple)):
            inputs = (inputs,)
        inputs = list(inputs)
        if self.job.get("perturb"):
            inputs = conditioning_inputs(inputs, self.job["perturb"])
        if device != "cpu":
            inputs = layout_copies(inputs, device=device)
        if widen:
            inputs = widen_inputs(inputs)
        return inputs

    def grad_leaves(self, args):
        """args (a list) with each floating or complex tensor a fresh grad leaf (_grad_leaf), except at the
        positions in WRITTEN_INPUTS: forward writes into those, which autograd refuses on a leaf that
        requires grad."""
        return [a if i in self.written_inputs else pytree.tree_map(_grad_leaf, a) for i, a in enumerate(args)]

    def grad_targets(self, model, inputs):
        """Floating inputs become leaves that require grad; parameters already do.

        Returns (inputs, wrt, wrt_names): wrt is the inputs' grad leaves, then the parameters by name."""
        inputs = self.grad_leaves(inputs)
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

    def call(self, fn, args, mode, wrt, wrt_names, backward, inspect=None, phase="run"):
        """One seeded call of fn on `args` (fresh copies: ModuleState and fresh_copies), in `phase`, with
        backward when asked: (cloned outputs, grads or None, inspect(the output leaves as returned) or None)."""
        self.mark(phase)
        self.seed_everything()
        out = call_in_fp64(fn, args) if mode == "fp64" else fn(*args)
        inspected = inspect(pytree.tree_leaves(out)) if inspect else None
        # Under CUDA graphs the output buffers are reused by the next replay: clone at once.
        outputs = pytree.tree_map(lambda t: t.detach().clone() if isinstance(t, torch.Tensor) else t, out)
        grads = None
        if backward:
            # Outside Fp64Casts: the seeded grad_outputs must be the same float32 values in every mode.
            self.mark("backward")
            t_bw = time.monotonic()
            grads = self.gradients(out, wrt, wrt_names)
            self.times["backward_s"] = self.times.get("backward_s", 0.0) + time.monotonic() - t_bw
        return outputs, grads, inspected

    def checked_calls(self, ns, fn, model, inputs, mode, wrt, wrt_names, state):
        """The calls of one run (forward_checks.py): [(leaf, role, name, random)] in saved order. `model` is
        the uncompiled module (in fp64 mode, the widened one): call 4 asks it which other size eager accepts."""
        backward = bool(self.job.get("backward", False))
        taint = RandomTaint() if mode == "eager" else NoTaint()
        ties = IndexSources() if mode == "eager" else NoTaint()
        entries = []
        with taint:
            state.restore()
            args = fresh_copies(inputs)
            sources = state.alias_sources(args)
            with ties:
                out, grads, (aliases, tie_sources) = self.call(
                    fn, args, mode, wrt, wrt_names, backward,
                    lambda raw: (alias_notes(raw, sources), ties.sources_of(raw)))
            leaves = pytree.tree_leaves(out)
            self.tie_sources.update((id(leaf), src) for leaf, src in zip(leaves, tie_sources) if src is not None)
            entries += [(leaf, "output", "", leaf) for leaf in leaves]
            entries += [(g, "grad", name, g) for name, g in grads or []]
            entries += [(note, "alias", f"output {i} storage", note) for i, note in enumerate(aliases)]
            entries += [(t.detach().clone(), "state", name, t) for name, t in state.after_call(args, grads is not None)]
            entries += [(python_leaf(leaf), "python-state", name, leaf)
                        for name, leaf in state.python_after_call(grads is not None)]
            t_extra = time.monotonic()
            for role, seed in (("second-call", None), ("fresh-inputs", int(self.job["seed"]) + FRESH_INPUT_SEED_OFFSET)):
                state.restore()
                if seed is None:
                    args = fresh_copies(inputs)
                else:
                    args = self.make_inputs(ns, seed, widen=mode == "fp64")
                    if backward:
                        args = self.grad_leaves(args)
                mark = recompiles_seen()
                out, _, _ = self.call(fn, args, mode, wrt, wrt_names, False)
                if role == "second-call" and mode == "compiled" and not self.repeat_recompiles:
                    self.repeat_recompiles = recompiles_since(mark)
                entries += [(leaf, role, f"{role}: output {i}", leaf) for i, leaf in enumerate(pytree.tree_leaves(out))]
            for role in ("resized", "moved") if self.job.get("resized_call") else ("moved",):
                entries += self.later_call(role, fn, model, inputs, mode, state)
            entries += [(python_leaf(leaf), "schedule", name, leaf)
                        for leaf, name in self.schedule(ns, fn, model, inputs, mode, state)]
            self.times["extra_calls_s"] = self.times.get("extra_calls_s", 0.0) + time.monotonic() - t_extra
            flags = taint.leaf_flags([source for *_, source in entries])
        if taint.random_ops:
            self.random_ops = sorted(set(self.random_ops) | taint.random_ops)
        return [(leaf, role, name, random) for (leaf, role, name, _), random in zip(entries, flags)]

    def training_run(self, fn, model, inputs, mode, state):
        """The "train" entry's run (training_steps.py), from the state as built: [(leaf, "training", name, random)],
        each leaf carrying the steps' accumulated rounding (save_outputs). Eager's taint marks every leaf random
        when a random op ran."""
        spec, cfg = self.job["training"], self.job.get("compile") or {}
        compile_step = None
        if mode == "compiled" and compiles_step(spec) and cfg.get("backend") != NO_COMPILE_BACKEND:
            compile_step = step_compiler(cfg)

        def forward(args):
            self.seed_everything()
            return call_in_fp64(fn, args) if mode == "fp64" else fn(*args)

        state.restore()
        taint = RandomTaint() if mode == "eager" else NoTaint()
        with taint:
            leaves = training_leaves(model, lambda: fresh_copies(inputs), spec, forward, int(self.job["seed"]),
                                     compile_step, self.mark)
        self.random_ops = sorted(set(self.random_ops) | set(taint.random_ops))
        return [(leaf, "training", name, bool(taint.random_ops)) for name, leaf in leaves]

    def later_call(self, role, fn, model, inputs, mode, state):
        """Call 4 ("resized", dynamic=True jobs) or the moved call ("moved"): the entries of its role
        (forward_checks.py), none when the role does not apply. What compiled raises there is the job's
        exception, in phase "resized-call" or "moved-call"."""

        def probe(args):
            state.restore()
            self.seed_everything()
            return call_in_fp64(model, args) if mode == "fp64" else model(*args)

        def call(args):
            if bool(self.job.get("backward", False)):
                args = self.grad_leaves(args)
            return pytree.tree_leaves(self.call(fn, args, mode, [], [], False, phase=phase)[0])

        phase = f"{role}-call"
        self.mark(phase)
        leaves = later_call_leaves(role, inputs, probe, state.restore, call)
        # The first leaf is the note on the call's inputs: a text leaf, compared as text.
        return [(TextLeaf(leaf) if i == 0 else leaf, role, name, leaf) for i, (leaf, name) in enumerate(leaves)]

    def hop_contract(self):
        """Eager's own higher-order ops on call 1, in a namespace of their own (the program's state stays as the
        reference finds it): what they raise (a contract the program breaks: aliasing outputs, mismatched branch
        metadata) makes the program invalid, as any eager error does, in phase "hop-eager"."""
        self.mark("hop-eager")
        model, inputs = self.build(self.exec_program(), "eager")
        if self.job.get("backward"):  # as the run has them: autograd refuses some writes only on grad paths
            inputs = self.grad_targets(model, inputs)[0]
        else:  # nothing requires grad, as in the run (flex_attention on CPU refuses a parameter that does)
            for p in model.parameters():
                p.requires_grad_(False)
        with torch.enable_grad():  # under no_grad, cond lets an aliasing branch through
            model(*fresh_copies(inputs))

    def schedule(self, ns, fn, model, inputs, mode, state):
        """The program's SCHEDULE (repro_shared.schedule_leaves): [(leaf, name)], [] without one. A step
        changes the uncompiled model's state (the compiled module reads the same object); what compiled
        raises there is the job's exception, in phase "schedule"."""

        def call(transform=None):
            args = fresh_copies(inputs)
            if bool(self.job.get("backward", False)):
                args = self.grad_leaves(args)
            if transform is not None:  # a step that changes the inputs (requires_grad flipped)
                args = transform(args)
            return pytree.tree_leaves(self.call(fn, args, mode, [], [], False, phase="schedule")[0])

        return schedule_leaves(ns, model, state.restore, call, state.python)

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
        # The references run each higher-order op's Python meaning; eager checks the ops' own contract first.
        self.desugared = sorted(desugar_hops(ns)) if mode != "compiled" else []
        if self.desugared and mode == "eager" and not job.get("perturb"):
            self.hop_contract()
        self.mark("setup")
        model, inputs = self.build(ns, mode)
        fn = self.compiled(model, inputs) if mode == "compiled" else model
        state = ModuleState(model, ns)
        self.times["setup_s"] = time.monotonic() - t0

        repeat = int(job.get("repeat", 1))
        backward = bool(job.get("backward", False))
        wrt, wrt_names = [], []
        if backward:
            inputs, wrt, wrt_names = self.grad_targets(model, inputs)
        runs = []
        self.times["backward_s"] = 0.0
        t_run = time.monotonic()
        torch.set_grad_enabled(backward)
        for _ in range(repeat):
            if job.get("training"):
                runs.append(self.training_run(fn, model, inputs, mode, state))
            else:
                runs.append(self.checked_calls(ns, fn, model, inputs, mode, wrt, wrt_names, state))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        # run_s is the calls' own time: a compiled job's compile time is compile_s, never folded in.
        self.times["run_s"] = time.monotonic() - t_run - self.compile_seconds
        if mode == "compiled":
            self.times["compile_s"] = self.compile_seconds + self.export_seconds

        self.mark("save")
        t_save = time.monotonic()
        saved = [self.save_outputs(entries, i) for i, entries in enumerate(runs)]
        self.times["save_s"] = time.monotonic() - t_save
        result = {"status": "ok", "phase": "done", "outputs": saved[0], "times": self.times}
        if len(saved) > 1:
            result["repeat_outputs"] = saved[1:]
        if self.random_ops:
            result["random_ops"] = self.random_ops
        if self.desugared:
            result["desugared_hops"] = self.desugared
        if backward:
            result["backward"] = self.backward_note
        if self.export_ops is not None:
            result["export_ops"] = self.export_ops
        cfg = job.get("compile") or {}
        # Dynamo's facts are torch.compile's: an export entry captures its one graph by design.
        if mode == "compiled" and cfg.get("backend") != NO_COMPILE_BACKEND and not exports(cfg):
            result["compile_facts"] = compile_facts()
            result["compile_phases"] = compile_phases(self.compile_seconds)
            if self.repeat_recompiles:
                result["repeat_recompiles"] = self.repeat_recompiles
        return result

    # -- "bisect" jobs: torch._inductor.compiler_bisector on the program ------------------------
    def leaves(self, ns, mode):
        """One run in `mode`: every leaf in the order the saved outputs have them (checked_calls)."""
        real = desugar_hops(ns) if mode != "compiled" else {}
        try:
            model, inputs = self.build(ns, mode)
            fn = self.compiled(model, inputs) if mode == "compiled" else model
            wrt, wrt_names = [], []
            if bool(self.job.get("backward", False)):
                inputs, wrt, wrt_names = self.grad_targets(model, inputs)
            torch.set_grad_enabled(bool(self.job.get("backward", False)))
            state = ModuleState(model, ns)
            return [leaf for leaf, *_ in self.checked_calls(ns, fn, model, inputs, mode, wrt, wrt_names, state)]
        finally:
            ns.update(real)

    def bisect(self):
        """The bisect job (bisect_check.run_bisect): which backend, subsystem and application first fails."""
        return run_bisect(self, lambda: tail(os.path.join(self.dir, STDOUT_FILE), SCRIPT_TAIL_CHARS))

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

    def save_outputs(self, entries, index):
        """Saves the leaves of one run (checked_calls' entries) as one tensor file; describes every leaf."""
        tensors, described = [], []
        for leaf, role, name, random in entries:
            d = dict(self.describe_leaf(leaf, tensors), role=role)
            tie = self.tie_sources.get(id(leaf)) if role == "output" else None
            if tie is not None:  # the values an index output points into (IndexSources)
                source, dim, same_rank = tie
                d["tie_source"] = dict(self.describe_leaf(source, tensors), dim=dim, same_rank=same_rank)
            if name:
                d["name"] = name
            if random:
                d["random"] = True
            if role == "training":  # the rounding of this many steps: the comparator's tolerance grows with it
                d["steps"] = int(self.job["training"]["steps"])
            described.append(d)
        name = "outputs.safetensors" if index == 0 else f"outputs_{index}.safetensors"
        write_tensor_file(os.path.join(self.dir, name), tensors)
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
            t = t.contiguous().clone()  # a snapshot: later calls must not change what was saved
            tensors.append(t)
            return {"kind": "tensor", "index": len(tensors) - 1, "dtype": str(leaf.dtype).replace("torch.", ""),
                    "shape": list(leaf.shape)}
        if isinstance(leaf, (bool, int, float)):
            tensors.append(torch.tensor(leaf))
            return {"kind": "scalar", "index": len(tensors) - 1, "dtype": type(leaf).__name__}
        return {"kind": "other", "repr": repr(leaf)[:200]}


class ContractError(Exception):
    """The program file does not follow the tcfuzz program contract (docs/programs.md)."""


class CompileConfigError(Exception):
    """The job's compile configuration names something torch does not have."""


def python_leaf(leaf):
    """A Python-state leaf as saved: a repr (str) becomes a TextLeaf, compared as text; values stay."""
    return TextLeaf(leaf) if isinstance(leaf, str) else leaf


def _grad_leaf(t):
    """A floating or complex input tensor as a fresh leaf that requires grad; anything else unchanged."""
    if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()):
        return t.detach().requires_grad_(True)
    return t




def exception_record(exc):
    t = type(exc)
    tb = "".join(traceback.format_exception(t, exc, exc.__traceback__))
    try:
        node_trace = failing_node_stack_trace(exc)
    except Exception:  # reading a frame's locals must never cost the record
        node_trace = ""
    return {
        "type": t.__name__,
        "qualified_type": f"{t.__module__}.{t.__qualname__}",
        "message": str(exc)[:4000],
        "traceback": tb[-16000:],
        "node_stack_trace": node_trace[-4000:],
    }


def is_oom(exc):
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc)
    return any(m in text for m in OOM_MARKERS)


def sticky_cuda_error(result):
    """The sticky CUDA error marker in a job's result (its exception message), or None."""
    message = ((result or {}).get("exception") or {}).get("message", "")
    return next((m for m in STICKY_CUDA_MARKERS if m in message), None)


def cap_gpu_memory(job):
    """Caps the CUDA caching allocator at the job's gpu_memory_mb (0: no cap); a job past it raises
    torch.OutOfMemoryError, which is_oom makes an `oom` result. Touches CUDA, so only in a job's child."""
    cap_mb = int((job.get("limits") or {}).get("gpu_memory_mb", 0))
    if cap_mb <= 0 or not str(job.get("device", "cpu")).startswith("cuda") or not torch.cuda.is_available():
        return
    device = torch.device(job.get("device"))
    index = device.index if device.index is not None else torch.cuda.current_device()
    total_mb = torch.cuda.get_device_properties(index).total_memory / 2 ** 20
    torch.cuda.set_per_process_memory_fraction(min(1.0, cap_mb / total_mb), index)


def redirect_job_output(job_dir):
    """Points fds 1 and 2 (and sys.stdout/sys.stderr) at the job's stdout.txt and stderr.txt."""
    for fd, name in ((1, STDOUT_FILE), (2, STDERR_FILE)):
        target = os.open(os.path.join(job_dir, name), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)


def limit_address_space(job):
    """Caps this process's address space at its current size plus the job's memory_mb (CPU jobs; the
    soft limit only, so that a persistent child can move it up again for its next job)."""
    memory_mb = int((job.get("limits") or {}).get("memory_mb", 0))
    if memory_mb and job.get("device", "cpu") == "cpu":
        # RLIMIT_AS counts address space; CUDA reserves huge ranges, so there the RSS watchdog rules.
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        limit = vm_size_bytes() + memory_mb * 2 ** 20
        if hard != resource.RLIM_INFINITY:
            limit = min(limit, hard)
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def lift_address_space_limit():
    """Lifts the soft address-space limit again (between the jobs of a persistent child)."""
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))


def execute_job(job):
    """Runs one job of any kind in this process and returns its result object (never raises: what the
    program raises is the result)."""
    threads = int(job.get("threads", 0))
    if threads > 0:
        torch.set_num_threads(threads)
    run = ChildRun(job)
    kind = job.get("kind", "program")
    try:
        cap_gpu_memory(job)
        if kind == "script":
            result = run_script_job(run)
        elif kind == "bisect":
            result = run.bisect()
        elif kind == "lift":
            result = run_lift_job(run)
        elif kind == "program":
            result = run.run()
        else:
            raise ValueError(f"unknown job kind {kind!r}")
    except BaseException as exc:  # noqa: BLE001  (everything the program raises is a result)
        status = "oom" if is_oom(exc) else "exception"
        result = {"status": status, "phase": run.phase, "exception": exception_record(exc), "times": run.times}
        if run.job.get("mode") == "compiled":
            # The compile time up to the failure, as a job that ran reports it: its phases then sum to it.
            run.times.setdefault("compile_s", run.compile_seconds + run.export_seconds)
            try:
                result["compile_facts"] = compile_facts()
                result["compile_phases"] = compile_phases(run.compile_seconds)
            except Exception:  # noqa: BLE001
                pass
    run.release()
    GUARD.release()
    try:
        run.write_result(result)
    except BaseException:  # noqa: BLE001
        return None
    return result


def child_main(job, done_fd):
    """Runs in a fresh forked child. Never returns: writes result.json, then one byte to done_fd, then exits."""
    os.setsid()  # own process group: the zygote kills the whole group, compile workers included
    if job.get("cache_dir"):  # a cold cache of its own (read by Inductor and Triton at each use)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = job["cache_dir"]
        os.environ["TRITON_CACHE_DIR"] = os.path.join(job["cache_dir"], "triton")
    redirect_job_output(job["job_dir"])
    import faulthandler
    faulthandler.enable(file=sys.stderr)  # a segfault leaves the Python stack in stderr.txt
    limit_address_space(job)
    code = 0
    if execute_job(job) is not None:
        try:
            os.write(done_fd, b"1")
        except BaseException:  # noqa: BLE001
            code = 3
    else:
        code = 3
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def vm_size_bytes():
    """This process's address-space size (the base of the child's RLIMIT_AS)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()
