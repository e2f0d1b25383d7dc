"""What a compiled job reports about its compilation: Dynamo's and Inductor's counters and metrics
(compile_facts) and the compile time split by phase (compile_phases). Imported by child.py before any
fork; nothing here runs a torch op at import time. Per-process figures: a persistent child clears them
between jobs (persistent.reset_compiler_state)."""

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
        "inductor_counters": _numeric(counters.get("inductor", {})),
        "inductor_metrics": inductor_metrics(),
        "aot_autograd_counters": _numeric(counters.get("aot_autograd", {})),
    }
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
