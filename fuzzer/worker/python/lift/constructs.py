"""The Python constructs of a lifted program: its `if` statements, `for` loops and higher-order ops, marked while
forward runs.

The lift runs a program once in eager and records its torch calls, which flattens Python control flow to the
path taken. mark_constructs rewrites the program's AST (after check_program_ast passed it; the rewrite only adds
calls of the two markers below) so that the run also records, among the calls:
  BRANCH  an `if` whose test Dynamo cannot settle from shapes: (kind, threshold, tensors the test read), where
          kind is the IR's BranchTest kind ("item", "any", "tensor", "flag", "training");
  LOOP    the first iteration of a `for` loop;
  HOP     a call of a higher-order op or torch.func transform (LIFT_HOP_PATHS): (kind,). The call runs the op's
          Python meaning (reference.desugared_hops), so the calls recorded inside are its body's plain ops.
The test's own torch calls (x.flatten()[0].item(), (x > 0).any()) are taken out of the recorded calls: they
decide the branch and are no node. The Lifter puts each marker on a returned node of the proposal
(place_constructs), where the IR can hold it (a branch or a loop form sits on a node forward only returns).
"""

import ast

import torch

from reference.desugared_hops import DESUGARED_HOPS

from .allowlist import LIFT_HOP_PATHS

BRANCH_HELPER = "__tcfuzz_branch__"
LOOP_HELPER = "__tcfuzz_loop__"
HOP_HELPER = "__tcfuzz_hop__"
# The loop form a lifted `for` loop becomes (generators/python/PythonForms.cpp): a Python loop over dim 0.
LIFTED_LOOP_FORM = "enumerate"


def HOP():
    """The marker of a higher-order op called in forward."""


def _dotted(e):
    """"torch.func.vmap" for an attribute chain on a name, else None."""
    parts = []
    while isinstance(e, ast.Attribute):
        parts.append(e.attr)
        e = e.value
    return ".".join([e.id] + parts[::-1]) if isinstance(e, ast.Name) and parts else None


def BRANCH():
    """The marker of a branch taken in forward (LiftRecorder's calls hold it with its test)."""


def LOOP():
    """The marker of a loop entered in forward."""


def _number(e):
    if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
        value = _number(e.operand)
        return None if value is None else -value
    if isinstance(e, ast.Constant) and type(e.value) in (int, float):
        return float(e.value)
    return None


