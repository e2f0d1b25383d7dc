# ---- The judge: eager against compiled, arbitrated by float64 (oracles/judge/Comparator.cpp and
# Verdict.cpp say the same in C++). Template: oracles/reporter/repro/repro_compare.py in tcfuzz.
def as_real_tensor(leaf):
    if isinstance(leaf, torch.SymInt):
        leaf = int(leaf)
    if isinstance(leaf, (bool, int, float)):
        leaf = torch.tensor(leaf)
    if isinstance(leaf, torch.Tensor) and leaf.is_complex():
        leaf = torch.view_as_real(leaf.resolve_conj())
    return leaf


def same_non_finite(a, b):
    return all(torch.equal(f(a), f(b)) for f in (torch.isnan, torch.isposinf, torch.isneginf))


def compare_leaf(eager, compiled, fp64, steps=1):
    """'pass', 'fail' or 'unstable' (eager has NaN/Inf where fp64 does not: not judged), and a note. A leaf that
    carries the rounding of `steps` training steps is judged at `steps` times its dtype's tolerance."""
    eager, compiled, fp64 = as_real_tensor(eager), as_real_tensor(compiled), as_real_tensor(fp64)
    if not isinstance(eager, torch.Tensor) or not isinstance(compiled, torch.Tensor):
        if repr(eager) == repr(compiled):
            return "pass", ""
        return "fail", f"{eager} != {compiled}" if isinstance(eager, str) else f"{eager!r} != {compiled!r}"
    if eager.dtype != compiled.dtype or eager.shape != compiled.shape:
        return "fail", f"eager {eager.dtype}{list(eager.shape)} vs compiled {compiled.dtype}{list(compiled.shape)}"
    if CASE.get("exact_backend"):  # the judge held compiled to eager's own kernels: bit for bit
        nan_e, nan_c = (eager.isnan(), compiled.isnan()) if eager.is_floating_point() else (None, None)
        same = (torch.equal(nan_e, nan_c) and torch.equal(eager[~nan_e], compiled[~nan_c]) if nan_e is not None
                else torch.equal(eager, compiled))
        return ("pass" if same else "fail"), "backend=eager must equal eager bit for bit"
    if not isinstance(fp64, torch.Tensor) or fp64.shape != eager.shape:
        fp64 = None
    if not eager.is_floating_point():
        if torch.equal(eager, compiled):
            return "pass", ""
        if fp64 is not None and not fp64.is_floating_point() and (compiled != fp64).sum() <= (eager != fp64).sum():
            return "pass", "integers differ, but compiled is no further from fp64 than eager"
        return "fail", f"{eager.dtype} values differ"
    tol = CASE["tolerances"].get(str(eager.dtype).replace("torch.", ""), CASE["tolerances"]["float32"]) * steps
    if fp64 is not None and fp64.is_floating_point() and not same_non_finite(eager.double(), fp64.double()):
        return "unstable", "eager and fp64 disagree on NaN/Inf placement"
    if not same_non_finite(eager.double(), compiled.double()):
        return "fail", "NaN/Inf placement differs between eager and compiled"
    finite = torch.isfinite(eager)
    e, c = eager[finite], compiled[finite]
    max_abs = (e.double() - c.double()).abs().max().item() if e.numel() else 0.0
    if fp64 is None or not fp64.is_floating_point():
        loose = tol * CASE["tolerances"]["unarbitrated_factor"]  # no arbiter: fail only far beyond tol
        ok = torch.allclose(e.double(), c.double(), atol=loose, rtol=loose)
        return ("pass" if ok else "fail"), f"max abs diff {max_abs:.6g}, no fp64 reference (tol {loose:g})"
    slip = zero_slip(eager, compiled, fp64)
    r = fp64[finite].double()
    rmse_eager = torch._dynamo.utils.rmse(r, e.double()).item() if e.numel() else 0.0
    rmse_compiled = torch._dynamo.utils.rmse(r, c.double()).item() if e.numel() else 0.0
    ok = torch._dynamo.utils.same(e, c, fp64_ref=r, tol=tol, equal_nan=True)
    note = f"max abs diff {max_abs:.6g}, rmse(eager, fp64) {rmse_eager:.6g}, rmse(compiled, fp64) {rmse_compiled:.6g}"
    if ok and slip:
        return slip
    return ("pass" if ok else "fail"), note


