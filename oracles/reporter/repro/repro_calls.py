RECOMPILED_ON_REPEAT = []  # the compiled run's call 2: Dynamo's RecompileError messages


def repeat_without_recompile(call, args, restore):
    """Call 2 repeats call 1 exactly (fresh copies of the same inputs, the state as built), so Dynamo must run
    its cached code: tries it under torch._dynamo.config.error_on_recompile, and a RecompileError (a guard
    failing on what did not change: a recompile storm) is kept in RECOMPILED_ON_REPEAT. Returns fresh
    copies of `args`, with the state restored, for the call whose outputs are judged."""
    try:
        with torch._dynamo.config.patch(error_on_recompile=True):
            call(fresh_copies(args))
    except torch._dynamo.exc.RecompileError as exc:
        print(f"compiled: call 2 (the same inputs and state again) recompiles:\n{exc}")
        # A guard on an object forward makes anew at every call (a local class or function) fails by design.
        if "<locals>" not in str(exc):
            RECOMPILED_ON_REPEAT.append(str(exc))
    restore()
    return fresh_copies(args)


def repeats_itself(run_leaves):
    """Eager's call 2 returned call 1's outputs exactly: the program kept no state of its own between them."""
    leaves, _, roles = run_leaves
    first = [leaf for leaf, role in zip(leaves, roles) if role == "output"]
    second = [leaf for leaf, role in zip(leaves, roles) if role == "second-call"]
    same = lambda a, b: (torch.equal(a, b) or bool(a.isnan().equal(b.isnan()) and a.nan_to_num(0.0).equal(b.nan_to_num(0.0)))
                         if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
                         and a.dtype == b.dtype else a == b)
    return bool(first) and len(first) == len(second) and all(same(a, b) for a, b in zip(first, second))


