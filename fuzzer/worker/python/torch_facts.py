"""What the worker's torch is and what it has, for the zygote's hello (fuzzer/worker/Protocol.h, Hello).

One tcfuzz build drives any torch from 2.4 on, so tcfuzz learns the version from here, not from the
LibTorch it links, and asks here before it relies on an optional part. Runs no torch op and never
initializes CUDA (the zygote forks after this).
"""

import importlib.metadata
import importlib.util
import os
import sys

import torch
import torch._dynamo.utils
import torch._inductor.config


def _installed_version(*distributions):
    """The version of the first of `distributions` that is installed, or ""."""
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return ""


def _has_module(name):
    """Whether module `name` exists, without importing it (a missing parent counts as missing)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def inductor_options():
    """The dotted names of every torch._inductor.config option ("cpp.simdlen", "triton.cudagraphs"), then of every
    torch._dynamo.config option under "dynamo." ("dynamo.capture_scalar_outputs")."""
    def names(config):
        try:
            return list(config.get_config_copy().keys())
        except Exception:  # noqa: BLE001  (a torch without get_config_copy: its private table)
            return list(getattr(config, "_config", {}).keys())
    import torch._dynamo.config
    return sorted(names(torch._inductor.config)) + sorted("dynamo." + n for n in names(torch._dynamo.config))


def features():
    """The optional parts tcfuzz uses that this torch has; tcfuzz skips the others with a note."""
    found = {
        "compiler_bisector": _has_module("torch._inductor.compiler_bisector"),
        "structured_trace": hasattr(torch, "_logging") and hasattr(torch._logging, "trace_structured"),
        "compilation_metrics": hasattr(torch._dynamo.utils, "compilation_time_metrics"),
        "inductor_metrics": _has_module("torch._inductor.metrics"),
        "cpu_vec_isa": _has_module("torch._inductor.cpu_vec_isa"),
        "unsigned_dtypes": all(hasattr(torch, f"uint{bits}") for bits in (16, 32, 64)),
        "float8_dtypes": hasattr(torch, "float8_e4m3fn") and hasattr(torch, "float8_e5m2"),
        # Inductor's CUTLASS GEMM backend needs NVIDIA's cutlass Python package beside torch.
        "cutlass": _has_module("cutlass_library") or _has_module("cutlass"),
    }
    return sorted(name for name, present in found.items() if present)


def torch_facts():
    """The hello's torch fields: version, git hash, CUDA and Triton versions, option names, features."""
    return {
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", ""),
        "torch_dir": os.path.dirname(torch.__file__),
        "cuda_version": torch.version.cuda or "",
        "triton": _installed_version("triton", "pytorch-triton", "pytorch-triton-rocm"),
        "python": sys.version.split()[0],
        "inductor_options": inductor_options(),
        "features": features(),
    }
