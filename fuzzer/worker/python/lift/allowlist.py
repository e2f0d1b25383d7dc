"""The AST allowlist of lift jobs: which untrusted programs may run at all. Security-critical.

check_program_ast reads an untrusted program (an LLM's) without running any of it and says why it must
not run, or None; lift_builtins is the second line behind it: the only builtins a lifted program gets.
Used by the lift job (lift.py) in a forked worker child (child.py); see generators/llm/PythonLift.h.
Nothing here runs a torch op, and nothing is imported beyond LIFT_IMPORTABLE.
"""

import torch

LIFT_IMPORTABLE = ("torch", "torch.nn", "torch.nn.functional", "math")
# Modules an attribute chain may pass through (torch.linalg.vector_norm); any other module is refused.
LIFT_REACHABLE = LIFT_IMPORTABLE + ("torch.linalg", "torch.special", "torch.fft", "torch.nn.init")
# Attribute paths refused with everything below them.
LIFT_DENIED_PATHS = (
    "torch.load", "torch.save", "torch.hub", "torch.utils", "torch.ops", "torch.classes", "torch._C", "torch.cuda",
    "torch.backends", "torch.distributed", "torch.multiprocessing", "torch.compile", "torch._dynamo",
    "torch._inductor", "torch.jit", "torch.library", "torch.from_file",
)
# The attribute paths of the higher-order ops the lift keeps -> (the IR's hop kind, its DESUGARED_HOPS meaning).
# constructs.mark_constructs rewrites each into a marker, so the marked program never reaches the op itself.
LIFT_HOP_PATHS = {
    "torch.cond": ("cond", "cond"),
    "torch.vmap": ("vmap", "vmap"), "torch.func.vmap": ("vmap", "vmap"),
    "torch.func.grad": ("grad", "grad"), "torch.func.jvp": ("jvp", "jvp"), "torch.func.vjp": ("vjp", "vjp"),
    "torch.func.jacrev": ("jacrev", "jacrev"), "torch.func.jacfwd": ("jacfwd", "jacfwd"),
    "torch.utils.checkpoint.checkpoint": ("checkpoint", "checkpoint"),
    "torch._higher_order_ops.while_loop": ("while_loop", "while_loop"),
    "torch._higher_order_ops.scan": ("scan", "scan"),
    "torch._higher_order_ops.map": ("map", "hop_map"),
    "torch._higher_order_ops.associative_scan": ("associative_scan", "associative_scan"),
}
# Whole attribute paths allowed below a denied one or outside LIFT_REACHABLE, exactly as written (nothing below
# them): the graph break a Dynamo-level program marks, which the lift records as the next node's
# graph_break_before, and the higher-order ops it keeps.
LIFT_ALLOWED_PATHS = ("torch._dynamo.graph_break",) + tuple(LIFT_HOP_PATHS)
# Attribute names refused on any object: file and pickle access, raw memory, frames, str.format's
# attribute traversal.
LIFT_DENIED_ATTRIBUTES = frozenset({
    "load", "save", "hub", "from_file", "format", "format_map", "numpy", "ctypes", "data_ptr", "storage",
    "untyped_storage", "gi_frame", "gi_code", "cr_frame", "cr_code", "ag_frame", "f_globals", "f_locals",
    "f_builtins", "f_back", "tb_frame", "tb_next", "mro",
})
# The builtins a lifted program may name; the run gets only these (plus class creation and an import
# of LIFT_IMPORTABLE).
LIFT_SAFE_BUILTINS = frozenset({
    "abs", "all", "any", "bool", "callable", "classmethod", "dict", "divmod", "enumerate", "filter", "float",
    "frozenset", "int", "isinstance", "issubclass", "len", "list", "map", "max", "min", "pow", "print", "property",
    "range", "reversed", "round", "set", "slice", "sorted", "staticmethod", "str", "sum", "super", "tuple", "zip",
})
LIFT_MAX_LOOP = 16
LIFT_REFUSED_NODES = {
    "While": "while loop", "With": "with statement", "AsyncWith": "async", "AsyncFunctionDef": "async",
    "AsyncFor": "async", "Await": "async", "Try": "try statement", "TryStar": "try statement",
    "Raise": "raise statement", "Global": "global statement", "Nonlocal": "nonlocal statement",
    "Delete": "del statement", "Yield": "yield", "YieldFrom": "yield", "JoinedStr": "f-string",
    "Match": "match statement",
}


