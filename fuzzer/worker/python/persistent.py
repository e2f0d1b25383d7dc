"""The warm side of the worker: what the zygote warms before it forks (warm_zygote), and the persistent
child that serves many program jobs in one warm process (serve_jobs), AFL's persistent mode for
torch.compile.

A fresh child pays for everything a process does once before its first compile: the CPU ISA probe
(six `python -c "import torch"` subprocesses, about 11 s on this project's 2-core machine), hashing
torch's sources, loading Inductor's modules and its first C++ build. warm_zygote does the parts that
start no thread and run no torch op (so forking stays safe); a persistent child does the rest once,
in a warm-up compile, and then compiles each program in 1-3 s instead of 4-30 s.

Between jobs a persistent child resets the compiler (Dynamo's caches, counters, Inductor's and
Dynamo's config, grad mode, default dtype, threads) and compares a fingerprint of torch's global
state against the one taken after its warm-up; any difference (a program that monkeypatched torch,
left a mode on the stack, ...) is a state leak and the child retires. A persistent child's finding
is confirmed in a fresh process before it counts (ProgramTester::confirm).

Imported by zygote.py before any fork: nothing here runs a torch op at import time.
"""

import gc
import hashlib
import json
import os
import struct
import sys
import time
import warnings

import torch
import torch._dynamo
import torch._inductor.config

from child import execute_job, lift_address_space_limit, limit_address_space, redirect_job_output, sticky_cuda_error
from reference.repro_shared import global_hook_tables

LEAK_FILE = "state_leak.txt"
STICKY_FILE = "cuda_sticky.txt"  # the sticky CUDA error that retired the child (its context is unusable)

# The done-pipe bytes a persistent child sends after each job.
DONE_KEEP = b"1"     # result.json written; ready for the next job
DONE_RETIRE = b"2"   # result.json written; this process leaked state and must be replaced
DONE_NO_RESULT = b"3"  # result.json could not be written (for example a full disk); retire
DONE_WARM = b"w"     # sent once, before any job's byte: the warm-up compile is over


def _private(*candidates):
    """The first of `candidates` ("module:attribute") this torch has, or None: where a private helper
    lives moves between releases (torch 2.4 keeps the ISA probe in codecache, newer ones in cpu_vec_isa)."""
    import importlib
    for candidate in candidates:
        module, _, name = candidate.partition(":")
        try:
            found = getattr(importlib.import_module(module), name, None)
        except ImportError:
            continue
        if found is not None:
            return found
    return None


class _Missing(Exception):
    """A private torch helper this torch does not have (the warm-up step is skipped)."""


def _call_first(*candidates):
    """Calls the first of `candidates` this torch has (see _private); _Missing when it has none."""
    fn = _private(*candidates)
    if fn is None:
        raise _Missing(f"this torch has none of {', '.join(candidates)}")
    return fn()


class LinkerUnavailable(Exception):
    """--kernel-linker lld was asked for, and this machine or torch cannot give it (the message says why)."""