def zero_slip(eager, compiled, fp64):
    """('signed-zero', note) when compiled flips the sign of zeros on which eager and fp64 agree,
    ('denormal-flush', note) when it flushes subnormals that eager and fp64 both keep, else None
    (oracles/judge/Comparator.cpp, countZeroSlips)."""
    e, c, r = eager.double(), compiled.double(), fp64.double()
    zeros = (e == 0) & (c == 0) & (r == 0) & (torch.signbit(e) == torch.signbit(r))
    flipped = int((zeros & (torch.signbit(e) != torch.signbit(c))).sum())
    if flipped:
        return "signed-zero", f"compiled flips the sign of {flipped} zero(s) on which eager and fp64 agree"
    normal = torch.finfo(eager.dtype).tiny
    flushed = int(((e != 0) & (e.abs() < normal) & (r != 0) & (r.abs() < normal) & (c == 0)).sum())
    if flushed:
        return "denormal-flush", f"compiled flushes {flushed} subnormal(s) to zero that eager and fp64 keep"
    return None


def compare(eager, compiled, fp64):
    """The verdict for two runs that both succeeded: 'agree', 'invalid-program', or the wrong result of the
    first failing leaf's role: 'numeric-divergence', 'mutation-divergence', 'second-call-divergence' or
    'aliasing-divergence'."""
    (eager, names, roles), (compiled, _, _) = eager, compiled
    fp64, fp64_names = fp64[:2] if fp64 is not None else (None, [])
    if len(eager) != len(compiled):
        print(f"output structure differs: eager has {len(eager)} leaves, compiled {len(compiled)}")
        return "numeric-divergence"
    leaves = CASE["diverging_leaves"] or [
        i for i, t in enumerate(eager)
        if roles[i] == "alias" or isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex())
        or roles[i] in ("python-state", "schedule") and not isinstance(t, torch.Tensor)
    ]
    outcomes, first_role = [], None
    for i in leaves:
        if i >= len(eager):
            print(f"  leaf {i}: absent (the output has {len(eager)} leaves)")
            continue
        # fp64 arbitrates a leaf where its own leaf at that place has the same name (call 4 may differ in fp64)
        same = fp64 is not None and i < len(fp64) and fp64_names[i] == names[i]
        steps = int(CASE["compile"]["training"]["steps"]) if roles[i] == "training" else 1
        outcome, note = compare_leaf(eager[i], compiled[i], fp64[i] if same else None, steps)
        if outcome in ("signed-zero", "denormal-flush") and roles[i] != "output":
            outcome = "pass"  # judged on call 1's forward outputs only (oracles/judge/Verdict.cpp, zeroSlip)
        print(f"  leaf {i} ({names[i]}): {outcome}; {note}")
        outcomes.append(outcome)
        if outcome == "fail" and first_role is None:
            first_role = roles[i]
    if "unstable" in outcomes:
        return "invalid-program"
    if first_role is None:
        for slip in ("signed-zero", "denormal-flush"):
            if slip in outcomes:
                return slip
        return "agree"
    return WRONG_RESULT_OF_ROLE.get(first_role, "numeric-divergence")


# The verdict of a wrong result by the role of its first failing leaf (oracles::wrongResultOfRole).
WRONG_RESULT_OF_ROLE = {"state": "mutation-divergence", "python-state": "mutation-divergence",
                        "second-call": "second-call-divergence", "fresh-inputs": "second-call-divergence",
                        "resized": "second-call-divergence", "moved": "second-call-divergence",
                        "schedule": "second-call-divergence",
                        "alias": "aliasing-divergence"}
