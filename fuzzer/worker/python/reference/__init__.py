"""What the worker's references share with repro.py: the shared block (repro_shared: seeding, fp64 widening,
layout-keeping copies, the tensor file, Python state) and each higher-order op's Python meaning
(desugared_hops, which repro.py carries as it is). Module code only: nothing here runs a torch op at import."""