def choose_kernel_linker(wanted):
    """Links Inductor's C++ kernels with LLD when `wanted` is "lld" or "auto", by setting CXX to
    "<compiler> -fuse-ld=lld" before torch looks its compiler up. Only the link step changes: the compiler,
    its flags and so the kernels' code are the same, and LLD links a kernel against libtorch in about 0.12 s
    where GNU ld takes 0.31 s (a third of each kernel's build on CPU). Needs `ld.lld` and a torch that splits a
    CXX command line (cpp_builder._split_compiler_command: torch 2.15 has it, 2.11 not). A CXX the user set is kept.
    Returns the linker in use: "lld" or "default". "auto" falls back to "default" with a note on stderr;
    "lld" raises LinkerUnavailable instead."""
    import shutil
    if wanted not in ("auto", "lld", "default"):
        raise LinkerUnavailable(f"--kernel-linker {wanted}: expected auto, lld or default")
    if wanted == "default":
        return "default"
    cpp_builder = _private("torch._inductor.cpp_builder:_split_compiler_command")
    if os.environ.get("CXX"):
        why = f"CXX is set ({os.environ['CXX']}): the user's compiler command is kept as it is"
    elif cpp_builder is None:
        why = "this torch takes CXX as one program, not a command line with flags"
    elif shutil.which("ld.lld") is None:
        why = "ld.lld is not installed (Debian: lld)"
    elif shutil.which("g++") is None:
        why = "g++ is not installed"
    else:
        # torch._inductor.config read CXX when torch was imported: set both, so children (and their
        # compile subprocesses) agree. A persistent child's config snapshot is taken after this.
        os.environ["CXX"] = "g++ -fuse-ld=lld"
        import torch._inductor.config as inductor_config
        inductor_config.cpp.cxx = (None, os.environ["CXX"])
        return "lld"
    if wanted == "lld":
        raise LinkerUnavailable(f"--kernel-linker lld: {why}")
    print(f"tcfuzz zygote: kernels link with the compiler's default linker: {why}", file=sys.stderr)
    return "default"


def share_precompiled_headers(directory):
    """Points Inductor's precompiled headers at `directory` (tcfuzz's TCFUZZ_HEADER_CACHE_DIR, shared by
    every run of the user) instead of TMPDIR, which is private to one run: building them costs about 6 s
    and 150 MB on CPU per run. Torch keys each header by its preprocessed text, flags and compiler, and keeps
    them out of a fresh cache by design, so a cold-cache confirmation is as cold as torch's fresh_cache.
    Returns the directory used, None where this torch keeps no such directory (nothing to share) or none
    was given."""
    codecache = sys.modules.get("torch._inductor.codecache")
    if not directory or codecache is None or not hasattr(codecache, "_HEADER_DIR"):
        return None
    codecache._HEADER_DIR = directory
    if hasattr(codecache, "_HEADER_LOCK_DIR"):
        codecache._HEADER_LOCK_DIR = os.path.join(directory, "locks")
    return directory