class LiftRefused(Exception):
    """Why a program is not lifted; the message is the stable reason string."""


def _is_dunder(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_program_ast(source):
    """Why the untrusted program `source` must not run, or None when its AST passes the allowlist.

    Pure: it parses the text and reads attributes of the allowed modules statically
    (inspect.getattr_static); none of the program runs and nothing is imported beyond LIFT_IMPORTABLE.
    Reasons are short stable strings: "import of os", "call of eval", "dunder attribute __class__",
    "attribute torch.load", "while loop", "syntax error: <msg> (line N)", "no Model class", ..."""
    import ast
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error: {exc.msg} (line {exc.lineno})"
    except ValueError as exc:  # a null byte in the source
        return f"syntax error: {exc}"
    checker = _ProgramChecker(ast)
    try:
        checker.visit(tree)
        checker.check_contract(tree)
    except LiftRefused as exc:
        return str(exc)
    except RecursionError:
        return "program nested too deeply"
    return None


class _ProgramChecker:
    """The AST walk behind check_program_ast. Names resolve through Python's scopes (a function does
    not see its class's names), so a parameter called `input` is the program's, not the builtin."""

    def __init__(self, ast_module):
        self.ast = ast_module
        self.scopes = []    # [(kind, names bound there)], kind: module, class, function, comprehension
        self.imported = {}  # module-scope name -> (dotted path, object) bound by an import

    # -- scopes ----------------------------------------------------------------------------------------
    def bound_names(self, nodes):
        """The names a scope body binds (nested functions and classes bind only their own name here)."""
        ast = self.ast
        names, stack = set(), list(nodes)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                continue
            if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
                continue
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                names.add(node.id)
            elif isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            stack.extend(ast.iter_child_nodes(node))
        return names

    def resolve(self, name):
        """The kind of scope `name` resolves to here ("builtin" when the program binds it nowhere visible)."""
        for i in range(len(self.scopes) - 1, -1, -1):
            kind, names = self.scopes[i]
            if kind == "class" and i != len(self.scopes) - 1:
                continue
            if name in names:
                return kind
        return "builtin"

    def in_scope(self, kind, names, nodes):
        self.scopes.append((kind, names))
        try:
            for node in nodes:
                self.visit(node)
        finally:
            self.scopes.pop()

    # -- the walk ----------------------------------------------------------------------------------------
    def visit(self, node):
        kind = type(node).__name__
        if kind in LIFT_REFUSED_NODES:
            raise LiftRefused(LIFT_REFUSED_NODES[kind])
        method = getattr(self, "visit_" + kind, None)
        if method is not None:
            method(node)
        else:
            for child in self.ast.iter_child_nodes(node):
                self.visit(child)

    def visit_Module(self, node):
        # Imports first: a function body may use a name that a later import binds.
        ast = self.ast
        stack = list(node.body)
        while stack:
            statement = stack.pop(0)
            if isinstance(statement, ast.Import):
                self.bind_import(statement)
            elif isinstance(statement, ast.ImportFrom):
                self.bind_import_from(statement)
            elif not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.extend(c for c in ast.iter_child_nodes(statement) if isinstance(c, ast.stmt))
        self.in_scope("module", self.bound_names(node.body), node.body)

    def import_binding(self, name, path, obj):
        if _is_dunder(name):
            raise LiftRefused(f"dunder name {name}")
        self.imported[name] = (path, obj)

    def visit_Import(self, node):
        if self.scopes[-1][0] != "module":
            raise LiftRefused("import inside a function or class")

    visit_ImportFrom = visit_Import

    def bind_import(self, node):
        import importlib
        for alias in node.names:
            if alias.name not in LIFT_IMPORTABLE:
                raise LiftRefused(f"import of {alias.name}")
            if alias.asname:
                self.import_binding(alias.asname, alias.name, importlib.import_module(alias.name))
            else:
                root = alias.name.split(".")[0]
                self.import_binding(root, root, importlib.import_module(root))

    def bind_import_from(self, node):
        import importlib
        import inspect
        if node.level:
            raise LiftRefused("relative import")
        if node.module not in LIFT_IMPORTABLE:
            raise LiftRefused(f"import of {node.module}")
        module = importlib.import_module(node.module)
        for alias in node.names:
            path = f"{node.module}.{alias.name}"
            if alias.name == "*" or alias.name.startswith("_") or _denied_path(path):
                raise LiftRefused(f"import of {path}")
            obj = inspect.getattr_static(module, alias.name, _MISSING)
            if obj is _MISSING or (_is_module(obj) and obj.__name__ not in LIFT_REACHABLE):
                raise LiftRefused(f"import of {path}")
            self.import_binding(alias.asname or alias.name, getattr(obj, "__name__", path) if _is_module(obj) else path,
                                obj)

    def check_name(self, name):
        if _is_dunder(name):
            raise LiftRefused(f"dunder name {name}")

    def visit_Name(self, node):
        ast = self.ast
        self.check_name(node.id)
        where = self.resolve(node.id)
        if not isinstance(node.ctx, ast.Load):
            if where == "module" and node.id in self.imported:
                raise LiftRefused(f"rebinding of {node.id}")
            return
        if where == "builtin" and node.id not in LIFT_SAFE_BUILTINS:
            raise LiftRefused(f"name {node.id}")
        if where == "module" and node.id in self.imported and _is_module(self.imported[node.id][1]):
            raise LiftRefused(f"module {self.imported[node.id][0]} used as a value")

    def check_attribute(self, name):
        if _is_dunder(name) and name != "__init__":
            raise LiftRefused(f"dunder attribute {name}")
        if name.startswith("_") and name != "__init__" or name in LIFT_DENIED_ATTRIBUTES:
            raise LiftRefused(f"attribute {name}")

    def attribute_chain(self, node):
        """(base, [names]) of a.b.c: the innermost non-attribute node and the names outwards from it."""
        chain, base = [], node
        while isinstance(base, self.ast.Attribute):
            chain.append(base.attr)
            base = base.value
        chain.reverse()
        return base, chain

    def visit_Attribute(self, node):
        """A whole chain a.b.c at once: from its base outwards, so the first refused step is reported."""
        import inspect
        ast = self.ast
        base, chain = self.attribute_chain(node)
        rooted = isinstance(base, ast.Name) and self.resolve(base.id) == "module" and base.id in self.imported
        if not rooted:
            self.visit(base)
            for name in chain:
                self.check_attribute(name)
            return
        path, obj = self.imported[base.id]
        if ".".join([path] + chain) in LIFT_ALLOWED_PATHS:
            return
        for name in chain:
            if not _is_module(obj):  # past the modules: a function or class, checked by name only
                self.check_attribute(name)
                continue
            if _is_dunder(name) and name != "__init__":
                raise LiftRefused(f"dunder attribute {name}")
            path = f"{path}.{name}"
            if name.startswith("_") or name in LIFT_DENIED_ATTRIBUTES or _denied_path(path):
                raise LiftRefused(f"attribute {path}")
            obj = inspect.getattr_static(obj, name, _MISSING)
            if obj is _MISSING or (_is_module(obj) and obj.__name__ not in LIFT_REACHABLE):
                raise LiftRefused(f"attribute {path}")
        if _is_module(obj):
            raise LiftRefused(f"module {path} used as a value")

    def static_value(self, node):
        """The object a Name or attribute chain rooted at an import names, or None."""
        import inspect
        base, chain = self.attribute_chain(node)
        if not isinstance(base, self.ast.Name) or base.id not in self.imported:
            return None
        obj = self.imported[base.id][1]
        for name in chain:
            obj = inspect.getattr_static(obj, name, None)
        return obj

    def visit_Call(self, node):
        ast = self.ast
        func = node.func
        if isinstance(func, ast.Name) and self.resolve(func.id) == "builtin" and func.id not in LIFT_SAFE_BUILTINS:
            raise LiftRefused(f"call of {func.id}")
        self.visit(func)
        for arg in node.args:
            self.visit(arg)
        for keyword in node.keywords:
            if keyword.arg is not None:
                self.check_name(keyword.arg)
            self.visit(keyword.value)

    def check_range(self, iterable, what):
        """Loops run only over range(...) of int literals, at most LIFT_MAX_LOOP iterations."""
        ast = self.ast

        def literal(e):
            if isinstance(e, ast.UnaryOp) and isinstance(e.op, ast.USub):
                value = literal(e.operand)
                return None if value is None else -value
            if isinstance(e, ast.Constant) and type(e.value) is int:
                return e.value
            return None

        if (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Name) and iterable.func.id == "range"
                and self.resolve("range") == "builtin" and not iterable.keywords and 1 <= len(iterable.args) <= 3):
            bounds = [literal(a) for a in iterable.args]
            if None not in bounds and (len(bounds) < 3 or bounds[2] != 0):
                count = len(range(*bounds))
                if count > LIFT_MAX_LOOP:
                    raise LiftRefused(f"{what} of {count} iterations")
                return
        raise LiftRefused(f"{what} over a non-literal range")

    def visit_For(self, node):
        self.check_range(node.iter, "for loop")
        for child in [node.target, node.iter] + node.body + node.orelse:
            self.visit(child)

    def visit_comprehension_node(self, node, parts):
        ast = self.ast
        for generator in node.generators:
            if generator.is_async:
                raise LiftRefused("async")
            self.check_range(generator.iter, "comprehension")
        names = set()
        for generator in node.generators:
            names |= {n.id for n in ast.walk(generator.target) if isinstance(n, ast.Name)}
        nodes = [g.target for g in node.generators] + [c for g in node.generators for c in g.ifs] + parts
        self.in_scope("comprehension", names, nodes)

    def visit_ListComp(self, node):
        self.visit_comprehension_node(node, [node.elt])

    visit_SetComp = visit_ListComp
    visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node):
        self.visit_comprehension_node(node, [node.key, node.value])

    def arguments(self, args):
        """Checks parameter names and visits defaults and annotations (they run in the enclosing scope)."""
        every = args.posonlyargs + args.args + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
        for a in every:
            self.check_name(a.arg)
            if a.annotation is not None:
                self.visit(a.annotation)
        for default in args.defaults + [d for d in args.kw_defaults if d is not None]:
            self.visit(default)
        return {a.arg for a in every}

    def visit_FunctionDef(self, node):
        if _is_dunder(node.name) and node.name != "__init__":
            raise LiftRefused(f"dunder name {node.name}")
        for decorator in node.decorator_list:
            self.visit(decorator)
        params = self.arguments(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self.in_scope("function", params | self.bound_names(node.body), node.body)

    def visit_Lambda(self, node):
        self.in_scope("function", self.arguments(node.args), [node.body])

    def visit_ClassDef(self, node):
        self.check_name(node.name)
        for child in node.decorator_list + node.bases:
            self.visit(child)
        for keyword in node.keywords:
            raise LiftRefused(f"class keyword {keyword.arg}")
        self.in_scope("class", self.bound_names(node.body), node.body)

    def check_contract(self, tree):
        """The program contract of a lifted program: class Model(nn.Module) and def make_inputs(seed)."""
        ast = self.ast
        classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        model = classes.get("Model")
        if model is None:
            raise LiftRefused("no Model class")
        if not any(isinstance(n, ast.FunctionDef) and n.name == "make_inputs" for n in tree.body):
            raise LiftRefused("no make_inputs")

        def is_module_class(cls, seen):
            for base in cls.bases:
                value = self.static_value(base)
                if isinstance(value, type) and issubclass(value, torch.nn.Module):
                    return True
                if isinstance(base, ast.Name) and base.id in classes and base.id not in seen:
                    if is_module_class(classes[base.id], seen | {base.id}):
                        return True
            return False

        if not is_module_class(model, {"Model"}):
            raise LiftRefused("Model is not an nn.Module")


_MISSING = object()


def _is_module(obj):
    import types
    return isinstance(obj, types.ModuleType)


def _denied_path(path):
    return any(path == denied or path.startswith(denied + ".") for denied in LIFT_DENIED_PATHS)


def lift_builtins():
    """The __builtins__ of a lifted program: LIFT_SAFE_BUILTINS, class creation, and an import that
    admits LIFT_IMPORTABLE only (a second line behind check_program_ast)."""
    import builtins

    def restricted_import(name, globals=None, locals=None, fromlist=(), level=0):
        if level or name not in LIFT_IMPORTABLE:
            raise ImportError(f"import of {name} is not allowed in a lifted program")
        return builtins.__import__(name, globals, locals, fromlist, level)

    allowed = {name: getattr(builtins, name) for name in LIFT_SAFE_BUILTINS if hasattr(builtins, name)}
    allowed["__build_class__"] = builtins.__build_class__
    allowed["__import__"] = restricted_import
    return allowed
