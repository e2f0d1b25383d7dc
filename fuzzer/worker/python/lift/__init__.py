"""The lift job: an LLM-written program, checked by the AST allowlist (allowlist.py, security-critical, kept on
its own), run once in eager and mapped to the op catalog (job.py). Imported by child.py before any fork."""
from .job import run_lift_job  # noqa: F401 (the package's one entry point)
