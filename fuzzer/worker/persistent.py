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

import torch
import torch._dynamo
import torch._inductor.config

from child import execute_job, lift_address_space_limit, limit_address_space, redirect_job_output

LEAK_FILE = "state_leak.txt"

# The done-pipe bytes a persistent child sends after each job.
DONE_KEEP = b"1"     # result.json written; ready for the next job
DONE_RETIRE = b"2"   # result.json written; this process leaked state and must be replaced
DONE_NO_RESULT = b"3"  # result.json could not be written (for example a full disk); retire


def warm_zygote():
    """Warms, in the zygote, what every child would otherwise redo: the CPU ISA probe, torch's source
    hash and the C++ compiler lookup. Starts no thread and runs no torch op. Returns {step: seconds};
    a step this torch lacks is skipped and named with a negative time."""
    done = {}

    def step(name, fn):
        t0 = time.monotonic()
        try:
            fn()
            done[name] = time.monotonic() - t0
        except Exception as exc:  # noqa: BLE001  (an older torch lacks it: the children do it themselves)
            print(f"tcfuzz zygote: warm-up step {name} skipped: {type(exc).__name__}: {exc}", file=sys.stderr)
            done[name] = -1.0

    def isa():
        from torch._inductor import cpu_vec_isa
        cpu_vec_isa.valid_vec_isa_list()
        cpu_vec_isa.pick_vec_isa()

    def source_hash():
        from torch._inductor.codecache import torch_key
        torch_key()

    def compiler():
        from torch._inductor.cpp_builder import get_cpp_compiler
        get_cpp_compiler()

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
    `function_names` are the public names whose bindings are watched (public_function_names)."""
    from torch.overrides import _get_current_function_mode_stack
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    state = {
        "default_dtype": str(torch.get_default_dtype()),
        "grad_enabled": torch.is_grad_enabled(),
        "inference_mode": torch.is_inference_mode_enabled(),
        "anomaly_mode": torch.is_anomaly_enabled(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "num_threads": torch.get_num_threads(),
        "function_mode_stack": len(_get_current_function_mode_stack()),
        "dispatch_mode_stack": len(_get_current_dispatch_mode_stack()),
        "mkldnn_enabled": torch.backends.mkldnn.enabled,
        "cudnn": (torch.backends.cudnn.enabled, torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic,
                  torch.backends.cudnn.allow_tf32),
        "cuda_matmul_tf32": torch.backends.cuda.matmul.allow_tf32,
        "functions": _function_table_hash(function_names),
    }
    if hasattr(torch, "get_default_device"):
        state["default_device"] = str(torch.get_default_device())
    return state


class CompilerBaseline:
    """The compiler configuration and global state of a persistent child right after its warm-up: what
    reset_compiler_state restores and what state_leaks compares against."""

    def __init__(self):
        import torch._functorch.config as functorch_config
        self.configs = [(module, module.save_config()) for module in
                        (torch._inductor.config, torch._dynamo.config, functorch_config)]
        self.num_threads = torch.get_num_threads()
        self.default_dtype = torch.get_default_dtype()
        self.function_names = public_function_names()
        self.fingerprint = state_fingerprint(self.function_names)


def reset_compiler_state(baseline):
    """Puts the compiler back as the warm-up left it: Dynamo's caches and counters, Inductor's metrics and
    per-phase timings, the three config modules, grad mode, default dtype and thread count."""
    torch._dynamo.reset()
    from torch._dynamo.utils import counters
    counters.clear()
    try:
        from torch._dynamo.utils import compilation_time_metrics
        compilation_time_metrics.clear()
    except ImportError:
        pass
    import torch._inductor.metrics as metrics
    metrics.reset()
    for module, saved in baseline.configs:
        module.load_config(saved)
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
    baseline = None
    code = 0
    while True:
        job = read_job(job_fd)
        if job is None:
            break
        if baseline is None:  # taken at the first job: the warm-up's compiled frames are gone by then
            torch._dynamo.reset()
            baseline = CompilerBaseline()
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