def _static_kind(test):
    """The branch kind the test's text settles: "item" (a Python scalar from a tensor), "any", "training";
    None when its value decides (a tensor's truth value, or a module flag)."""
    methods = {n.func.attr for n in ast.walk(test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    if methods & {"item", "tolist"}:
        return "item"
    if methods & {"any", "all"}:
        return "any"
    if any(isinstance(n, ast.Attribute) and n.attr == "training" for n in ast.walk(test)):
        return "training"
    return None


def _reads_self(test):
    return any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
               for n in ast.walk(test))


def _threshold(test):
    """The first number a comparison in the test compares with (0 when none)."""
    for n in ast.walk(test):
        if isinstance(n, ast.Compare):
            for side in [n.left] + n.comparators:
                value = _number(side)
                if value is not None:
                    return value
    return 0.0


def _wrappable(test):
    """Whether the test means the same inside a lambda: no walrus (it would bind in the lambda) and no
    zero-argument super() (a lambda has no first argument to bind it to)."""
    for n in ast.walk(test):
        if isinstance(n, ast.NamedExpr):
            return False
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "super":
            return False
    return True


class _ConstructMarker(ast.NodeTransformer):
    """Marks the `if` and `for` statements of function bodies (a class body's names are not visible inside a
    lambda, so its own statements stay as they are)."""

    def __init__(self):
        self.loops = 0
        self.functions = 0

    def visit_FunctionDef(self, node):
        self.functions += 1
        self.generic_visit(node)
        self.functions -= 1
        return node

    def visit_ClassDef(self, node):
        outer, self.functions = self.functions, 0
        self.generic_visit(node)
        self.functions = outer
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        test = node.test
        if not self.functions or not _wrappable(test):
            return node
        node.test = ast.Call(
            func=ast.Name(id=BRANCH_HELPER, ctx=ast.Load()),
            args=[ast.Lambda(args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
                             body=test),
                  ast.Constant(_static_kind(test)), ast.Constant(_threshold(test)), ast.Constant(_reads_self(test))],
            keywords=[])
        return node

    def visit_Attribute(self, node):
        path = _dotted(node)
        if path in LIFT_HOP_PATHS and isinstance(node.ctx, ast.Load):  # torch.cond -> __tcfuzz_hop__("torch.cond")
            return ast.copy_location(
                ast.Call(func=ast.Name(id=HOP_HELPER, ctx=ast.Load()), args=[ast.Constant(path)], keywords=[]), node)
        self.generic_visit(node)
        return node

    def visit_For(self, node):
        self.generic_visit(node)
        if not self.functions:
            return node
        call = ast.Call(func=ast.Name(id=LOOP_HELPER, ctx=ast.Load()), args=[ast.Constant(self.loops)], keywords=[])
        self.loops += 1
        node.body.insert(0, ast.Expr(value=call))
        return node


def mark_constructs(source, path):
    """The program's code object with its `if` tests and `for` bodies marked (the source must have passed
    check_program_ast: the rewrite adds nothing but calls of the markers)."""
    tree = _ConstructMarker().visit(ast.parse(source))
    return compile(ast.fix_missing_locations(tree), path, "exec")


class ConstructRecorder:
    """The markers a marked program calls. While `active` (forward runs under the LiftRecorder) they record
    BRANCH, LOOP and HOP among `calls`; otherwise they only decide the `if` as Python would and run a
    higher-order op's meaning."""

    def __init__(self, calls):
        self.calls = calls
        self.active = False
        self.loops_seen = set()

    def helpers(self):
        return {BRANCH_HELPER: self.branch, LOOP_HELPER: self.loop, HOP_HELPER: self.hop}

    def hop(self, path):
        """The Python meaning of the op at `path`, recording HOP (kind,) when called while active."""
        kind, meaning = LIFT_HOP_PATHS[path]

        def call(*args, **kwargs):
            if self.active:
                self.calls.append((HOP, (kind,), {}, None))
            return DESUGARED_HOPS[meaning](*args, **kwargs)
        return call

    def branch(self, test, kind, threshold, reads_self):
        if not self.active:
            return bool(test())
        before = len(self.calls)
        value = test()
        taken = bool(value)
        read = self.calls[before:]
        del self.calls[before:]  # the test's calls decide the branch: no node stands for them
        if kind is None:
            if isinstance(value, torch.Tensor):
                kind = "tensor"
            elif reads_self and not read:
                kind = "flag"
        if kind is not None:
            tensors = [a for _f, args, _k, _r in read for a in args if isinstance(a, torch.Tensor)]
            self.calls.append((BRANCH, (kind, threshold, tensors), {}, None))
        return taken

    def loop(self, loop_id):
        if self.active and loop_id not in self.loops_seen:
            self.loops_seen.add(loop_id)
            self.calls.append((LOOP, (), {}, None))


def place_constructs(nodes, outputs, names, branches, loops, hops=()):
    """Puts the recorded branches, loops and higher-order ops on the proposal's returned nodes: each on the first
    returned node that holds none of its kind yet (a higher-order op: no construct at all). A branch on tensor data
    reads, as its operand, one of the node's arguments that is a forward input (x0, x1, ...), the tensor its test
    read where the node reads it. A higher-order op becomes the IR's region of that kind around the node and the
    nodes only it reads (a cond's predicate: forward input 0 against 0). Returns how many found no node (the IR
    holds such constructs only on a node forward only returns)."""
    read = {a for n in nodes for a in n["args"]}
    returned = [n for n in nodes if n["out"] in outputs and n["out"] not in read]
    dropped = 0
    for kind, threshold, tensors in branches:
        wanted = [names.get(id(t)) for t in tensors]
        placed = False
        for n in returned:
            python = n.setdefault("python", {})
            if "branch" in python:
                continue
            operand = 0
            if kind not in ("flag", "training"):
                inputs = [k for k, a in enumerate(n["args"][:3]) if a.startswith("x")]
                if not inputs:
                    continue
                operand = next((k for k in inputs if n["args"][k] in wanted), inputs[0])
            python["branch"] = {"kind": kind, "operand": operand, "threshold": threshold}
            placed = True
            break
        dropped += not placed
    for _ in range(loops):
        target = next((n for n in returned if "form" not in n.get("python", {})), None)
        if target is None:
            dropped += 1
            continue
        target.setdefault("python", {})["form"] = LIFTED_LOOP_FORM
    for kind in hops:
        target = next((n for n in returned if not n.get("python")), None)
        if target is None:
            dropped += 1
            continue
        target["python"] = {"hop": {"kind": kind, "input": 0, "threshold": 0.0} if kind == "cond" else {"kind": kind}}
    for n in returned:
        if n.get("python") == {}:
            del n["python"]
    return dropped