def warm_zygote():
    """Warms, in the zygote, what every child would otherwise redo: the CPU ISA probe, torch's source
    hash and the C++ compiler lookup. Starts no thread and runs no torch op. Returns {step: seconds};
    a step this torch lacks (or that fails) is skipped with a note on stderr and named with a negative
    time: the children then do it themselves."""
    done = {}

    def step(name, fn):
        t0 = time.monotonic()
        try:
            fn()
            done[name] = time.monotonic() - t0
        except Exception as exc:  # noqa: BLE001  (an older or newer torch lacks it: the children do it)
            print(f"tcfuzz zygote: warm-up step {name} skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
            done[name] = -1.0

    def isa():
        _call_first("torch._inductor.cpu_vec_isa:valid_vec_isa_list", "torch._inductor.codecache:valid_vec_isa_list")
        _call_first("torch._inductor.cpu_vec_isa:pick_vec_isa", "torch._inductor.codecache:pick_vec_isa")

    def source_hash():
        _call_first("torch._inductor.codecache:torch_key")

    def compiler():
        # Newer torch: cpp_builder.get_cpp_compiler; torch 2.4 caches two lookups, the builder's and codecache's.
        current = _private("torch._inductor.cpp_builder:get_cpp_compiler")
        lookups = [current] if current else [f for f in (_private("torch._inductor.cpp_builder:_get_cpp_compiler"),
                                                           _private("torch._inductor.codecache:cpp_compiler")) if f]
        if not lookups:
            raise _Missing("this torch has no C++ compiler lookup tcfuzz knows")
        for lookup in lookups:
            lookup()

    step("cpu_isa", isa)
    step("torch_key", source_hash)
    step("cxx_compiler", compiler)
    return done


def _namespaces():
    """The namespaces whose public bindings a state fingerprint watches."""
    return (torch.__dict__, torch.nn.functional.__dict__, torch.Tensor.__dict__)


def public_function_names():
    """The public names of torch, torch.nn.functional and torch.Tensor now: the ones a fingerprint watches
    (names added later, by a lazy import, are not a leak)."""
    return [sorted(k for k in ns if not k.startswith("__")) for ns in _namespaces()]


def _function_table_hash(names):
    """A hash of what each watched name is bound to: it changes when a program monkeypatches or deletes one."""
    h = hashlib.sha1()
    for namespace, watched in zip(_namespaces(), names):
        for name in watched:
            h.update(f"{name}:{id(namespace.get(name))};".encode())
    return h.hexdigest()


def state_fingerprint(function_names):
    """Torch's process-global state that one program could leave behind for the next: {name: value};
    `function_names` are the public names whose bindings are watched (public_function_names). An entry
    this torch cannot report is left out (of the baseline too, so it never reads as a leak)."""
    state = {
        "default_dtype": str(torch.get_default_dtype()),
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "anomaly_mode": torch.is_anomaly_enabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "num_threads": torch.get_num_threads(),
        "mkldnn_enabled": torch.backends.mkldnn.enabled,
        "cudnn": (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
                  torch.backends.cudnn.allow_tf32),
        "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "functions": _function_table_hash(function_names),
        "global_module_hooks": [len(table) for table in global_hook_tables()],
    }
    for name, stack in (("function_mode_stack", "torch.overrides:_get_current_function_mode_stack"),
                        ("dispatch_mode_stack", "torch.utils._python_dispatch:_get_current_dispatch_mode_stack")):
        current = _private(stack)
        if current is not None:
            state[name] = len(current())
    if hasattr(torch, "get_default_device"):
        state["default_device"] = str(torch.get_default_device())
    return state


def _save_config(module):
    """A snapshot of config module `module` that its load_config restores: save_config's blob, else a copy
    of its option dict (torch 2.4's torch._dynamo.config.save_config raises KeyError 'constant_functions');
    None when it has neither."""
    try:
        return module.save_config()
    except Exception:  # noqa: BLE001  (a torch whose save_config is broken: the plain dict instead)
        pass
    for copy in ("get_config_copy", "shallow_copy_dict"):
        try:
            return getattr(module, copy)()
        except Exception:  # noqa: BLE001
            continue
    return None


class CompilerBaseline:
    """The compiler configuration and global state of a persistent child right after its warm-up: what
    reset_compiler_state restores and what state_leaks compares against."""

    def __init__(self):
        import torch._functorch.config as functorch_config
        self.configs = []
        for module in (torch._inductor.config, torch._dynamo.config, functorch_config):
            saved = _save_config(module)
            if saved is None:
                print(f"tcfuzz persistent child: {module.__name__} cannot be saved on this torch: it is not reset "
                      "between jobs", file=sys.stderr)
            else:
                self.configs.append((module, saved))
        self.num_threads = torch.get_num_threads()
        self.default_dtype = torch.get_default_dtype()
        self.function_names = public_function_names()
        self.global_hooks = [(table, dict(table)) for table in global_hook_tables()]
        self.fingerprint = state_fingerprint(self.function_names)


def reset_compiler_state(baseline):
    """Puts the compiler back as the warm-up left it: Dynamo's caches and counters, Inductor's metrics and
    per-phase timings, the config modules saved in `baseline`, grad mode, default dtype and thread count.
    What this torch lacks (a private counter table) is skipped."""
    torch._dynamo.reset()
    for table in ("torch._dynamo.utils:counters", "torch._dynamo.utils:compilation_time_metrics"):
        found = _private(table)
        if found is not None:
            found.clear()
    metrics_reset = _private("torch._inductor.metrics:reset")
    if metrics_reset is not None:
        metrics_reset()
    with warnings.catch_warnings():  # torch 2.15 warns for each deprecated option load_config sets back
        warnings.simplefilter("ignore", FutureWarning)
        for module, saved in baseline.configs:
            module.load_config(saved)
    for table, built in baseline.global_hooks:  # a program's register_module_forward_hook and kin
        table.clear()
        table.update(built)
    torch.set_grad_enabled(True)
    torch.set_default_dtype(baseline.default_dtype)
    torch.set_num_threads(baseline.num_threads)
    gc.collect()


def state_leaks(baseline):
    """The names of the global-state entries that differ from the baseline after a reset ([] when clean)."""
    now = state_fingerprint(baseline.function_names)
    return sorted(k for k in set(now) | set(baseline.fingerprint) if now.get(k) != baseline.fingerprint.get(k))


def warm_up_compile(device):
    """One small forward and backward compile with Inductor on `device`: loads Inductor's modules, builds
    its precompiled header and fills the per-process caches before the first real job. A failure is
    only logged: the first job then pays for the warm-up itself."""
    t0 = time.monotonic()
    try:
        x = torch.randn(8, 8, device=device, requires_grad=True)
        fn = torch.compile(lambda t: torch.nn.functional.relu(t @ t.t()).sum(1) + t.sin().mean(), backend="inductor")
        fn(x).sum().backward()
        with torch.no_grad():
            fn(torch.randn(8, 8, device=device))
    except Exception as exc:  # noqa: BLE001
        print(f"tcfuzz persistent child: warm-up compile failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    return time.monotonic() - t0


def read_job(fd):
    """The next job from the zygote (a 4-byte length, then JSON), or None at EOF (retired)."""
    header = _read_exactly(fd, 4)
    if header is None:
        return None
    payload = _read_exactly(fd, struct.unpack(">I", header)[0])
    return None if payload is None else json.loads(payload)


def write_job(fd, job):
    """Sends one job to a persistent child (the framing read_job reads)."""
    payload = json.dumps(job).encode()
    os.write(fd, struct.pack(">I", len(payload)) + payload)


def _read_exactly(fd, n):
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def serve_jobs(job_fd, done_fd, device):
    """The persistent child's life: its own session, a warm-up compile, then jobs until EOF on job_fd.
    After each job it resets the compiler, checks for state leaks and sends one byte on done_fd
    (DONE_KEEP, DONE_RETIRE or DONE_NO_RESULT). Never returns."""
    os.setsid()  # own process group: the zygote kills it whole, compile subprocesses included
    import faulthandler
    faulthandler.enable(file=sys.stderr)  # follows fd 2, which points at the current job's stderr.txt
    os.environ.setdefault("TCFUZZ_PERSISTENT_CHILD", "1")
    warm_s = warm_up_compile(device)
    os.write(done_fd, DONE_WARM)
    baseline = None
    code = 0
    while True:
        job = read_job(job_fd)
        if job is None:
            break
        if baseline is None:  # taken at the first job: the warm-up's compiled frames are gone by then
            torch._dynamo.reset()
            baseline = CompilerBaseline()
            reset_compiler_state(baseline)  # the first job's figures must not count the warm-up compile
            # The warm-up imported Inductor (about 475k objects the zygote's freeze never saw): out of the
            # collector's reach, each reset's full collection scans only what jobs made (0.37 s to 0.01 s).
            gc.freeze()
        redirect_job_output(job["job_dir"])
        limit_address_space(job)
        result = execute_job(job)
        lift_address_space_limit()
        sys.stdout.flush()
        sys.stderr.flush()
        if result is None:
            os.write(done_fd, DONE_NO_RESULT)
            code = 3
            break
        sticky = sticky_cuda_error(result)
        if sticky:  # every later CUDA call of this process would fail: a fresh child takes the next job
            with open(os.path.join(job["job_dir"], STICKY_FILE), "w") as f:
                f.write(sticky)
            os.write(done_fd, DONE_RETIRE)
            break
        reset_compiler_state(baseline)
        leaks = state_leaks(baseline)
        if leaks:
            with open(os.path.join(job["job_dir"], LEAK_FILE), "w") as f:
                f.write(", ".join(leaks))
            os.write(done_fd, DONE_RETIRE)
            break
        os.write(done_fd, DONE_KEEP)
    print(f"tcfuzz persistent child: warm-up {warm_s:.2f} s", file=sys.stderr)
    os._exit(code)
