"""NNSmith's pt2 loop on one core, for scripts/bench's side-by-side with `tcfuzz fuzz`.

NNSmith's PyPI release (0.1.0) predates its pt2 backend, so this drives its generator directly:
per test, `nnsmith.graph_gen.model_gen` (symbolic-cinit, as `nnsmith.fuzz` does) makes a graph,
`TorchModelCPU.from_gir` materializes it as a SymbolNet, `refine_weights` searches for inputs
and `make_oracle` runs it eagerly. Then, as NNSmith's pt2 backend does, the graph is compiled
with `torch.compile(fullgraph=True, backend="inductor")`, run on the oracle's inputs and checked
with NNSmith's tolerances (rtol 1e-2, atol 1e-3, NaN equal NaN). The compiled module replays
SymbolNet's instructions without its eager-only NaN/Inf checks, which is what the pt2 backend's
FxTracing mode does upstream. torch._dynamo.reset() runs between tests.

Usage: nnsmith_loop.py --seconds 600 --seed 1 --max-nodes 5 --out summary.json
Writes {tests, seconds, tests_per_min, gen_failures, compile_errors, mismatches, torch_version,
nnsmith_version} (plus setup_seconds, the one-time operator dtype probe, not counted).
"""
import argparse
import json
import os
import random
import shutil
import tempfile
import time
import warnings

# One core, like one tcfuzz worker (its zygote sets the same), and a cache of this run's own.
os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"
CACHE_DIR = tempfile.mkdtemp(prefix="nnsmith-inductor-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = CACHE_DIR
warnings.filterwarnings("ignore")

import numpy as np
import torch
from torch import nn

import nnsmith
from nnsmith.graph_gen import model_gen
from nnsmith.materialize import Model
from nnsmith.narrow_spec import auto_opset


class Replay(nn.Module):
    """SymbolNet's forward without its data-dependent checks, so Dynamo traces it in one graph."""

    def __init__(self, net):
        super().__init__()
        self.net = net  # owns the parameters of the instructions

    def forward(self, *args):
        env = dict(zip(self.net.input_like, args))
        for inst, inps, outs, _ in self.net.instructions:
            res = inst(*[env[k] for k in inps])
            env.update(zip(outs, res if isinstance(res, (list, tuple)) else [res]))
        return tuple(env[k] for k in self.net.output_like)


def make_test(model_type, opset, seed, max_nodes):
    """One NNSmith test case: (SymbolNet, oracle inputs, oracle outputs), as nnsmith.fuzz makes it."""
    gen = model_gen(opset=opset, method="symbolic-cinit", seed=seed, max_nodes=max_nodes,
                    max_elem_per_tensor=65536, timeout_ms=10000)
    model = model_type.from_gir(gen.make_concrete())
    model.refine_weights()
    oracle = model.make_oracle()
    return model.torch_model, oracle.input, oracle.output


def compile_and_check(net, inputs, expected):
    """Compiles with Inductor and compares with the eager oracle; raises AssertionError on mismatch."""
    compiled = torch.compile(Replay(net.eval()), fullgraph=True, backend="inductor")
    with torch.no_grad():
        outs = compiled(*[torch.from_numpy(v) for v in inputs.values()])
    for name, out in zip(net.output_like, outs):
        out = out.detach().resolve_conj().numpy()
        np.testing.assert_allclose(out, expected[name], rtol=1e-2, atol=1e-3, equal_nan=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = ap.add_mutually_exclusive_group(required=True)
    budget.add_argument("--seconds", type=float)
    budget.add_argument("--minutes", type=float)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-nodes", type=int, default=5)
    ap.add_argument("--out", required=True, help="JSON summary path")
    ap.add_argument("--verbose", action="store_true", help="one line per test: timings and error")
    args = ap.parse_args()
    limit = args.seconds if args.seconds is not None else 60 * args.minutes
    torch.set_num_threads(1)

    t0 = time.time()
    model_type = Model.init("torch", backend_target="cpu")
    model_type.add_seed_setter()
    opset = auto_opset(model_type)  # probes each operator's dtypes once, cached by NNSmith
    setup = time.time() - t0

    rng = random.Random(args.seed)
    counts = dict(tests=0, gen_failures=0, compile_errors=0, mismatches=0, nodes=0)
    start = time.time()
    while time.time() - start < limit:
        seed = rng.getrandbits(32)
        torch._dynamo.reset()
        t_gen, outcome = time.time(), "ok"
        try:
            net, inputs, expected = make_test(model_type, opset, seed, args.max_nodes)
        except Exception as e:
            counts["gen_failures"] += 1  # nnsmith.fuzz skips these and does not count a test
            outcome = f"gen failure: {type(e).__name__}: {str(e)[:200]}"
        t_check = time.time()
        if outcome == "ok":
            counts["nodes"] += len(net.instructions)  # the graph nodes this test judges
            try:
                compile_and_check(net, inputs, expected)
            except AssertionError as e:
                counts["mismatches"] += 1
                outcome = f"mismatch: {str(e).strip().splitlines()[0][:200]}"
            except Exception as e:
                counts["compile_errors"] += 1
                outcome = f"compile error: {type(e).__name__}: {str(e).strip()[:200]}"
            counts["tests"] += 1
        if args.verbose:
            print(f"seed {seed}: gen {t_check - t_gen:.2f} s, compile+check {time.time() - t_check:.2f} s, {outcome}",
                  flush=True)
    seconds = time.time() - start

    summary = dict(counts, seconds=round(seconds, 1), tests_per_min=round(60 * counts["tests"] / seconds, 2),
                   nodes_per_min=round(60 * counts["nodes"] / seconds, 2),
                   setup_seconds=round(setup, 1), torch_version=torch.__version__,
                   nnsmith_version=nnsmith.__version__, max_nodes=args.max_nodes, seed=args.seed)
    with open(args.out, "w") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))
    shutil.rmtree(CACHE_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