def run(mode):
    """One run ("eager", "fp64" or "compiled"), as tcfuzz's worker made it: call 1's outputs (then its
    gradients, then what each output's storage is shared with), each input, buffer and parameter as
    call 1 left it, call 2's outputs (the same inputs again) and call 3's (the inputs of seed + 1), under
    dynamic=True call 4's (inputs of another size: which one, then its outputs), and when an input has a
    storage offset the moved call's (those inputs at offset 0); each call starts from the state as built.
    A program that keeps Python state (PythonState) also has that state after call 1, and one with a SCHEDULE
    the outputs and Python state after each of its steps (schedule_leaves).
    Returns the leaves, their names and their roles. Under the "train" entry: the training steps' leaves instead
    (training_run)."""
    model, inputs = build(mode)
    fn = model
    if trains(CASE["compile"]):
        return training_run(model, inputs, mode)
    if mode == "compiled" and exports(CASE["compile"]):  # through torch.export
        with torch.set_grad_enabled(bool(CASE["backward"])):  # traced in the grad mode the calls run in
            fn = exported_model(model, fresh_copies(inputs), CASE["compile"], os.path.dirname(os.path.abspath(__file__)))
    elif mode == "compiled" and CASE["compile"].get("backend") != "none":  # "none": the program's own HOPs, uncompiled
        cfg = CASE["compile"]
        fn = torch.compile(model, **compile_kwargs(cfg))
        if cfg.get("mark_dynamic"):
            fn = marking_dynamic(fn)
    state = model_state(model)
    with torch.no_grad():
        built = {name: t.detach().clone() for name, t in state}
    buffers = module_buffers(model)
    python_state = PythonState(model, globals())

    def restore():  # the tensors (values, dtypes, buffer objects) and the Python state as built
        put_back_tensors(model, state, built, buffers)
        python_state.restore()

    def call(args):
        seed_everything(CASE["seed"])
        return call_in_fp64(fn, args) if mode == "fp64" else fn(*args)

    wrt, wrt_names = [], []
    if CASE["backward"]:
        inputs = grad_leaves(inputs)  # the program gets clones of these leaves
        for i, t in enumerate(pytree.tree_leaves(inputs)):
            if isinstance(t, torch.Tensor) and t.requires_grad:
                wrt.append(t)
                wrt_names.append(f"grad(input {i})")
        for name, p in sorted(model.named_parameters(), key=lambda item: item[0]):
            if p.requires_grad:
                wrt.append(p)
                wrt_names.append(f"grad(param {name})")
    torch.set_grad_enabled(CASE["backward"])
    args = fresh_copies(inputs)
    leaves, names, roles = [], [], []

    def add(role, named):  # [(name, leaf)], all of one role
        for name, leaf in named:
            leaves.append(leaf)
            names.append(name)
            roles.append(role)

    def detached(out):
        return [t.detach().clone() if isinstance(t, torch.Tensor) else t for t in pytree.tree_leaves(out)]

    out = call(args)
    add("output", [(f"output {i}", t) for i, t in enumerate(detached(out))])
    grads = gradients(out, wrt) if CASE["backward"] else []
    add("grad", zip(wrt_names, grads))
    inputs_now = [(f"input {i}", t) for i, t in enumerate(args) if isinstance(t, torch.Tensor)]
    notes = alias_notes(pytree.tree_leaves(out), inputs_now + state)
    add("alias", [(f"output {i} storage", n) for i, n in enumerate(notes)])
    when = "after backward" if grads else "after forward"  # the worker's names (forward_checks.py)
    after = [(f"input {i} {when}", t) for i, t in enumerate(args) if isinstance(t, torch.Tensor)]
    add("state", [(name, t.detach().clone()) for name, t in after + [(f"{name} {when}", t) for name, t in state]])
    add("python-state", [(f"{name} {when}", leaf) for name, leaf in python_state.leaves()])
    for role, seed in (("second-call", None), ("fresh-inputs", CASE["seed"] + 1)):
        restore()
        if seed is None:
            args = fresh_copies(inputs)
            if mode == "compiled":
                args = repeat_without_recompile(call, args, restore)
        else:
            args = build_inputs(seed, widen=mode == "fp64")
            if CASE["backward"]:
                args = grad_leaves(args)
        add(role, [(f"{role}: output {i}", t) for i, t in enumerate(detached(call(args)))])
    def probe(args):
        restore()
        seed_everything(CASE["seed"])
        return call_in_fp64(model, args) if mode == "fp64" else model(*args)

    def later_call(args):
        return detached(call(grad_leaves(args) if CASE["backward"] else args))

    # Call 4 (inputs of another size, dynamic=True only), then the moved call (inputs at storage offset 0).
    symbolic = CASE["compile"].get("dynamic") is True or CASE["compile"].get("mark_dynamic")
    for role in ("resized", "moved") if symbolic else ("moved",):
        add(role, [(name, leaf) for leaf, name in later_call_leaves(role, inputs, probe, restore, later_call)])
    def scheduled_call(transform=None):
        if transform is None:
            return later_call(fresh_copies(inputs))
        args = fresh_copies(inputs)
        return detached(call(transform(grad_leaves(args) if CASE["backward"] else args)))

    add("schedule", [(name, leaf) for leaf, name in schedule_leaves(globals(), model, restore, scheduled_call, python_state)])
    leaves = [leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
    return leaves, names, roles


def compile_kwargs(cfg):
    kwargs = {"backend": cfg.get("backend", "inductor"), "fullgraph": bool(cfg.get("fullgraph", False))}
    if cfg.get("mode"):
        kwargs["mode"] = cfg["mode"]
    if cfg.get("dynamic") is not None:
        kwargs["dynamic"] = bool(cfg["dynamic"])
    return kwargs


def training_run(model, inputs, mode):
    """The "train" entry's run, as the worker makes it: CASE["compile"]["training"]'s steps (training_leaves), the
    compiled run compiling the model, the step (torch.compile with the backend and mode only), or both."""
    cfg = CASE["compile"]
    spec = cfg["training"]
    fn, compile_step = model, None
    if mode == "compiled" and cfg.get("backend") != "none":
        if compiles_model(spec):
            fn = torch.compile(model, **compile_kwargs(cfg))
        if compiles_step(spec):
            compile_step = step_compiler(cfg)

    def forward(args):
        seed_everything(CASE["seed"])
        return call_in_fp64(fn, args) if mode == "fp64" else fn(*args)

    leaves = training_leaves(model, lambda: fresh_copies(inputs), spec, forward, CASE["seed"], compile_step)
    names = [name for name, _ in leaves]
    leaves = [leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf for _, leaf in leaves]
    return leaves, names, ["training"] * len(leaves)


def run_and_report(mode):
    """((leaves, names), None) when the run succeeds, (None, the exception) when it raises."""
    try:
        leaves, names, roles = run(mode)
    except Exception as exc:
        print(f"{mode}: raised {type(exc).__name__}")
        traceback.print_exc(file=sys.stdout)
        return None, exc
    print(f"{mode}: ok, {len(leaves)} leaves")
    save_leaves(mode, leaves)
    return (leaves, names, roles), None


def save_leaves(mode, leaves):
    """Only with TCFUZZ_REPRO_OUTPUTS=<folder> set (tcfuzz's tests): saves the run's leaves as the worker
    saves them, a tensor file (scalars as 0-d tensors, complex as real pairs, other leaves left out),
    to <folder>/<mode>.safetensors. Without it, does nothing."""
    folder = os.environ.get("TCFUZZ_REPRO_OUTPUTS")
    if not folder:
        return
    tensors = [as_real_tensor(leaf) for leaf in leaves]
    tensors = [t.contiguous().clone() for t in tensors if isinstance(t, torch.Tensor)]
    write_tensor_file(os.path.join(folder, f"{mode}.safetensors"), tensors)
