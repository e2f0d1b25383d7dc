"""The bisect job (run_bisect, for child.py's ChildRun.bisect) and its numeric check: the oracle's rule,
in Python, over the leaves of one eager, compiled and fp64 run, with the tolerance table the job carries.

Imported by zygote.py (through child.py) before any fork: nothing here runs a torch op at import time.
"""

import sys
import time
import traceback

import torch


class JobError(Exception):
    """The job message itself is malformed: a tcfuzz bug, not the program's."""


# The keys of the oracle's tolerance table (ComparatorOptions::toleranceTable in oracles/judge/Comparator.h).
TOLERANCE_TABLE_KEYS = ("float32", "float64", "float16", "bfloat16", "unarbitrated_factor")


def bisect_tolerances(spec):
    """The tolerance table of a bisect job's spec (job["bisect"]["tolerances"], which tcfuzz fills from
    ComparatorOptions::toleranceTable); raises JobError naming what is missing. There is no default."""
    table = spec.get("tolerances")
    if not isinstance(table, dict):
        raise JobError('bisect job has no tolerance table: job["bisect"]["tolerances"] must be the oracle\'s '
                       "ComparatorOptions::toleranceTable() (ProgramTester::bisect sends it)")
    missing = [key for key in TOLERANCE_TABLE_KEYS
               if isinstance(table.get(key), bool) or not isinstance(table.get(key), (int, float))]
    if missing:
        raise JobError(f'bisect job\'s tolerance table (job["bisect"]["tolerances"]) lacks a number for '
                       f"{', '.join(missing)}")
    return table


def leaves_agree(eager, compiled, fp64, leaves, tolerances):
    """The numeric check of a bisect job, as the oracle makes it (oracles/judge/Comparator.cpp): per leaf
    (all floating ones when `leaves` is empty), torch._dynamo.utils.same(eager, compiled, fp64) on
    the elements where eager is finite, after NaN/Inf placement, dtype and shape checks. Without an
    fp64 reference, allclose at the dtype's tolerance times the table's "unarbitrated_factor".
    `tolerances` is the job's table (bisect_tolerances), never a default."""
    from torch._dynamo.utils import same
    if len(eager) != len(compiled):
        return False
    if fp64 is not None and len(fp64) != len(eager):
        fp64 = None
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
            loose = tol * tolerances["unarbitrated_factor"]
            if not torch.allclose(e[finite].double(), c[finite].double(), atol=loose, rtol=loose):
                return False
        elif not same(e[finite], c[finite], fp64_ref=r[finite], tol=tol, equal_nan=True):
            print(f"bisect: leaf {i} diverges")
            return False
    return True


def run_bisect(run, stdout_tail):
    """A bisect job of ChildRun `run` (child.py): CompilerBisector.do_bisect over Inductor, which backend,
    subsystem and application first fails (check "crash": the compiled run raises; "numeric": it
    diverges from eager, arbitrated by fp64). stdout_tail() gives the tail of the job's stdout.
    Raises JobError when the job carries no tolerance table (job["bisect"]["tolerances"])."""
    spec = run.job.get("bisect") or {}
    tolerances = bisect_tolerances(spec)
    try:
        from torch._inductor.compiler_bisector import CompilerBisector
    except ImportError:
        return {"status": "ok", "phase": "done", "bisect": {"available": False}, "times": run.times}
    check = spec.get("check", "crash")
    run.job["compile"] = dict(run.job.get("compile") or {}, backend="inductor")  # the bisector drives the backend
    run.mark("load")
    ns = run.load_program()
    run.mark("config")
    run.apply_compile_config()
    run.mark("setup")
    eager = fp64 = None
    if check == "numeric":
        eager = run.leaves(ns, "eager")
        try:
            fp64 = run.leaves(ns, "fp64")
        except Exception:  # noqa: BLE001  (no fp64 reference: compared without it)
            traceback.print_exc()

    def compiles_correctly():
        torch._dynamo.reset()
        try:
            compiled = run.leaves(ns, "compiled")
        except Exception:  # noqa: BLE001  (a failing compiled run is the "bad" outcome)
            traceback.print_exc()
            return False
        if check == "crash":
            return True
        return leaves_agree(eager, compiled, fp64, spec.get("leaves") or [], tolerances)

    t0 = time.monotonic()
    found = CompilerBisector.do_bisect(compiles_correctly)
    run.times["run_s"] = time.monotonic() - t0
    sys.stdout.flush()
    info = {"available": True, "found": found is not None}
    if found is not None:
        info.update(backend=found.backend, subsystem=found.subsystem, bisect_number=found.bisect_number,
                    debug_info=found.debug_info)
    return {"status": "ok", "phase": "done", "bisect": info, "times": run.times,
            "stdout_tail": stdout_tail()}
