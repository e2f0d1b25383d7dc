"""The numeric check of a bisect job (child.py's ChildRun.bisect): the oracle's rule, in Python, over the
leaves of one eager, compiled and fp64 run, with the tolerance table the job carries.

Imported by zygote.py (through child.py) before any fork: nothing here runs a torch op at import time.
"""

import torch


class JobError(Exception):
    """The job message itself is malformed: a tcfuzz bug, not the program's."""


# The keys of the oracle's tolerance table (ComparatorOptions::toleranceTable in oracles/Comparator.h).
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
    """The numeric check of a bisect job, as the oracle makes it (oracles/Comparator.cpp): per leaf
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
